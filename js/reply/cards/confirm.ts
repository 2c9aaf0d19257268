// A confirmation (AgentScope's permission engine asked): approve, deny,
// approve with an edited input, or approve and add suggested rules.
import { h, prettyJson } from "../../lib/dom";
import { enterPresses } from "../../lib/a11y";
import type { PauseView } from "../../types";
import type { CardCtx } from "../card";
import type { CardKind } from "./index";

function build(card: HTMLElement, p: PauseView, ctx: CardCtx): void {
  const { ui, open } = ctx;
  if (p.permission_message)
    card.append(
      h("div", { class: "nbh-muted", "data-testid": "nbh-permission-message" }, p.permission_message + (p.decision_reason ? ` (${p.decision_reason})` : "")),
    );
  if (p.message) card.append(h("div", { class: "nbh-info" }, p.message));
  const dis = !open || ui.pending;
  const toMode = (mode: typeof ui.mode) => () => {
    const from = ui.mode;
    ui.mode = mode;
    ui.error = "";
    ctx.redraw();
    // back in the buttons, the keyboard returns to the one that opened the edit
    if (mode === "view") ctx.focus(from === "rules" ? "nbh-always" : "nbh-modify");
  };
  if (ui.mode !== "view") {
    // Escape leaves the edit, like its Cancel button
    card.addEventListener("keydown", (event: KeyboardEvent) => {
      if (event.key !== "Escape" || ui.pending) return;
      event.preventDefault();
      event.stopPropagation();
      toMode("view")();
    });
  }
  if (ui.mode === "modify") {
    const area = h("textarea", { "data-testid": "nbh-modify-input", spellcheck: "false", "aria-label": "Edited tool input (JSON)" });
    const kept = ctx.kept;
    area.value = kept && kept.action === "modify" ? String(kept.payload.input) : p.input_text;
    ctx.setDraft(() => ({ action: "modify", payload: { input: area.value } }));
    card.append(
      h("div", { class: "nbh-muted" }, `Edit the input of ${p.tool_name} (JSON). The tool name cannot change; the edit is checked against the tool's schema and the permission rules.`),
      area,
      ctx.errorBox("input") || ctx.errorBox("name") || ctx.errorBox() || "",
      h(
        "div",
        { class: "nbh-row" },
        h("button", { class: "nbh-primary", "data-testid": "nbh-modify-submit", disabled: dis, onclick: () => ctx.send("modify", { input: area.value }) }, "Approve edited input"),
        h("button", { "data-testid": "nbh-modify-cancel", disabled: ui.pending, onclick: toMode("view") }, "Cancel"),
      ),
    );
    return;
  }
  card.append(h("pre", { class: "nbh-pre", "data-testid": "nbh-input" }, prettyJson(p.input_text)));
  if (ui.mode === "rules") {
    const boxes: HTMLInputElement[] = [];
    const list = h("div", { class: "nbh-rules", role: "group", "aria-label": "Rules to add" });
    for (const r of p.suggested_rules) {
      const cb = h("input", { type: "checkbox", "data-testid": "nbh-rule", "data-index": r.index });
      cb.checked = true;
      boxes.push(cb);
      list.append(h("label", { class: "nbh-row" }, cb, h("code", {}, r.label)));
    }
    const submit = h(
      "button",
      {
        class: "nbh-primary",
        "data-testid": "nbh-rules-submit",
        disabled: dis,
        onclick: () => ctx.send("approve", { rules: boxes.filter((b) => b.checked).map((b) => Number(b.dataset.index)) }),
      },
      "Approve and add the chosen rules",
    );
    enterPresses(list, submit);
    card.append(
      h("div", { class: "nbh-muted" }, "Always allow: the chosen rules are added to the agent's permission rules, so matching calls run without asking."),
      list,
      ctx.errorBox() || "",
      h("div", { class: "nbh-row" }, submit, h("button", { "data-testid": "nbh-rules-cancel", disabled: ui.pending, onclick: toMode("view") }, "Cancel")),
    );
    return;
  }
  card.append(
    ctx.errorBox() || "",
    h(
      "div",
      { class: "nbh-row" },
      h("button", { class: "nbh-primary", "data-testid": "nbh-approve", disabled: dis, onclick: () => ctx.send("approve") }, "Approve"),
      h("button", { class: "nbh-danger", "data-testid": "nbh-deny", disabled: dis, onclick: () => ctx.send("deny") }, "Deny"),
      h("button", { "data-testid": "nbh-modify", disabled: dis, onclick: toMode("modify") }, "Modify…"),
      p.suggested_rules.length ? h("button", { "data-testid": "nbh-always", disabled: dis, onclick: toMode("rules") }, "Always allow…") : null,
    ),
  );
}

export const confirmCard: CardKind = {
  openLabel: "Needs your confirmation",
  closedLabel: "Confirmation",
  build,
  bulk: [
    { label: "Approve all", testid: "nbh-approve-all", action: "approve" },
    { label: "Deny all", testid: "nbh-deny-all", action: "deny" },
  ],
};
