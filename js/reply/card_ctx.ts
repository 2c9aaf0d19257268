// What a card module is given to draw one open pause (card.ts builds it), and
// the state each card keeps across its redraws.
import type { Answer, Decision, DryRunAnswer, PreviewAnswer, PreviewEdit } from "../messages";
import type { Held } from "./group_bar";

/** Per-card state kept across redraws. */
export interface CardUi {
  mode: "view" | "modify" | "rules" | "deny";
  error: string;
  errorField: string;
  /** the pause's status when `error` was given: a later status means the problem is gone */
  errorStatus: string;
  pending: boolean;
  el: HTMLElement | null;
  key: string;
  /** the control that had focus when the card went "Sending…" (its controls are disabled meanwhile) */
  focusKey: string | null;
}

/** A decision the card would send (its draft, for "Submit all"). */
export type Draft = Decision;

/** What a card module gets to draw one open pause. */
export interface CardCtx {
  ui: CardUi;
  /** the answer this card held before it was redrawn (its draft), or the answer sent from it that a
   *  remote server refused: a kind draws its controls from it. On a rebuild of an open card,
   *  card_typed.ts then puts back what was typed in each control, which wins over it; a card
   *  reopened after a remote refusal has only this (its last build was closed, with no controls). */
  kept: Draft | undefined;
  send(decision: Decision): Promise<void>;
  /** a request about this pause that is not an answer (the card stays open): a dry run */
  request(action: "dry_run"): Promise<Answer<DryRunAnswer>>;
  /** the kernel's diff of an edit against what it edits, before it is sent (not an answer either) */
  preview(edit: PreviewEdit): Promise<Answer<PreviewAnswer>>;
  /** rebuild this card now (after a mode change or a local error) */
  redraw(): void;
  /** what "Submit all" sends for this card (null: nothing yet) */
  setDraft(draft: () => Draft | null): void;
  /** what the person typed or picked here and has not sent, or null: a group action sends it
   *  for this card when it agrees (BulkAction.takes), else sends nothing and names this card */
  setHeld(held: () => Held | null): void;
  /** the refusal to show, when it belongs to `field` (or to any field when omitted) */
  errorBox(field?: string): HTMLElement | null;
  /** the person made `field` valid: its refusal (drawn by errorBox) goes, now and on redraws */
  clearError(field: string): void;
  /** a value a card keeps for itself across redraws, also while its controls are not drawn (the rules
   *  ticked in a confirmation's "Always…" panel, kept when the panel is closed and opened again) */
  remember(value: unknown): void;
  remembered(): unknown;
  /** move the keyboard to the control with this data-testid in the (redrawn) card */
  focus(testid: string): void;
}
