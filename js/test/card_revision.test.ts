// A card is redrawn when the kernel sends a different view of it, whatever
// changed (reply/feed.ts's revision): a Modify short of N approvals leaves the
// card open with the edit as its input and the count of approvals; a page that
// only compared the status would show the model's input next to "1 of 2".
// The same view again (a record another view wrote) redraws nothing.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, pause } from "./page";

const dom = installDom();
after(() => dom.window.close());

describe("a card follows every change of its view", () => {
  test("an open card whose input and approvals changed shows them", async () => {
    const open = pause({ input_text: '{"amount": 120.0}', approvals_needed: 2, approvals: [] });
    const page = await drawReply([open]);
    const before = page.card("c1");
    assert.match(before.textContent || "", /120\.0/);
    const edited = { ...open, input_text: '{"amount": 12000.0}', approvals: [{ by: "alice", at: 1_700_000_000, action: "modify" }] };
    page.fake.emit({ type: "nbh_cards", seq: 1, ops: [{ op: "card", view: edited }] });
    await settle();
    const text = page.card("c1").textContent || "";
    assert.match(text, /12000\.0/);
    assert.doesNotMatch(text, /"amount": 120\.0/);
    assert.match(text, /1 of 2 approvals: alice/);
    // the same view again: the card is left as it is (not rebuilt)
    const drawn = page.card("c1");
    page.fake.emit({ type: "nbh_cards", seq: 2, ops: [{ op: "card", view: { ...edited } }] });
    await settle();
    assert.equal(page.card("c1"), drawn);
  });
});
