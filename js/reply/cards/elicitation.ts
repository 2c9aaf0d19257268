// An MCP server asks while its tool runs (MCP elicitation, form mode): the
// server's message, its schema drawn as a form (lib/form.ts, as the form
// kind), and MCP's three answers: accept (with the values), decline, cancel.
// The kernel checks the values against the server's schema before anything
// is sent; the answer goes to the server, and the tool goes on. URL mode
// (the server sends the person to a page) is drawn by elicitation_url.ts.
import { h } from "../../lib/dom";
import type { JsonSchema, PauseView } from "../../types";
import type { CardCtx } from "../card";
import type { CardKind } from "./index";
import { schemaForm } from "./form";
import { buildUrlCard } from "./elicitation_url";

function build(card: HTMLElement, p: PauseView, ctx: CardCtx): void {
  if (p.elicitation_url) return buildUrlCard(card, p, ctx);
  const { ui } = ctx;
  const dis = ui.pending;
  if (p.message) card.append(h("div", { class: "nbh-info", "data-testid": "nbh-elicitation-message" }, p.message));
  const decline = h("button", { "data-testid": "nbh-elicitation-decline", disabled: dis, onclick: () => void ctx.send({ action: "decline" }) }, "Decline");
  const cancel = h("button", { "data-testid": "nbh-elicitation-cancel", disabled: dis, onclick: () => void ctx.send({ action: "cancel" }) }, "Cancel");
  if (p.form_error || !p.response_schema) {
    // the server's schema cannot be drawn: it can only be declined or cancelled
    card.append(
      h("div", { class: "nbh-error", "data-testid": "nbh-form-invalid" }, "The server's request cannot be shown: " + (p.form_error || "it has no schema.")),
      ctx.errorBox() || "",
      h("div", { class: "nbh-row" }, decline, cancel),
    );
    return;
  }
  const schema: JsonSchema = p.response_schema;
  const drawn = schemaForm(schema, ctx, dis, {
    testid: "nbh-elicitation-accept",
    label: "Accept",
    send: (content) => ctx.send({ action: "accept", content }),
  });
  ctx.setDraft(() => null); // an answer to a server is sent on its own, never with "Submit all"
  card.append(drawn.form, drawn.errorBox, h("div", { class: "nbh-row" }, drawn.button, decline, cancel));
}

export const elicitationCard: CardKind = {
  openLabel: "An MCP server asks",
  closedLabel: "MCP question",
  build,
  // the record says what the server asked and was sent; the tool's own input is on its call above
  showsInputWhenClosed: () => false,
  recordHead: (p) =>
    p.message || p.elicitation_url
      ? h(
          "div",
          {},
          p.message ? h("div", { class: "nbh-info", "data-testid": "nbh-elicitation-message" }, p.message) : "",
          p.elicitation_url ? h("code", { class: "nbh-pre", "data-testid": "nbh-url" }, p.elicitation_url) : "",
        )
      : null,
};
