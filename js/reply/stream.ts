// The page side of the transcript stream (see "Streaming" in docs/design.md).
// The kernel sends {type: "nbh_transcript", seq, ops} custom messages with
// only what changed; the `transcript` trait holds the full record (saved
// notebooks, reloads) and is set at low rate. On connect, and whenever a
// message's seq is not the next one, the page asks for a full resync
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
  private handler = (msg: any) => {
    if (!msg || msg.type !== "nbh_transcript" || typeof msg.seq !== "number" || !Array.isArray(msg.ops)) return;
    this.receive(msg as StreamMsg);
  };

  constructor(private model: AnyModel<ReplyModel>, private rpc: Rpc, private onChange: () => void) {
    this.fromTrait();
    model.on("msg:custom", this.handler);
  }

  /** Take the full record from the trait (the kernel sets it after sending every change it holds). */
  fromTrait(): void {
    this.reset((this.model.get("transcript") || []) as TranscriptEntry[]);
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
    const reply = await this.rpc.request("transcript_sync", {});
    this.syncing = false;
    if (!reply.ok || !Array.isArray(reply.entries) || typeof reply.seq !== "number") return;
    this.reset(reply.entries as TranscriptEntry[]);
    this.seq = reply.seq;
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
  }

  dispose(): void {
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
