// The group bar of a reply parked on several calls (reply/group_bar.ts): a
// group action never drops what a person typed on a card (it sends nothing
// and names the card), a batch is one message, and the bar's note is
// recomputed when the cards change.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, pause, typeInto, type Page } from "./page";

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
/** Open the panel of card `id` with `opener` and type `text` in its `field`; the field is returned. */
function fill(page: Page, id: string, opener: string, field: string, text: string): HTMLTextAreaElement {
  page.control(id, opener)!.click();
  const el = page.control<HTMLTextAreaElement>(id, field)!;
  typeInto(el, text);
  return el;
}
/** The kernel took the answer on `view`'s call: its card comes back decided. */
function decided(page: Page, seq: number, view: ReturnType<typeof pause>, decision: Record<string, unknown>): void {
  page.fake.emit({ type: "nbh_cards", seq, ops: [{ op: "card", view: { ...view, status: "decided", decision } }] });
}

describe("a group action never drops what a person typed", () => {
  test("Approve all with an open edit approves that card as edited, in the one batch, and says so before the click", async () => {
    const page = await drawReply([DELETE, WRITE]);
    assert.equal(bar(page, "nbh-approve-all").textContent, "Approve all (2)");
    fill(page, "c1", "nbh-modify", "nbh-modify-input", '{"path": "notes.txt"}');
    assert.equal(bar(page, "nbh-approve-all").textContent, "Approve all (2: delete_file as typed)");
    bar(page, "nbh-approve-all").click();
    await settle();
    assert.equal(page.fake.actions("batch").length, 1);
    assert.deepEqual(page.fake.actions("batch")[0].items, [
      { action: "modify", input: '{"path": "notes.txt"}', tool_call_id: "c1", reply_id: "r1" },
      { action: "approve", tool_call_id: "c3", reply_id: "r1" },
    ]);
    assert.equal(page.fake.actions("approve").length + page.fake.actions("modify").length, 0, "one message, one resume");
    assert.equal(note(page), "");
    page.close();
  });

  test("Deny all with a typed reason denies that card with it; an edit typed back to the model's input holds nothing", async () => {
    const page = await drawReply([DELETE, WRITE]);
    fill(page, "c1", "nbh-deny-reason-open", "nbh-deny-reason", "keep the log, it is evidence");
    const area = fill(page, "c3", "nbh-modify", "nbh-modify-input", '{"path": "y"}');
    typeInto(area, WRITE.input_text); // typed back: nothing held
    assert.equal(bar(page, "nbh-deny-all").textContent, "Deny all (2: delete_file as typed)");
    bar(page, "nbh-deny-all").click();
    await settle();
    assert.deepEqual(page.fake.actions("batch")[0].items, [
      { action: "deny", reason: "keep the log, it is evidence", tool_call_id: "c1", reply_id: "r1" },
      { action: "deny", tool_call_id: "c3", reply_id: "r1" },
    ]);
    page.close();
  });

  test("Approve all while a reason is typed sends nothing and names the card; cancelling it ends the refusal", async () => {
    const page = await drawReply([DELETE, ASK, WRITE]);
    fill(page, "c1", "nbh-deny-reason-open", "nbh-deny-reason", "keep the log");
    bar(page, "nbh-approve-all").click();
    await settle();
    assert.equal(page.fake.actions("batch").length, 0);
    assert.equal(
      note(page),
      "Approve all sent nothing: delete_file has a reason you have not sent. Send it on its card, or cancel it there, then press Approve all again.",
    );
    assert.equal(page.control<HTMLTextAreaElement>("c1", "nbh-deny-reason")!.value, "keep the log", "kept as typed");
    page.control("c1", "nbh-deny-cancel")!.click();
    assert.equal(note(page), "", "the refusal is no longer true once the reason is cancelled");
    bar(page, "nbh-approve-all").click();
    await settle();
    assert.deepEqual(
      (page.fake.actions("batch")[0].items as { action: string; tool_call_id: string }[]).map((i) => [i.action, i.tool_call_id]),
      [["approve", "c1"], ["approve", "c3"]],
    );
    page.close();
  });

  test("Deny all while an edit is open, and ticked rules under either: nothing sent, every such card named", async () => {
    const rule = { index: 0, label: "Bash(ls:*)", tool_name: "Bash", rule_content: "ls:*", behavior: "allow", reach: "any ls command" };
    const page = await drawReply([pause({ tool_call_id: "c1", suggested_rules: [rule] }), WRITE]);
    page.control("c1", "nbh-always")!.click();
    const box = page.control<HTMLInputElement>("c1", "nbh-rule")!;
    box.checked = true;
    box.dispatchEvent(new window.Event("change", { bubbles: true }));
    const area = fill(page, "c3", "nbh-modify", "nbh-modify-input", '{"path": "y"}');
    bar(page, "nbh-deny-all").click();
    await settle();
    assert.equal(page.fake.actions("batch").length, 0);
    assert.equal(
      note(page),
      "Deny all sent nothing: Bash has ticked rules you have not sent; write_file has an edit you have not sent. Send each on its card, or cancel it there, then press Deny all again.",
    );
    typeInto(area, WRITE.input_text); // the edit typed back: only the rules are left to name
    assert.equal(note(page), "Deny all sent nothing: Bash has ticked rules you have not sent. Send it on its card, or cancel it there, then press Deny all again.");
    box.checked = false;
    box.dispatchEvent(new window.Event("change", { bubbles: true }));
    assert.equal(note(page), "");
    page.close();
  });
});

