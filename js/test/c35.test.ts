// C35: a pause view whose data is malformed (no schema, options of the wrong
// type, an unknown kind...) never throws in the page and never leaves
// "waiting for you" over zero cards: the one check (reply/view_check.ts)
// turns it into a card that says what is wrong, with a cancel action.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, pause } from "./page";
import { checkView } from "../reply/view_check";
import { CardFeed } from "../reply/feed";
import { Rpc } from "../lib/rpc";
import type { ReplyProtocol } from "../messages";

const dom = installDom();
after(() => dom.window.close());

/** A remote (AG-UI) interrupt's view as nb_hitl/agui/mapping.py builds it (fewer keys than a local one). */
function remoteView(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    tool_call_id: "call-9",
    interrupt_id: "int-9",
    reply_id: "run-1",
    kind: "form",
    tool_name: "pick_date",
    input_text: "",
    input_schema: null,
    permission_message: null,
    decision_reason: null,
    bypass_immune: false,
    suggested_rules: [],
    ask_user: null,
    ask_user_error: null,
    response_schema: { type: "object", properties: { day: { type: "string", format: "date" } } },
    deadline: null,
    policy: null,
    status: "open",
    decision: null,
    reason: null,
    title: "Pick a day",
    message: null,
    review_output: null,
    review_state: null,
    review_error: null,
    form_error: null,
    elicitation_url: null,
    sampling: null,
    ...over,
  };
}

describe("checkView", () => {
  test("a well-formed view passes as it is", () => {
    const view = pause({ suggested_rules: [{ index: 0, label: "Bash(ls:*)", tool_name: "Bash", rule_content: "ls:*", behavior: "allow", reach: "", reach_html: null }] });
    assert.deepEqual(checkView(view, "#1"), { view, problem: null, remote: false, named: true });
  });

  test("a remote view: missing keys take their empty value, and it is marked remote", () => {
    const checked = checkView(remoteView(), "#1");
    assert.equal(checked.problem, null);
    assert.equal(checked.remote, true);
    assert.deepEqual([checked.view.decisions, checked.view.input_changes, checked.view.agent, checked.view.sent_text], [[], [], "", null]);
  });

  test("a remote confirmation's suggested rules carry only index and label (nb_hitl/kinds/confirm.py view_fields)", () => {
    const checked = checkView(remoteView({ kind: "confirm", response_schema: null, suggested_rules: [{ index: 0, label: "allow delete_file" }] }), "#1");
    assert.equal(checked.problem, null);
    assert.deepEqual(checked.view.suggested_rules, [{ index: 0, label: "allow delete_file", tool_name: "", rule_content: null, behavior: "", reach: "", reach_html: null }]);
  });

  test("each malformed shape is named", () => {
    const problem = (over: Record<string, unknown>) => checkView(remoteView(over), "#1").problem;
    assert.equal(problem({ response_schema: null }), "the form has no schema");
    assert.equal(problem({ response_schema: { properties: ["day"] } }), "the form's schema has properties that are not an object");
    assert.match(problem({ kind: "poll" })!, /^kind "poll" is not one of confirm, ask_user/);
    assert.match(problem({ status: undefined })!, /^status is missing/);
    assert.equal(problem({ title: 7 }), "title is not text");
    assert.equal(problem({ kind: "ask_user", ask_user: { questions: [{ question: "Which?", header: "", options: "a,b" }] } }), "ask_user question 1 has no options (each with a label)");
    assert.equal(problem({ kind: "ask_user", ask_user: { questions: [] } }), "ask_user has no questions");
    assert.equal(problem({ kind: "ask_user", ask_user: null }), "ask_user has no questions");
    assert.equal(problem({ kind: "confirm", suggested_rules: [{ index: "0" }] }), "suggested_rules are not well formed");
    assert.equal(problem({ tool_call_id: undefined }), "tool_call_id is missing");
  });

  test("what the kernel already reports is its card's business, not a problem", () => {
    assert.equal(checkView(remoteView({ response_schema: null, form_error: "bad schema", unanswerable: true }), "#1").problem, null);
    assert.equal(checkView(pause({ kind: "ask_user", ask_user: null, ask_user_error: "questions.0: missing" }), "#1").problem, null);
  });

  test("not an object at all", () => {
    const checked = checkView("nonsense", "#2");
    assert.equal(checked.problem, "the card's data is not an object");
    assert.equal(checked.view.tool_call_id, "#2");
    assert.equal(checked.named, false);
  });
});

