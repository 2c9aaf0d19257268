// MCP sampling cards (reply/cards/sampling.ts): the server's request and the
// model's answer shown as text; Approve, an edit and Deny go the one road of
// every answer (approve / edit / deny); a malformed request is an invalid card.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, pause } from "./page";
import { decisionText } from "../reply/record";
import type { SamplingView } from "../types";

const dom = installDom();
after(() => dom.window.close());

const HOSTILE = '<img src=x onerror="alert(1)">';

function request(over: Partial<SamplingView> = {}): SamplingView {
  return {
    stage: "request",
    messages: [{ role: "user", text: `Summarize ${HOSTILE}` }],
    system_prompt: `You summarize. ${HOSTILE}`,
    model_hints: ["small"],
    priorities: { speed: 0.8 },
    max_tokens: 50,
    temperature: 0.2,
    stop_sequences: [],
    include_context: null,
    completion: null,
    model: null,
    settings_note: `Applied to the notebook's model (OpenAIChatModel): max tokens, temperature. ${HOSTILE}`,
    error: null,
    ...over,
  };
}

const sent = (page: Awaited<ReturnType<typeof drawReply>>, action: string) =>
  page.fake.actions(action).map((m) => ({ ...m, request_id: "", tool_call_id: "", reply_id: "" }));

describe("the sampling request card", () => {
  test("the request is text: messages, system prompt, settings; nothing is markup", async () => {
    const page = await drawReply([pause({ kind: "sampling", tool_name: "mcp__db__summarize_table", sampling: request() })]);
    const card = page.card("c1");
    assert.equal(card.querySelector("img"), null);
    assert.equal(page.control<HTMLTextAreaElement>("c1", "nbh-sampling-message-0")!.value, `Summarize ${HOSTILE}`);
    assert.equal(page.control("c1", "nbh-sampling-system")!.textContent, `You summarize. ${HOSTILE}`);
    const settings = page.control("c1", "nbh-sampling-settings")!.textContent!;
    for (const part of ["Model hints: small", "Priorities: speed 0.8", "Max tokens: 50", "Temperature: 0.2"]) assert.ok(settings.includes(part), part);
    // which settings the notebook's model takes is the kernel's sentence, shown as text
    assert.equal(page.control("c1", "nbh-sampling-applied")!.textContent, `Applied to the notebook's model (OpenAIChatModel): max tokens, temperature. ${HOSTILE}`);
    assert.ok(!settings.includes("not applied"));
    page.close();
  });
  test("Approve sends approve; an edit sends the text of each message", async () => {
    const page = await drawReply([pause({ kind: "sampling", sampling: request() })]);
    page.control("c1", "nbh-sampling-approve")!.click();
    await settle();
    assert.deepEqual(sent(page, "approve"), [{ action: "approve", request_id: "", tool_call_id: "", reply_id: "" }]);
    page.close();
    const again = await drawReply([pause({ kind: "sampling", sampling: request() })]);
    const area = again.control<HTMLTextAreaElement>("c1", "nbh-sampling-message-0")!;
    area.value = "Summarize, no names.";
    again.control("c1", "nbh-sampling-approve")!.click(); // an edit is not thrown away without a word
    await settle();
    assert.equal(again.fake.actions("approve").length, 0);
    again.control("c1", "nbh-sampling-send-edit")!.click();
    await settle();
    assert.deepEqual(sent(again, "edit"), [{ action: "edit", messages: ["Summarize, no names."], request_id: "", tool_call_id: "", reply_id: "" }]);
    again.close();
  });
  test("Deny sends deny with the reason", async () => {
    const page = await drawReply([pause({ kind: "sampling", sampling: request() })]);
    page.control<HTMLInputElement>("c1", "nbh-sampling-reason")!.value = "not today";
    page.control("c1", "nbh-sampling-deny")!.click();
    await settle();
    assert.deepEqual(sent(page, "deny"), [{ action: "deny", reason: "not today", request_id: "", tool_call_id: "", reply_id: "" }]);
    page.close();
  });
  test("a request that cannot be sent leaves only Deny", async () => {
    const page = await drawReply([pause({ kind: "sampling", sampling: request(), form_error: "Message 1 holds image content." })]);
    assert.match(page.control("c1", "nbh-sampling-invalid")!.textContent!, /image content/);
    assert.equal(page.control("c1", "nbh-sampling-approve"), null);
    assert.ok(page.control("c1", "nbh-sampling-deny"));
    page.close();
  });
  test("a malformed request is drawn as an invalid card", async () => {
    const bad = { ...request(), messages: [{ role: "user", text: 3 }] } as unknown as SamplingView;
    const page = await drawReply([pause({ kind: "sampling", sampling: bad })]);
    assert.equal(page.control("c1", "nbh-sampling-approve"), null);
    assert.match(page.card("c1").textContent!, /sampling is not a well-formed sampling request/);
    page.close();
  });
});

