// The live transcript of a reply: the agent's text, its tool calls (each
// with a slot where the call's pause card goes) and tool results, appended
// as they stream and updated in place; thinking blocks (collapsed), one step
// per model call (elapsed time, tokens), hints and data blocks. Text is set
// with textContent only; a text or thinking block that ended carries `html`,
// its Markdown rendered and sanitised by the kernel, which replaces the plain
// text once, through lib/safe_html.ts (parsed inert, walked again). In a
// team each entry names the agent that wrote it (its `agent` field, which may
// come in a later "set" op), as text. The kernel sends at most 20,000
// characters of an entry (a 1 MB tool result would hold the page); `more`
// counts the rest, and "Show all" asks the kernel for the whole text, which
// this view alone shows (the record, and other views, keep the part) until
// the entry changes.
import { h, clear, prettyJson } from "../lib/dom";
import { safeFragment } from "../lib/safe_html";
import type { TranscriptEntry } from "../types";

interface EntryEl {
  el: HTMLElement;
  body: HTMLElement;
  /** where the agent's name goes (default: the start of `el`) */
  head?: HTMLElement;
  agent?: HTMLElement;
  slot?: HTMLElement;
  state?: HTMLElement;
  /** "… N more characters not shown" and its "Show all" button */
  more?: HTMLElement;
  /** the entry as last drawn */
  entry?: TranscriptEntry;
  /** the `html` shown (undefined: plain text) */
  html?: string;
  /** the plain text shown: a longer text that starts with it only appends its rest */
  text?: string;
  plainClass?: string;
}

/** The rendered Markdown of an entry, if it has one (text and thinking only). */
export function entryHtml(e: TranscriptEntry | undefined): string | undefined {
  return e && (e.kind === "text" || e.kind === "thinking") && typeof e.html === "string" ? e.html : undefined;
}

/** `text` without its whitespace: two texts that differ only in it say the same. */
const squash = (text: string) => text.replace(/\s+/g, "");

/** Show `html` (sanitised again) or, when undefined, `text` in `body`. */
function show(rec: EntryEl, text: string, html: string | undefined): void {
  if (html !== undefined) {
    if (rec.html === html) return;
    if (rec.html === undefined) rec.plainClass = rec.body.className;
    rec.html = html;
    rec.text = undefined;
    clear(rec.body);
    rec.body.append(safeFragment(html));
    // the entry's own classes (tests and themes find it by them), less the plain-text look
    const keep = (rec.plainClass || "").split(" ").filter((c) => c && c !== "nbh-plain" && c !== "nbh-pre");
    rec.body.className = [...keep, "nbh-md"].join(" ");
    return;
  }
  if (rec.html !== undefined) {
    rec.html = undefined;
    rec.body.className = rec.plainClass || "";
    rec.body.textContent = "";
    rec.text = "";
  }
  const shown = rec.text ?? rec.body.textContent ?? "";
  if (shown === text) return;
  // streamed text grows at its end: add the new part as a text node, never set the whole text again
  if (shown && text.length > shown.length && text.startsWith(shown)) rec.body.append(text.slice(shown.length));
  else rec.body.textContent = text;
  rec.text = text;
}

export class Transcript {
  readonly el = h("div", { class: "nbh-transcript" });
  private entries = new Map<string, EntryEl>();
  private steps = new Map<string, TranscriptEntry>();
  private ticker = 0;

  /** whole texts asked for ("Show all"), with the part and count they were asked on */
  private whole = new Map<string, { text: string; part: string; more: number }>();

  /** @param fetchWhole asks the kernel for an entry's whole text: `{text}`,
   * or `{error}` to show beside the button. */
  constructor(private readonly fetchWhole?: (id: string) => Promise<{ text?: string; error?: string }>) {}

  /** The slot under a tool call's entry (and its raw input), once that entry exists. */
  slotFor(toolCallId: string): { slot: HTMLElement; body: HTMLElement } | undefined {
    const rec = this.entries.get("call:" + toolCallId);
    return rec && rec.slot ? { slot: rec.slot, body: rec.body } : undefined;
  }

