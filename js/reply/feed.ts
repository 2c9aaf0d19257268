// The page side of the pause cards' stream (see "Pause cards" in
// docs/design.md). The kernel sends {type: "nbh_cards", seq, ops} custom
// messages holding only the cards that changed ({op: "card", view}: a new card
// is appended, a known one replaced; {op: "drop", id}); the `pauses` trait
// (with `cards_seq`, the seq it includes) is the record, sent when the set of
// cards changes or the reply ends. On connect, and whenever a message's seq is
// not the next one, the page asks for every card ("cards_sync") and replays
// the messages after it. What the page holds is written back to its own model
// (never sent to the kernel), so a notebook saved now restores what it shows.
import type { AnyModel } from "@anywidget/types";
import type { Rpc } from "../lib/rpc";
import type { PauseView, ReplyModel } from "../types";

type CardOp = { op: "card"; view: PauseView } | { op: "drop"; id: string };

interface CardsMsg {
  type: "nbh_cards";
  seq: number;
  ops: CardOp[];
}

/** ids of the cards that changed, or null: all of them may have. */
export type CardsChanged = (ids: string[] | null) => void;

export class CardFeed {
  /** seq of the last message applied */
  seq = 0;
  /** number of resyncs asked for */
  resyncs = 0;
  private views = new Map<string, PauseView>();
  private order: string[] = [];
  private index = new Map<string, number>();
  private list: PauseView[] | null = null;
  private buffered: CardsMsg[] = [];
  private syncing = false;
  private writing = false;
  private saveTimer = 0;
  private handler = (msg: any) => {
    if (!msg || msg.type !== "nbh_cards" || typeof msg.seq !== "number" || !Array.isArray(msg.ops)) return;
    this.receive(msg as CardsMsg);
  };
  // `pauses` and `cards_seq` come in one update, but a front end may announce
  // each key as soon as it is set (marimo): read them together, once both are in
  private traitDue = false;
  private onTrait = () => {
    if (this.writing || this.traitDue) return;
    this.traitDue = true;
    queueMicrotask(() => {
      this.traitDue = false;
      this.fromTrait();
    });
  };

  constructor(private model: AnyModel<ReplyModel>, private rpc: Rpc, private onChange: CardsChanged) {
    this.reset(this.model.get("pauses") || [], Number(this.model.get("cards_seq")) || 0);
    model.on("msg:custom", this.handler);
    model.on("change:pauses", this.onTrait);
    model.on("change:cards_seq", this.onTrait);
  }

  /** Every card, in the kernel's order. */
  all(): PauseView[] {
    if (!this.list) this.list = this.order.map((id) => this.views.get(id) as PauseView);
    return this.list;
  }

  get(id: string): PauseView | undefined {
    return this.views.get(id);
  }

  /** The card's place in the reply (-1: not known). */
  position(id: string): number {
    const i = this.index.get(id);
    return i === undefined ? -1 : i;
  }

  get size(): number {
    return this.order.length;
  }

  /** The kernel sent the trait: take it unless the messages applied are newer. */
  private fromTrait(): void {
    const seq = Number(this.model.get("cards_seq")) || 0;
    if (seq < this.seq) return; // older than what the card messages brought
    this.reset(this.model.get("pauses") || [], seq);
    this.buffered = this.buffered.filter((m) => m.seq > seq);
    this.onChange(null);
  }

  private reset(views: PauseView[], seq: number): void {
    this.views = new Map(views.map((v) => [v.tool_call_id, v]));
    this.order = views.map((v) => v.tool_call_id);
    this.reindex();
    this.seq = seq;
  }

  private reindex(): void {
    this.index = new Map(this.order.map((id, i) => [id, i]));
    this.list = null;
  }

  private receive(msg: CardsMsg): void {
    if (msg.seq <= this.seq) return; // already had it (a resync's answer includes it)
    if (msg.seq !== this.seq + 1 || this.syncing) {
      this.buffered.push(msg);
      void this.resync();
      return;
    }
    this.onChange(this.apply(msg));
    this.scheduleSave();
  }

  private apply(msg: CardsMsg): string[] {
    const changed: string[] = [];
    let dropped = false;
    for (const op of msg.ops) {
      if (op.op === "card" && op.view && typeof op.view.tool_call_id === "string") {
        const id = op.view.tool_call_id;
        if (!this.views.has(id)) {
          this.index.set(id, this.order.length);
          this.order.push(id);
        }
        this.views.set(id, op.view);
        changed.push(id);
      } else if (op.op === "drop" && this.views.has(op.id)) {
        this.views.delete(op.id);
        this.order = this.order.filter((x) => x !== op.id);
        dropped = true;
        changed.push(op.id);
      }
    }
    if (dropped) this.reindex();
    else this.list = null;
    this.seq = msg.seq;
    return changed;
  }

  /** Ask the kernel for every card and the seq they include, then replay later messages. */
  async resync(): Promise<void> {
    if (this.syncing) return;
    this.syncing = true;
    this.resyncs += 1;
    const reply = await this.rpc.request("cards_sync", { seq: this.seq });
    this.syncing = false;
    if (reply.ok) this.take(reply);
  }

  /** Take a sync answer, `{seq, pauses}` or `{seq, current: true}`: from
   * `resync` or the widget's connect request. */
  take(reply: Record<string, unknown>): void {
    if (typeof reply.seq !== "number") return;
    if (reply.current === true && reply.seq === this.seq) {
      // the page already holds every card at this seq: nothing came again
    } else if (Array.isArray(reply.pauses)) {
      this.reset(reply.pauses as PauseView[], reply.seq);
    } else return;
    const later = this.buffered.filter((m) => m.seq > this.seq).sort((a, b) => a.seq - b.seq);
    this.buffered = [];
    for (const m of later) {
      if (m.seq !== this.seq + 1) {
        this.buffered = later.filter((x) => x.seq >= m.seq);
        this.onChange(null);
        void this.resync();
        return;
      }
      this.apply(m);
    }
    this.onChange(null);
    this.scheduleSave();
  }

  // Write what the page holds into its own model (not sent to the kernel):
  // JupyterLab saves the page's model state with the notebook. Coalesced: one
  // write for a burst of card messages.
  private scheduleSave(): void {
    if (this.saveTimer) return;
    this.saveTimer = window.setTimeout(() => {
      this.saveTimer = 0;
      this.writing = true;
      try {
        this.model.set("pauses", this.all().slice());
        this.model.set("cards_seq", this.seq);
      } finally {
        this.writing = false;
      }
    }, 250);
  }

  dispose(): void {
    window.clearTimeout(this.saveTimer);
    this.model.off("msg:custom", this.handler);
    this.model.off("change:pauses", this.onTrait);
    this.model.off("change:cards_seq", this.onTrait);
  }
}
