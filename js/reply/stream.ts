// The page side of the transcript stream (see "Streaming" in docs/design.md).
// The kernel sends {type: "nbh_transcript", seq, ops} custom messages with
// only what changed, and never the whole `transcript` trait: the page writes
// what it holds into its own model (not sent to the kernel), which is what
// JupyterLab saves with the notebook. Order, gaps ("transcript_sync") and
// those writes: lib/seq_stream.ts.
import type { AnyModel } from "@anywidget/types";
import type { Rpc } from "../lib/rpc";
import { SeqStream, type SyncAnswer } from "../lib/seq_stream";
import type { ReplyProtocol, TranscriptMsg, TranscriptOp } from "../messages";
import type { ReplyModel, TranscriptEntry } from "../types";

type FullSync = { seq: number; entries: TranscriptEntry[] };

/** The entries one message changed, in the order of its ops (a new entry
 * comes after every entry it follows); null after a sync: any may have. */
export type Changed = TranscriptEntry[] | null;

export class TranscriptStream extends SeqStream<TranscriptMsg, TranscriptEntry[], FullSync> {
  entries: TranscriptEntry[] = [];
  private byId = new Map<string, TranscriptEntry>();
  private lastTextEntry: TranscriptEntry | undefined;

  constructor(model: AnyModel<ReplyModel>, private rpc: Rpc<ReplyProtocol>, private onChange: (changed: Changed) => void) {
    // the seq the trait includes (unknown for a widget saved before it was kept: -1)
    const seq = model.get("transcript_seq");
    super(model, typeof seq === "number" ? seq : -1);
    this.fromTrait();
  }

  /** Take the record in the trait: one another view of this widget wrote (each
   * view applies every message itself), or a transcript set whole by hand
   * (every nb_hitl owner streams it). The entries and the seq they include are
   * taken as one: entries taken without their seq would have the next messages
   * applied to them again, or not at all. A record older than the messages this
   * view applied is not taken, nor the page's own write. Whether it was taken. */
  fromTrait(): boolean {
    if (this.writing) return false;
    const seq = this.model.get("transcript_seq");
    const known = typeof seq === "number";
    if (known && seq < this.seq) return false;
    this.reset((this.model.get("transcript") || []) as TranscriptEntry[]);
    if (known) this.heldThrough(seq);
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

  protected write(): void {
    // the seq first: another view reads both when the entries change; and copies,
    // as this view goes on changing its entries in place after the write
    this.model.set("transcript_seq", this.seq);
    this.model.set(
      "transcript",
      this.entries.map((e) => ({ ...e })),
    );
    // the final text the page holds, saved as the trait; one it holds in part
    // stays in its entry (with `more`), never saved as if it were whole
    const id = String(this.model.get("final_entry") || "");
    const entry = id ? this.byId.get(id) : undefined;
    if (entry?.text && !entry.more && !this.model.get("final_text")) this.model.set("final_text", entry.text);
  }

  /** The last text entry (the one a final text repeats), kept as entries come: no search. */
  lastText(): TranscriptEntry | undefined {
    return this.lastTextEntry;
  }

  private reset(entries: TranscriptEntry[]): void {
    this.entries = entries.map((e) => ({ ...e }));
    this.byId = new Map(this.entries.map((e) => [e.id, e]));
    this.lastTextEntry = this.entries.filter((e) => e.kind === "text").pop();
  }

  protected accepts(msg: unknown): msg is TranscriptMsg {
    const m = msg as Partial<TranscriptMsg> | null;
    return !!m && m.type === "nbh_transcript" && typeof m.seq === "number" && Array.isArray(m.ops);
  }

  protected requestSync(seq: number) {
    return this.rpc.request("transcript_sync", { seq });
  }

  protected resetFrom(reply: SyncAnswer<FullSync>): boolean {
    if (!("entries" in reply) || !Array.isArray(reply.entries)) return false;
    this.reset(reply.entries);
    return true;
  }

  protected changed(changed: TranscriptEntry[] | null): void {
    this.onChange(changed);
  }

  /** Apply one message's ops; the entries they touched, each once, in op order. */
  protected apply(msg: TranscriptMsg): TranscriptEntry[] {
    const touched = new Set<TranscriptEntry>();
    for (const op of msg.ops) {
      if (op.op === "add") {
        if (!this.byId.has(op.entry.id)) {
          const e = { ...op.entry };
          this.entries.push(e);
          this.byId.set(e.id, e);
          if (e.kind === "text") this.lastTextEntry = e;
          touched.add(e);
        }
      } else {
        const e = this.byId.get(op.id);
        if (!e) continue;
        if (op.op === "append") e.text += op.text;
        else setFields(e, op.fields);
        touched.add(e);
      }
    }
    return [...touched];
  }
}

/** Write a `set` op's fields into `e`; a field set to null is removed (e.g.
 * the `html` of a text that changed after it was rendered). */
function setFields(e: TranscriptEntry, fields: Extract<TranscriptOp, { op: "set" }>["fields"]): void {
  const target = e as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(fields)) {
    if (value === null) delete target[key];
    else target[key] = value;
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
