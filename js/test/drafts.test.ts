// What a person typed or chose on a card and has not sent outlives the kernel
// being slow to answer: liveness unknown -> silent -> live and live -> silent
// -> live show over the cards as they stand (reply/card_live.ts), never
// rebuilding one, so every field keeps its text, choices and panels, focus
// and caret stay; while silent the fields take typing, a press of a sending
// button sends nothing and says so; live again, each submit sends exactly
// what was typed.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle, type Answerer } from "./fake_model";
import { drawReply, liveKernel, pause, samplingView, tick, typeInto, type Page } from "./page";
import type { PauseView } from "../types";

const dom = installDom();
after(() => dom.window.close());

const RULE = { index: 0, label: "Bash(ls:*)", tool_name: "Bash", rule_content: "ls:*", behavior: "allow", reach: "any ls command" };
const ASK_USER = {
  questions: [
    { question: "Which file?", header: "File", options: [{ label: "a.txt", description: "" }, { label: "b.txt", description: "" }] },
    { question: "Which checks?", header: "Checks", multi_select: true, options: [{ label: "lint", description: "" }, { label: "tests", description: "" }] },
  ],
};
const FORM = {
  type: "object",
  properties: {
    amount: { type: "number", title: "Amount" },
    name: { type: "string", maxLength: 40, title: "Name" },
    urgent: { type: "boolean", title: "Urgent" },
    size: { enum: ["S", "M", "L"], type: "string", title: "Size" },
  },
};
const SAMPLING = samplingView();
const PAUSES: PauseView[] = [
  pause({ tool_call_id: "modify", input_text: '{"command": "ls"}' }),
  pause({ tool_call_id: "rules", suggested_rules: [RULE] }),
  pause({ tool_call_id: "deny" }),
  pause({ tool_call_id: "ask", kind: "ask_user", tool_name: "AskUser", ask_user: ASK_USER }),
  pause({ tool_call_id: "form", kind: "form", tool_name: "AskForm", response_schema: FORM }),
  pause({ tool_call_id: "elicit", kind: "elicitation", tool_name: "mcp__db__ask", response_schema: { type: "object", properties: { city: { type: "string", title: "City" } } } }),
  pause({ tool_call_id: "external", kind: "external", tool_name: "run_here" }),
  pause({ tool_call_id: "review", kind: "review", tool_name: "lookup", review_output: "card 4111 1111 1111 1111" }),
  pause({ tool_call_id: "sampling", kind: "sampling", tool_name: "mcp__db__summarize", sampling: SAMPLING }),
];

/** Wait (real time: the page's own 4 s connect wait and its 3 s recheck) until `cond` holds. */
async function until(cond: () => boolean, ms = 10000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await settle();
}

const field = <E extends HTMLElement>(page: Page, id: string, name: string) => page.card(id).querySelector<E>(`[data-field="${name}"]`)!;
const options = (page: Page, question: number) =>
  Array.from(page.card("ask").querySelectorAll<HTMLFieldSetElement>('[data-testid="nbh-question"]')[question].querySelectorAll<HTMLInputElement>('[data-testid="nbh-option-input"]'));
const others = (page: Page) => Array.from(page.card("ask").querySelectorAll<HTMLInputElement>('[data-testid="nbh-other-text"]'));

/** Every control a person types into or chooses on, by card: they must be these very nodes throughout. */
function controls(page: Page): Element[] {
  return [
    page.control("modify", "nbh-modify-input")!,
    page.control("rules", "nbh-rule")!,
    page.control("rules", "nbh-rule-content")!,
    page.control("deny", "nbh-deny-reason")!,
    ...options(page, 0),
    ...options(page, 1),
    ...others(page),
    ...["amount", "name", "urgent", "size"].map((n) => field(page, "form", n)),
    field(page, "elicit", "city"),
    page.control("external", "nbh-external-output")!,
    page.control("external", "nbh-state-error")!,
    page.control("review", "nbh-review-output")!,
    page.control("review", "nbh-review-reason")!,
    page.control("sampling", "nbh-sampling-message-0")!,
    page.control("sampling", "nbh-sampling-reason")!,
  ];
}

