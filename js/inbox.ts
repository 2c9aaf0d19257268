// The page side of nb_hitl's InboxWidget: every parked (or stranded) session
// of a service user. The kernel sends the rows as what changed (pushed by
// the service's events, or listed; inbox_feed.ts), all of them once when
// this view opens; the page draws a count badge, filters (agent, tool,
// waiting since, who may answer), one page of rows, "Approve selected" (one
// request per session; each session's outcome on its row and in the results
// list, since an approved row leaves the inbox) and a text box that sends a
// new message to the opened session. A click on a row opens it below the
// list. A row whose call needs several approvals says how many it has, in
// the card's words (reply/cards/approvals.ts). Every string is
// set with textContent (lib/dom.ts).
import type { Render } from "@anywidget/types";
import { h, clear } from "./lib/dom";
import { Rpc } from "./lib/rpc";
import type { ApproveResult, InboxProtocol, InboxRow } from "./messages";
import { RowFeed } from "./inbox_feed";
import { approvalsLine } from "./reply/cards/approvals";
import { NO_FILTER, STATUS, WAITING, approvable, facets, filterRows, keepSelected, pageOf, pageText, summaryText, waited } from "./inbox_logic";
import type { Filters } from "./inbox_logic";

/** The synced traits of `InboxWidget` (nb_hitl/widgets/inbox.py). */
export interface InboxModel {
  opened: string;
  user_id: string;
  service: string;
  error: string;
  live: string;
  page_size: number;
  outcomes: Record<string, ApproveResult>;
  /** the client was closed (aclose): the inbox follows and answers nothing */
  closed?: boolean;
}

const CSS = `
.nbh-inbox { font-family: var(--jp-ui-font-family, sans-serif); font-size: var(--jp-ui-font-size1, 13px); color: var(--jp-ui-font-color1, #222); }
.nbh-inbox table { border-collapse: collapse; width: 100%; }
.nbh-inbox th, .nbh-inbox td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--jp-border-color2, #ddd); vertical-align: top; }
.nbh-inbox tr.nbh-row-open { background: var(--jp-layout-color2, #eef); }
.nbh-inbox tbody tr { cursor: pointer; }
.nbh-inbox tbody tr:hover { background: var(--jp-layout-color3, #f4f4f4); }
.nbh-inbox .nbh-chip { border: 1px solid var(--jp-border-color1, #bbb); border-radius: 8px; padding: 0 6px; white-space: nowrap; }
.nbh-inbox .nbh-badge { display: inline-block; min-width: 1.6em; text-align: center; border-radius: 10px; padding: 0 6px; margin-right: 6px; background: var(--jp-brand-color1, #1976d2); color: var(--jp-ui-inverse-font-color0, #fff); font-weight: bold; }
.nbh-inbox .nbh-badge[data-count="0"] { background: var(--jp-layout-color3, #aaa); }
.nbh-inbox .nbh-bar { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 4px 0; }
.nbh-inbox .nbh-stranded, .nbh-inbox .nbh-note { color: var(--jp-warn-color0, #a60); }
.nbh-inbox .nbh-muted { color: var(--jp-ui-font-color2, #666); }
.nbh-inbox .nbh-error, .nbh-inbox [data-ok="false"] { color: var(--jp-error-color0, #b00); }
.nbh-inbox [data-ok="true"] { color: var(--jp-success-color0, #080); }
.nbh-inbox input[type="text"] { flex: 1 1 auto; min-width: 12em; max-width: 100%; }
`;

function select(testid: string, label: string, options: [string, string][], onChange: (v: string) => void): HTMLSelectElement {
  const s = h("select", { "data-testid": testid, "aria-label": label });
  for (const [value, text] of options) s.append(h("option", { value }, text));
  s.addEventListener("change", () => onChange(s.value));
  return s;
}

function fillOptions(s: HTMLSelectElement, any: string, values: [string, number][], current: string): void {
  clear(s);
  s.append(h("option", { value: "" }, any));
  for (const [v, n] of values) s.append(h("option", { value: v }, `${v} (${n})`));
  s.value = values.some(([v]) => v === current) ? current : "";
}

