// The inbox page's pure logic (no DOM): the rows the kernel's ops make
// (a row added or changed, a row dropped, keyed by the session), which rows
// a filter keeps, the choices each filter offers, one page of rows, the
// "waiting" text and the rows "Approve selected" may send. js/inbox.ts draws
// what these return; inbox_feed.ts feeds the ops to applyRowOps.
import type { InboxRow } from "./messages";
import { approvals, approvalsNeeded } from "./reply/view_check";

/** The rows the page holds, by session id. */
export type RowMap = ReadonlyMap<string, InboxRow>;

/** A row as the kernel sent it, or null when it is not one (it names no session: skipped).
 *  Its approvals are checked as a card's are (the entries that fit are kept). */
export function asRow(raw: unknown): InboxRow | null {
  if (!raw || typeof raw !== "object") return null;
  const r = raw as Record<string, unknown>;
  const id = r.session_id;
  if (typeof id !== "string" || !id) return null;
  return { ...(raw as InboxRow), approvals_needed: approvalsNeeded(r.approvals_needed), approvals: approvals(r.approvals) };
}

/** The rows of a full sync ("rows_sync"), by session id; what is not a row is skipped. */
export function rowsFrom(list: unknown): Map<string, InboxRow> {
  const rows = new Map<string, InboxRow>();
  for (const raw of Array.isArray(list) ? list : []) {
    const row = asRow(raw);
    if (row) rows.set(row.session_id, row);
  }
  return rows;
}

/** Apply one message's ops (`{op: "row", row}`: added or replaced; `{op: "drop", id}`:
 *  gone) to `rows`, which is left as it is. Returns the new rows and the ids that
 *  changed; an op that is not well formed, or drops a row the page does not hold, changes nothing. */
export function applyRowOps(rows: RowMap, ops: readonly unknown[]): { rows: Map<string, InboxRow>; changed: string[] } {
  const next = new Map(rows);
  const changed: string[] = [];
  for (const op of ops) {
    if (!op || typeof op !== "object") continue;
    const { op: kind, row: raw, id } = op as { op?: unknown; row?: unknown; id?: unknown };
    const row = kind === "row" ? asRow(raw) : null;
    if (row) {
      next.set(row.session_id, row);
      changed.push(row.session_id);
    } else if (kind === "drop" && typeof id === "string" && next.delete(id)) {
      changed.push(id);
    }
  }
  return { rows: next, changed };
}

/** The rows oldest pause first, ties by session id: the kernel's order (`InboxState.views`). */
export function ordered(rows: RowMap): InboxRow[] {
  return [...rows.values()].sort((a, b) => a.since - b.since || (a.session_id < b.session_id ? -1 : a.session_id > b.session_id ? 1 : 0));
}

/** The filters above the rows; "" means any. `waitingSec`: only pauses open at least this long. */
export interface Filters {
  agent: string;
  tool: string;
  mayAnswer: string;
  waitingSec: number;
}

export const NO_FILTER: Filters = { agent: "", tool: "", mayAnswer: "", waitingSec: 0 };

/** The "waiting since" choices: label -> seconds waited at least. */
export const WAITING: ReadonlyArray<[string, number]> = [
  ["any time", 0],
  ["over 1 min", 60],
  ["over 10 min", 600],
  ["over 1 h", 3600],
  ["over 1 day", 86400],
];

export const STATUS: Record<string, string> = {
  awaiting_permission: "needs confirmation",
  awaiting_external_result: "needs an answer",
  running: "running",
  stranded: "stranded (worker gone?)",
};

/** A row's summary cell: the parked call's summary (and how many more calls), or,
 *  for a parked session whose call the kernel is still reading, that it is. */
export function summaryText(row: InboxRow): string {
  if (!row.calls && row.status.startsWith("awaiting")) return "reading its parked call…";
  return row.summary + (row.calls > 1 ? ` (+${row.calls - 1} more)` : "");
}

/** How long a pause has waited, `now` and `since` in seconds since the epoch. */
export function waited(since: number, now: number): string {
  const s = Math.max(0, Math.round(now - since));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

/** The rows the filters keep, in their order. */
export function filterRows(rows: readonly InboxRow[], f: Filters, now: number): InboxRow[] {
  return rows.filter(
    (r) =>
      (!f.agent || r.agent === f.agent) &&
      (!f.tool || r.tool === f.tool) &&
      (!f.mayAnswer || r.may_answer === f.mayAnswer) &&
      (f.waitingSec <= 0 || now - r.since >= f.waitingSec),
  );
}

/** The values a filter offers: each distinct value of the field, sorted, with its count. */
export function facets(rows: readonly InboxRow[], field: "agent" | "tool" | "may_answer"): [string, number][] {
  const counts = new Map<string, number>();
  for (const r of rows) {
    const v = String(r[field] ?? "");
    if (v) counts.set(v, (counts.get(v) ?? 0) + 1);
  }
  return [...counts.entries()].sort((a, b) => a[0].localeCompare(b[0]));
}

/** One page of rows (`page` counts from 0 and is clamped to the last page). */
export interface Paged {
  rows: InboxRow[];
  page: number;
  pages: number;
  first: number;
  last: number;
}

export function pageOf(rows: readonly InboxRow[], page: number, size: number): Paged {
  const per = Math.max(1, Math.floor(size) || 1);
  const pages = Math.max(1, Math.ceil(rows.length / per));
  const p = Math.min(Math.max(0, Math.floor(page) || 0), pages - 1);
  const slice = rows.slice(p * per, p * per + per);
  return { rows: slice, page: p, pages, first: slice.length ? p * per + 1 : 0, last: p * per + slice.length };
}

/** The line under the filters: "1–50 of 300", "1–10 of 10 (of 320 waiting)", "nothing waiting",
 *  "the 1 waiting does not match the filters", "none of the 300 waiting match the filters". */
export function pageText(paged: Paged, kept: number, total: number): string {
  if (total === 0) return "nothing waiting";
  if (kept === 0) return total === 1 ? "the 1 waiting does not match the filters" : `none of the ${total} waiting match the filters`;
  const of = kept === total ? `${total}` : `${kept} (of ${total} waiting)`;
  return `${paged.first}–${paged.last} of ${of}`;
}

/** Only confirmations can be approved from the list: the selected rows that
 *  wait for one, as "Approve selected" sends them, and how many were left out. */
export function approvable(rows: readonly InboxRow[], selected: ReadonlySet<string>): { items: { session_id: string; agent_id: string }[]; skipped: number } {
  const chosen = rows.filter((r) => selected.has(r.session_id));
  const items = chosen.filter((r) => r.status === "awaiting_permission").map((r) => ({ session_id: r.session_id, agent_id: r.agent_id }));
  return { items, skipped: chosen.length - items.length };
}

/** Selected ids still in the inbox (a row that left drops out of the selection). */
export function keepSelected(selected: ReadonlySet<string>, rows: readonly InboxRow[]): Set<string> {
  const ids = new Set(rows.map((r) => r.session_id));
  return new Set([...selected].filter((s) => ids.has(s)));
}
