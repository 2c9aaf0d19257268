// inbox_logic.ts: filters, their choices, paging over 1,000 rows, what
// "Approve selected" sends; inbox.ts: the count badge, and a row's text
// (agent, summary, outcome) stays text.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { approvable, facets, filterRows, keepSelected, NO_FILTER, pageOf, pageText, waited } from "../inbox_logic";
import inbox from "../inbox";
import type { InboxRow } from "../messages";

const dom = installDom();
after(() => dom.window.close());

const NOW = 1_800_000_000;

function row(i: number, over: Partial<InboxRow> = {}): InboxRow {
  return {
    agent_id: `a${i % 3}`,
    agent: `agent-${i % 3}`,
    session_id: `s${i}`,
    session: `session ${i}`,
    status: i % 5 === 0 ? "awaiting_external_result" : "awaiting_permission",
    tool: i % 5 === 0 ? "AskUser" : "write_note",
    tool_call_id: `c${i}`,
    calls: 1,
    summary: `text="note ${i}"`,
    since: NOW - i * 10,
    note: "",
    may_answer: i % 2 ? "ana" : "bo",
    ...over,
  };
}

const rows = Array.from({ length: 1000 }, (_, i) => row(i));

describe("inbox logic", () => {
  test("each filter keeps only its rows; filters combine", () => {
    assert.equal(filterRows(rows, NO_FILTER, NOW).length, 1000);
    assert.ok(filterRows(rows, { ...NO_FILTER, agent: "agent-1" }, NOW).every((r) => r.agent === "agent-1"));
    assert.equal(filterRows(rows, { ...NO_FILTER, tool: "AskUser" }, NOW).length, 200);
    assert.equal(filterRows(rows, { ...NO_FILTER, mayAnswer: "ana" }, NOW).length, 500);
    // waited at least 1 h: rows with i*10 >= 3600
    assert.equal(filterRows(rows, { ...NO_FILTER, waitingSec: 3600 }, NOW).length, 1000 - 360);
    const both = filterRows(rows, { ...NO_FILTER, tool: "AskUser", mayAnswer: "bo" }, NOW);
    assert.ok(both.length > 0 && both.every((r) => r.tool === "AskUser" && r.may_answer === "bo"));
  });

  test("a filter offers each value once, sorted, with its count", () => {
    assert.deepEqual(facets(rows, "tool"), [["AskUser", 200], ["write_note", 800]]);
    assert.deepEqual(facets(rows, "may_answer"), [["ana", 500], ["bo", 500]]);
    assert.deepEqual(facets([], "agent"), []);
  });

  test("1,000 rows page by the page size; the page is clamped", () => {
    const p = pageOf(rows, 3, 50);
    assert.deepEqual([p.page, p.pages, p.first, p.last, p.rows.length], [3, 20, 151, 200, 50]);
    assert.equal(p.rows[0].session_id, "s150");
    const last = pageOf(rows, 99, 300);
    assert.deepEqual([last.page, last.pages, last.first, last.last], [3, 4, 901, 1000]);
    assert.deepEqual([pageOf([], 2, 50).page, pageOf([], 2, 50).first], [0, 0]);
    assert.equal(pageText(p, 1000, 1000), "151–200 of 1000");
    assert.equal(pageText(pageOf(rows.slice(0, 10), 0, 50), 10, 1000), "1–10 of 10 (of 1000 waiting)");
    assert.equal(pageText(pageOf([], 0, 50), 0, 1000), "none of 1000 waiting match the filters");
  });

  test("Approve selected sends the selected confirmations only, and says how many it left out", () => {
    const got = approvable(rows.slice(0, 12), new Set(["s0", "s1", "s2", "s10", "gone"]));
    assert.deepEqual(got.items, [
      { session_id: "s1", agent_id: "a1" },
      { session_id: "s2", agent_id: "a2" },
    ]);
    assert.equal(got.skipped, 2);
    assert.deepEqual([...keepSelected(new Set(["s1", "gone"]), rows)], ["s1"]);
  });

  test("waiting times", () => {
    assert.equal(waited(NOW - 5, NOW), "5s");
    assert.equal(waited(NOW - 125, NOW), "2m 5s");
    assert.equal(waited(NOW - 7260, NOW), "2h 1m");
    assert.equal(waited(NOW - 90000, NOW), "1d 1h");
    assert.equal(waited(NOW + 30, NOW), "0s");
  });
});

