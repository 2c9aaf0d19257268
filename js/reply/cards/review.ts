// A reviewed tool's result, held back from the model until a person
// accepts it, edits it (e.g. redacts a value) or rejects it (nb_hitl/review.py).
import { fitRowsAsTyped, h } from "../../lib/dom";
import { EditPreview, previewPart } from "../../lib/edit_preview";
import type { PauseView } from "../../types";
import { askFirst } from "../ask_first";
import type { CardCtx } from "../card";
import type { CardKind } from "./index";

function build(card: HTMLElement, p: PauseView, ctx: CardCtx): void {
  const { ui } = ctx;
  const dis = ui.pending;
  if (p.message) card.append(h("div", { class: "nbh-info", "data-testid": "nbh-review-message" }, p.message));
  card.append(h("pre", { class: "nbh-pre", "data-testid": "nbh-input" }, p.input_text));
  const reason = h("input", { type: "text", placeholder: "Reason (optional, the agent reads it)", disabled: dis, "data-testid": "nbh-review-reason", "aria-label": "Reason for rejecting" });
  const reject = h("button", { class: "nbh-danger", "data-testid": "nbh-review-reject", disabled: dis, onclick: () => ctx.send(reason.value.trim() ? { action: "reject", reason: reason.value } : { action: "reject" }) }, "Reject");
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
  const original = p.review_output;
  // a card reopened after a remote refusal starts from the edit that was sent (card_typed.ts puts
  // back what was typed on any other rebuild)
  const kept = ctx.kept;
  area.value = kept?.action === "edit" && "output" in kept && typeof kept.output === "string" ? kept.output : original;
  fitRowsAsTyped(area); // as tall as the result, 4 to 24 rows, as the Modify box
  const { el: question, ask } = askFirst();
  ctx.setDraft(() => (area.value === original ? { action: "accept" } : { action: "edit", output: area.value }));
  // what the edit changes against the raw result, while it is typed
  const shown = previewPart("result", "nbh-review-preview");
  const preview = new EditPreview(original, (text) => ctx.preview({ output: text }), shown.show);
  area.addEventListener("input", () => preview.changed(area.value));
  card.append(
    h("div", { class: "nbh-muted" }, "The model has not seen this result. Edit the text to change what it reads."),
    area,
    shown.el,
    ctx.errorBox("output") || ctx.errorBox() || "",
    question,
    h(
      "div",
      { class: "nbh-row" },
      h(
        "button",
        {
          class: "nbh-primary",
          "data-testid": "nbh-review-accept",
          disabled: dis,
          // C21: an edit is never thrown away without a word
          onclick: () =>
            area.value === original
              ? ctx.send({ action: "accept" })
              : ask(
                  "You edited the result. Accept sends the original result, not your edit. Which one do you mean?",
                  [
                    { label: "Send my edit", testid: "nbh-review-send-edit", run: () => ctx.send({ action: "edit", output: area.value }) },
                    { label: "Discard my edit, accept the original", testid: "nbh-review-accept-original", run: () => ctx.send({ action: "accept" }) },
                  ],
                ),
        },
        "Accept",
      ),
      h(
        "button",
        {
          "data-testid": "nbh-review-edit",
          disabled: dis,
          onclick: () =>
            area.value.trim()
              ? ctx.send({ action: "edit", output: area.value })
              : ask("The edited result is empty: the model would read an empty result. Send it anyway?", [
                  { label: "Send the empty result", testid: "nbh-confirm-empty", run: () => ctx.send({ action: "edit", output: area.value }) },
                ]),
        },
        "Edit & send",
      ),
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
