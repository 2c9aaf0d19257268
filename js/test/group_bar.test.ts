// The group bar of a reply parked on several calls (reply/group_bar.ts): a
// group action never drops what a person typed on a card (it sends nothing
// and names the card), a batch is one message, and the bar's note is
// recomputed when the cards change.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, pause, type Page } from "./page";

const dom = installDom();
after(() => dom.window.close());

const DELETE = pause({ tool_call_id: "c1", tool_name: "delete_file", input_text: '{"path": "old_log.txt"}' });
const ASK = pause({
  tool_call_id: "c2",
  kind: "ask_user",
  tool_name: "AskUser",
  input_text: "{}",
  ask_user: { questions: [{ question: "Which file?", header: "File", options: [{ label: "a.txt", description: "" }, { label: "b.txt", description: "" }], multi_select: false }] },
});
const WRITE = pause({ tool_call_id: "c3", tool_name: "write_file", input_text: '{"path": "x"}' });

const bar = (page: Page, testid: string) => page.el.querySelector<HTMLButtonElement>(`[data-testid="nbh-group"] [data-testid="${testid}"]`)!;
const note = (page: Page) => page.el.querySelector('[data-testid="nbh-group-note"]')!.textContent;
function type(el: HTMLTextAreaElement, text: string): void {
  el.value = text;
  el.dispatchEvent(new window.Event("input", { bubbles: true }));
}
/** The kernel took the answer on `view`'s call: its card comes back decided. */
function decided(page: Page, seq: number, view: ReturnType<typeof pause>, decision: Record<string, unknown>): void {
  page.fake.emit({ type: "nbh_cards", seq, ops: [{ op: "card", view: { ...view, status: "decided", decision } }] });
}

describe("a group action never drops what a person typed", () => {
  test("Approve all with an open edit sends nothing and names the card; cancelling the edit ends the refusal", async () => {
    const page = await drawReply([DELETE, ASK]);
    page.control("c1", "nbh-modify")!.click();
    type(page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!, '{"path": "notes.txt"}');
    bar(page, "nbh-approve-all").click();
    await settle();
    assert.equal(page.fake.actions("batch").length, 0);
    assert.equal(page.fake.actions("approve").length, 0);
    assert.equal(
      note(page),
      "Approve all sent nothing: delete_file has an edit you have not sent. Send it on its card, or cancel it there, then press Approve all again.",
    );
    // the edit is still there, as typed
    assert.equal(page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!.value, '{"path": "notes.txt"}');
    page.control("c1", "nbh-modify-cancel")!.click();
    assert.equal(note(page), "", "the refusal is no longer true once the edit is cancelled");
    bar(page, "nbh-approve-all").click();
    await settle();
    assert.deepEqual(page.fake.actions("batch")[0].items, [{ action: "approve", tool_call_id: "c1", reply_id: "r1" }]);
    page.close();
  });

  test("an edit typed back to the model's input holds nothing unsent", async () => {
    const page = await drawReply([DELETE, WRITE]);
    page.control("c1", "nbh-modify")!.click();
    const area = page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!;
    type(area, '{"path": "notes.txt"}');
    bar(page, "nbh-deny-all").click();
    await settle();
    assert.match(note(page)!, /^Deny all sent nothing: delete_file has an edit you have not sent\./);
    type(area, DELETE.input_text); // typed back: the note follows the card as it is
    assert.equal(note(page), "");
    page.close();
  });

  test("Deny all with a typed reason sends nothing; the reason is kept; one batch once it is sent on its card", async () => {
    const page = await drawReply([DELETE, WRITE]);
    page.control("c1", "nbh-deny-reason-open")!.click();
    type(page.control<HTMLTextAreaElement>("c1", "nbh-deny-reason")!, "keep the log, it is evidence");
    page.control("c3", "nbh-always")?.click(); // no rules offered: no button
    bar(page, "nbh-deny-all").click();
    await settle();
    assert.equal(page.fake.actions("batch").length, 0);
    assert.equal(
      note(page),
      "Deny all sent nothing: delete_file has a reason you have not sent. Send it on its card, or cancel it there, then press Deny all again.",
    );
    assert.equal(page.control<HTMLTextAreaElement>("c1", "nbh-deny-reason")!.value, "keep the log, it is evidence");
    page.control("c1", "nbh-deny-submit")!.click();
    await settle();
    assert.deepEqual(page.fake.actions("deny")[0].reason, "keep the log, it is evidence");
    decided(page, 1, DELETE, { action: "deny", reason: "keep the log, it is evidence" });
    assert.equal(note(page), "", "the card that held the reason is decided");
    page.close();
  });

  test("ticked rules are unsent too; several cards are named in one sentence", async () => {
    const rule = { index: 0, label: "Bash(ls:*)", tool_name: "Bash", rule_content: "ls:*", behavior: "allow", reach: "any ls command" };
    const page = await drawReply([pause({ tool_call_id: "c1", suggested_rules: [rule] }), { ...WRITE, tool_call_id: "c4", tool_name: "write_file" }]);
    page.control("c1", "nbh-always")!.click();
    const box = page.control<HTMLInputElement>("c1", "nbh-rule")!;
    box.checked = true;
    box.dispatchEvent(new window.Event("change", { bubbles: true }));
    page.control("c4", "nbh-deny-reason-open")!.click();
    type(page.control<HTMLTextAreaElement>("c4", "nbh-deny-reason")!, "no");
    bar(page, "nbh-approve-all").click();
    await settle();
    assert.equal(
      note(page),
      "Approve all sent nothing: Bash has ticked rules you have not sent; write_file has a reason you have not sent. Send each on its card, or cancel it there, then press Approve all again.",
    );
    box.checked = false;
    box.dispatchEvent(new window.Event("change", { bubbles: true }));
    assert.equal(note(page), "Approve all sent nothing: write_file has a reason you have not sent. Send it on its card, or cancel it there, then press Approve all again.");
    page.close();
  });
});

describe("the group bar's note follows the cards", () => {
  test("Submit all with nothing answered, then the cards answered on their own: the note is updated, then gone", async () => {
    const page = await drawReply([DELETE, ASK]);
    bar(page, "nbh-submit-all").click();
    await settle();
    assert.equal(page.fake.actions("batch").length, 0);
    assert.equal(note(page), "Nothing to send yet: answer delete_file, AskUser first (confirmations: use their buttons, or Approve all / Deny all).");
    decided(page, 1, ASK, { action: "answer", answers: [] });
    assert.equal(note(page), "Nothing to send yet: answer delete_file first (confirmations: use their buttons, or Approve all / Deny all).");
    decided(page, 2, DELETE, { action: "approve" });
    assert.equal(note(page), "");
    page.close();
  });

  test("Submit all sends what is filled in as one batch; 'still to answer' goes once that card is answered", async () => {
    const page = await drawReply([DELETE, WRITE]);
    page.control("c1", "nbh-modify")!.click();
    type(page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!, '{"path": "notes.txt"}');
    bar(page, "nbh-submit-all").click();
    await settle();
    assert.deepEqual(page.fake.actions("batch")[0].items, [{ action: "modify", input: '{"path": "notes.txt"}', tool_call_id: "c1", reply_id: "r1" }]);
    assert.equal(note(page), "Sent what is filled in; still to answer: write_file.");
    decided(page, 1, DELETE, { action: "modify", input: '{"path": "notes.txt"}' });
    assert.equal(note(page), "Sent what is filled in; still to answer: write_file.");
    decided(page, 2, WRITE, { action: "approve" });
    assert.equal(note(page), "");
    page.close();
  });
});
