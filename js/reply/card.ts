// The part of a pause card every kind shares: the header (kind, title, policy,
// safety check, deadline), the decided or expired record, the "Sending…" line,
// and the group actions of a reply parked on several calls. What sits between
// header and footer comes from the card module of the pause's kind
// (cards/index.ts), or cards/invalid.ts for a view that does not fit its kind;
// nothing here looks at the kind. The words of a decision are record.ts's.
import { h, clear } from "../lib/dom";
import type { Rpc } from "../lib/rpc";
import type { BatchResult, Decision, ReplyProtocol } from "../messages";
import type { PauseView, RemotePauseView } from "../types";
import type { CardFeed } from "./feed";
import { cardFor, kindLabel } from "./cards/index";
import { GroupBar, type Held } from "./group_bar";
import type { CardCtx, CardUi, Draft } from "./card_ctx";
import { holdPresses, livenessLine, showLiveness, type Liveness } from "./card_live";
import { buildInvalid, INVALID_LABEL } from "./cards/invalid";
import { appendDecisionRecord, deadlineEl, decisionText } from "./record";
import { clearError, errorBox } from "./card_error";
import { readTyped, putTyped } from "./card_typed";
import { controlKey, findControl, firstControl, focusableScrollers } from "../lib/a11y";
import { PREVIEW_TIMEOUT_MS } from "../lib/edit_preview"; // a preview applies nothing: given up when slow
import { bringIntoView, onLayout, topInSight } from "../lib/in_view";

export type { CardCtx, CardUi, Draft } from "./card_ctx";

/** Where a pause's card goes: under its tool call entry when there is one. */
export interface CardHost {
  slotFor(toolCallId: string): { slot: HTMLElement; body: HTMLElement } | undefined;
  loose: HTMLElement;
  /** Called after the cards were drawn (each drawAll / drawSome). */
  drawn?(): void;
}

/** Cards drawn at first, and added by each "Show more": a reply of thousands
 *  of cards draws a page of them, never all at once (the group actions still
 *  act on every open card). */
export const PAGE_SIZE = 50;

/** The cards of one reply: one per pause, redrawn when its pause changes. */
export class CardSet {
  /** how many cards (in the reply's order) are drawn */
  limit = PAGE_SIZE;
  // what the page knows of the kernel (index.ts's setLive): shown over the open cards, never rebuilding one
  private liveness: Liveness = "unknown";
  private cards = new Map<string, CardUi>();
  // What "Submit all" would send for each open card (filled AskUser panels,
  // external outputs, edited inputs); confirmations in view mode have none.
  private drafts = new Map<string, () => Draft | null>();
  // What each open card holds that the person has not sent (see CardCtx.setHeld).
  private held = new Map<string, () => Held | null>();
  private group: GroupBar;
  // What each open card held (its draft) when it was last redrawn: its kind draws the rebuilt card
  // from it (CardCtx.kept), which matters where no control is there to put back (card_typed.ts):
  // a card reopened after a remote refusal, whose last build was a closed one.
  private keptDrafts = new Map<string, Draft>();
  // Values a card keeps for itself (the rules ticked in a confirmation's "Always…" panel).
  private memo = new Map<string, unknown>();
  // true while a rebuilt card gets back what was typed on the card it replaces (card_typed.ts)
  private restoring = false;
  // open cards drawn while liveness was unknown, not announced yet (see liveKnown)
  private unannounced = new Set<string>();
  // open cards already brought into view once (lib/in_view.ts): never again, whatever the person scrolls
  private shownOnce = new Set<string>();

  constructor(
    private feed: CardFeed,
    private rpc: Rpc<ReplyProtocol>,
    private host: CardHost,
    groupBar: HTMLElement,
    groupNote: HTMLElement,
    private pager: HTMLElement,
    private announce: (text: string) => void,
  ) {
    this.group = new GroupBar(groupBar, groupNote, (batch) => this.sendBatch(batch), {
      draftOf: (p) => (this.drafts.get(p.tool_call_id) || (() => null))(),
      heldOf: (p) => (this.held.get(p.tool_call_id) || (() => null))(),
    });
  }

