// What a person typed or chose on a card outlives every rebuild of it
// (reply/card_typed.ts): "Sending…", the kernel's refusal, the card's own
// refusal before anything is sent, a changed pause view (a new deadline).
// Each field keeps its exact text (what no answer holds too: an un-ticked
// "Other", a number field's "1e", an edit not sent yet), the keyboard its
// place and caret, and the next submit sends exactly what was typed.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle, type Answerer } from "./fake_model";
import { drawReply, liveKernel, pause, samplingView, tick, typeInto, type Page } from "./page";
import type { PauseView, SamplingView } from "../types";

const dom = installDom();
after(() => dom.window.close());

const DECISIONS = ["approve", "deny", "modify", "answer", "submit", "accept", "edit", "reject"];

/** A live kernel that leaves every decision unanswered (its card says "Sending…") until the test answers it. */
const holding: Answerer = (m) => (DECISIONS.includes(m.action) ? null : liveKernel(m));

/** The kernel answers the last `action` sent: a refusal of `field` with `error`, or (no error) taken. */
async function answer(page: Page, action: string, error?: string, field = ""): Promise<void> {
  const m = page.fake.actions(action).at(-1)!;
  page.fake.emit(error ? { request_id: m.request_id, ok: false, error, code: "refused", field } : { request_id: m.request_id, ok: true, status: "decided" });
  await settle();
}

/** Every `action` sent for card c1, without the ids the page adds. */
function sent(page: Page, action: string): Record<string, unknown>[] {
  return page.fake.actions(action).map(({ request_id: _r, tool_call_id: _t, reply_id: _p, ...rest }) => rest);
}

/** The kernel sends card c1's view again with `over` (a new deadline rebuilds the card). */
async function viewChanges(page: Page, view: PauseView, over: Partial<PauseView>, seq = 1): Promise<void> {
  page.fake.emit({ type: "nbh_cards", seq, ops: [{ op: "card", view: { ...view, ...over } }] });
  await settle();
}

const sending = (page: Page) => /Sending…/.test(page.card("c1").textContent || "");
const error = (page: Page) => page.control("c1", "nbh-error")?.textContent;

const SAMPLING = samplingView({
  messages: [
    { role: "user", text: "Summarize the table." },
    { role: "assistant", text: "Which table?" },
  ],
});

