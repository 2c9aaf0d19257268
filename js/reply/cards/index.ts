// The registry of pause cards: one module per pause kind, each drawing the
// body of an open card (card.ts draws the rest). The only place the page
// branches on `PauseView.kind`.
import type { PauseKind, PauseView } from "../../types";
import type { DecisionAction } from "../../messages";
import type { CardCtx } from "../card";
import { confirmCard } from "./confirm";
import { askUserCard } from "./ask_user";
import { externalCard } from "./external";
import { reviewCard } from "./review";
import { formCard } from "./form";
import { elicitationCard } from "./elicitation";
import { samplingCard } from "./sampling";

/** A decision every open card of one kind can take at once ("Approve all"). */
export interface BulkAction {
  label: string;
  testid: string;
  /** a decision that needs no more than its action */
  action: Extract<DecisionAction, "approve" | "deny" | "accept" | "reject" | "return_error" | "cancel">;
  /** the decisions typed on a card (its held draft, see CardCtx.setHeld) this action sends in place
   *  of its bare one: Approve all sends an open edit as that card's modified input. A card holding
   *  any other typed decision makes the action send nothing (it would drop what was typed). */
  takes: DecisionAction[];
}

/** What a pause kind brings to the page. */
export interface CardKind {
  /** the header chip while the pause can be acted on */
  openLabel: string;
  /** the header chip once it is decided, expired or not live */
  closedLabel: string;
  /** draw the controls of an open pause into `card` */
  build(card: HTMLElement, p: PauseView, ctx: CardCtx): void;
  /** whether the decided record repeats the call's input (default: yes) */
  showsInputWhenClosed?(p: PauseView): boolean;
  /** what the decided or expired record shows above its outcome (e.g. the question asked), if anything */
  recordHead?(p: PauseView): HTMLElement | null;
  bulk?: BulkAction[];
}

const CARDS: Record<PauseKind, CardKind> = {
  confirm: confirmCard,
  ask_user: askUserCard,
  external: externalCard,
  review: reviewCard,
  form: formCard,
  elicitation: elicitationCard,
  sampling: samplingCard,
};

function known(kind: string): kind is PauseKind {
  return Object.prototype.hasOwnProperty.call(CARDS, kind);
}

/** The card module for a kind; a kind this page does not know is drawn as an external tool. */
export function cardFor(kind: string): CardKind {
  return known(kind) ? CARDS[kind] : CARDS.external;
}

/** The header chip's text for a kind (the raw kind when unknown). */
export function kindLabel(kind: string, open: boolean): string {
  if (!known(kind)) return kind;
  return open ? CARDS[kind].openLabel : CARDS[kind].closedLabel;
}

/** Every group action, with the kind it applies to, in registry order. */
export function bulkActions(): (BulkAction & { kind: PauseKind })[] {
  return (Object.keys(CARDS) as PauseKind[]).flatMap((kind) => (CARDS[kind].bulk || []).map((b) => ({ ...b, kind })));
}
