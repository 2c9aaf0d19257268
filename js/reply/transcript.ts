// The live transcript of a reply: the agent's text, its tool calls (each
// with a slot where the call's pause card goes) and tool results, appended
// as they stream and updated in place. Text is set with textContent only.
import { h, prettyJson } from "../lib/dom";
import type { TranscriptEntry } from "../types";

interface EntryEl {
  el: HTMLElement;
  body: HTMLElement;
  slot?: HTMLElement;
  state?: HTMLElement;
}

export class Transcript {
  readonly el = h("div", { class: "nbh-transcript" });
  private entries = new Map<string, EntryEl>();

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
      const text = e.kind === "tool_call" ? prettyJson(e.text) : e.text;
      if (rec.body.textContent !== text) rec.body.textContent = text;
      if (rec.state) {
        const st = e.state || "";
        if (rec.state.textContent !== st) rec.state.textContent = st;
        // an external call's result "starts" before anyone answered it: show
        // the entry once it has text or an end state
        rec.el.hidden = st === "running" && !e.text;
      }
    }
  }

  /** The final message already streamed as the last text block: show it once. */
  hideRepeatedFinal(entries: TranscriptEntry[], finalText: string): void {
    const last = entries.filter((e) => e.kind === "text").pop();
    const lastEl = last ? this.entries.get(last.id) : undefined;
    if (last && lastEl) lastEl.el.hidden = !!finalText && last.text.trim() === finalText.trim();
  }

  private create(e: TranscriptEntry): EntryEl {
    const body = h("div", { class: e.kind === "text" ? "nbh-text" : "nbh-pre" });
    if (e.kind === "tool_call") {
      const slot = h("div", { class: "nbh-slot" });
      const el = h("div", { class: "nbh-entry nbh-call", "data-testid": "nbh-tool-call" }, h("div", { class: "nbh-muted" }, `→ ${e.name || "tool"}`), body, slot);
      return { el, body, slot };
    }
    if (e.kind === "tool_result") {
      const state = h("span", { class: "nbh-chip" });
      const el = h("div", { class: "nbh-entry nbh-result", "data-testid": "nbh-tool-result" }, h("div", { class: "nbh-muted" }, `← ${e.name || "result"} `, state), body);
      return { el, body, state };
    }
    if (e.kind === "note") {
      // a team's steps ("lead assigned … to worker") are not warnings
      const step = e.id.startsWith("assign:") || e.id.startsWith("report:");
      return { el: h("div", { class: step ? "nbh-entry nbh-muted" : "nbh-entry nbh-warn", "data-testid": step ? "nbh-step" : "nbh-note" }, body), body };
    }
    body.style.whiteSpace = "pre-wrap";
    return { el: h("div", { class: "nbh-entry", "data-testid": "nbh-text" }, body), body };
  }
}