describe("the group bar's note follows the cards", () => {
  test("Submit all with nothing answered, then the cards answered on their own: the note is updated, then gone", async () => {
    const page = await drawReply([DELETE, ASK, WRITE]);
    bar(page, "nbh-submit-all").click();
    await settle();
    assert.equal(page.fake.actions("batch").length, 0);
    assert.equal(note(page), "Nothing to send yet: answer delete_file, AskUser, write_file first (confirmations: use their buttons, or Approve all / Deny all).");
    page.control("c3", "nbh-deny-reason-open")!.click(); // write_file filled in (a denial), not sent
    assert.equal(note(page), "Still to answer: delete_file, AskUser (Submit all sends what is filled in).");
    page.control("c3", "nbh-deny-cancel")!.click();
    decided(page, 1, ASK, { action: "answer", answers: [] });
    assert.equal(note(page), "Nothing to send yet: answer delete_file, write_file first (confirmations: use their buttons, or Approve all / Deny all).");
    decided(page, 2, DELETE, { action: "approve" });
    assert.equal(note(page), "", "one open card is no group: the bar and what it said go");
    assert.equal(page.el.querySelector<HTMLElement>('[data-testid="nbh-group"]')!.hidden, true);
    page.close();
  });

  test("the tester's reply (delete_file and AskUser): answering AskUser on its card ends the Submit all note", async () => {
    const page = await drawReply([DELETE, ASK]);
    bar(page, "nbh-submit-all").click();
    await settle();
    assert.equal(note(page), "Nothing to send yet: answer delete_file, AskUser first (confirmations: use their buttons, or Approve all / Deny all).");
    decided(page, 1, ASK, { action: "answer", answers: [] });
    assert.equal(note(page), "");
    page.close();
  });

  test("Submit all sends what is filled in as one batch; 'still to answer' goes once the group is gone", async () => {
    const page = await drawReply([DELETE, WRITE]);
    fill(page, "c1", "nbh-modify", "nbh-modify-input", '{"path": "notes.txt"}');
    bar(page, "nbh-submit-all").click();
    await settle();
    assert.deepEqual(page.fake.actions("batch")[0].items, [{ action: "modify", input: '{"path": "notes.txt"}', tool_call_id: "c1", reply_id: "r1" }]);
    assert.equal(note(page), "Sent what is filled in; still to answer: write_file.");
    // the batch is answered (the edited card decided): write_file still waits, the note says so while there is a group
    assert.equal(note(page), "Sent what is filled in; still to answer: write_file.");
    decided(page, 1, DELETE, { action: "modify", input: '{"path": "notes.txt"}' });
    assert.equal(note(page), "");
    page.close();
  });
});
