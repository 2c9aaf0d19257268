// The page side of the inbox's rows (nb_hitl/widgets/inbox.py): the kernel
// sends {type: "nbh_inbox", seq, ops} custom messages holding only the rows
// that changed ({op: "row", row}: a row added or changed; {op: "drop", id}: a
// session that left the inbox), keyed by the session. Every view asks for
// all rows once ("rows_sync") when it opens, and again when it finds a gap
// (lib/seq_stream.ts keeps the order). Applying ops is inbox_logic.ts's.
import type { AnyModel } from "@anywidget/types";
import type { Rpc } from "./lib/rpc";
import { SeqStream, type SyncAnswer } from "./lib/seq_stream";
import type { InboxMsg, InboxProtocol, InboxRow } from "./messages";
import { applyRowOps, ordered, rowsFrom } from "./inbox_logic";
import type { InboxModel } from "./inbox";

type FullSync = { seq: number; rows: InboxRow[] };

/** ids of the rows that changed, or null: all of them may have (a sync). */
export type RowsChanged = (ids: string[] | null) => void;

export class RowFeed extends SeqStream<InboxMsg, string[], FullSync, InboxModel> {
  private rows = new Map<string, InboxRow>();
  private list: InboxRow[] | null = null;
  /** true once a sync brought every row (before that the page knows none) */
  synced = false;
  /** why the last sync was refused ("": it was not) */
  refused = "";

  constructor(model: AnyModel<InboxModel>, private rpc: Rpc<InboxProtocol>, private onChange: RowsChanged) {
    super(model, -1);
  }

  /** Every row, oldest pause first. */
  all(): InboxRow[] {
    if (!this.list) this.list = ordered(this.rows);
    return this.list;
  }

  protected accepts(msg: unknown): msg is InboxMsg {
    const m = msg as Partial<InboxMsg> | null;
    return !!m && m.type === "nbh_inbox" && typeof m.seq === "number" && Array.isArray(m.ops);
  }

  protected apply(msg: InboxMsg): string[] {
    const next = applyRowOps(this.rows, msg.ops);
    this.rows = next.rows;
    this.list = null;
    return next.changed;
  }

  protected changed(ids: string[] | null): void {
    this.onChange(ids);
  }

  protected async requestSync(seq: number) {
    const reply = await this.rpc.request("rows_sync", { seq });
    this.refused = reply.ok ? "" : reply.error || "The kernel did not send the rows.";
    if (!reply.ok) this.onChange(null);
    return reply;
  }

  protected resetFrom(reply: SyncAnswer<FullSync>): boolean {
    if (!("rows" in reply) || !Array.isArray(reply.rows)) return false;
    this.rows = rowsFrom(reply.rows);
    this.list = null;
    this.synced = true;
    return true;
  }

  protected write(): void {
    // the rows are live: none is saved with the notebook (a reopened one asks the kernel again)
  }
}