const render: Render<InboxModel> = ({ model, el: host }) => {
  const rpc = new Rpc<InboxProtocol>(model, 15000, true);
  const style = h("style", {});
  style.textContent = CSS;
  let filters: Filters = { ...NO_FILTER };
  let page = 0;
  let size = Number(model.get("page_size")) || 50;
  let selected = new Set<string>();
  let shown: InboxRow[] = [];
  let kept: InboxRow[] = [];
  const now = () => Date.now() / 1000;
  const set = (patch: Partial<Filters>) => {
    filters = { ...filters, ...patch };
    page = 0;
    draw();
  };

  const badge = h("span", { class: "nbh-badge", "data-testid": "nbh-inbox-count", "aria-label": "sessions waiting" });
  const head = h("span", { class: "nbh-muted", "data-testid": "nbh-inbox-head" });
  const live = h("div", { class: "nbh-muted", "data-testid": "nbh-inbox-live" });
  const err = h("div", { class: "nbh-error", "data-testid": "nbh-inbox-error", role: "alert" });
  const agentSel = select("nbh-inbox-filter-agent", "agent", [], (v) => set({ agent: v }));
  const toolSel = select("nbh-inbox-filter-tool", "tool", [], (v) => set({ tool: v }));
  const whoSel = select("nbh-inbox-filter-who", "who may answer", [], (v) => set({ mayAnswer: v }));
  const waitSel = select("nbh-inbox-filter-waiting", "waiting since", WAITING.map(([t, s]) => [String(s), `waiting ${t}`]), (v) => set({ waitingSec: Number(v) || 0 }));
  const sizeSel = select("nbh-inbox-page-size", "rows per page", [10, 25, 50, 100, 200].map((n) => [String(n), `${n} per page`]), (v) => {
    size = Number(v) || 50;
    page = 0;
    draw();
  });
  sizeSel.value = String(size);
  if (sizeSel.value !== String(size)) sizeSel.append(h("option", { value: String(size) }, `${size} per page`));
  sizeSel.value = String(size);
  const prev = h("button", { type: "button", "data-testid": "nbh-inbox-prev" }, "‹ Previous");
  const next = h("button", { type: "button", "data-testid": "nbh-inbox-next" }, "Next ›");
  const pageLine = h("span", { class: "nbh-muted", "data-testid": "nbh-inbox-page" });
  prev.addEventListener("click", () => {
    page -= 1;
    draw();
  });
  next.addEventListener("click", () => {
    page += 1;
    draw();
  });
  const approveBtn = h("button", { type: "button", "data-testid": "nbh-inbox-approve-selected" }, "Approve selected");
  const approveMsg = h("span", { class: "nbh-muted", "data-testid": "nbh-inbox-approve-msg", role: "status" });
  const results = h("ul", { class: "nbh-muted", "data-testid": "nbh-inbox-results" });
  const selectAll = h("input", { type: "checkbox", "data-testid": "nbh-inbox-select-page", "aria-label": "select the rows on this page" });
  selectAll.addEventListener("change", () => {
    for (const r of shown) {
      if (selectAll.checked) selected.add(r.session_id);
      else selected.delete(r.session_id);
    }
    draw();
  });
  const table = h("table", {});
  const hr = h("tr", {}, h("th", {}, selectAll));
  for (const t of ["agent", "session", "status", "tool", "summary", "waiting", "outcome"]) hr.append(h("th", {}, t));
  const tbody = h("tbody", {});
  table.append(h("thead", {}, hr), tbody);
  const empty = h("div", { class: "nbh-muted", "data-testid": "nbh-inbox-empty" }, "Nothing is waiting for you.");
  const msg = h("div", { class: "nbh-error", "data-testid": "nbh-inbox-message" });
  const feed = new RowFeed(model, rpc, () => draw());
  const sayInput = h("input", { type: "text", "data-testid": "nbh-inbox-say-text", "aria-label": "message to the opened session", placeholder: "A new message to the opened session (it must be idle)" });
  const sayBtn = h("button", { type: "button", "data-testid": "nbh-inbox-say-send" }, "Send");
  const sayMsg = h("span", { class: "nbh-muted", "data-testid": "nbh-inbox-say-msg", role: "status" });
  const root = h(
    "div",
    { class: "nbh-inbox", "data-testid": "nbh-inbox" },
    h("div", { class: "nbh-bar" }, badge, head),
    live,
    err,
    h("div", { class: "nbh-bar" }, agentSel, toolSel, waitSel, whoSel, sizeSel),
    h("div", { class: "nbh-bar" }, approveBtn, approveMsg),
    results,
    table,
    empty,
    h("div", { class: "nbh-bar" }, prev, pageLine, next),
    h("div", { class: "nbh-bar" }, sayInput, sayBtn, sayMsg),
    msg,
  );
  host.append(style, root);

  async function open(row: InboxRow) {
    msg.textContent = "";
    const reply = await rpc.request("open", { session_id: row.session_id, agent_id: row.agent_id });
    if (!reply.ok) msg.textContent = reply.error || "Could not open this session.";
  }

  approveBtn.addEventListener("click", async () => {
    const { items, skipped } = approvable(feed.all(), selected);
    const left = skipped ? ` ${skipped} selected session(s) wait for an answer, not a confirmation: open them to answer.` : "";
    if (!items.length) {
      approveMsg.textContent = `Nothing to approve: select sessions that need a confirmation.${left}`;
      return;
    }
    approveBtn.disabled = true;
    approveMsg.textContent = `Approving ${items.length} session(s), one request each…${left}`;
    const reply = await rpc.request("approve_selected", { items });
    approveBtn.disabled = false;
    if (!reply.ok) {
      approveMsg.textContent = reply.error || "Approve selected was refused.";
      return;
    }
    const done = reply.results.filter((r) => r.ok).length;
    approveMsg.textContent = `Approved ${done} of ${reply.results.length}.${left}`;
    clear(results);
    for (const r of reply.results) {
      results.append(h("li", { "data-testid": "nbh-inbox-result", "data-session-id": r.session_id, "data-ok": String(r.ok), "data-code": r.code }, `${r.session_id}: ${r.ok ? "approved" : "not approved"}, ${r.text}`));
    }
    selected = new Set([...selected].filter((s) => !reply.results.some((r) => r.session_id === s && r.ok)));
    draw();
  });

  sayBtn.addEventListener("click", async () => {
    const opened = String(model.get("opened") || "");
    if (!opened) {
      sayMsg.textContent = "Open a session first: the message goes to the opened session.";
      return;
    }
    sayBtn.disabled = true;
    sayMsg.removeAttribute("data-ok");
    sayMsg.textContent = "Sending…";
    const reply = await rpc.request("say", { session_id: opened, text: sayInput.value });
    sayBtn.disabled = false;
    sayMsg.setAttribute("data-ok", String(reply.ok));
    if (reply.ok) {
      sayInput.value = "";
      sayMsg.textContent = reply.started
        ? "Sent: the session started its reply."
        : "Sent; no sign yet that the session started its reply (the service may be busy). The session shows it when it does.";
    } else sayMsg.textContent = reply.error || "Not sent.";
  });

  const waitCells: Array<[HTMLElement, number]> = [];

  function draw() {
    const rows = feed.all();
    const outcomes = model.get("outcomes") || {};
    const opened = String(model.get("opened") || "");
    const t = now();
    selected = keepSelected(selected, rows);
    badge.textContent = String(rows.length);
    badge.setAttribute("data-count", String(rows.length));
    const closed = model.get("closed") === true;
    head.textContent = closed ? `closed: no longer following ${model.get("user_id")} @ ${model.get("service")}` : `waiting for ${model.get("user_id")} @ ${model.get("service")}`;
    live.textContent = String(model.get("live") || "");
    err.textContent = String(model.get("error") || "");
    fillOptions(agentSel, "every agent", facets(rows, "agent"), filters.agent);
    fillOptions(toolSel, "every tool", facets(rows, "tool"), filters.tool);
    fillOptions(whoSel, "anyone may answer", facets(rows, "may_answer"), filters.mayAnswer);
    filters = { ...filters, agent: agentSel.value, tool: toolSel.value, mayAnswer: whoSel.value };
    kept = filterRows(rows, filters, t);
    const paged = pageOf(kept, page, size);
    page = paged.page;
    shown = paged.rows;
    // a page number only where there are rows to page through
    pageLine.textContent = pageText(paged, kept.length, rows.length) + (kept.length ? ` · page ${paged.page + 1} of ${paged.pages}` : "");
    prev.disabled = paged.page === 0;
    next.disabled = paged.page >= paged.pages - 1;
    approveBtn.textContent = `Approve selected (${selected.size})`;
    approveBtn.disabled = closed || selected.size === 0;
    selectAll.checked = shown.length > 0 && shown.every((r) => selected.has(r.session_id));
    sayBtn.disabled = closed || !opened;
    empty.textContent = feed.synced ? "Nothing is waiting for you." : feed.refused || "Asking the kernel for the rows…";
    empty.hidden = rows.length > 0;
    table.hidden = rows.length === 0;
    clear(tbody);
    waitCells.length = 0;
    for (const row of shown) {
      const tr = h("tr", {
        "data-testid": "nbh-inbox-row",
        "data-session-id": row.session_id,
        "data-status": row.status,
        class: row.session_id === opened ? "nbh-row-open" : "",
        tabindex: "0",
        role: "button",
      });
      const box = h("input", { type: "checkbox", "data-testid": "nbh-inbox-select", "aria-label": `select ${row.session}` });
      box.checked = selected.has(row.session_id);
      box.addEventListener("click", (e) => e.stopPropagation());
      box.addEventListener("change", () => {
        if (box.checked) selected.add(row.session_id);
        else selected.delete(row.session_id);
        draw();
      });
      const status = h("span", { class: `nbh-chip ${row.status === "stranded" ? "nbh-stranded" : ""}`, "data-testid": "nbh-inbox-status" }, STATUS[row.status] || row.status);
      const summary = h("td", { "data-testid": "nbh-inbox-summary" }, summaryText(row));
      const approvals = approvalsLine(row);
      if (approvals) summary.append(h("div", { class: "nbh-muted", "data-testid": "nbh-inbox-approvals" }, approvals));
      if (row.note) summary.append(h("div", { class: "nbh-note", "data-testid": "nbh-inbox-note" }, row.note));
      const wait = h("td", { "data-testid": "nbh-inbox-waiting" }, waited(row.since, t));
      waitCells.push([wait, row.since]);
      const got = outcomes[row.session_id];
      const outcome = h("td", { "data-testid": "nbh-inbox-outcome", "data-ok": got ? String(got.ok) : null }, got ? got.text : "");
      tr.append(h("td", {}, box), h("td", {}, row.agent), h("td", {}, row.session), h("td", {}, status), h("td", {}, row.tool), summary, wait, outcome);
      tr.addEventListener("click", () => open(row));
      tr.addEventListener("keydown", (e: KeyboardEvent) => {
        if (e.target === tr && (e.key === "Enter" || e.key === " ")) open(row);
      });
      tbody.append(tr);
    }
  }

  for (const trait of ["opened", "error", "outcomes", "live", "closed"]) model.on(`change:${trait}`, draw);
  draw();
  // this view's rows: all of them once, then what changed (a gap asks again)
  void feed.resync();
  const timer = window.setInterval(() => {
    const t = now();
    for (const [cell, since] of waitCells) cell.textContent = waited(since, t);
  }, 1000);

  return () => {
    window.clearInterval(timer);
    feed.dispose();
    rpc.dispose();
  };
};

export default { render };
