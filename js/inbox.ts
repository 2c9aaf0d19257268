// The page side of nb_hitl's InboxWidget: one row per parked (or stranded)
// session of a service user. Self-contained (no imports): the kernel writes
// `entries`; a click on a row sends {request_id, action: "open", session_id,
// agent_id} and the opened session appears below the list as a ReplyWidget
// (the same cards as a local pause). Every string is set with textContent.
// (The imports are types only: nothing is bundled in.)
import type { Answer, InboxProtocol, PageMessage } from "./messages";

interface Row {
  agent_id: string;
  agent: string;
  session_id: string;
  session: string;
  status: string;
  tool: string;
  tool_call_id: string;
  calls: number;
  summary: string;
  since: number;
  note: string;
}

/** The synced traits of `InboxWidget` (nb_hitl/widgets/inbox.py). */
interface Traits {
  entries: Row[];
  opened: string;
  user_id: string;
  service: string;
  error: string;
}

interface Model {
  get<K extends keyof Traits>(name: K): Traits[K];
  on(event: string, cb: (msg: unknown) => void): void;
  off(event?: string, cb?: (msg: unknown) => void): void;
  send(content: PageMessage<InboxProtocol>): void;
}

const CSS = `
.nbh-inbox { font-family: var(--jp-ui-font-family, sans-serif); font-size: var(--jp-ui-font-size1, 13px); color: var(--jp-ui-font-color1, #222); }
.nbh-inbox table { border-collapse: collapse; width: 100%; }
.nbh-inbox th, .nbh-inbox td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--jp-border-color2, #ddd); vertical-align: top; }
.nbh-inbox tr.nbh-row-open { background: var(--jp-layout-color2, #eef); }
.nbh-inbox tbody tr { cursor: pointer; }
.nbh-inbox tbody tr:hover { background: var(--jp-layout-color3, #f4f4f4); }
.nbh-inbox .nbh-chip { border: 1px solid var(--jp-border-color1, #bbb); border-radius: 8px; padding: 0 6px; white-space: nowrap; }
.nbh-inbox .nbh-stranded { color: var(--jp-warn-color0, #a60); }
.nbh-inbox .nbh-note { color: var(--jp-warn-color0, #a60); }
.nbh-inbox .nbh-muted { color: var(--jp-ui-font-color2, #666); }
.nbh-inbox .nbh-error { color: var(--jp-error-color0, #b00); }
`;

const STATUS: Record<string, string> = {
  awaiting_permission: "needs confirmation",
  awaiting_external_result: "needs an answer",
  running: "running",
  stranded: "stranded (worker gone?)",
};

function el(tag: string, attrs: Record<string, string> = {}, text?: string): HTMLElement {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function waited(since: number): string {
  const s = Math.max(0, Math.round(Date.now() / 1000 - since));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

let counter = 0;

function render({ model, el: host }: { model: Model; el: HTMLElement }) {
  const style = el("style");
  style.textContent = CSS;
  const root = el("div", { class: "nbh-inbox", "data-testid": "nbh-inbox" });
  const head = el("div", { class: "nbh-muted", "data-testid": "nbh-inbox-head" });
  const err = el("div", { class: "nbh-error", "data-testid": "nbh-inbox-error", role: "alert" });
  const msg = el("div", { class: "nbh-error", "data-testid": "nbh-inbox-message" });
  const table = el("table");
  const thead = el("thead");
  const hr = el("tr");
  for (const t of ["agent", "session", "status", "tool", "summary", "waiting"]) hr.append(el("th", {}, t));
  thead.append(hr);
  const tbody = el("tbody");
  table.append(thead, tbody);
  const empty = el("div", { class: "nbh-muted", "data-testid": "nbh-inbox-empty" }, "Nothing is waiting for you.");
  root.append(head, err, table, empty, msg);
  host.append(style, root);

  const pending = new Map<string, (r: Answer) => void>();
  const onMsg = (m: unknown) => {
    const request_id = m && typeof m === "object" ? (m as { request_id?: unknown }).request_id : undefined;
    if (typeof request_id !== "string") return;
    const done = pending.get(request_id);
    if (done) {
      pending.delete(request_id);
      done(m as Answer);
    }
  };
  model.on("msg:custom", onMsg);

  function request(payload: InboxProtocol["open"]["send"]): Promise<Answer> {
    const request_id = `i${Date.now().toString(36)}-${(counter++).toString(36)}`;
    return new Promise((resolve) => {
      const timer = window.setTimeout(() => {
        pending.delete(request_id);
        resolve({ request_id, ok: false, code: "no_answer", error: "The kernel did not answer; it may be busy or stopped." });
      }, 20000);
      pending.set(request_id, (r) => {
        window.clearTimeout(timer);
        resolve(r);
      });
      model.send({ request_id, action: "open", ...payload });
    });
  }

  async function open(row: Row) {
    msg.textContent = "";
    const reply = await request({ session_id: row.session_id, agent_id: row.agent_id });
    if (!reply.ok) msg.textContent = reply.error || "Could not open this session.";
  }

  const waitCells: Array<[HTMLElement, number]> = [];

  function draw() {
    const rows = model.get("entries") || [];
    const opened = String(model.get("opened") || "");
    head.textContent = `${model.get("user_id")} @ ${model.get("service")}: ${rows.length} waiting`;
    err.textContent = String(model.get("error") || "");
    empty.hidden = rows.length > 0;
    table.hidden = rows.length === 0;
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    waitCells.length = 0;
    for (const row of rows) {
      const tr = el("tr", {
        "data-testid": "nbh-inbox-row",
        "data-session-id": row.session_id,
        "data-status": row.status,
        class: row.session_id === opened ? "nbh-row-open" : "",
        tabindex: "0",
        role: "button",
      });
      const statusCell = el("td");
      statusCell.append(el("span", { class: `nbh-chip ${row.status === "stranded" ? "nbh-stranded" : ""}`, "data-testid": "nbh-inbox-status" }, STATUS[row.status] || row.status));
      const summary = el("td", { "data-testid": "nbh-inbox-summary" }, row.summary + (row.calls > 1 ? ` (+${row.calls - 1} more)` : ""));
      if (row.note) summary.append(el("div", { class: "nbh-note", "data-testid": "nbh-inbox-note" }, row.note));
      const wait = el("td", { "data-testid": "nbh-inbox-waiting" }, waited(row.since));
      waitCells.push([wait, row.since]);
      tr.append(el("td", {}, row.agent), el("td", {}, row.session), statusCell, el("td", {}, row.tool), summary, wait);
      tr.addEventListener("click", () => open(row));
      tr.addEventListener("keydown", (e: KeyboardEvent) => {
        if (e.key === "Enter" || e.key === " ") open(row);
      });
      tbody.append(tr);
    }
  }

  model.on("change:entries", draw);
  model.on("change:opened", draw);
  model.on("change:error", draw);
  draw();
  const timer = window.setInterval(() => {
    for (const [cell, since] of waitCells) cell.textContent = waited(since);
  }, 1000);

  return () => {
    window.clearInterval(timer);
    model.off("msg:custom", onMsg);
  };
}

export default { render };
