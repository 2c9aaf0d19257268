// inbox_logic.ts: the rows the kernel's ops make, filters, their choices,
// paging over 1,000 rows, what "Approve selected" sends; inbox.ts: the rows
// of a sync then of ops (two views, one opened late, a gap), the count badge,
// a row's text (agent, summary, outcome) stays text, a refused message is said.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { FakeModel, settle, type Sent } from "./fake_model";
import { applyRowOps, approvable, facets, filterRows, keepSelected, NO_FILTER, ordered, pageOf, pageText, rowsFrom, summaryText, waited } from "../inbox_logic";
import inbox, { type InboxModel } from "../inbox";
import type { InboxRow, RowOp } from "../messages";
import { approvalsLine } from "../reply/cards/approvals";
import { clockTime } from "../lib/clock";

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
    approvals_needed: 1,
    approvals: [],
    ...over,
  };
}

const rows = Array.from({ length: 1000 }, (_, i) => row(i));

describe("inbox logic", () => {
  test("ops add, replace and drop rows by session; the rows given are left as they are", () => {
    const start = rowsFrom(rows.slice(0, 3));
    const { rows: next, changed } = applyRowOps(start, [
      { op: "row", row: row(1, { summary: "changed" }) },
      { op: "row", row: row(7) },
      { op: "drop", id: "s0" },
      { op: "drop", id: "not-held" },
      { op: "row", row: { summary: "names no session" } },
      null,
      { op: "other", id: "s2" },
    ]);
    assert.deepEqual(changed, ["s1", "s7", "s0"]);
    assert.deepEqual([...next.keys()].sort(), ["s1", "s2", "s7"]);
    assert.equal(next.get("s1")!.summary, "changed");
    assert.deepEqual([...start.keys()], ["s0", "s1", "s2"]);
    assert.equal(start.get("s1")!.summary, 'text="note 1"');
  });

  test("a sync's rows skip what is not a row; the order is oldest pause first, ties by session", () => {
    assert.deepEqual([...rowsFrom([row(1), "x", { session_id: "" }, row(2)]).keys()], ["s1", "s2"]);
    assert.equal(rowsFrom("not a list").size, 0);
    const same = [row(3, { since: 5, session_id: "b" }), row(4, { since: 5, session_id: "a" }), row(5, { since: 1 })];
    assert.deepEqual(ordered(rowsFrom(same)).map((r) => r.session_id), ["s5", "a", "b"]);
  });

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
    assert.equal(pageText(pageOf([], 0, 50), 0, 1000), "none of the 1000 waiting match the filters");
    assert.equal(pageText(pageOf([], 0, 50), 0, 1), "the 1 waiting does not match the filters");
    // an empty inbox says so, never "none of 0"
    assert.equal(pageText(pageOf([], 0, 50), 0, 0), "nothing waiting");
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

  test("a row's summary: the call's, how many more, or that its parked call is being read", () => {
    assert.equal(summaryText(row(1)), 'text="note 1"');
    assert.equal(summaryText(row(1, { calls: 3 })), 'text="note 1" (+2 more)');
    assert.equal(summaryText(row(1, { calls: 0, summary: "", tool: "" })), "reading its parked call…");
    assert.equal(summaryText(row(1, { calls: 0, summary: "", status: "stranded" })), "");
  });

  test("waiting times", () => {
    assert.equal(waited(NOW - 5, NOW), "5s");
    assert.equal(waited(NOW - 125, NOW), "2m 5s");
    assert.equal(waited(NOW - 7260, NOW), "2h 1m");
    assert.equal(waited(NOW - 90000, NOW), "1d 1h");
    assert.equal(waited(NOW + 30, NOW), "0s");
  });
});

type Traits = Omit<InboxModel, never>;

const TRAITS: Traits = { opened: "", user_id: "ana", service: "http://svc", error: "", live: "Pushed.", page_size: 25, outcomes: {} };

/** The kernel's part: answers "rows_sync" with `held` (at `seq`), and whatever `other` answers. */
function kernel(model: FakeModel<Traits>, held: () => { seq: number; rows: InboxRow[] }, other: (m: Sent) => Record<string, unknown> | { refuse: string } | null = () => null) {
  model.answer = (m) => (m.action === "rows_sync" ? held() : other(m));
}

function draw(model: FakeModel<Traits>): { host: HTMLElement; cleanup: () => void } {
  const host = document.createElement("div");
  document.body.append(host);
  const cleanup = (inbox.render as unknown as (a: { model: unknown; el: HTMLElement }) => () => void)({ model: model.model, el: host });
  return { host, cleanup };
}

/** The rows with their pauses opened in list order (the page shows them oldest first). */
const inOrder = (list: InboxRow[]) => list.map((r, i) => ({ ...r, since: NOW - 100_000 + i }));

const count = (host: HTMLElement) => host.querySelector('[data-testid="nbh-inbox-count"]')!.textContent;
const ids = (host: HTMLElement) => [...host.querySelectorAll('[data-testid="nbh-inbox-row"]')].map((r) => r.getAttribute("data-session-id"));

