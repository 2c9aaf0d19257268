// The card of a pause whose view from the kernel does not fit what its kind
// needs (reply/view_check.ts says what is wrong): it says so, with the
// kernel's own text when there is some, and offers to cancel the call, so a
// malformed pause is never an unanswerable one. Drawn instead of the kind's
// card module; nothing here reads a field the check did not vouch for.
import { h } from "../../lib/dom";
import type { Decision } from "../../messages";
import type { PauseView } from "../../types";
import type { CardCtx } from "../card";
import { clip } from "../record";
import type { Trouble } from "../feed";

/** The header chip of such a card. */
export const INVALID_LABEL = "Cannot be shown";

/** How the call is cancelled: a remote interrupt with "cancel"; a local
 * confirmation is denied and any other pause returns an error, each telling
 * the model why. */
export function cancelDecision(p: PauseView, trouble: Trouble): Decision {
  if (trouble.remote) return { action: "cancel" };
  const why = `The user could not answer: the card for this call could not be shown (${trouble.problem}).`;
  return p.kind === "confirm" ? { action: "deny", reason: why } : { action: "return_error", message: why };
}

export function buildInvalid(card: HTMLElement, p: PauseView, ctx: CardCtx, trouble: Trouble): void {
  const { ui } = ctx;
  const said = p.form_error || p.ask_user_error || p.review_error;
  card.append(
    h(
      "div",
      { class: "nbh-error", "data-testid": "nbh-card-invalid" },
      `This card cannot be shown: ${trouble.problem}.`,
      said ? h("div", { "data-testid": "nbh-card-invalid-kernel" }, said) : null,
    ),
  );
  if (p.message) card.append(h("div", { class: "nbh-info" }, p.message));
  if (p.input_text) card.append(h("pre", { class: "nbh-pre", "data-testid": "nbh-input" }, clip(p.input_text)));
  if (!trouble.named) {
    // nothing can be sent about a call the view does not name
    card.append(h("div", { class: "nbh-muted" }, "It names no tool call, so it cannot be cancelled on its own: use Interrupt above to stop the reply."));
    return;
  }
  const decision = cancelDecision(p, trouble);
  card.append(
    ctx.errorBox() || "",
    h(
      "button",
      { class: "nbh-primary", "data-testid": "nbh-cancel", disabled: ui.pending, onclick: () => ctx.send(decision) },
      trouble.remote ? "Cancel it" : p.kind === "confirm" ? "Cancel it (deny the call)" : "Cancel it (return an error to the agent)",
    ),
  );
}
