// Small faults a newcomer met on the cards, each drawn as the page draws it:
// placeholders cut off, an expired question that no longer showed what it
// asked, a rule's reach with raw Markdown backticks, a Modify box too short
// for real inputs, an invalid-JSON refusal said twice, a team's name badge on
// a line of its own.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, liveKernel, pause, samplingView, typeInto } from "./page";
import { h, placeholderSize } from "../lib/dom";
import type { TranscriptEntry } from "../types";

const dom = installDom();
after(() => dom.window.close());

const QUESTIONS = {
  questions: [
    {
      question: "Which file should I archive?",
      header: "File",
      context: "Two logs are old.",
      options: [
        { label: "old_log.txt", description: "last written in 2023" },
        { label: "<img src=x onerror=alert(1)>", description: "" },
      ],
      multi_select: false,
    },
  ],
};

describe("placeholders", () => {
  test("a box with a placeholder is as wide as it (in characters); a box given its own size keeps it", () => {
    const hint = "Reason (optional, the server and the model read it)";
    assert.equal(h("input", { type: "text", placeholder: hint }).size, hint.length + 1);
    assert.equal(h("input", { type: "text", placeholder: "x" }).size, 20, "never narrower than the browser's default box");
    assert.equal(h("input", { type: "text", placeholder: "tool name", size: 12 }).size, 12);
    assert.equal(placeholderSize("Other: your own answer"), 23);
  });

  test("every box on the cards shows its whole placeholder", async () => {
    const page = await drawReply([
      pause({ tool_call_id: "a", kind: "ask_user", tool_name: "AskUser", input_text: "", ask_user: QUESTIONS }),
      pause({ tool_call_id: "r", kind: "review", tool_name: "lookup", review_output: "42", review_state: "success" }),
      pause({ tool_call_id: "s", kind: "sampling", tool_name: "mcp__db__summarize", sampling: samplingView() }),
    ]);
    const boxes = Array.from(page.el.querySelectorAll<HTMLInputElement>("input[placeholder]"));
    assert.ok(boxes.length >= 3, "the Other box, the review's and the sampling's reasons");
    for (const box of boxes) assert.ok(box.size > box.placeholder.length, `${box.dataset.testid}: size ${box.size} for "${box.placeholder}"`);
    page.close();
  });
});

describe("an AskUser card once closed without an answer", () => {
  test("expired: the question asked stays, read-only, with the reason it expired", async () => {
    const page = await drawReply([pause({ kind: "ask_user", tool_name: "AskUser", input_text: "", ask_user: QUESTIONS, status: "expired", reason: "the reply was interrupted" })]);
    const card = page.card("c1");
    assert.equal(page.control("c1", "nbh-decision")!.textContent, "No longer live: the reply was interrupted");
    const asked = page.control("c1", "nbh-asked-question")!;
    assert.equal(asked.dataset.question, "Which file should I archive?");
    assert.match(asked.textContent!, /^File Which file should I archive\?Two logs are old\.old_log\.txt — last written in 2023<img src=x onerror=alert\(1\)>$/);
    assert.equal(card.querySelector("img"), null, "an option's label stays text");
    assert.equal(card.querySelector("input, button, textarea"), null, "nothing to answer with");
    // the question comes before what became of it
    assert.ok(page.control("c1", "nbh-asked")!.compareDocumentPosition(page.control("c1", "nbh-decision")!) & Node.DOCUMENT_POSITION_FOLLOWING);
    page.close();
  });

  test("declined: the question stays; answered: the record names it with the answer, once", async () => {
    const declined = pause({ kind: "ask_user", tool_name: "AskUser", input_text: "", ask_user: QUESTIONS, status: "decided", decision: { action: "return_error" } });
    const answered = pause({
      tool_call_id: "c2",
      kind: "ask_user",
      tool_name: "AskUser",
      input_text: "",
      ask_user: QUESTIONS,
      status: "decided",
      decision: { action: "answer", answers: [{ question: "Which file should I archive?", selected: ["old_log.txt"], other: null }] },
    });
    const page = await drawReply([declined, answered]);
    assert.ok(page.control("c1", "nbh-asked-question"));
    assert.equal(page.control("c2", "nbh-asked"), null);
    assert.equal(page.control("c2", "nbh-decision")!.textContent, "Answered: Which file should I archive? → old_log.txt");
    page.close();
  });
});

