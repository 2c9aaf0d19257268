// The page side of the transcript stream (see "Streaming" in docs/design.md).
// The kernel sends {type: "nbh_transcript", seq, ops} custom messages with
// only what changed, and never the whole `transcript` trait: the page writes
// what it holds into its own model (not sent to the kernel), which is what
// JupyterLab saves with the notebook. On connect, and whenever a message's
// seq is not the next one, the page asks for a full resync
// ("transcript_sync") and replays the messages that came after it.
import type { AnyModel } from "@anywidget/types";
import type { Rpc } from "../lib/rpc";
import type { ReplyModel, TranscriptEntry } from "../types";

type Op =
  | { op: "add"; entry: TranscriptEntry }
  | { op: "append"; id: string; text: string }
  | { op: "set"; id: string; fields: Partial<TranscriptEntry> };

interface StreamMsg {
  type: "nbh_transcript";
  seq: number;
  ops: Op[];
}

export class TranscriptStream {
  entries: TranscriptEntry[] = [];
  /** seq of the last batch applied (-1: unknown until the first resync) */
  seq = -1;
  /** number of resyncs asked for (tests read it from the DOM) */
  resyncs = 0;
  private byId = new Map<string, TranscriptEntry>();
  private buffered: StreamMsg[] = [];
  private syncing = false;
  private saveTimer = 0;
  private writing = false;
  private handler = (msg: any) => {
    if (!msg || msg.type !== "nbh_transcript" || typeof msg.seq !== "number" || !Array.isArray(msg.ops)) return;
    this.receive(msg as StreamMsg);
  };

  constructor(private model: AnyModel<ReplyModel>, private rpc: Rpc, private onChange: () => void) {
    this.fromTrait();
    // the seq the trait includes (unknown for a widget saved before it was kept: -1)
    const seq = model.get("transcript_seq");
    this.seq = typeof seq === "number" ? seq : -1;
    model.on("msg:custom", this.handler);
  }

  /** Take the full record from the trait (a widget whose owner sets it whole:
   * AG-UI and service consoles); the page's own writes are skipped. */
  fromTrait(): boolean {
    if (this.writing) return false;
    this.reset((this.model.get("transcript") || []) as TranscriptEntry[]);
    return true;
  }

  /** The entry `id`, if the page holds it. */
  get(id: string): TranscriptEntry | undefined {
    return this.byId.get(id);
  }

  /** The reply's final text: the `final_text` trait, or the text of the
   * entry `final_entry` names (the kernel keeps a final text the page has). */
  finalText(): string {
    const text = String(this.model.get("final_text") || "");
    if (text) return text;
    const id = String(this.model.get("final_entry") || "");
    return (id && this.byId.get(id)?.text) || "";
  }

  // Write what the page holds into its own model (not sent to the kernel):
  // JupyterLab saves the page's model state with the notebook. Coalesced: one
  // write for a burst of stream messages. Only once the page is in step with
  // the kernel (a resync answered), never an empty record over a saved one.
  scheduleSave(): void {
    if (this.saveTimer || this.seq < 0) return;
    this.saveTimer = window.setTimeout(() => this.saveNow(), 250);
  }

  /** Write the record now (the reply ended: a save right after it must hold all of it). */
  saveNow(): void {
    window.clearTimeout(this.saveTimer);
    this.saveTimer = 0;
    if (this.seq < 0) return;
    this.writing = true;
    try {
      this.model.set("transcript", this.entries.slice());
      this.model.set("transcript_seq", this.seq);
      const final = this.finalText();
      if (final && !this.model.get("final_text")) this.model.set("final_text", final);
    } finally {
      this.writing = false;
    }
  }

  private reset(entries: TranscriptEntry[]): void {
    this.entries = entries.map((e) => ({ ...e }));
    this.byId = new Map(this.entries.map((e) => [e.id, e]));
  }

  private receive(msg: StreamMsg): void {
    if (this.seq >= 0 && msg.seq <= this.seq) return; // already in a resync
    if (this.seq < 0 || msg.seq !== this.seq + 1 || this.syncing) {
      this.buffered.push(msg);
      void this.resync();
      return;
    }
    this.apply(msg);
    this.onChange();
    this.scheduleSave();
  }

  private apply(msg: StreamMsg): void {
    for (const op of msg.ops) {
      if (op.op === "add") {
        if (!this.byId.has(op.entry.id)) {
          const e = { ...op.entry };
          this.entries.push(e);
          this.byId.set(e.id, e);
        }
      } else {
        const e = this.byId.get(op.id);
        if (!e) continue;
        if (op.op === "append") e.text += op.text;
        else Object.assign(e, op.fields);
      }
    }
    this.seq = msg.seq;
  }

  /** Ask the kernel for every entry and the seq they include, then replay later messages. */
  async resync(): Promise<void> {
    if (this.syncing) return;
    this.syncing = true;
    this.resyncs += 1;
    const reply = await this.rpc.request("transcript_sync", { seq: this.seq });
    this.syncing = false;
    if (reply.ok) this.take(reply);
  }

  /** Take a sync answer, `{seq, entries}` or `{seq, current: true}` (the page
   * holds that seq already): from `resync` or the widget's connect request,
   * which may also answer `{seq, sent: true}`: the messages up to seq went out
   * before the answer, so the page holds seq now unless they left before it
   * listened (then it asks for every entry). */
  take(reply: Record<string, unknown>): void {
    if (typeof reply.seq !== "number") return;
    if (reply.sent === true) {
      if (this.seq !== reply.seq) void this.resync();
      return;
    }
    if (reply.current === true && reply.seq === this.seq) {
      // nothing came again
    } else if (Array.isArray(reply.entries)) {
      this.reset(reply.entries as TranscriptEntry[]);
      this.seq = reply.seq;
    } else return;
    const later = this.buffered.filter((m) => m.seq > this.seq).sort((a, b) => a.seq - b.seq);
    this.buffered = [];
    for (const m of later) {
      if (m.seq !== this.seq + 1) {
        // still a gap: keep the rest and ask again
        this.buffered = later.filter((x) => x.seq >= m.seq);
        this.onChange();
        void this.resync();
        return;
      }
      this.apply(m);
    }
    this.onChange();
    this.scheduleSave();
  }

  dispose(): void {
    window.clearTimeout(this.saveTimer);
    this.model.off("msg:custom", this.handler);
  }
}

// A reply waiting for a person marks the document title ("● "), even in a
// background tab, until no reply on the page waits any more.
const waiting = new Set<object>();
const MARK = "● ";
let watcher: MutationObserver | null = null;

function applyMark(): void {
  const marked = document.title.startsWith(MARK);
  if (waiting.size && !marked) document.title = MARK + document.title;
  else if (!waiting.size && marked) document.title = document.title.slice(MARK.length);
}

export function markWaiting(key: object, isWaiting: boolean): void {
  if (isWaiting) waiting.add(key);
  else waiting.delete(key);
  applyMark();
  // JupyterLab rewrites the title (current document, dirty state): keep the mark on it
  if (waiting.size && !watcher) {
    watcher = new MutationObserver(applyMark);
    watcher.observe(document.head, { subtree: true, childList: true, characterData: true });
  } else if (!waiting.size && watcher) {
    watcher.disconnect();
    watcher = null;
  }
}
