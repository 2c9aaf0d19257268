// lib/clock.ts: every moment the page writes for a person has one form,
// 24-hour with its zone, the date before it on another day than today.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { clockTime } from "../lib/clock";

const AT = 1_800_000_127; // 2027-01-15 08:02:07 UTC

describe("clockTime", () => {
  test("24-hour with its zone on the same day; afternoon and midnight never read as AM/PM", () => {
    assert.equal(clockTime(AT, AT + 60, "UTC"), "08:02:07 UTC");
    assert.equal(clockTime(AT + 9 * 3600, AT, "UTC"), "17:02:07 UTC");
    assert.equal(clockTime(AT - 8 * 3600 - 122, AT, "UTC"), "00:00:05 UTC");
    assert.equal(clockTime(AT, AT, "America/New_York"), "03:02:07 EST");
    for (const t of [AT, AT + 5 * 3600, AT + 9 * 3600]) assert.doesNotMatch(clockTime(t, t, "America/New_York"), /AM|PM/);
  });

  test("another day names its date, as the kernel's readable_time does", () => {
    assert.equal(clockTime(AT, AT + 86400, "UTC"), "15 Jan 2027, 08:02:07 UTC");
    // the day is the zone's: 08:02 UTC on the 15th is 22:02 on the 14th in Honolulu
    assert.equal(clockTime(AT, AT, "Pacific/Honolulu"), "22:02:07 HST");
    assert.equal(clockTime(AT, AT + 86400, "Pacific/Honolulu"), "14 Jan 2027, 22:02:07 HST");
  });

  test("a moment that is not a number is not written", () => {
    assert.equal(clockTime(NaN), "");
    assert.equal(clockTime(Infinity), "");
  });
});