describe("drafts outlive a kernel slow to answer", () => {
  test("typed before and while silent, every field keeps its draft through silent -> live twice, and each submit sends it", async () => {
    let answering = false;
    // a kernel that answers nothing (busy) until `answering`; then a live one whose streams are current
    const kernel: Answerer = (m) => (!answering ? null : m.action.endsWith("_sync") ? { seq: 0, current: true } : liveKernel(m));
    const page = await drawReply(PAUSES, {}, kernel);
    const root = page.el.querySelector<HTMLElement>('[data-testid="nbh-reply"]')!;
    assert.equal(root.dataset.kernel, undefined, "liveness not known yet");

    // typed while liveness is not known: panels opened, text, a choice
    page.control("modify", "nbh-modify")!.click();
    typeInto(page.control<HTMLTextAreaElement>("modify", "nbh-modify-input")!, '{"command": "ls -la"}');
    page.control("rules", "nbh-always")!.click();
    page.control("deny", "nbh-deny-reason-open")!.click();
    tick(options(page, 0)[1]);
    const drawn = controls(page);

    await until(() => root.dataset.kernel === "silent");
    assert.match(page.el.querySelector('[data-testid="nbh-live-banner"]')!.textContent!, /^Not answering: the kernel that ran this reply does not answer/);
    assert.deepEqual(controls(page), drawn, "no card was rebuilt");
    // silent: every field still takes typing; the sending buttons are held, and say why when pressed
    for (const el of drawn) assert.equal((el as HTMLInputElement).disabled, false, el.outerHTML);
    tick(page.control<HTMLInputElement>("rules", "nbh-rule")!);
    typeInto(page.control<HTMLInputElement>("rules", "nbh-rule-content")!, "ls -la");
    typeInto(page.control<HTMLTextAreaElement>("deny", "nbh-deny-reason")!, "not on a Friday");
    typeInto(others(page)[0], "c.txt, please");
    tick(options(page, 1)[0]);
    tick(options(page, 1)[1]);
    typeInto(field<HTMLInputElement>(page, "form", "amount"), "12.5");
    typeInto(field<HTMLInputElement>(page, "form", "name"), "Ada");
    tick(field<HTMLInputElement>(page, "form", "urgent"));
    typeInto(field<HTMLSelectElement>(page, "form", "size"), "2");
    typeInto(field<HTMLInputElement>(page, "elicit", "city"), "Lyon");
    typeInto(page.control<HTMLTextAreaElement>("external", "nbh-external-output")!, "exit 3");
    tick(page.control<HTMLInputElement>("external", "nbh-state-error")!);
    typeInto(page.control<HTMLTextAreaElement>("review", "nbh-review-output")!, "card XXXX");
    typeInto(page.control<HTMLTextAreaElement>("sampling", "nbh-sampling-message-0")!, "Summarize the table in French.");
    const submit = page.control("modify", "nbh-modify-submit")!;
    assert.equal(submit.getAttribute("aria-disabled"), "true");
    assert.equal(page.card("modify").classList.contains("nbh-closed"), true);
    submit.click();
    // Enter in a one-line field presses its card's button: held too
    others(page)[0].dispatchEvent(new window.KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    await settle();
    const notLive = (id: string) => page.control<HTMLElement>(id, "nbh-not-live")!;
    assert.match(notLive("modify").textContent!, /^Nothing was sent: the kernel that ran this reply does not answer\. What you typed stays in this card/);
    assert.equal(notLive("modify").getAttribute("role"), "alert");
    assert.match(notLive("ask").textContent!, /^Nothing was sent/);
    assert.match(notLive("form").textContent!, /^Not answering: the kernel that ran this reply does not answer/);
    const decisions = ["modify", "approve", "deny", "answer", "submit", "accept", "external_result", "edit"];
    assert.deepEqual(page.fake.sent.filter((m) => decisions.includes(m.action)), [], "nothing was sent while silent");

    // the person is in the Modify editor, caret in the middle, when the kernel answers
    const area = page.control<HTMLTextAreaElement>("modify", "nbh-modify-input")!;
    area.focus();
    area.setSelectionRange(5, 9);
    answering = true;
    page.fake.set("status", "paused"); // a message from the kernel: the page checks, and it answers
    await until(() => root.dataset.kernel === "live");
    assert.deepEqual(controls(page), drawn, "no card was rebuilt");
    assert.equal(document.activeElement, area);
    assert.deepEqual([area.selectionStart, area.selectionEnd], [5, 9]);
    assert.equal(notLive("modify").hidden, true);
    assert.equal(submit.hasAttribute("aria-disabled"), false);
    assert.equal(page.card("modify").classList.contains("nbh-open"), true);

    // live -> silent -> live once more (the comm was told of a change; the kernel does not answer the check)
    answering = false;
    page.fake.commLiveUpdate();
    await until(() => root.dataset.kernel === "silent");
    answering = true;
    page.fake.set("status", "paused");
    await until(() => root.dataset.kernel === "live");
    assert.deepEqual(controls(page), drawn, "no card was rebuilt");
    assert.equal(document.activeElement, area);

    // every draft is there, and each submit sends exactly it
    const sent = (action: string, id: string) => {
      const m = page.fake.actions(action).find((x) => x.tool_call_id === id);
      assert.ok(m, `${action} for ${id}`);
      const { request_id: _r, tool_call_id: _t, reply_id: _p, ...rest } = m;
      return rest;
    };
    submit.click();
    page.control("rules", "nbh-rules-submit")!.click();
    page.control("deny", "nbh-deny-submit")!.click();
    page.control("ask", "nbh-answer-submit")!.click();
    page.control("form", "nbh-form-submit")!.click();
    page.control("elicit", "nbh-elicitation-accept")!.click();
    page.control("external", "nbh-external-submit")!.click();
    page.control("sampling", "nbh-sampling-edit")!.click();
    page.control("review", "nbh-review-accept")!.click();
    await settle();
    page.control("review", "nbh-review-send-edit")!.click();
    await settle();
    assert.deepEqual(sent("modify", "modify"), { action: "modify", input: '{"command": "ls -la"}' });
    assert.deepEqual(sent("approve", "rules"), { action: "approve", rules: [0], rule_edits: [{ index: 0, rule_content: "ls -la" }] });
    assert.deepEqual(sent("deny", "deny"), { action: "deny", reason: "not on a Friday" });
    assert.deepEqual(sent("answer", "ask").answers, [
      { question: "Which file?", selected: [], other: "c.txt, please" },
      { question: "Which checks?", selected: ["lint", "tests"], other: null },
    ]);
    assert.deepEqual(sent("submit", "form").value, { amount: 12.5, name: "Ada", urgent: true, size: "L" });
    assert.deepEqual(sent("accept", "elicit").content, { city: "Lyon" });
    assert.deepEqual(sent("external_result", "external"), { action: "external_result", output: "exit 3", state: "error" });
    assert.deepEqual(sent("edit", "sampling"), { action: "edit", messages: ["Summarize the table in French."] });
    assert.deepEqual(sent("edit", "review"), { action: "edit", output: "card XXXX" });
    page.close();
  });

  test("an answer that left before the kernel stopped answering: the card says it waits, not that it can be sent", async () => {
    let answering = true;
    const page = await drawReply([pause()], {}, (m) => (answering && m.action !== "approve" ? liveKernel(m) : null));
    const root = page.el.querySelector<HTMLElement>('[data-testid="nbh-reply"]')!;
    page.control("c1", "nbh-approve")!.click();
    await settle();
    assert.match(page.card("c1").textContent!, /Sending…/);
    answering = false;
    page.fake.commLiveUpdate();
    await until(() => root.dataset.kernel === "silent");
    assert.match(page.control("c1", "nbh-not-live")!.textContent!, /Your answer left this page before it stopped answering: if the kernel is only busy, it applies it when it gets to it\.$/);
    // the kernel gets to it: its answer proves it live, and the card is drawn from it
    const [approve] = page.fake.actions("approve");
    page.fake.emit({ request_id: approve.request_id, ok: true, status: "decided" });
    await settle();
    assert.equal(root.dataset.kernel, "live");
    assert.doesNotMatch(page.card("c1").textContent!, /Sending…/);
    assert.equal(page.control("c1", "nbh-not-live")!.hidden, true);
    page.close();
  });

  test("a kernel gone for good: the card keeps what was typed, and a press says nothing can reach the agent", async () => {
    const page = await drawReply([pause()], {}, () => null);
    page.control("c1", "nbh-modify")!.click();
    const area = page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!;
    typeInto(area, '{"command": "pwd"}');
    page.fake.closeComm();
    await settle();
    assert.equal(page.el.querySelector<HTMLElement>('[data-testid="nbh-reply"]')!.dataset.kernel, "gone");
    assert.equal(page.control("c1", "nbh-modify-input"), area);
    assert.equal(area.value, '{"command": "pwd"}');
    assert.equal(page.control("c1", "nbh-not-live")!.textContent, "No longer live: the kernel that ran this reply is gone.");
    page.control("c1", "nbh-modify-submit")!.click();
    assert.match(page.control("c1", "nbh-not-live")!.textContent!, /^Nothing was sent: the kernel that ran this reply restarted or stopped/);
    assert.deepEqual(page.fake.actions("modify"), []);
    page.close();
  });
});