  draw(entries: TranscriptEntry[]): void {
    for (const e of entries) {
      let rec = this.entries.get(e.id);
      if (!rec) {
        rec = this.create(e);
        this.entries.set(e.id, rec);
        this.el.append(rec.el);
      }
      rec.entry = e;
      // shown whole after "Show all" while the entry is what it was then
      const whole = this.whole.get(e.id);
      const expanded = !!whole && whole.part === e.text && whole.more === (e.more || 0);
      if (whole && !expanded) this.whole.delete(e.id);
      const raw = whole && expanded ? whole.text : e.text;
      const text = e.kind === "tool_call" ? prettyJson(raw) : e.kind === "step" ? stepText(e) : e.kind === "data" ? dataText(e) : raw;
      if (e.kind === "step") this.track(e);
      if (e.agent && !rec.agent) {
        rec.agent = h("span", { class: "nbh-chip", "data-testid": "nbh-entry-agent", "data-agent": e.agent }, e.agent);
        (rec.head || rec.el).prepend(rec.agent, " ");
        // an entry without a head line (a text, a team's step): the name sits at the start of its first line (theme.css)
        if (!rec.head) rec.el.classList.add("nbh-by-agent");
      }
      show(rec, text, expanded ? undefined : entryHtml(e));
      this.drawMore(rec, expanded ? 0 : e.more || 0);
      if (rec.state) {
        const st = e.state || "";
        if (rec.state.textContent !== st) rec.state.textContent = st;
        // an external call's result "starts" before anyone answered it: show
        // the entry once it has text or an end state
        rec.el.hidden = st === "running" && !e.text;
      }
    }
  }

  /** The note under an entry the kernel sent a part of, with its "Show all". */
  private drawMore(rec: EntryEl, more: number): void {
    if (!(more > 0)) {
      rec.more?.remove();
      rec.more = undefined;
      return;
    }
    const note = `… ${more.toLocaleString("en")} more characters not shown`;
    if (rec.more) {
      (rec.more.firstChild as Text).data = note;
      return;
    }
    const error = h("span", { class: "nbh-error", role: "alert", "data-testid": "nbh-show-all-error" });
    const button = h("button", { "data-testid": "nbh-show-all", hidden: !this.fetchWhole }, "Show all");
    button.onclick = async () => {
      const asked = rec.entry;
      if (!this.fetchWhole || !asked) return;
      // the stream changes its entries in place: what was asked on, kept as it was
      const part = asked.text;
      const count = asked.more || 0;
      button.disabled = true;
      error.textContent = "";
      const got = await this.fetchWhole(asked.id);
      button.disabled = false;
      if (got.error !== undefined || got.text === undefined) {
        error.textContent = got.error || "Could not get the whole text.";
        return;
      }
      const now = rec.entry;
      // the entry changed while the kernel answered: show it as it is now (Show all again)
      if (!now || now.text !== part || (now.more || 0) !== count) return;
      this.whole.set(now.id, { text: got.text, part, more: count });
      this.draw([now]);
    };
    rec.more = h("div", { class: "nbh-muted nbh-more", "data-testid": "nbh-more" }, note, " ", button, " ", error);
    // right after the text: hidden with it (theme.css) when a card shows a call's input instead
    rec.body.after(rec.more);
  }

  /** The final message already streamed as the last text block (`last`): show it once.
   * Returns that block's rendered Markdown, if any, for the final message. */
  hideRepeatedFinal(last: TranscriptEntry | undefined, finalText: string): string | undefined {
    const lastEl = last ? this.entries.get(last.id) : undefined;
    // a final message the kernel sent a part of stays in its entry, with its "Show all";
    // one that differs only in whitespace (AgentScope streams a response's text blocks as
    // one, and joins them with newlines in the message) is shown once, as the message
    const repeated = !!last && !!finalText && !last.more && squash(last.text) === squash(finalText);
    if (last && lastEl) lastEl.el.hidden = repeated;
    return repeated && last.text.trim() === finalText.trim() ? entryHtml(last) : undefined;
  }