  private uiFor(id: string): CardUi {
    let ui = this.cards.get(id);
    if (!ui) {
      ui = { mode: "view", error: "", errorField: "", errorStatus: "", pending: false, el: null, key: "", focusKey: null };
      this.cards.set(id, ui);
    }
    return ui;
  }

  private pauses(): PauseView[] {
    return this.feed.all();
  }

  private current(id: string): PauseView | undefined {
    return this.feed.get(id);
  }

  /** Whether the card of `id` is among the cards drawn (see {@link PAGE_SIZE}). */
  private shown(id: string): boolean {
    const i = this.feed.position(id);
    return i >= 0 && i < this.limit;
  }

  canAct(p: PauseView): boolean {
    return p.status === "open" && this.live !== false;
  }

  /** The header chip of a card: its kind's, or that it cannot be shown. */
  private label(p: PauseView, open: boolean): string {
    return this.feed.trouble(p.tool_call_id) ? INVALID_LABEL : kindLabel(p.kind, open);
  }

  /** Whether the kernel answers: null while not known yet. */
  get live(): boolean | null {
    return this.liveness === "unknown" ? null : this.liveness === "live";
  }

  /** The kernel answers, does not answer, or is gone: shown on every open card drawn, none
   *  rebuilt (card_live.ts), so what a person typed or chose there, focus and caret stay. */
  setLiveness(state: Exclude<Liveness, "unknown">): void {
    this.liveness = state;
    for (const [id, ui] of this.cards) {
      const p = this.current(id);
      if (ui.el && p && p.status === "open") this.showLive(ui.el, p, ui);
    }
  }

  private showLive(card: HTMLElement, p: PauseView, ui: CardUi): void {
    showLiveness(card, this.liveness, { label: this.label(p, this.canAct(p)), title: p.title || p.tool_name, sending: ui.pending });
  }

  async send(p: PauseView, decision: Decision): Promise<void> {
    const ui = this.uiFor(p.tool_call_id);
    if (ui.pending) return;
    ui.pending = true;
    ui.error = "";
    ui.errorField = "";
    const { action, ...fields } = decision;
    // the message leaves first, then the card says "Sending…": the redraw does not delay the click
    const answer = this.rpc.request(action, { ...fields, tool_call_id: p.tool_call_id, reply_id: p.reply_id });
    this.redraw(p, true);
    const reply = await answer;
    if (this.cardFollows(p.tool_call_id, reply.ok && reply.status === "decided" && reply.card_follows === true)) {
      ui.mode = "view";
      return;
    }
    ui.pending = false;
    if (!reply.ok) {
      ui.error = reply.error || "Refused.";
      ui.errorField = reply.field || "";
      ui.errorStatus = (this.current(p.tool_call_id) || p).status;
    } else ui.mode = "view";
    this.redraw(this.current(p.tool_call_id) || p, true);
  }

  /** A group action as ONE page message ({action: "batch", items}): the
   *  kernel resumes the agent once with every accepted decision. */
  async sendBatch(batch: { p: PauseView; d: Draft }[]): Promise<void> {
    const items = batch.filter(({ p }) => !this.uiFor(p.tool_call_id).pending);
    if (!items.length) return;
    for (const { p } of items) {
      const ui = this.uiFor(p.tool_call_id);
      ui.pending = true;
      ui.error = ui.errorField = "";
      this.redraw(p, true);
    }
    const reply = await this.rpc.request("batch", {
      items: items.map(({ p, d }) => ({ ...d, tool_call_id: p.tool_call_id, reply_id: p.reply_id })),
    });
    const results: BatchResult[] = reply.ok && Array.isArray(reply.results) ? reply.results : [];
    items.forEach(({ p }, n) => {
      const ui = this.uiFor(p.tool_call_id);
      const r = results[n];
      if (this.cardFollows(p.tool_call_id, reply.ok && reply.card_follows === true && !!r && r.ok && r.decision !== undefined)) {
        ui.mode = "view";
        return;
      }
      ui.pending = false;
      if (!reply.ok || !r || !r.ok) {
        const refused = reply.ok ? null : reply;
        ui.error = (r && r.error) || refused?.error || "Refused.";
        ui.errorField = (r && r.field) || refused?.field || "";
        ui.errorStatus = (this.current(p.tool_call_id) || p).status;
      } else ui.mode = "view";
      this.redraw(this.current(p.tool_call_id) || p, true);
    });
  }