describe("an 'Always allow' rule's reach", () => {
  const rule = {
    index: 0,
    label: "allow Bash(git:*)",
    tool_name: "Bash",
    rule_content: "git:*",
    behavior: "allow",
    reach: "also allows anything chained after `git` (e.g. `git && curl … | sh`).",
    reach_html: "<p>also allows anything chained after <code>git</code> (e.g. <code>git &amp;&amp; curl … | sh</code>).<img src=x onerror=alert(1)></p>",
  };

  test("its patterns are drawn as code, from the kernel's sanitised HTML walked again; no backtick is left", async () => {
    const page = await drawReply([pause({ suggested_rules: [rule] })]);
    page.control("c1", "nbh-always")!.click();
    await settle();
    const reach = page.control("c1", "nbh-rule-reach")!;
    assert.deepEqual(
      Array.from(reach.querySelectorAll("code")).map((c) => c.textContent),
      ["git", "git && curl … | sh"],
    );
    assert.equal(reach.textContent, "also allows anything chained after git (e.g. git && curl … | sh).");
    assert.equal(reach.querySelector("img"), null, "what the page's allowlist does not keep is dropped");
    page.close();
  });

  test("a reach without HTML (plain, or from an older kernel) is text", async () => {
    const page = await drawReply([pause({ suggested_rules: [{ ...rule, reach: "allows every call of Bash <b>", reach_html: null }] })]);
    page.control("c1", "nbh-always")!.click();
    await settle();
    const reach = page.control("c1", "nbh-rule-reach")!;
    assert.equal(reach.textContent, "allows every call of Bash <b>");
    assert.equal(reach.children.length, 0);
    page.close();
  });
});

describe("the Modify box", () => {
  const big = JSON.stringify(Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`key_${i}`, i])), null, 2);

  test("is as tall as the input (one row to type in), within 4 and 24 rows, and follows what is typed", async () => {
    const page = await drawReply([pause({ tool_call_id: "small" }), pause({ tool_call_id: "mid", input_text: big }), pause({ tool_call_id: "huge", input_text: "{\n" + '  "x": 1,\n'.repeat(80) + "}" })]);
    const rows = (id: string) => {
      page.control(id, "nbh-modify")!.click();
      return page.control<HTMLTextAreaElement>(id, "nbh-modify-input")!;
    };
    assert.equal(rows("small").rows, 4);
    assert.equal(rows("mid").rows, big.split("\n").length + 1);
    assert.equal(rows("huge").rows, 24);
    const area = page.control<HTMLTextAreaElement>("small", "nbh-modify-input")!;
    typeInto(area, '{\n  "command": "ls",\n  "cwd": "/tmp",\n  "env": {},\n  "timeout": 30\n}');
    assert.equal(area.rows, 7);
    page.close();
  });
});

describe("an invalid-JSON edit", () => {
  const refusal = "The input is not valid JSON: Expecting ',' delimiter (line 1, column 21).";
  const kernel = (m: { action: string }) => (m.action === "preview" || m.action === "modify" ? { refuse: refusal, field: "input" } : liveKernel(m as never));

  test("is refused once, under the box; the preview points to it; an edit since takes it away", async () => {
    const page = await drawReply([pause()], {}, kernel);
    page.control("c1", "nbh-modify")!.click();
    const area = () => page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!;
    typeInto(area(), '{"command": "ls -la"');
    await new Promise((r) => setTimeout(r, 350));
    await settle();
    const status = () => page.control("c1", "nbh-modify-preview-status")!.textContent!;
    assert.equal(status(), `No diff of your edit is shown: ${refusal}`, "while typing, the preview says why");
    page.control("c1", "nbh-modify-submit")!.click();
    await settle();
    await new Promise((r) => setTimeout(r, 50));
    await settle();
    const said = () => (page.card("c1").textContent!.match(/not valid JSON/g) || []).length;
    assert.equal(page.control("c1", "nbh-error")!.textContent, refusal);
    assert.equal(status(), "No diff of your edit is shown: see the refusal above.");
    assert.equal(said(), 1, page.card("c1").textContent!);
    assert.equal(page.control("c1", "nbh-error")!.previousElementSibling, area(), "right under the box");
    // the refusal is about the text sent: once it is changed, the preview speaks for the new text
    typeInto(area(), '{"command": "ls -la"}');
    assert.equal(page.control("c1", "nbh-error"), null);
    page.close();
  });
});

describe("a team's entries", () => {
  test("the name of the agent that wrote an entry without a head line sits on its first line", async () => {
    const entries: TranscriptEntry[] = [
      { id: "t1", kind: "text", text: "I will ask the worker.", agent: "lead" },
      { id: "assign:1", kind: "note", text: "lead assigned “Tidy up” to worker", agent: "lead" },
      { id: "call:k1", kind: "tool_call", name: "delete_file", text: '{"path": "a"}', agent: "worker" },
    ] as TranscriptEntry[];
    const page = await drawReply([], { status: "done", transcript: entries });
    const badges = Array.from(page.el.querySelectorAll<HTMLElement>('[data-testid="nbh-entry-agent"]'));
    assert.deepEqual(badges.map((b) => b.textContent), ["lead", "lead", "worker"]);
    // theme.css lays .nbh-by-agent out in a row (checked in Chromium by tests/browser/test_teams_page.py)
    assert.deepEqual(badges.map((b) => b.parentElement!.classList.contains("nbh-by-agent")), [true, true, false]);
    assert.equal(badges[2].parentElement!.textContent, "worker → delete_file", "a tool call's name goes in its head line");
    page.close();
  });
});
