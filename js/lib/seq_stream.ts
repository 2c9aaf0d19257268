// A kernel stream of numbered custom messages ({type, seq, ops}) that the page
// applies in order: the reply's transcript (reply/stream.ts), its pause
// cards (reply/feed.ts) and the service console's inbox rows (inbox_feed.ts). A message whose seq is not the next one is buffered
// and the page asks the kernel to sync (every item and the seq they include),
// then replays the buffered messages after that seq. What the page holds is
// written into its own model (never sent to the kernel), which is what
// JupyterLab saves with the notebook: coalesced while messages come, at once
// when asked (a reply that stopped).
import type { AnyModel } from "@anywidget/types";
import type { Answer, SyncCurrent, SyncSent } from "../messages";
import type { ReplyModel } from "../types";

export interface SeqMsg {
  seq: number;
}

/** A sync answer: `{seq, <items>}` (`Full`), `{seq, current: true}` (the page
 * holds that seq) or, to the connect request, `{seq, sent: true}` (the
 * messages up to seq went out before the answer). */
export type SyncAnswer<Full extends SeqMsg> = SyncCurrent | SyncSent | Full;

const isSent = (r: object): r is SyncSent => (r as Partial<SyncSent>).sent === true;
const isCurrent = (r: object): r is SyncCurrent => (r as Partial<SyncCurrent>).current === true;

/** `Model`: the synced traits of the widget whose stream this is (a reply's by default). */
export abstract class SeqStream<M extends SeqMsg, Changes, Full extends SeqMsg, Model extends object = ReplyModel> {
  /** seq of the last message applied (-1: unknown until a sync) */
  seq: number;
  /** number of syncs asked for */
  resyncs = 0;
  /** true while the page writes its own model: its change events are its own */
  protected writing = false;
  /** set by `apply` when what it changed must be in the record at once (a card added or dropped) */
  protected saveAtOnce = false;
  private buffered: M[] = [];
  private syncing = false;
  private saveTimer = 0;
  private readonly handler = (msg: unknown) => {
    if (this.accepts(msg)) this.receive(msg);
  };

  /** @param seq the seq the model's state holds (-1: unknown). */
  constructor(
    protected readonly model: AnyModel<Model>,
    seq: number,
  ) {
    this.seq = seq;
    model.on("msg:custom", this.handler);
  }

  /** Whether `msg` is one of this stream's messages, well formed. */
  protected abstract accepts(msg: unknown): msg is M;
  /** Apply one message's ops (the base then takes its seq); what changed. */
  protected abstract apply(msg: M): Changes;
  /** Tell the view: what one message changed, or null after a sync (anything may have). */
  protected abstract changed(changes: Changes | null): void;
  /** Ask the kernel for a sync from `seq` (`transcript_sync`, `cards_sync`). */
  protected abstract requestSync(seq: number): Promise<Answer<SyncAnswer<Full>>>;
  /** Take every item of a full sync answer; false when the answer holds none. */
  protected abstract resetFrom(reply: SyncAnswer<Full>): boolean;
  /** Write what the page holds into its own model. */
  protected abstract write(): void;

  /** The model's state now holds everything up to `seq` (a record the kernel
   * sent whole): buffered messages up to it are dropped. */
  protected heldThrough(seq: number): void {
    this.seq = seq;
    this.buffered = this.buffered.filter((m) => m.seq > seq);
  }

  private receive(msg: M): void {
    if (this.seq >= 0 && msg.seq <= this.seq) return; // already had it (a sync's answer includes it)
    if (this.seq < 0 || msg.seq !== this.seq + 1 || this.syncing) {
      this.buffered.push(msg);
      void this.resync();
      return;
    }
    this.changed(this.step(msg));
    if (this.saveAtOnce) this.saveNow();
    else this.scheduleSave();
  }

  private step(msg: M): Changes {
    const changes = this.apply(msg);
    this.seq = msg.seq;
    return changes;
  }

  /** Ask the kernel for every item and the seq they include, then replay later messages. */
  async resync(): Promise<void> {
    if (this.syncing) return;
    this.syncing = true;
    this.resyncs += 1;
    const reply = await this.requestSync(this.seq);
    this.syncing = false;
    if (reply.ok) this.take(reply);
  }

  /** Take a sync answer (from `resync` or the widget's connect request). To
   * `sent`, the page holds seq now unless those messages left before it
   * listened: then it asks for every item. */
  take(reply: SyncAnswer<Full>): void {
    if (!reply || typeof reply.seq !== "number") return;
    if (isSent(reply)) {
      if (this.seq !== reply.seq) void this.resync();
      return;
    }
    const current = isCurrent(reply) && reply.seq === this.seq;
    if (!current) {
      if (!this.resetFrom(reply)) return;
      this.seq = reply.seq;
    }
    const later = this.buffered.filter((m) => m.seq > this.seq).sort((a, b) => a.seq - b.seq);
    this.buffered = [];
    for (const m of later) {
      if (m.seq !== this.seq + 1) {
        // still a gap: keep the rest and ask again
        this.buffered = later.filter((x) => x.seq >= m.seq);
        this.changed(null);
        void this.resync();
        return;
      }
      this.step(m);
    }
    this.changed(null);
    // a sync is one answer, not a burst: write at once, so a notebook saved
    // right after a late-drawn reply holds its record
    this.saveNow();
  }

  /** Write the record soon: one write for a burst of messages. Never before
   * the seq is known (an empty record over a saved one). */
  scheduleSave(): void {
    if (this.saveTimer || this.seq < 0) return;
    this.saveTimer = window.setTimeout(() => this.saveNow(), 250);
  }

  /** Write the record now (a reply that stopped: a save right after it must hold all of it). */
  saveNow(): void {
    window.clearTimeout(this.saveTimer);
    this.saveTimer = 0;
    this.saveAtOnce = false;
    if (this.seq < 0) return;
    this.writing = true;
    try {
      this.write();
    } finally {
      this.writing = false;
    }
  }

  dispose(): void {
    window.clearTimeout(this.saveTimer);
    this.model.off("msg:custom", this.handler);
  }
}
