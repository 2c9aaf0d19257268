// The bar of a reply parked on several calls: each card keeps its own
// controls (card.ts), and these act on every open card at once, as ONE
// batch (one resume of the agent).
//
// A group action never drops what a person typed on a card. What a card
// holds unsent (card.ts Held) is sent for that card when it agrees with the
// action (BulkAction.takes: Approve all sends an open edit as that card's
// modified input, Deny all a typed reason), and the button says so before
// the click ("Approve all (2: delete_file as edited)"). A card holding what
// the action cannot send (a reason under Approve all, an edit under Deny
// all, ticked rules) makes it send nothing, and the note names that card.
// The note is a sentence about the cards as they are: it is recomputed
// whenever a card changes (drawn, typed in), and goes once it is no longer
// true (or the group is, below two open cards).
import { h, clear } from "../lib/dom";
import type { PauseView } from "../types";
import type { Draft } from "./card";
import { bulkActions, type BulkAction } from "./cards/index";

/** Send each card's decision as one batch (card.ts's sendBatch). */
export type SendAll = (batch: { p: PauseView; d: Draft }[]) => Promise<void>;

/** What a person typed or picked on a card and has not sent: `what` names it ("an edit"),
 *  `draft` is the decision it makes (null: none a group action may send, e.g. ticked rules). */
export interface Held {
  what: string;
  draft: Draft | null;
}

/** What the group bar reads of each open card (card.ts keeps them per card). */
export interface GroupReads {
  /** what "Submit all" sends for `p` (null: nothing yet) */
  draftOf(p: PauseView): Draft | null;
  /** what a person typed or picked on `p`'s card and has not sent, or null */
  heldOf(p: PauseView): Held | null;
}

/** The note's sentence for the open cards as they are now ("" : nothing to say). */
type Said = (open: PauseView[]) => string;

/** What a group action sends for each of its cards, and the cards it may not speak for. */
export interface BulkPlan {
  /** each card with the decision sent for it: the action's own, or what was typed on the card */
  send: { p: PauseView; d: Draft; typed: boolean }[];
  /** cards that hold what the action would drop: while any is there, nothing is sent */
  refused: PauseView[];
}

/** Plan `bulk` over `items` (pure): see the module's header. */
export function planBulk(items: PauseView[], bulk: Pick<BulkAction, "action" | "takes">, heldOf: GroupReads["heldOf"]): BulkPlan {
  const plan: BulkPlan = { send: [], refused: [] };
  for (const p of items) {
    const held = heldOf(p);
    if (!held) plan.send.push({ p, d: { action: bulk.action }, typed: false });
    else if (held.draft && bulk.takes.includes(held.draft.action)) plan.send.push({ p, d: held.draft, typed: true });
    else plan.refused.push(p);
  }
  return plan;
}

/** The sentence "Submit all" leaves: the cards it could not send (`waiting`) that are still open
 *  and not filled in since; `sentSome`: it sent the others. */
export function submitNote(waiting: string[], sentSome: boolean, draftOf: GroupReads["draftOf"]): Said {
  return (open) => {
    const still = open.filter((p) => waiting.includes(p.tool_call_id) && !draftOf(p)).map((p) => p.tool_name).join(", ");
    if (!still) return "";
    if (sentSome) return `Sent what is filled in; still to answer: ${still}.`;
    // a card filled in since the click: Submit all would send it now
    if (open.some((p) => draftOf(p))) return `Still to answer: ${still} (Submit all sends what is filled in).`;
    return `Nothing to send yet: answer ${still} first (confirmations: use their buttons, or Approve all / Deny all).`;
  };
}

/** The refusal of group action `bulk` while its cards among `ids` hold what it would drop. */
export function refusedNote(ids: string[], bulk: Pick<BulkAction, "label" | "action" | "takes">, heldOf: GroupReads["heldOf"]): Said {
  return (open) => {
    const still = planBulk(open.filter((p) => ids.includes(p.tool_call_id)), bulk, heldOf).refused;
    if (!still.length) return "";
    const held = still.map((p) => `${p.tool_name} has ${heldOf(p)!.what} you have not sent`);
    const each = still.length > 1 ? "each on its card" : "it on its card";
    return `${bulk.label} sent nothing: ${held.join("; ")}. Send ${each}, or cancel it there, then press ${bulk.label} again.`;
  };
}

/** A group action's button text: how many cards, and which go as typed on them. */
export function bulkLabel(label: string, plan: BulkPlan): string {
  const typed = plan.send.filter((s) => s.typed).map((s) => s.p.tool_name);
  const count = plan.send.length + plan.refused.length;
  return typed.length ? `${label} (${count}: ${typed.join(", ")} as typed)` : `${label} (${count})`;
}

/** The group bar and its note over the open cards of one reply. */
export class GroupBar {
  private said: Said | null = null;
  private open: PauseView[] = [];
  private buttons: { el: HTMLElement; items: PauseView[]; bulk: BulkAction }[] = [];

  /**
   * @param bar where the buttons go (hidden below two open cards).
   * @param note the live region that says what the last group action did or refused.
   * @param send sends a batch (card.ts's sendBatch).
   * @param reads the drafts and the unsent text of the cards.
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
    this.buttons = [];
    clear(this.bar);
    this.bar.hidden = open.length < 2;
    // below two open cards there is no group: nothing the note says about group actions holds
    if (open.length < 2) this.said = null;
    if (open.length >= 2) {
      this.bar.setAttribute("role", "group");
      this.bar.setAttribute("aria-label", "All open calls of this reply");
      this.bar.append(h("span", { class: "nbh-muted" }, `${open.length} open calls in this reply`));
      for (const bulk of bulkActions()) {
        const items = open.filter((p) => p.kind === bulk.kind);
        if (!items.length) continue;
        const el = h("button", { "data-testid": bulk.testid, onclick: () => this.bulk(items, bulk) });
        this.buttons.push({ el, items, bulk });
        this.bar.append(el);
      }
      this.bar.append(h("button", { class: "nbh-primary", "data-testid": "nbh-submit-all", onclick: () => this.submitAll() }, "Submit all"));
    }
    this.refresh();
  }

  /** Recompute what the bar says for the cards as they are now (a card was redrawn or typed in). */
  refresh(): void {
    for (const { el, items, bulk } of this.buttons) {
      const text = bulkLabel(bulk.label, planBulk(items, bulk, this.reads.heldOf));
      if (el.textContent !== text) el.textContent = text;
    }
    const text = this.said ? this.said(this.open) : "";
    if (!text) this.said = null;
    if (this.note.textContent !== text) this.note.textContent = text;
  }

  private say(said: Said | null): void {
    this.said = said;
    this.refresh();
  }

  private async bulk(items: PauseView[], bulk: BulkAction): Promise<void> {
    const plan = planBulk(items, bulk, this.reads.heldOf);
    if (plan.refused.length) {
      this.say(refusedNote(plan.refused.map((p) => p.tool_call_id), bulk, this.reads.heldOf));
      return;
    }
    this.say(null);
    await this.send(plan.send);
  }

  private async submitAll(): Promise<void> {
    const open = this.open;
    const ready = open.filter((p) => this.reads.draftOf(p));
    const waiting = open.filter((p) => !ready.includes(p)).map((p) => p.tool_call_id);
    this.say(submitNote(waiting, ready.length > 0, this.reads.draftOf));
    await this.send(ready.flatMap((p) => {
      const d = this.reads.draftOf(p);
      return d ? [{ p, d }] : [];
    }));
  }
}