class FakeModel {
  traits: Record<string, unknown>;
  sent: unknown[] = [];
  handlers = new Map<string, ((m: unknown) => void)[]>();
  constructor(traits: Record<string, unknown>) {
    this.traits = traits;
  }
  get(name: string): unknown {
    return this.traits[name];
  }
  set(name: string, value: unknown): void {
    this.traits[name] = value;
    for (const cb of this.handlers.get(`change:${name}`) || []) cb(value);
  }
  on(event: string, cb: (m: unknown) => void): void {
    this.handlers.set(event, [...(this.handlers.get(event) || []), cb]);
  }
  off(): void {}
  send(content: unknown): void {
    this.sent.push(content);
  }
  answer(body: Record<string, unknown>): void {
    const last = this.sent[this.sent.length - 1] as { request_id: string };
    for (const cb of this.handlers.get("msg:custom") || []) cb({ request_id: last.request_id, ...body });
  }
}

describe("inbox page", () => {
  test("the badge counts every row; one page is drawn; untrusted text stays text; Approve selected shows each outcome", async () => {
    const evil = '<img src=x onerror="alert(1)">';
    const entries = [row(1, { agent: evil, summary: evil }), ...rows.slice(2, 80)];
    const model = new FakeModel({ entries, opened: "", user_id: "ana", service: "http://svc", error: "", live: "Pushed.", page_size: 25, outcomes: {} });
    const host = document.createElement("div");
    document.body.append(host);
    const cleanup = (inbox.render as unknown as (a: { model: FakeModel; el: HTMLElement }) => () => void)({ model, el: host });
    assert.equal(host.querySelector('[data-testid="nbh-inbox-count"]')!.textContent, "79");
    assert.equal(host.querySelectorAll('[data-testid="nbh-inbox-row"]').length, 25);
    assert.equal(host.querySelector("img"), null);
    assert.ok(host.textContent!.includes(evil));
    assert.equal(host.querySelector('[data-testid="nbh-inbox-page"]')!.textContent, "1–25 of 79 · page 1 of 4");
    host.querySelector<HTMLButtonElement>('[data-testid="nbh-inbox-next"]')!.click();
    assert.equal(host.querySelector('[data-testid="nbh-inbox-row"]')!.getAttribute("data-session-id"), "s26");
    // select two rows and approve
    const boxes = host.querySelectorAll<HTMLInputElement>('[data-testid="nbh-inbox-select"]');
    for (const b of [boxes[1], boxes[2]]) {
      b.checked = true;
      b.dispatchEvent(new window.Event("change"));
    }
    host.querySelector<HTMLButtonElement>('[data-testid="nbh-inbox-approve-selected"]')!.click();
    const sent = model.sent[model.sent.length - 1] as { action: string; items: { session_id: string }[] };
    assert.equal(sent.action, "approve_selected");
    assert.deepEqual(sent.items.map((i) => i.session_id), ["s27", "s28"]);
    model.answer({ ok: true, results: [
      { session_id: "s27", ok: true, code: "delivered", text: "Applied by the service." },
      { session_id: "s28", ok: false, code: "answered_elsewhere", text: evil },
    ] });
    model.set("outcomes", { s28: { session_id: "s28", ok: false, code: "answered_elsewhere", text: evil } });
    await settle();
    const results = host.querySelectorAll('[data-testid="nbh-inbox-result"]');
    assert.deepEqual([...results].map((r) => r.getAttribute("data-ok")), ["true", "false"]);
    assert.equal(host.querySelector('[data-testid="nbh-inbox-approve-msg"]')!.textContent, "Approved 1 of 2.");
    const cell = host.querySelector('[data-session-id="s28"] [data-testid="nbh-inbox-outcome"]')!;
    assert.equal(cell.textContent, evil);
    assert.equal(host.querySelector("img"), null);
    cleanup();
  });
});
