// lib/form.ts: which control a schema property gets and how each field's
// text becomes the value the kernel validates (C20: a date-time carries the
// browser's offset at that date, and the card names the zone).
process.env.TZ = "Europe/Berlin";

import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { browserZone, collect, errorAtFields, fieldKind, pickerValue, readNumber, readText, renderSchemaForm, withZone } from "../lib/form";

const dom = installDom();
after(() => dom.window.close());

describe("a date or date-time field's default", () => {
  test("an instant in UTC is shown as the browser's wall time then", () => {
    assert.equal(pickerValue("2026-07-15T11:10:00Z", "date-time"), "2026-07-15T13:10");
    assert.equal(pickerValue("2026-01-15T11:10:00+00:00", "date-time"), "2026-01-15T12:10");
  });
  test("seconds are kept when not zero, and a wall time without offset is read as the browser's", () => {
    assert.equal(pickerValue("2026-07-15T11:10:05Z", "date-time"), "2026-07-15T13:10:05");
    assert.equal(pickerValue("2026-07-15T13:10", "date-time"), "2026-07-15T13:10");
  });
  test("a default the picker cannot show leaves the field empty", () => {
    for (const bad of ["tomorrow", "2026-07-15", "2026-13-45T99:99:00Z", ""]) assert.equal(pickerValue(bad, "date-time"), "", bad);
    assert.equal(pickerValue("2026-07-15T10:00:00Z", "date"), "");
    assert.equal(pickerValue("2026-07-15", "date"), "2026-07-15");
  });
  test("the form starts with the default and sends it back as the same instant", () => {
    const form = renderSchemaForm({
      type: "object",
      properties: {
        start: { type: "string", format: "date-time", default: "2026-07-15T11:10:00Z" },
        day: { type: "string", format: "date", default: "2026-07-16" },
      },
    });
    const start = form.el.querySelector('[data-field="start"]') as HTMLInputElement;
    const day = form.el.querySelector('[data-field="day"]') as HTMLInputElement;
    assert.equal(start.value, "2026-07-15T13:10");
    assert.equal(day.value, "2026-07-16");
    assert.deepEqual(form.value(), { ok: true, value: { start: "2026-07-15T13:10:00+02:00", day: "2026-07-16" }, error: "", field: "" });
    assert.equal(new Date("2026-07-15T13:10:00+02:00").toISOString(), "2026-07-15T11:10:00.000Z");
  });
});

describe("C20 date-time with time zone", () => {
  test("a summer wall time in Europe/Berlin is sent with +02:00", () => {
    assert.equal(withZone("2026-07-15T13:10"), "2026-07-15T13:10:00+02:00");
  });
  test("a winter wall time is sent with that date's offset, +01:00", () => {
    assert.equal(withZone("2026-01-15T13:10"), "2026-01-15T13:10:00+01:00");
  });
  test("seconds typed are kept", () => {
    assert.equal(withZone("2026-07-15T13:10:05"), "2026-07-15T13:10:05+02:00");
  });
  test("text that is no date is passed on for the kernel to refuse", () => {
    assert.equal(withZone("garbage"), "garbage");
  });
  test("the zone is named", () => {
    assert.equal(browserZone(), "Europe/Berlin");
  });
  test("the form sends the instant and shows the zone beside the field", () => {
    const form = renderSchemaForm({ type: "object", properties: { start: { type: "string", format: "date-time" } } });
    const input = form.el.querySelector<HTMLInputElement>('[data-field="start"]')!;
    assert.equal(input.type, "datetime-local");
    input.value = "2026-07-15T13:10";
    assert.deepEqual(form.value(), { ok: true, value: { start: "2026-07-15T13:10:00+02:00" }, error: "", field: "" });
    const zone = form.el.querySelector('[data-testid="nbh-field-zone"]')!;
    assert.equal(zone.textContent, "Time zone: Europe/Berlin");
    assert.ok(input.getAttribute("aria-describedby")!.split(" ").includes(zone.id));
  });
});

describe("fieldKind", () => {
  test("each property gets its control", () => {
    assert.equal(fieldKind({ enum: ["a", "b"], type: "string" }), "enum");
    assert.equal(fieldKind({ type: "boolean" }), "boolean");
    assert.equal(fieldKind({ type: ["integer", "null"] }), "integer");
    assert.equal(fieldKind({ type: "number" }), "number");
    assert.equal(fieldKind({ type: "string", format: "date" }), "date");
    assert.equal(fieldKind({ type: "string", format: "date-time" }), "date-time");
    assert.equal(fieldKind({ type: "string" }), "textarea");
    assert.equal(fieldKind({ type: "string", maxLength: 300 }), "textarea");
    assert.equal(fieldKind({ type: "string", maxLength: 200 }), "text");
    assert.equal(fieldKind({ type: "array" }), "text");
    assert.equal(fieldKind({}), "text");
  });
});