  /** Whether the answer on `id` was taken for the agent and its card follows (`taken`: a
   *  Session says `card_follows`; other owners set their record themselves) while the card
   *  still shows it open: the card then stays "Sending…" until its view comes (never open
   *  again for a moment) and is redrawn once, by it. */
  private cardFollows(id: string, taken: boolean): boolean {
    return taken && this.current(id)?.status === "open";
  }

  /** Draw every card drawn so far (and the first page): a status or liveness change. */
  drawAll(): void {
    const pauses = this.pauses();
    for (const [id, ui] of this.cards) {
      if (ui.el && !this.feed.get(id)) this.forget(id); // dropped while a resync replaced the cards
    }
    this.finish(pauses.slice(0, this.limit).filter((p) => this.redraw(p, false) && this.canAct(p)));
  }

  /** Draw only the cards of `ids` (one card message): the other cards' DOM is not touched. */
  drawSome(ids: string[]): void {
    const fresh: PauseView[] = [];
    for (const id of ids) {
      const p = this.feed.get(id);
      if (!p) this.forget(id);
      else if (this.redraw(p, false) && this.canAct(p)) fresh.push(p);
    }
    this.finish(fresh);
  }

  /** Move cards drawn before their tool call's transcript entry existed under it. */
  place(): void {
    for (const el of Array.from(this.host.loose.children) as HTMLElement[]) {
      const p = this.feed.get(el.dataset.toolCallId || "");
      if (p) this.redraw(p, false);
    }
  }

  private forget(id: string): void {
    this.cards.get(id)?.el?.remove();
    this.cards.delete(id);
    this.drafts.delete(id);
    this.held.delete(id);
  }

  private finish(fresh: PauseView[]): void {
    this.drawGroup(this.pauses());
    this.drawPager();
    this.host.drawn?.();
    // a pause that arrives while the keyboard is on a decided card of this
    // reply (the person just answered the previous one) takes the focus
    const active = document.activeElement;
    if (fresh.length && active && this.closedCards().some((el) => el.contains(active))) {
      this.cards.get(fresh[0].tool_call_id)?.el?.focus();
    }
  }

  // "Showing 50 of 10000 cards" and "Show more": the cards past the page are
  // not drawn until asked for; the group actions count them. Built once and
  // updated in place (the keyboard may be on the button when a card changes).
  private pagerText: HTMLElement | null = null;
  private pagerButton: HTMLElement | null = null;

  private drawPager(): void {
    const total = this.feed.size;
    this.pager.hidden = total <= this.limit;
    if (this.pager.hidden) return;
    if (!this.pagerText || !this.pagerButton) {
      this.pagerText = h("span", { class: "nbh-muted", "data-testid": "nbh-pager-text" });
      this.pagerButton = h("button", { "data-testid": "nbh-show-more", onclick: () => this.showMore() });
      clear(this.pager);
      this.pager.append(this.pagerText, this.pagerButton);
    }
    const hiddenOpen = this.pauses().slice(this.limit).filter((p) => this.canAct(p)).length;
    this.pagerText.textContent =
      `Showing ${this.limit} of ${total} cards` +
      (hiddenOpen ? `; ${hiddenOpen} open cards not shown are included in the group actions above.` : ".");
    this.pagerButton.textContent = `Show ${Math.min(PAGE_SIZE, total - this.limit)} more`;
  }

