// The page side of the pause cards' stream (see "Pause cards" in
// docs/design.md). The kernel sends {type: "nbh_cards", seq, ops} custom
// messages holding only the cards that changed ({op: "card", view}: a new card
// is appended, a known one replaced; {op: "drop", id}); the `pauses` trait
// (with `cards_seq`, the seq it includes) is the record: the kernel keeps it
// whole and never sends it after the widget opens (a reload asks for it); the
// page writes what it holds into its own model, at once when a card is added
// or dropped (what a notebook saved then must hold), else coalesced. Order,
// gaps ("cards_sync") and that writing: lib/seq_stream.ts. Every view is checked
// once, as it arrives (view_check.ts): the cards read checked views, and the
// record written back keeps what the kernel sent.
import type { AnyModel } from "@anywidget/types";
import type { Rpc } from "../lib/rpc";
import { SeqStream, type SyncAnswer } from "../lib/seq_stream";
import type { CardsMsg, ReplyProtocol } from "../messages";
import type { PauseView, ReplyModel } from "../types";
import { checkView, type CheckedView } from "./view_check";

type FullSync = { seq: number; pauses: PauseView[] };

/** A view that cannot be drawn as its kind: what is wrong, and whether it is a remote interrupt's. */
export type Trouble = Omit<CheckedView, "view">;

/** ids of the cards that changed, or null: all of them may have. */
export type CardsChanged = (ids: string[] | null) => void;

export class CardFeed extends SeqStream<CardsMsg, string[], FullSync> {
  private views = new Map<string, PauseView>();
  // the views as the kernel sent them (the record), and the trouble of those that do not fit
  private sent = new Map<string, unknown>();
  private troubles = new Map<string, Trouble>();
  // per card: a digest of the view the kernel last sent and how many different views it sent
  // (a card is redrawn when its view changed in anything it may draw, not only its status)
  private revisions = new Map<string, { digest: number; revision: number }>();
  private order: string[] = [];
  private index = new Map<string, number>();
  private list: PauseView[] | null = null;
  // `pauses` and `cards_seq` come in one update, but a front end may announce
  // each key as soon as it is set (marimo): read them together, once both are in
  private traitDue = false;
  /** the `pauses` list this feed last read or wrote (another one in the model is a record not read yet) */
  private known: unknown = undefined;
  private onTrait = () => {
    if (this.writing || this.traitDue) return;
    this.traitDue = true;
    queueMicrotask(() => {
      this.traitDue = false;
      this.fromTrait();
    });
  };

  constructor(model: AnyModel<ReplyModel>, private rpc: Rpc<ReplyProtocol>, private onChange: CardsChanged) {
    const seq = Number(model.get("cards_seq")) || 0;
    super(model, seq);
    this.reset(model.get("pauses") || []);
    model.on("change:pauses", this.onTrait);
    model.on("change:cards_seq", this.onTrait);
  }

  /** How many different views of card `id` the kernel sent (the same view again, or a
   *  record another view of this widget wrote, does not count). */
  revision(id: string): number {
    return this.revisions.get(id)?.revision ?? 0;
  }

  /** Every card, in the kernel's order. */
  all(): PauseView[] {
    if (!this.list) this.list = this.order.map((id) => this.views.get(id) as PauseView);
    return this.list;
  }

  get(id: string): PauseView | undefined {
    return this.views.get(id);
  }

  /** What is wrong with the view of `id`, when it cannot be drawn as its kind. */
  trouble(id: string): Trouble | undefined {
    return this.troubles.get(id);
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
  /** Write the cards into the model now. A record the kernel has just sent is read first: its
   * change is read in a microtask, and the status that makes the page save (a reply that stopped)
   * may come in the same update, before or after it; writing first would put the page's older
   * cards over it. A record is new when it is not the list this feed last read or wrote. */
  override saveNow(): void {
    if (this.traitDue || this.model.get("pauses") !== this.known) {
      this.traitDue = false; // the status may come first in the update: the record is new, unread
      this.fromTrait();
    }
    super.saveNow();
  }

  private fromTrait(): void {
    const seq = Number(this.model.get("cards_seq")) || 0;
    if (seq < this.seq) return; // older than what the card messages brought
    this.reset(this.model.get("pauses") || []);
    this.heldThrough(seq);
    this.onChange(null);
  }

  private reset(views: unknown): void {
    this.known = views;
    this.views = new Map();
    this.sent = new Map();
    this.troubles = new Map();
    // a record that is not a list holds no card the page can draw
    (Array.isArray(views) ? views : []).forEach((raw, i) => this.take1(raw, `#${i + 1}`));
    this.order = [...this.views.keys()];
    this.reindex();
  }

  /** Check one view and hold it (replacing the view of the same id); its id. */
  private take1(raw: unknown, fallbackId: string): string {
    const { view, ...trouble } = checkView(raw, fallbackId);
    const id = view.tool_call_id;
    const digest = textDigest(JSON.stringify(raw) ?? "");
    const was = this.revisions.get(id);
    if (!was || was.digest !== digest) this.revisions.set(id, { digest, revision: (was?.revision ?? 0) + 1 });
    this.views.set(id, view);
    this.sent.set(id, raw);
    if (trouble.problem) this.troubles.set(id, trouble);
    else this.troubles.delete(id);
    return id;
  }

  private reindex(): void {
    this.index = new Map(this.order.map((id, i) => [id, i]));
    this.list = null;
  }

  protected accepts(msg: unknown): msg is CardsMsg {
    const m = msg as Partial<CardsMsg> | null;
    return !!m && m.type === "nbh_cards" && typeof m.seq === "number" && Array.isArray(m.ops);
  }

  protected changed(ids: string[] | null): void {
    this.onChange(ids);
  }

  protected apply(msg: CardsMsg): string[] {
    const changed: string[] = [];
    let dropped = false;
    for (const op of msg.ops) {
      if (!op || typeof op !== "object") continue;
      if (op.op === "card" && op.view && typeof op.view.tool_call_id === "string") {
        const id = op.view.tool_call_id;
        if (!this.views.has(id)) {
          this.index.set(id, this.order.length);
          this.order.push(id);
          this.saveAtOnce = true;
        }
        this.take1(op.view, id);
        changed.push(id);
      } else if (op.op === "drop" && this.views.has(op.id)) {
        this.views.delete(op.id);
        this.sent.delete(op.id);
        this.troubles.delete(op.id);
        this.order = this.order.filter((x) => x !== op.id);
        dropped = true;
        this.saveAtOnce = true;
        changed.push(op.id);
      }
    }
    if (dropped) this.reindex();
    else this.list = null;
    return changed;
  }

  protected requestSync(seq: number) {
    return this.rpc.request("cards_sync", { seq });
  }

  protected resetFrom(reply: SyncAnswer<FullSync>): boolean {
    if (!("pauses" in reply) || !Array.isArray(reply.pauses)) return false;
    this.reset(reply.pauses);
    return true;
  }

  protected write(): void {
    // the record keeps each view as the kernel sent it
    const record = this.order.map((id) => this.sent.get(id));
    this.known = record;
    this.model.set("pauses", record);
    this.model.set("cards_seq", this.seq);
  }

  dispose(): void {
    super.dispose();
    this.model.off("change:pauses", this.onTrait);
    this.model.off("change:cards_seq", this.onTrait);
  }
}

/** A 32-bit FNV-1a digest of `text` (to tell two views apart without keeping them). */
export function textDigest(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
