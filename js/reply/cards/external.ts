// An external tool (AgentScope's external execution): the person runs it
// and sends its output back, marked success or error.
import { h } from "../../lib/dom";
import type { Decision } from "../../messages";
import type { PauseView } from "../../types";
import type { CardCtx } from "../card";
import type { CardKind } from "./index";

function build(card: HTMLElement, p: PauseView, ctx: CardCtx): void {
  const { ui } = ctx;
  const dis = ui.pending;
  if (p.message) card.append(h("div", { class: "nbh-info" }, p.message));
  card.append(
    h("div", { class: "nbh-muted" }, `${p.tool_name} runs outside the agent. Run it, then give its output.`),
    h("pre", { class: "nbh-pre", "data-testid": "nbh-input" }, p.input_text),
  );
  const area = h("textarea", { "data-testid": "nbh-external-output", "aria-label": "Tool output", disabled: dis });
  if (p.review_output != null) area.value = p.review_output;
  const ok = h("input", { type: "radio", name: `nbh-state-${p.tool_call_id}`, value: "success", "data-testid": "nbh-state-success" });
  const bad = h("input", { type: "radio", name: `nbh-state-${p.tool_call_id}`, value: "error", "data-testid": "nbh-state-error" });
  ok.checked = true;
  const kept = ctx.kept;
  if (kept && kept.action === "external_result") {
    area.value = kept.output;
    bad.checked = kept.state === "error";
    ok.checked = !bad.checked;
  }
  const question = h("div", { class: "nbh-warn", "data-testid": "nbh-ask-first", hidden: true });
  const result = (): Extract<Decision, { action: "external_result" }> => ({
    action: "external_result",
    output: area.value,
    state: bad.checked ? "error" : "success",
  });
  ctx.setDraft(() => (area.value ? result() : null));
  card.append(
    area,
    h("div", { class: "nbh-row", role: "radiogroup", "aria-label": "Result state" }, h("label", {}, ok, " success"), h("label", {}, bad, " error")),
    ctx.errorBox() || "",
    question,
    h(
      "button",
      {
        class: "nbh-primary",
        "data-testid": "nbh-external-submit",
        disabled: dis,
        onclick: () => {
          const out = result();
          if (out.output.trim() || out.state === "error") return ctx.send(out);
          // an empty output reported as success is asked about first
          question.replaceChildren(
            h("div", {}, `The output is empty: the model would read that ${p.tool_name} succeeded and returned nothing. Send it anyway?`),
            h(
              "div",
              { class: "nbh-row" },
              h("button", { "data-testid": "nbh-confirm-empty", onclick: () => ctx.send(result()) }, "Send the empty output"),
              h("button", { onclick: () => (question.hidden = true) }, "Cancel"),
            ),
          );
          question.hidden = false;
        },
      },
      "Send result",
    ),
  );
}

export const externalCard: CardKind = {
  openLabel: "Run this tool yourself",
  closedLabel: "External tool",
  build,
};