describe("C35 malformed cards on the page", () => {
  test("c35 a remote form without a schema: a card says so and Cancel sends cancel for that interrupt", async () => {
    const page = await drawReply([remoteView({ response_schema: null })]);
    const card = page.card("call-9");
    assert.equal(card.dataset.invalid, "");
    assert.equal(card.querySelector(".nbh-chip")!.textContent, "Cannot be shown");
    assert.equal(page.control("call-9", "nbh-card-invalid")!.textContent, "This card cannot be shown: the form has no schema.");
    assert.equal(page.control("call-9", "nbh-form-submit"), null);
    assert.equal(page.status(), "waiting for you");
    page.control("call-9", "nbh-cancel")!.click();
    await settle();
    const sent = page.fake.actions("cancel");
    assert.deepEqual({ ...sent[0], request_id: "" }, { action: "cancel", tool_call_id: "call-9", reply_id: "run-1", request_id: "" });
    page.close();
  });

  test("c35 options of the wrong type arriving as a card op: no page error, the kernel's text is shown", async () => {
    const page = await drawReply([]);
    const bad = remoteView({ kind: "ask_user", response_schema: null, ask_user: { questions: [{ question: "Which?", options: { a: 1 } }] }, ask_user_error: "options must be a list" });
    page.fake.emit({ type: "nbh_cards", seq: 1, ops: [{ op: "card", view: bad }] });
    assert.equal(page.cards().length, 1);
    assert.equal(page.control("call-9", "nbh-card-invalid")!.textContent, "This card cannot be shown: ask_user question 1 has no options (each with a label).options must be a list");
    assert.equal(page.control("call-9", "nbh-card-invalid-kernel")!.textContent, "options must be a list");
    assert.ok(page.control("call-9", "nbh-cancel"));
    page.close();
  });

  test("c35 an unknown kind is not drawn as an external tool", async () => {
    const page = await drawReply([remoteView({ kind: "poll" })]);
    assert.equal(page.control("call-9", "nbh-external-submit"), null);
    assert.match(page.control("call-9", "nbh-card-invalid")!.textContent!, /kind "poll"/);
    page.close();
  });

  test("c35 a local malformed confirmation is cancelled by a denial telling the model why, and is left out of Approve all", async () => {
    const page = await drawReply([pause(), pause({ tool_call_id: "c2", suggested_rules: "x" as never })]);
    assert.equal(page.el.querySelector<HTMLElement>('[data-testid="nbh-group"]')!.hidden, true, "one answerable card: no group actions");
    assert.equal(page.control("c2", "nbh-approve"), null);
    page.control("c2", "nbh-cancel")!.click();
    await settle();
    const deny = page.fake.actions("deny")[0];
    assert.equal(deny.tool_call_id, "c2");
    assert.equal(deny.reason, "The user could not answer: the card for this call could not be shown (suggested_rules are not well formed).");
    page.close();
  });

  test("c35 a record that is not a list of views: no page error, and what cannot be named cannot be sent", async () => {
    const page = await drawReply([null, "x"]);
    assert.equal(page.cards().length, 2);
    assert.equal(page.control("#1", "nbh-cancel"), null);
    assert.match(page.card("#1").textContent!, /use Interrupt above/);
    page.close();
    const none = await drawReply({} as unknown as unknown[], { status: "running" });
    assert.equal(none.cards().length, 0);
    none.fake.set("status", "paused"); // the "waiting" notification reads the checked cards
    assert.equal(none.status(), "paused (no card to answer has arrived)");
    none.close();
  });

  test("c35 never 'waiting for you' over zero cards", async () => {
    const page = await drawReply([]);
    assert.equal(page.status(), "paused (no card to answer has arrived)");
    assert.equal(document.title, "notebook", "the title is not marked");
    page.fake.emit({ type: "nbh_cards", seq: 1, ops: [{ op: "card", view: pause() }] });
    assert.equal(page.status(), "waiting for you");
    assert.equal(document.title, "● notebook");
    page.fake.emit({ type: "nbh_cards", seq: 2, ops: [{ op: "card", view: pause({ status: "decided", decision: { action: "approve" } }) }] });
    assert.equal(page.status(), "paused (no card to answer has arrived)");
    assert.equal(document.title, "notebook");
    page.close();
  });

  test("c35 the saved record keeps what the kernel sent", async () => {
    const raw = remoteView({ response_schema: null });
    const page = await drawReply([]);
    const feed = new CardFeed(page.fake.model, new Rpc<ReplyProtocol>(page.fake.model), () => undefined);
    page.fake.emit({ type: "nbh_cards", seq: 1, ops: [{ op: "card", view: raw }] });
    assert.equal(feed.get("call-9")?.title, "Pick a day");
    feed.saveNow();
    assert.deepEqual(page.fake.get("pauses"), [raw]);
    assert.equal(page.fake.get("cards_seq"), 1);
    feed.dispose();
    page.close();
  });
});

describe("C35 a view mended by a later card op", () => {
  test("c35 the card is drawn again as its kind once its view fits", async () => {
    const page = await drawReply([remoteView({ response_schema: null })]);
    assert.ok(page.control("call-9", "nbh-card-invalid"));
    page.fake.emit({ type: "nbh_cards", seq: 1, ops: [{ op: "card", view: remoteView() }] });
    assert.equal(page.control("call-9", "nbh-card-invalid"), null);
    assert.ok(page.control("call-9", "nbh-form-submit"));
    page.close();
  });
});