describe("what was typed outlives every rebuild of its card", () => {
  test("a review's edit: through Sending… and the kernel's refusal, then sent exactly", async () => {
    const page = await drawReply([pause({ kind: "review", tool_name: "lookup", review_output: "card 4111 1111 1111 1111" })], {}, holding);
    const area = () => page.control<HTMLTextAreaElement>("c1", "nbh-review-output")!;
    typeInto(area(), "card XXXX XXXX\n");
    page.control("c1", "nbh-review-edit")!.click();
    await settle();
    assert.ok(sending(page));
    assert.equal(area().value, "card XXXX XXXX\n", "the card says Sending… over what is being sent");
    assert.equal(area().disabled, true);
    await answer(page, "edit", "The edited result is too long for the model.", "output");
    assert.equal(error(page), "The edited result is too long for the model.");
    assert.equal(area().value, "card XXXX XXXX\n");
    assert.equal(area().disabled, false);
    page.control("c1", "nbh-review-edit")!.click();
    assert.deepEqual(sent(page, "edit"), [
      { action: "edit", output: "card XXXX XXXX\n" },
      { action: "edit", output: "card XXXX XXXX\n" },
    ]);
    page.close();
  });

  test("a sampling request's edited messages: through the kernel's refusal, then sent exactly", async () => {
    const page = await drawReply([pause({ kind: "sampling", tool_name: "mcp__db__summarize", sampling: SAMPLING })], {}, holding);
    const message = (i: number) => page.control<HTMLTextAreaElement>("c1", `nbh-sampling-message-${i}`)!;
    typeInto(message(0), "Summarize the table in French.");
    typeInto(message(1), "The sales table.");
    typeInto(page.control<HTMLInputElement>("c1", "nbh-sampling-reason")!, "not yet");
    page.control("c1", "nbh-sampling-edit")!.click();
    await settle();
    assert.ok(sending(page));
    await answer(page, "edit", "Message 2: an assistant message cannot be edited here.", "messages");
    assert.equal(error(page), "Message 2: an assistant message cannot be edited here.");
    assert.deepEqual([message(0).value, message(1).value], ["Summarize the table in French.", "The sales table."]);
    assert.equal(page.control<HTMLInputElement>("c1", "nbh-sampling-reason")!.value, "not yet", "a field no answer holds is kept too");
    page.control("c1", "nbh-sampling-edit")!.click();
    assert.deepEqual(sent(page, "edit").at(-1), { action: "edit", messages: ["Summarize the table in French.", "The sales table."] });
    page.close();
  });

  test("a sampling answer's edit and its opened 'What the model was asked': through the kernel's refusal", async () => {
    const completion: SamplingView = { ...SAMPLING, stage: "completion", completion: "The table has 3 rows." };
    const page = await drawReply([pause({ kind: "sampling", tool_name: "mcp__db__summarize", sampling: completion })], {}, holding);
    const area = () => page.control<HTMLTextAreaElement>("c1", "nbh-sampling-completion")!;
    const asked = () => page.control<HTMLDetailsElement>("c1", "nbh-sampling-asked")!;
    asked().open = true;
    typeInto(area(), "The table has 4 rows.");
    page.control("c1", "nbh-sampling-edit")!.click();
    await settle();
    await answer(page, "edit", "The server is gone.");
    assert.equal(area().value, "The table has 4 rows.");
    assert.equal(asked().open, true);
    page.control("c1", "nbh-sampling-edit")!.click();
    assert.deepEqual(sent(page, "edit").at(-1), { action: "edit", output: "The table has 4 rows." });
    page.close();
  });

  test("a form's number field whose text is not a number yet: through the card's own refusal, then sent as completed", async () => {
    const schema = { type: "object", properties: { amount: { type: "number", title: "Amount" }, note: { type: "string", maxLength: 40, title: "Note" } } };
    const page = await drawReply([pause({ kind: "form", tool_name: "AskForm", response_schema: schema })], {}, holding);
    const amount = () => page.card("c1").querySelector<HTMLInputElement>('[data-field="amount"]')!;
    typeInto(amount(), "1e");
    typeInto(page.card("c1").querySelector<HTMLInputElement>('[data-field="note"]')!, "rounded");
    page.control("c1", "nbh-form-submit")!.click();
    await settle();
    assert.deepEqual(sent(page, "submit"), [], "nothing is sent: the page says what is wrong");
    assert.equal(page.control("c1", "nbh-field-error")!.textContent, "Amount: not a number");
    assert.equal(amount().value, "1e", "the text the person is typing stays, to be completed");
    assert.equal(amount().getAttribute("aria-invalid"), "true");
    typeInto(amount(), "1e3");
    page.control("c1", "nbh-form-submit")!.click();
    assert.deepEqual(sent(page, "submit"), [{ action: "submit", value: { amount: 1000, note: "rounded" } }]);
    page.close();
  });

  test("an AskUser 'Other' text typed but not ticked: through Sending… and the kernel's refusal, with its note", async () => {
    const ask_user = {
      questions: [
        { question: "Which file?", header: "File", options: [{ label: "a.txt", description: "" }, { label: "b.txt", description: "" }] },
        { question: "Why?", header: "Why", options: [{ label: "tidy", description: "" }] },
      ],
    };
    const page = await drawReply([pause({ kind: "ask_user", tool_name: "AskUser", ask_user })], {}, holding);
    const question = (i: number) => page.card("c1").querySelectorAll<HTMLElement>('[data-testid="nbh-question"]')[i];
    const option = (q: number, i: number) => question(q).querySelectorAll<HTMLInputElement>('[data-testid="nbh-option-input"]')[i];
    const other = (q: number) => question(q).querySelector<HTMLInputElement>('[data-testid="nbh-other-text"]')!;
    const otherTicked = (q: number) => question(q).querySelector<HTMLInputElement>('[data-testid="nbh-other-toggle"]')!.checked;
    const note = () => question(0).querySelector<HTMLElement>('[data-testid="nbh-other-kept"]')!;
    typeInto(other(0), "c.txt, please");
    tick(option(0, 0)); // then a.txt is picked: the Other text is kept, not sent
    assert.equal(note().hidden, false);
    page.control("c1", "nbh-answer-submit")!.click();
    await settle();
    assert.ok(sending(page));
    await answer(page, "answer", "Choose an option for 'Why?' or write an answer.", "answers.1");
    assert.equal(question(1).querySelector('[data-testid="nbh-error"]')!.textContent, "Choose an option for 'Why?' or write an answer.");
    assert.equal(other(0).value, "c.txt, please");
    assert.equal(option(0, 0).checked, true);
    assert.equal(otherTicked(0), false, "putting the text back does not tick Other: the person had not");
    assert.equal(note().hidden, false);
    assert.match(note().textContent!, /Your "Other" answer is kept but not sent: "c\.txt, please"/);
    // the person now means their Other answer
    tick(question(0).querySelector<HTMLInputElement>('[data-testid="nbh-other-toggle"]')!);
    tick(option(1, 0));
    page.control("c1", "nbh-answer-submit")!.click();
    assert.deepEqual(sent(page, "answer").at(-1), {
      action: "answer",
      answers: [
        { question: "Which file?", selected: [], other: "c.txt, please" },
        { question: "Why?", selected: ["tidy"], other: null },
      ],
    });
    page.close();
  });

  test("a deny reason: through a new deadline (focus and caret stay), Sending… and the kernel's refusal, then sent exactly", async () => {
    const view = pause();
    const page = await drawReply([view], {}, holding);
    page.control("c1", "nbh-deny-reason-open")!.click();
    const reason = () => page.control<HTMLTextAreaElement>("c1", "nbh-deny-reason")!;
    typeInto(reason(), "not on a Friday");
    reason().focus();
    reason().setSelectionRange(4, 6);
    const before = reason();
    await viewChanges(page, view, { deadline: Date.now() / 1000 + 600 });
    assert.notEqual(reason(), before, "the card was rebuilt");
    assert.equal(reason().value, "not on a Friday");
    assert.equal(document.activeElement, reason());
    assert.deepEqual([reason().selectionStart, reason().selectionEnd], [4, 6]);
    page.control("c1", "nbh-deny-submit")!.click();
    await settle();
    assert.ok(sending(page));
    await answer(page, "deny", "The reason is too long.");
    assert.equal(reason().value, "not on a Friday");
    page.control("c1", "nbh-deny-submit")!.click();
    assert.deepEqual(sent(page, "deny"), [
      { action: "deny", reason: "not on a Friday" },
      { action: "deny", reason: "not on a Friday" },
    ]);
    page.close();
  });

  test("a Modify edit: through a new deadline (focus and caret stay) and the kernel's refusal, then sent exactly", async () => {
    const view = pause({ input_text: '{"command": "ls"}' });
    const page = await drawReply([view], {}, holding);
    page.control("c1", "nbh-modify")!.click();
    const area = () => page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!;
    typeInto(area(), '{"command": "ls -la"');
    area().focus();
    area().setSelectionRange(13, 19, "backward");
    await viewChanges(page, view, { deadline: Date.now() / 1000 + 600 });
    assert.equal(area().value, '{"command": "ls -la"');
    assert.equal(document.activeElement, area());
    assert.deepEqual([area().selectionStart, area().selectionEnd, area().selectionDirection], [13, 19, "backward"]);
    page.control("c1", "nbh-modify-submit")!.click();
    await settle();
    await answer(page, "modify", "The edited input is not valid JSON: Expecting ',' delimiter.", "input");
    assert.equal(area().value, '{"command": "ls -la"');
    typeInto(area(), area().value + "}");
    page.control("c1", "nbh-modify-submit")!.click();
    assert.deepEqual(sent(page, "modify").at(-1), { action: "modify", input: '{"command": "ls -la"}' });
    page.close();
  });

  test("a rule's edited content: through the card's own refusal (no rule ticked), then sent exactly", async () => {
    const rule = { index: 0, label: "Bash(ls:*)", tool_name: "Bash", rule_content: "ls:*", behavior: "allow", reach: "any ls command" };
    const page = await drawReply([pause({ suggested_rules: [rule] })], {}, holding);
    page.control("c1", "nbh-always")!.click();
    typeInto(page.control<HTMLInputElement>("c1", "nbh-rule-content")!, "ls -la");
    page.control("c1", "nbh-rules-submit")!.click();
    await settle();
    assert.match(error(page)!, /^No rule is ticked, so nothing was sent/);
    assert.equal(page.control<HTMLInputElement>("c1", "nbh-rule-content")!.value, "ls -la");
    tick(page.control<HTMLInputElement>("c1", "nbh-rule")!);
    assert.equal(error(page), undefined); // the refusal said no rule is ticked: one is now
    page.control("c1", "nbh-rules-submit")!.click();
    assert.deepEqual(sent(page, "approve"), [{ action: "approve", rules: [0], rule_edits: [{ index: 0, rule_content: "ls -la" }] }]);
    page.close();
  });

  test("a card decided elsewhere has nothing to put back, and Cancel on Modify still drops the edit", async () => {
    const view = pause();
    const page = await drawReply([view], {}, holding);
    page.control("c1", "nbh-modify")!.click();
    typeInto(page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!, '{"command": "pwd"}');
    page.control("c1", "nbh-modify-cancel")!.click();
    page.control("c1", "nbh-modify")!.click();
    assert.equal(page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!.value, view.input_text);
    await viewChanges(page, view, { status: "decided", decision: { action: "approve" } });
    assert.equal(page.card("c1").dataset.status, "decided");
    assert.equal(page.card("c1").querySelector("textarea, input"), null);
    page.close();
  });
});