  /** Draw the next page of cards. */
  showMore(): void {
    const from = this.limit;
    this.limit += PAGE_SIZE;
    const added = this.pauses().slice(from, this.limit);
    for (const p of added) this.redraw(p, false);
    this.drawPager();
    // the keyboard stays on "Show more" while there is more; else it goes to the first card shown
    const first = added.length ? this.cards.get(added[0].tool_call_id)?.el : null;
    (this.pager.hidden ? first : this.pagerButton)?.focus();
    this.announce(`${added.length} more cards shown`);
  }

  private closedCards(): HTMLElement[] {
    return Array.from(this.cards.values())
      .map((ui) => ui.el)
      .filter((el): el is HTMLElement => !!el && el.classList.contains("nbh-closed"));
  }

  // A reply parked on several calls is one group (group_bar.ts)
  private drawGroup(pauses: PauseView[]): void {
    // a card that cannot be shown is cancelled on its own card only
    this.group.draw(pauses.filter((p) => this.canAct(p) && !this.feed.trouble(p.tool_call_id)));
  }

  /** Draw (or move) the card of `p`; true when it was rebuilt. */
  redraw(p: PauseView, force: boolean): boolean {
    if (!this.shown(p.tool_call_id)) return false;
    const ui = this.uiFor(p.tool_call_id);
    if (p.status !== "open") ui.pending = false; // its answer arrived (see send)
    // the kernel's view of the card, by its status and revision (any change of the view: its decision,
    // reason, deadline and trouble are read from it); liveness is not part of it (setLiveness shows
    // it over the card as it stands), so a kernel slow to answer rebuilds no card
    const key = JSON.stringify([p.status, this.feed.revision(p.tool_call_id)]);
    // a card an MCP server raised while a tool ran goes in that call's entry, before its result
    const entry = this.host.slotFor(p.parent_tool_call_id || p.tool_call_id);
    // a card of the call itself shows its input: the raw JSON above it would only repeat it
    const hidesInput = !p.parent_tool_call_id;
    if (!force && ui.el && ui.key === key) {
      // the pause may have arrived before its tool call's transcript entry:
      // move the card under its call once that entry exists
      if (entry && ui.el.parentElement !== entry.slot) {
        // moving a node drops the focus inside it: put it back
        const active = document.activeElement;
        const keep = active instanceof HTMLElement && ui.el.contains(active) ? active : null;
        entry.slot.append(ui.el);
        if (hidesInput) entry.body.hidden = true;
        keep?.focus();
      }
      return false;
    }
    const firstDraw = ui.key === "";
    const statusChanged = !firstDraw && JSON.parse(ui.key)[0] !== p.status;
    // a refusal shown for an earlier status (the call was answered since, or ran): it is no longer true
    if (statusChanged && ui.error && !ui.pending && ui.errorStatus !== p.status) ui.error = ui.errorField = "";
    ui.key = key;
    const held = this.drafts.get(p.tool_call_id);
    const snapshot = held ? held() : null;
    // a card reopened (a remote server refused the answer sent from it) keeps what was typed before it was
    // sent: the person fixes their edit, not retypes it
    const reopened = statusChanged && p.status === "open";
    if (snapshot) this.keptDrafts.set(p.tool_call_id, snapshot);
    else if (!reopened) this.keptDrafts.delete(p.tool_call_id);
    this.drafts.delete(p.tool_call_id);
    this.held.delete(p.tool_call_id);
    const active = document.activeElement;
    const hadFocus = !!(ui.el && active && ui.el.contains(active));
    const focusKey = hadFocus && ui.el && active !== ui.el ? controlKey(ui.el, active) : null;
    // what the person typed or picked on the card being replaced: put back once its kind drew the new one
    const typed = ui.el ? readTyped(ui.el) : null;
    const card = this.build(p, ui);
    if (entry && hidesInput) entry.body.hidden = true;
    if (ui.el && ui.el.parentElement) {
      ui.el.replaceWith(card);
    } else {
      (entry ? entry.slot : this.host.loose).append(card);
    }
    ui.el = card;
    // what is put back is what any refusal on the new card is about: it clears none (CardCtx.clearError)
    this.restoring = true;
    try {
      if (typed) putTyped(card, typed);
    } finally {
      this.restoring = false;
    }
    // the group bar's note is about the cards as they are: a card redrawn or typed in may end it
    this.group.refresh();
    card.addEventListener("input", () => this.group.refresh());
    card.addEventListener("change", () => this.group.refresh());
    focusableScrollers(card);
    if (hadFocus) this.placeFocus(p, ui, card, focusKey);
    if (firstDraw || statusChanged) this.announceCard(p, firstDraw);
    return true;
  }