describe("the sampling completion card", () => {
  test("the answer is editable text; an edit sends output", async () => {
    const s = request({ stage: "completion", completion: `3 rows ${HOSTILE}`, model: "scripted" });
    const page = await drawReply([pause({ kind: "sampling", sampling: s })]);
    assert.equal(page.card("c1").querySelector("img"), null);
    const area = page.control<HTMLTextAreaElement>("c1", "nbh-sampling-completion")!;
    assert.equal(area.value, `3 rows ${HOSTILE}`);
    area.value = "3 rows.";
    page.control("c1", "nbh-sampling-edit")!.click();
    await settle();
    assert.deepEqual(sent(page, "edit"), [{ action: "edit", output: "3 rows.", request_id: "", tool_call_id: "", reply_id: "" }]);
    page.close();
  });
  test("a model that failed on an approved request is said on its card, as text", async () => {
    const failed = `The notebook's model (fake-model) failed: AuthenticationError: 401 ${HOSTILE} The model server refused the API key (401).`;
    const s = request({ error: failed });
    const page = await drawReply([pause({ kind: "sampling", sampling: s, status: "delivered", decision: { action: "approve" } })]);
    assert.equal(page.card("c1").querySelector("img"), null);
    assert.equal(page.control("c1", "nbh-sampling-error")!.textContent, failed);
    assert.equal(page.control("c1", "nbh-sampling-approve"), null);
    page.close();
  });
  test("the record says what the server got", () => {
    const done = (stage: "request" | "completion") => ({ kind: "sampling" as const, sampling: request({ stage }) });
    assert.equal(decisionText({ action: "approve" }, done("request")), "Approved: the notebook's model was called");
    assert.equal(decisionText({ action: "approve" }, done("completion")), "Approved: the completion was sent to the MCP server");
    assert.equal(decisionText({ action: "deny", cause: "timeout" }, done("request")), "Not answered before the deadline: the request was refused, the MCP server got an error");
    assert.equal(decisionText({ action: "deny", reason: "not today" }, done("completion")), "Denied: the completion was refused, the MCP server got an error with your reason: not today");
  });
});

describe("a sampling record after an edit", () => {
  test("shows the text the MCP server got (as text) beside the model's answer", async () => {
    const s = request({ stage: "completion", completion: "3 rows, one named Ana.", model: "scripted" });
    const edited = `3 rows. ${HOSTILE}`;
    const page = await drawReply([pause({ kind: "sampling", sampling: s, status: "delivered", decision: { action: "edit", content: { text: edited } } })]);
    const card = page.card("c1");
    assert.equal(card.querySelector("img"), null);
    assert.equal(page.control("c1", "nbh-sampling-answer")!.textContent, "3 rows, one named Ana.");
    assert.equal(page.control("c1", "nbh-sampling-sent")!.textContent, edited);
    assert.equal(page.control("c1", "nbh-decision")!.textContent, "Edited: your text was sent to the MCP server");
    page.close();
  });
  test("an edited request shows the messages the model was asked: the kernel's {role, text} or a remote answer's texts", async () => {
    for (const messages of [[{ role: "user", text: `No names. ${HOSTILE}` }], [`No names. ${HOSTILE}`]]) {
      const page = await drawReply([pause({ kind: "sampling", sampling: request(), status: "delivered", decision: { action: "edit", content: { messages } } })]);
      const sent = page.control("c1", "nbh-sampling-sent")!;
      assert.equal(page.card("c1").querySelector("img"), null);
      assert.equal(sent.querySelector("pre")!.textContent, `No names. ${HOSTILE}`);
      assert.ok(sent.textContent!.includes("user"));
      page.close();
    }
  });
  test("an approved completion shows no edit", async () => {
    const s = request({ stage: "completion", completion: "3 rows.", model: "scripted" });
    const page = await drawReply([pause({ kind: "sampling", sampling: s, status: "delivered", decision: { action: "approve" } })]);
    assert.equal(page.control("c1", "nbh-sampling-sent"), null);
    page.close();
  });
});

describe("cards an MCP server raised during a tool call", () => {
  const entries = [
    { kind: "tool_call", id: "call:t1", text: '{"table": "users"}', name: "mcp__db__summarize_table", tool_call_id: "t1" },
    { kind: "tool_result", id: "result:t1", text: "3 rows", name: "mcp__db__summarize_table", tool_call_id: "t1", state: "success" },
    { kind: "step", id: "step:2", text: "", state: "done", elapsed: 0.1 },
    { kind: "text", id: "b2", text: "The table has 3 rows." },
  ];
  const cards = [
    pause({ tool_call_id: "t1~sampling-1", kind: "sampling", sampling: request(), status: "delivered", decision: { action: "approve" }, parent_tool_call_id: "t1" }),
    pause({ tool_call_id: "t1~elicitation-1", kind: "elicitation", title: "The MCP server 'db' asks", message: "Which schema?", response_schema: { type: "object", properties: {} }, status: "delivered", decision: { action: "decline" }, parent_tool_call_id: "t1" }),
  ];
  test("are drawn in that call's entry, in order, before its result; the call's input stays shown", async () => {
    // a finished reply (or one reloaded): the transcript and the cards come together
    const page = await drawReply(cards, { transcript: entries as never, status: "done" });
    const call = page.el.querySelector<HTMLElement>('[data-testid="nbh-tool-call"]')!;
    const inCall = Array.from(call.querySelectorAll<HTMLElement>('[data-testid="nbh-card"]')).map((c) => c.dataset.toolCallId);
    assert.deepEqual(inCall, ["t1~sampling-1", "t1~elicitation-1"]);
    const result = page.el.querySelector('[data-testid="nbh-tool-result"]')!;
    assert.ok(call.compareDocumentPosition(result) & dom.window.Node.DOCUMENT_POSITION_FOLLOWING, "the result comes after the call and its cards");
    assert.equal(call.querySelector<HTMLElement>(".nbh-pre")!.hidden, false);
    page.close();
  });
  test("a card that came before its call's entry moves in once the entry streams in", async () => {
    const page = await drawReply([cards[1]], { transcript: [] as never });
    assert.equal(page.el.querySelector('[data-testid="nbh-tool-call"]'), null);
    page.fake.set("transcript", entries.slice(0, 1) as never);
    await settle();
    const call = page.el.querySelector<HTMLElement>('[data-testid="nbh-tool-call"]')!;
    assert.equal(call.querySelector<HTMLElement>('[data-testid="nbh-card"]')?.dataset.toolCallId, "t1~elicitation-1");
    page.close();
  });
});
