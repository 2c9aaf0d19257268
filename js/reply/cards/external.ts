// An external tool (AgentScope's external execution): the person runs it
// and sends its output back, marked success or error.
import { h, prettyJson } from "../../lib/dom";
import type { PauseView } from "../../types";
import type { CardCtx } from "../card";
import type { CardKind } from "./index";

function build(card: HTMLElement, p: PauseView, ctx: CardCtx): void {
  const { ui, open } = ctx;
  const dis = !open || ui.pending;
  if (p.message) card.append(h("div", { class: "nbh-info" }, p.message));
  card.append(
    h("div", { class: "nbh-muted" }, `${p.tool_name} runs outside the agent. Run it, then give its output.`),
    h("pre", { class: "nbh-pre", "data-testid": "nbh-input" }, prettyJson(p.input_text)),
  );
  const area = h("textarea", { "data-testid": "nbh-external-output", "aria-label": "Tool output", disabled: dis });
  if (p.review_output != null) area.value = p.review_output;
  const ok = h("input", { type: "radio", name: `nbh-state-${p.tool_call_id}`, value: "success", "data-testid": "nbh-state-success" });
  const bad = h("input", { type: "radio", name: `nbh-state-${p.tool_call_id}`, value: "error", "data-testid": "nbh-state-error" });
  ok.checked = true;
  const kept = ctx.kept;
  if (kept && kept.action === "external_result") {
    area.value = String(kept.payload.output);
    bad.checked = kept.payload.state === "error";
    ok.checked = !bad.checked;
  }
  const payload = () => ({ output: area.value, state: bad.checked ? "error" : "success" });
  ctx.setDraft(() => (area.value ? { action: "external_result", payload: payload() } : null));
  card.append(
    area,
    h("div", { class: "nbh-row", role: "radiogroup", "aria-label": "Result state" }, h("label", {}, ok, " success"), h("label", {}, bad, " error")),
    ctx.errorBox() || "",
    h("button", { class: "nbh-primary", "data-testid": "nbh-external-submit", disabled: dis, onclick: () => ctx.send("external_result", payload()) }, "Send result"),
  );
}

export const externalCard: CardKind = {
  openLabel: "Run this tool yourself",
  closedLabel: "External tool",
  build,
};