  private announceCard(p: PauseView, firstDraw: boolean): void {
    const title = p.title || p.tool_name;
    if (p.status === "open") {
      // a card drawn before the kernel answered (a saved card after a reload) is
      // announced once the kernel proves live (liveKnown): never a need nobody can answer
      if (this.live === null) this.unannounced.add(p.tool_call_id);
      else if (this.canAct(p)) {
        this.announce(`${this.label(p, true)}: ${title}`);
        this.bringOnce(p.tool_call_id);
      }
    } else if (p.status === "expired") {
      if (!firstDraw) this.announce(`${title}: no longer live: ${p.reason || "the reply ended"}`);
    } else if (p.status === "decided" || p.status === "delivered") {
      if (!firstDraw) this.announce(`${title}: ${decisionText(p.decision, p)}`);
    }
  }

  /** A card that waits for the person (open, the kernel live) comes into view once, if out of sight. */
  private bringOnce(id: string): void {
    if (this.shownOnce.has(id)) return;
    this.shownOnce.add(id);
    const waits = (): boolean => { const p = this.current(id); return !!p && this.canAct(p); };
    onLayout(() => {
      const el = this.cards.get(id)?.el;
      if (!el || !waits()) return true; // answered or gone meanwhile: nothing to show
      if (topInSight(el) === null) return false; // not laid out yet: the next frame tries again
      bringIntoView(el, waits); // held while it waits: answered (a click, a cell from code), it is let go
      return true;
    });
  }

  /** Liveness is known (see {@link live}): the open cards drawn while it was not are announced if live. */
  liveKnown(): void {
    const waiting = Array.from(this.unannounced);
    this.unannounced.clear();
    if (this.live !== true) return;
    for (const id of waiting) {
      const p = this.current(id);
      if (p && this.canAct(p)) this.announceCard(p, false);
    }
  }

  // Keep the keyboard where the person is: on the same control when a card is
  // rebuilt (a refusal, a mode change), on the field a refusal is about, on
  // the card while its controls wait for the kernel, and on the next open card
  // of the reply (or this card's record) once it is decided.
  private placeFocus(p: PauseView, ui: CardUi, card: HTMLElement, key: string | null): void {
    if (!this.canAct(p)) {
      const next = this.pauses().find((q) => q.tool_call_id !== p.tool_call_id && this.canAct(q));
      const nextEl = next ? this.cards.get(next.tool_call_id)?.el : null;
      (nextEl || card).focus();
      return;
    }
    if (ui.pending) {
      if (key) ui.focusKey = key;
      card.focus();
      return;
    }
    const wanted = key || ui.focusKey;
    ui.focusKey = null;
    const invalid = ui.error ? card.querySelector<HTMLElement>('[aria-invalid="true"]') : null;
    (invalid || findControl(card, wanted) || firstControl(card) || card).focus();
  }

