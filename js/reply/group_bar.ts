// The bar of a reply parked on several calls: each card keeps its own
// controls (card.ts), and these act on every open card at once, as ONE
// batch (one resume of the agent).
//
// A group action never drops what a person typed on a card: "Approve all" /
// "Deny all" send a bare decision, so when one of their cards holds text or
// choices not sent (an open edit, a typed reason, ticked rules) nothing is
// sent and the bar's note names those cards. The note is a sentence about the
// cards as they are: it is recomputed whenever a card changes (drawn, typed
// in), and goes once it is no longer true.
import { h, clear } from "../lib/dom";
import type { PauseView } from "../types";
import type { Draft } from "./card";
import { bulkActions, type BulkAction } from "./cards/index";

/** Send `pick(p)` for each of `items` (those it gives a draft for) as one batch. */
export type SendAll = (items: PauseView[], pick: (p: PauseView) => Draft | null) => Promise<void>;

/** What the group bar reads of each open card (card.ts keeps them per card). */
export interface GroupReads {
  /** what "Submit all" sends for `p` (null: nothing yet) */
  draftOf(p: PauseView): Draft | null;
  /** what a person typed or picked on `p`'s card and has not sent ("an edit"), or null */
  unsentOf(p: PauseView): string | null;
}

/** The note's sentence for the open cards as they are now ("" : nothing to say). */
type Said = (open: PauseView[]) => string;

/** The sentence "Submit all" leaves: which cards it could not send, while they are open. */
export function submitNote(waiting: string[], sentSome: boolean): Said {
  return (open) => {
    const still = open.filter((p) => waiting.includes(p.tool_call_id)).map((p) => p.tool_name);
    if (!still.length) return "";
    return sentSome
      ? `Sent what is filled in; still to answer: ${still.join(", ")}.`
      : `Nothing to send yet: answer ${still.join(", ")} first (confirmations: use their buttons, or Approve all / Deny all).`;
  };
}

/** The refusal of a group action (`label`) while cards among `ids` hold what was not sent. */
export function unsentNote(ids: string[], label: string, unsentOf: GroupReads["unsentOf"]): Said {
  return (open) => {
    const held = open.flatMap((p) => {
      const what = ids.includes(p.tool_call_id) ? unsentOf(p) : null;
      return what ? [`${p.tool_name} has ${what} you have not sent`] : [];
    });
    if (!held.length) return "";
    const each = held.length > 1 ? "each on its card" : "it on its card";
    return `${label} sent nothing: ${held.join("; ")}. Send ${each}, or cancel it there, then press ${label} again.`;
  };
}

/** The group bar and its note over the open cards of one reply. */
export class GroupBar {
  private said: Said | null = null;
  private open: PauseView[] = [];

  /**
   * @param bar where the buttons go (hidden below two open cards).
   * @param note the live region that says what the last group action did or refused.
   * @param send sends a batch (card.ts's sendBatch).
   * @param reads the drafts and unsent text of the cards.
   */
  constructor(
    private bar: HTMLElement,
    private note: HTMLElement,
    private send: SendAll,
    private reads: GroupReads,
  ) {}

  /** Draw the bar over `open` (the open cards that can be shown): Approve all /
   *  Deny all per kind, and Submit all of the drafts; the note is recomputed. */
  draw(open: PauseView[]): void {
    this.open = open;
    clear(this.bar);
    this.bar.hidden = open.length < 2;
    this.refresh();
    if (open.length < 2) return;
    this.bar.setAttribute("role", "group");
    this.bar.setAttribute("aria-label", "All open calls of this reply");
    this.bar.append(h("span", { class: "nbh-muted" }, `${open.length} open calls in this reply`));
    for (const bulk of bulkActions()) {
      const items = open.filter((p) => p.kind === bulk.kind);
      if (!items.length) continue;
      const label = bulk.label;
      this.bar.append(h("button", { "data-testid": bulk.testid, onclick: () => this.bulk(items, label, bulk.action) }, `${label} (${items.length})`));
    }
    this.bar.append(h("button", { class: "nbh-primary", "data-testid": "nbh-submit-all", onclick: () => this.submitAll() }, "Submit all"));
  }

  /** Recompute the note for the cards as they are now (a card was redrawn or typed in). */
  refresh(): void {
    if (!this.said) {
      if (this.note.textContent) this.note.textContent = "";
      return;
    }
    const text = this.said(this.open);
    if (!text) this.said = null;
    if (this.note.textContent !== text) this.note.textContent = text;
  }

  private say(said: Said | null): void {
    this.said = said;
    this.refresh();
  }

  private async bulk(items: PauseView[], label: string, action: BulkAction["action"]): Promise<void> {
    const held = items.filter((p) => this.reads.unsentOf(p)).map((p) => p.tool_call_id);
    if (held.length) {
      this.say(unsentNote(held, label, (p) => this.reads.unsentOf(p)));
      return;
    }
    this.say(null);
    await this.send(items, () => ({ action }));
  }

  private async submitAll(): Promise<void> {
    const open = this.open;
    const ready = open.filter((p) => this.reads.draftOf(p));
    const waiting = open.filter((p) => !ready.includes(p)).map((p) => p.tool_call_id);
    this.say(submitNote(waiting, ready.length > 0));
    await this.send(ready, (p) => this.reads.draftOf(p));
  }
}
