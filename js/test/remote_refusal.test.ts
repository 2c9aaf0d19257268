// C22: a remote (AG-UI) server refuses the edited input sent from a
// confirmation's card. The card reopens with the person's edit still in the
// editor (fixed, not retyped) and the refusal said once, at the field.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, liveKernel, pause, samplingView, type Page } from "./page";

const dom = installDom();
after(() => dom.window.close());

const REFUSAL = "The server refused your answer to delete_file. Your edit changes nothing: change it first.";
const EDIT = '{"path": "old_log.txt", "force": true}';

describe("a remote card whose answer the server refused", () => {
  test("the editor keeps the person's edit and the refusal is shown once, at the input", async () => {
    const open = pause({ tool_name: "delete_file", input_text: '{"path": "old_log.txt"}' });
    let page: Page | undefined;
    // what RemoteSession does: the card is decided while the resume is out, then reopened with the
    // server's reason, and the click's answer is the refusal
    page = await drawReply([open], {}, (m) => {
      if (m.action !== "modify") return liveKernel(m);
      const cards = (seq: number, view: object) => ({ type: "nbh_cards", seq, ops: [{ op: "card", view }] });
      page!.fake.emit(cards(1, { ...open, status: "decided", decision: { action: "modify", input: EDIT } }));
      page!.fake.emit(cards(2, { ...open, refused: REFUSAL, reason: REFUSAL }));
      return { refuse: `${REFUSAL} Your other answers are kept; fix this one and answer it again.`, field: "input" };
    });
    page.control("c1", "nbh-modify")!.click();
    await settle();
    const area = page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!;
    area.value = EDIT;
    area.dispatchEvent(new window.Event("input"));
    page.control("c1", "nbh-modify-submit")!.click();
    await settle();
    assert.equal(page.fake.actions("modify").length, 1);
    const card = page.card("c1");
    assert.equal(card.dataset.status, "open");
    assert.equal(page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!.value, EDIT);
    const errors = Array.from(card.querySelectorAll<HTMLElement>('[data-testid="nbh-error"], [data-testid="nbh-refused"]'));
    assert.equal(errors.length, 1);
    assert.equal(errors[0].dataset.field, "input");
    assert.equal(errors[0].textContent, `${REFUSAL} Your other answers are kept; fix this one and answer it again.`);
    assert.equal(page.control<HTMLButtonElement>("c1", "nbh-modify-submit")!.disabled, false);
    page.close();
  });

  test("a card reopened by another card's answer shows the reason and its editor starts from the refused edit", async () => {
    const page = await drawReply([pause({ tool_name: "delete_file", status: "decided", decision: { action: "modify" } })]);
    const reopened = { ...pause({ tool_name: "delete_file" }), refused: REFUSAL, refused_answer: { action: "modify", input: EDIT } };
    page.fake.emit({ type: "nbh_cards", seq: 1, ops: [{ op: "card", view: reopened }] });
    await settle();
    assert.equal(page.control("c1", "nbh-refused")!.textContent, REFUSAL);
    page.control("c1", "nbh-modify")!.click();
    await settle();
    assert.equal(page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!.value, EDIT);
    page.close();
  });

  test("a review and an MCP sampling card reopened after a refusal start from the edit that was sent", async () => {
    const sampling = samplingView({ messages: [{ role: "user", text: "Summarize." }, { role: "user", text: "Briefly." }] });
    const review = pause({ tool_call_id: "r", kind: "review", tool_name: "lookup", review_output: "card 4111" });
    const ask = pause({ tool_call_id: "s", kind: "sampling", tool_name: "mcp__db__summarize", sampling });
    const page = await drawReply([
      { ...review, status: "decided", decision: { action: "edit" } },
      { ...ask, status: "decided", decision: { action: "edit" } },
    ]);
    const ops = [
      { op: "card", view: { ...review, refused: REFUSAL, refused_answer: { action: "edit", output: "card XXXX" } } },
      { op: "card", view: { ...ask, refused: REFUSAL, refused_answer: { action: "edit", messages: ["Summarize in French.", "Briefly."] } } },
    ];
    page.fake.emit({ type: "nbh_cards", seq: 1, ops });
    await settle();
    assert.equal(page.control<HTMLTextAreaElement>("r", "nbh-review-output")!.value, "card XXXX");
    assert.equal(page.control<HTMLTextAreaElement>("s", "nbh-sampling-message-0")!.value, "Summarize in French.");
    assert.equal(page.control<HTMLTextAreaElement>("s", "nbh-sampling-message-1")!.value, "Briefly.");
    page.close();
  });
});