  private build(p: PauseView, ui: CardUi): HTMLElement {
    const open = this.canAct(p);
    const kind = cardFor(p.kind);
    const trouble = this.feed.trouble(p.tool_call_id);
    const card = h("div", {
      class: `nbh-card ${open ? "nbh-open" : "nbh-closed"}`,
      "data-testid": "nbh-card",
      "data-kind": p.kind,
      "data-status": p.status,
      "data-tool-call-id": p.tool_call_id,
      "data-invalid": !!trouble,
      role: "group",
      "aria-label": `${this.label(p, open)}: ${p.title || p.tool_name}`,
      tabindex: -1,
    });
    card.append(
      h(
        "div",
        { class: "nbh-row" },
        h("span", { class: "nbh-chip", "data-nbh-label": true }, this.label(p, open)),
        h("span", { class: "nbh-title" }, p.title || p.tool_name),
        p.agent ? h("span", { class: "nbh-chip", "data-testid": "nbh-agent", "data-agent": p.agent }, `asked by ${p.agent}`) : null,
        p.policy ? h("span", { class: "nbh-chip", "data-testid": "nbh-policy" }, `policy: ${p.policy}`) : null,
        // a safety check or a policy: what the chip says is true of both
        p.bypass_immune ? h("span", { class: "nbh-chip", "data-testid": "nbh-immune", title: "A safety check of the tool, or a policy: no allow rule lets this call through without a question." }, "allow rules cannot skip this") : null,
        deadlineEl(p),
      ),
    );
    // a remote server refused the answer given on this card: say so here, where it was given (once: when the
    // person's own click got the refusal, the card's error box at the field says it)
    const refused = (p as RemotePauseView).refused;
    if (refused && !ui.error) card.append(h("div", { class: "nbh-error", "data-testid": "nbh-refused", role: "alert" }, refused));
    if (p.status !== "open") {
      const head = kind.recordHead ? kind.recordHead(p) : null;
      if (head) card.append(head);
      this.appendRecord(card, p, ui, kind.showsInputWhenClosed ? kind.showsInputWhenClosed(p) : true);
      return card;
    }
    card.append(livenessLine());
    const id = p.tool_call_id;
    const ctx: CardCtx = {
      ui,
      kept: this.keptDrafts.get(id) ?? (p as RemotePauseView).refused_answer ?? undefined,
      // the pause as it is now (a remote card is drawn again on every poll without being rebuilt)
      send: (decision) => this.send(this.current(id) || p, decision),
      request: (action) => this.rpc.request(action, { tool_call_id: id, reply_id: (this.current(id) || p).reply_id }),
      preview: (edit) =>
        this.rpc.request("preview", { ...edit, tool_call_id: id, reply_id: (this.current(id) || p).reply_id }, { timeoutMs: PREVIEW_TIMEOUT_MS }),
      redraw: () => this.redraw(this.current(id) || p, true),
      setDraft: (draft) => void this.drafts.set(id, draft),
      setHeld: (held) => void this.held.set(id, held),
      errorBox: (field) => errorBox(ui, field),
      clearError: (field) => void (this.restoring || clearError(ui, field)),
      remember: (value) => void this.memo.set(id, value),
      remembered: () => this.memo.get(id),
      focus: (testid) => {
        const target = ui.el?.querySelector<HTMLElement>(`[data-testid="${CSS.escape(testid)}"]`);
        if (target && !(target as HTMLButtonElement).disabled) target.focus();
      },
    };
    if (trouble) buildInvalid(card, p, ctx, trouble);
    else kind.build(card, p, ctx);
    if (ui.pending) card.append(h("div", { class: "nbh-muted" }, "Sending…"));
    this.showLive(card, p, ui);
    holdPresses(card, () => this.liveness);
    return card;
  }

  // a decided or expired pause: what was decided (or why it expired), and the input it was about
  private appendRecord(card: HTMLElement, p: PauseView, ui: CardUi, showInput: boolean): void {
    appendDecisionRecord(card, p, showInput);
    const err = errorBox(ui);
    if (err) card.append(err);
  }
}