describe("reading fields", () => {
  test("numbers", () => {
    assert.deepEqual(readNumber(""), { present: false });
    assert.deepEqual(readNumber("  "), { present: false });
    assert.deepEqual(readNumber("2.5"), { present: true, value: 2.5 });
    assert.deepEqual(readNumber(" -1e3 "), { present: true, value: -1000 });
    assert.deepEqual(readNumber(".5"), { present: true, value: 0.5 });
    for (const text of ["1e", "12a", "0x10", "0b1", "Infinity", "NaN", "1e400", "1,5", "--1"]) {
      assert.deepEqual(readNumber(text), { present: true, error: "not a number" }, text);
    }
  });
  test("text lines: strings stay text, other types are read as JSON when they parse", () => {
    assert.deepEqual(readText("", { type: "string" }), { present: false });
    assert.deepEqual(readText("[1, 2]", { type: "string" }), { present: true, value: "[1, 2]" });
    assert.deepEqual(readText("[1, 2]", { type: "array" }), { present: true, value: [1, 2] });
    assert.deepEqual(readText("[1, 2", { type: "array" }), { present: true, value: "[1, 2" });
    assert.deepEqual(readText("{}", {}), { present: true, value: "{}" });
  });
  test("collect: one error line per field, the first field named", () => {
    const props = { n: { title: "Count" }, m: {}, s: {} };
    const bad = collect(props, [
      ["n", { present: true, error: "not a number" }],
      ["m", { present: true, error: "not a number" }],
      ["s", { present: true, value: "x" }],
    ]);
    assert.deepEqual(bad, { ok: false, error: "Count: not a number\nm: not a number", field: "value.n" });
    const good = collect(props, [
      ["n", { present: true, value: 3 }],
      ["m", { present: false }],
    ]);
    assert.deepEqual(good, { ok: true, value: { n: 3 }, error: "", field: "" });
  });
  test("errorAtFields: true only when every line names a field", () => {
    const schema = { properties: { n: { title: "Count" }, m: {} } };
    assert.equal(errorAtFields(schema, "Count: too big\nm: missing"), true);
    assert.equal(errorAtFields(schema, "Count: too big\nsomething else"), false);
    assert.equal(errorAtFields(schema, ""), false);
    assert.equal(errorAtFields(null, "x: y"), false);
  });
});

describe("renderSchemaForm", () => {
  const schema = {
    type: "object",
    required: ["count"],
    properties: {
      count: { type: "integer", title: "Count" },
      color: { enum: ["red", 2, null] },
      ok: { type: "boolean", default: true },
      tags: { type: "array", maxLength: 10 },
    },
  };
  test("converts each field to its type", () => {
    const form = renderSchemaForm(schema);
    const field = <E extends Element>(name: string) => form.el.querySelector<E>(`[data-field="${name}"]`)!;
    field<HTMLInputElement>("count").value = "7";
    field<HTMLSelectElement>("color").value = "1";
    field<HTMLInputElement>("tags").value = '["a"]';
    assert.deepEqual(form.value().value, { count: 7, color: 2, ok: true, tags: ["a"] });
    assert.equal(field<HTMLInputElement>("count").getAttribute("aria-required"), "true");
  });
  test("a refusal is shown at its field", () => {
    const form = renderSchemaForm(schema, { error: "Count: must be at least 1", errorField: "value.count" });
    const errors = Array.from(form.el.querySelectorAll('[data-testid="nbh-field-error"]')).map((e) => e.textContent);
    assert.deepEqual(errors, ["Count: must be at least 1"]);
  });
  test("a schema without properties (or with a malformed one) draws an empty form", () => {
    assert.deepEqual(renderSchemaForm(null).value(), { ok: true, value: {}, error: "", field: "" });
    assert.deepEqual(renderSchemaForm({ properties: ["a"], required: "a" }).value().value, {});
  });
  test("untrusted titles and descriptions stay text", () => {
    const form = renderSchemaForm({ description: "<img src=x onerror=alert(1)>", properties: { a: { title: "<b>x</b>", type: "string" } } });
    assert.equal(form.el.querySelector("img"), null);
    assert.equal(form.el.querySelector("b"), null);
    assert.match(form.el.textContent || "", /<img src=x onerror=alert\(1\)>/);
  });
});