describe("inbox page", () => {
  test("the badge counts every row; one page is drawn; untrusted text stays text; Approve selected shows each outcome", async () => {
    const evil = '<img src=x onerror="alert(1)">';
    const entries = inOrder([row(1, { agent: evil, summary: evil }), ...rows.slice(2, 80)]);
    const model = new FakeModel<Traits>({ ...TRAITS });
    kernel(model, () => ({ seq: 0, rows: entries }));
    const { host, cleanup } = draw(model);
    assert.equal(host.querySelector('[data-testid="nbh-inbox-empty"]')!.textContent, "Asking the kernel for the rows…");
    await settle();
    assert.equal(count(host), "79");
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
    kernel(model, () => ({ seq: 0, rows: entries }), () => ({ results: [
      { session_id: "s27", ok: true, code: "delivered", text: "Applied by the service." },
      { session_id: "s28", ok: false, code: "answered_elsewhere", text: evil },
    ] }));
    host.querySelector<HTMLButtonElement>('[data-testid="nbh-inbox-approve-selected"]')!.click();
    const sent = model.actions("approve_selected")[0] as Sent & { items: { session_id: string }[] };
    assert.deepEqual(sent.items.map((i) => i.session_id), ["s27", "s28"]);
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

  test("a closed inbox says so and its buttons are disabled", async () => {
    const model = new FakeModel<Traits>({ ...TRAITS, opened: "s1" });
    kernel(model, () => ({ seq: 0, rows: [row(1)] }));
    const { host, cleanup } = draw(model);
    await settle();
    const box = host.querySelector<HTMLInputElement>('[data-testid="nbh-inbox-select"]')!;
    box.checked = true;
    box.dispatchEvent(new window.Event("change"));
    const head = host.querySelector('[data-testid="nbh-inbox-head"]')!;
    const approve = host.querySelector<HTMLButtonElement>('[data-testid="nbh-inbox-approve-selected"]')!;
    const say = host.querySelector<HTMLButtonElement>('[data-testid="nbh-inbox-say-send"]')!;
    assert.equal(head.textContent, "waiting for ana @ http://svc");
    assert.equal(approve.disabled || say.disabled, false);
    model.set("live", "Closed: this inbox no longer follows the service; the rows are as last read.");
    model.set("closed", true);
    await settle();
    assert.equal(head.textContent, "closed: no longer following ana @ http://svc");
    assert.equal(host.querySelector('[data-testid="nbh-inbox-live"]')!.textContent, "Closed: this inbox no longer follows the service; the rows are as last read.");
    assert.ok(approve.disabled && say.disabled);
    cleanup();
  });

  test("the rows come once by sync, then as ops; a view opened late and a view that missed a message ask again", async () => {
    // the kernel's side: what it holds and the messages it pushed, as nb_hitl/widgets/_feed.py makes them
    let held = { seq: 0, rows: inOrder(rows.slice(0, 30)) };
    const model = new FakeModel<Traits>({ ...TRAITS });
    kernel(model, () => held);
    const first = draw(model);
    await settle();
    assert.equal(count(first.host), "30");
    assert.equal(model.actions("rows_sync").length, 1);
    const push = (seq: number, ops: RowOp[]) => {
      held = { seq, rows: [...applyRowOps(rowsFrom(held.rows), ops).rows.values()] };
      model.emit({ type: "nbh_inbox", seq, ops });
    };
    // s0 leaves; a new row comes; s5 changes
    push(1, [{ op: "drop", id: "s0" }, { op: "row", row: row(500, { since: NOW }) }, { op: "row", row: { ...held.rows[5], summary: "asked again" } }]);
    await settle();
    assert.equal(count(first.host), "30");
    assert.ok(!ids(first.host).includes("s0"));
    assert.equal(model.actions("rows_sync").length, 1, "ops in order need no sync");
    assert.ok(first.host.textContent!.includes("asked again"));
    // a second view, opened after those messages: it asks for every row and gets them
    const late = draw(model);
    await settle();
    assert.equal(model.actions("rows_sync").length, 2);
    assert.equal(count(late.host), "30");
    assert.deepEqual(ids(late.host), ids(first.host));
    // both views apply the next op
    push(2, [{ op: "drop", id: "s1" }]);
    await settle();
    assert.deepEqual([count(first.host), count(late.host)], ["29", "29"]);
    // a message lost on the way (seq 3 never arrives): the views ask again and catch up
    held = { seq: 3, rows: held.rows.filter((r) => r.session_id !== "s2") };
    push(4, [{ op: "drop", id: "s3" }]);
    await settle();
    assert.equal(model.actions("rows_sync").length, 4);
    assert.deepEqual([count(first.host), count(late.host)], ["27", "27"]);
    assert.ok(!ids(first.host).includes("s2") && !ids(late.host).includes("s3"));
    first.cleanup();
    late.cleanup();
  });

  test("a row that needs several approvals says how many it has, in the card's words; an op changes that row only", async () => {
    let held = { seq: 0, rows: inOrder([row(1, { approvals_needed: 2 }), row(2), row(3, { approvals_needed: 3, approvals: "x" as unknown as [] })]) };
    const model = new FakeModel<Traits>({ ...TRAITS });
    kernel(model, () => held);
    const { host, cleanup } = draw(model);
    await settle();
    const line = (sid: string) => host.querySelector(`[data-session-id="${sid}"] [data-testid="nbh-inbox-approvals"]`)?.textContent ?? null;
    assert.equal(line("s1"), "0 of 2 approvals so far; each must come from a different person.");
    assert.equal(line("s2"), null, "a call one person decides says nothing of approvals");
    assert.equal(line("s3"), "0 of 3 approvals so far; each must come from a different person.", "approvals that are not a list are none");
    // bob approved s1 (the kernel sends that one row); an entry that does not fit is left out; a name stays text
    const evil = '<img src=x onerror="alert(1)">';
    const at = 1_800_000_123;
    const got = [{ by: "bob", at, action: "approve" }];
    const changed = { ...held.rows[0], approvals: [...got, { by: 7, at: "soon" }] as unknown as [] };
    held = { seq: 1, rows: [changed, ...held.rows.slice(1)] };
    model.emit({ type: "nbh_inbox", seq: 1, ops: [{ op: "row", row: changed }] });
    await settle();
    assert.equal(model.actions("rows_sync").length, 1, "the changed row came as an op");
    assert.equal(line("s1"), approvalsLine({ approvals_needed: 2, approvals: got }));
    assert.match(line("s1")!, /^1 of 2 approvals: bob \(.+\)$/);
    assert.equal(line("s1"), `1 of 2 approvals: bob (${clockTime(at)})`, "the time in the one form of the page (lib/clock.ts)");
    const named = { ...held.rows[2], approvals: [{ by: evil, at, action: "modify" }] };
    model.emit({ type: "nbh_inbox", seq: 2, ops: [{ op: "row", row: named }] });
    await settle();
    assert.ok(line("s3")!.startsWith(`1 of 3 approvals: ${evil} (edited the input)`));
    assert.equal(host.querySelector("img"), null);
    // the same person approving again from the row: the kernel's refusal, the card's sentence, on the row
    const again = "bob already approved this call; it needs 2 approvals from distinct people (1 of 2 so far: bob).";
    model.set("outcomes", { s1: { session_id: "s1", ok: false, code: "invalid_decision", text: again } });
    await settle();
    const cell = host.querySelector('[data-session-id="s1"] [data-testid="nbh-inbox-outcome"]')!;
    assert.equal(cell.textContent, again);
    assert.equal(cell.getAttribute("data-ok"), "false");
    cleanup();
  });

  test("an op that comes before the sync's answer waits for it (one sync); a refused sync is said", async () => {
    const model = new FakeModel<Traits>({ ...TRAITS });
    const { host, cleanup } = draw(model); // the kernel does not answer yet
    await settle();
    const [ask] = model.actions("rows_sync");
    model.emit({ type: "nbh_inbox", seq: 2, ops: [{ op: "drop", id: "s1" }] });
    await settle();
    assert.equal(model.actions("rows_sync").length, 1, "no second sync while one is on its way");
    model.emit({ request_id: ask.request_id, ok: true, seq: 1, rows: inOrder(rows.slice(0, 4)) });
    await settle();
    assert.equal(count(host), "3");
    assert.ok(!ids(host).includes("s1"));
    cleanup();
    const gone = new FakeModel<Traits>({ ...TRAITS });
    gone.answer = (m) => (m.action === "rows_sync" ? { refuse: "The kernel restarted." } : null);
    const other = draw(gone);
    await settle();
    assert.equal(other.host.querySelector('[data-testid="nbh-inbox-empty"]')!.textContent, "The kernel restarted.");
    other.cleanup();
  });

  test("a message the kernel refuses is said where it was typed, as an error", async () => {
    const model = new FakeModel<Traits>({ ...TRAITS, opened: "s1" });
    const why = "Not sent: session 1 waits for your answer to write_note (a confirmation). Answer it first.";
    kernel(model, () => ({ seq: 0, rows: rows.slice(0, 3) }), (m) => (m.action === "say" ? { refuse: why } : null));
    const { host, cleanup } = draw(model);
    await settle();
    host.querySelector<HTMLInputElement>('[data-testid="nbh-inbox-say-text"]')!.value = "hello";
    host.querySelector<HTMLButtonElement>('[data-testid="nbh-inbox-say-send"]')!.click();
    await settle();
    const said = host.querySelector('[data-testid="nbh-inbox-say-msg"]')!;
    assert.equal(said.textContent, why);
    assert.equal(said.getAttribute("data-ok"), "false");
    assert.equal(host.querySelector<HTMLInputElement>('[data-testid="nbh-inbox-say-text"]')!.value, "hello", "the text is kept");
    cleanup();
  });
});