  // a model call still running shows its elapsed time, once a second
  private track(e: TranscriptEntry): void {
    if (e.state === "calling") this.steps.set(e.id, e);
    else this.steps.delete(e.id);
    if (this.steps.size && !this.ticker) {
      this.ticker = window.setInterval(() => {
        for (const [id, step] of this.steps) {
          const rec = this.entries.get(id);
          if (rec) rec.body.textContent = rec.text = stepText(step);
        }
        if (!this.steps.size) this.dispose();
      }, 1000);
    }
  }

  dispose(): void {
    window.clearInterval(this.ticker);
    this.ticker = 0;
  }

  private create(e: TranscriptEntry): EntryEl {
    const body = h("div", { class: e.kind === "text" ? "nbh-text" : "nbh-pre" });
    if (e.kind === "thinking") {
      // collapsed by default: the model's reasoning is there when wanted
      const head = h("summary", { class: "nbh-muted" }, "Thinking");
      const el = h("details", { class: "nbh-entry nbh-thinking", "data-testid": "nbh-thinking" }, head, body);
      return { el, body, head };
    }
    if (e.kind === "step") {
      body.className = "nbh-muted";
      return { el: h("div", { class: "nbh-entry nbh-step", "data-testid": "nbh-step" }, body), body };
    }
    if (e.kind === "hint") {
      // what the runtime tells the model (time, team messages...): there when wanted, folded by default
      const head = h("summary", { class: "nbh-muted" }, `Hint${e.source ? ` from ${e.source}` : ""}`);
      const el = h("details", { class: "nbh-entry nbh-hint", "data-testid": "nbh-hint" }, head, body);
      return { el, body, head };
    }
    if (e.kind === "data") {
      body.className = "nbh-muted";
      return { el: h("div", { class: "nbh-entry nbh-data", "data-testid": "nbh-data" }, body), body };
    }
    if (e.kind === "tool_call") {
      const slot = h("div", { class: "nbh-slot" });
      const head = h("div", { class: "nbh-muted" }, `→ ${e.name || "tool"}`);
      const el = h("div", { class: "nbh-entry nbh-call", "data-testid": "nbh-tool-call" }, head, body, slot);
      return { el, body, head, slot };
    }
    if (e.kind === "tool_result") {
      const state = h("span", { class: "nbh-chip" });
      const head = h("div", { class: "nbh-muted" }, `← ${e.name || "result"} `, state);
      const el = h("div", { class: "nbh-entry nbh-result", "data-testid": "nbh-tool-result" }, head, body);
      return { el, body, head, state };
    }
    if (e.kind === "note") {
      // a team's steps ("lead assigned … to worker") are not warnings
      const step = e.id.startsWith("assign:") || e.id.startsWith("report:");
      return { el: h("div", { class: step ? "nbh-entry nbh-muted" : "nbh-entry nbh-warn", "data-testid": step ? "nbh-step" : "nbh-note" }, body), body };
    }
    body.className = "nbh-text nbh-plain";
    return { el: h("div", { class: "nbh-entry", "data-testid": "nbh-text" }, body), body };
  }
}

/** "calling the model… 3 s", then "model call · 2.4 s · 120 in / 45 out tokens"
 * ("model call failed: AuthenticationError · 0.4 s" / "model call stopped · 3.0 s"). */
export function stepText(e: TranscriptEntry): string {
  const model = e.model_name ? ` (${e.model_name})` : "";
  if (e.state === "calling") {
    const secs = e.started_at ? Math.max(0, Math.round(Date.now() / 1000 - e.started_at)) : 0;
    return `calling the model${model}… ${secs} s`;
  }
  const ended = e.state === "failed" ? ` failed${e.error ? `: ${e.error}` : ""}` : e.state === "stopped" ? " stopped" : "";
  const parts = [`model call${model}${ended}`];
  if (typeof e.elapsed === "number") parts.push(`${e.elapsed.toFixed(1)} s`);
  if (typeof e.input_tokens === "number") parts.push(`${e.input_tokens} in / ${e.output_tokens ?? 0} out tokens`);
  return parts.join(" · ");
}

function dataText(e: TranscriptEntry): string {
  const size = e.bytes ? `, ${e.bytes} bytes` : "";
  return `data: ${e.name || "(unnamed)"} (${e.media_type || "unknown type"}${size})${e.url ? ` ${e.url}` : ""}`;
}
