// A reviewed tool's result, held back from the model until a person
// accepts it, edits it (e.g. redacts a value) or rejects it (nb_hitl/review.py).
import { h, prettyJson } from "../../lib/dom";
import type { PauseView } from "../../types";
import type { CardCtx } from "../card";
import type { CardKind } from "./index";

function build(card: HTMLElement, p: PauseView, ctx: CardCtx): void {
  const { ui, open } = ctx;
  const dis = !open || ui.pending;
  if (p.message) card.append(h("div", { class: "nbh-info", "data-testid": "nbh-review-message" }, p.message));
  card.append(h("pre", { class: "nbh-pre", "data-testid": "nbh-input" }, prettyJson(p.input_text)));
  const reason = h("input", { type: "text", placeholder: "Reason (optional, the agent reads it)", disabled: dis, "data-testid": "nbh-review-reason", "aria-label": "Reason for rejecting" });
  const reject = h("button", { class: "nbh-danger", "data-testid": "nbh-review-reject", disabled: dis, onclick: () => ctx.send("reject", reason.value.trim() ? { reason: reason.value } : {}) }, "Reject");
  if (p.review_error || p.review_output == null) {
    card.append(
      h("div", { class: "nbh-error", "data-testid": "nbh-review-error" }, p.review_error || "There is no result to review."),
      ctx.errorBox() || "",
      h("div", { class: "nbh-row" }, reject, reason),
    );
    return;
  }
  if (p.review_state && p.review_state !== "success") card.append(h("span", { class: "nbh-chip", "data-testid": "nbh-review-state" }, `state: ${p.review_state}`));
  const area = h("textarea", { "data-testid": "nbh-review-output", "aria-label": `Result of ${p.tool_name}`, spellcheck: "false", disabled: dis });
  area.value = p.review_output;
  const original = p.review_output;
  ctx.setDraft(() => (area.value === original ? { action: "accept", payload: {} } : { action: "edit", payload: { output: area.value } }));
  card.append(
    h("div", { class: "nbh-muted" }, "The model has not seen this result. Edit the text to change what it reads."),
    area,
    ctx.errorBox("output") || ctx.errorBox() || "",
    h(
      "div",
      { class: "nbh-row" },
      h("button", { class: "nbh-primary", "data-testid": "nbh-review-accept", disabled: dis, onclick: () => ctx.send("accept") }, "Accept"),
      h("button", { "data-testid": "nbh-review-edit", disabled: dis, onclick: () => ctx.send("edit", { output: area.value }) }, "Edit & send"),
      reject,
      reason,
    ),
  );
}

export const reviewCard: CardKind = {
  openLabel: "Review this result",
  closedLabel: "Review",
  build,
};
