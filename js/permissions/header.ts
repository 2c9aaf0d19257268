// The explorer's header: whose permissions, the live mode (a select that
// changes it), Refresh, the busy mark, and the warnings about the agent's
// context (a replaced state, permission middlewares).
import { h, clear } from "../lib/dom";
import type { Section } from "./channel";

export const MODES_FALLBACK = ["default", "accept_edits", "explore", "bypass", "dont_ask"];

/** @param status where the busy mark goes (the channel writes it) */
export function headerSection({ model, act }: Section, status: HTMLElement) {
  const title = h("span", { class: "nbh-title" });
  const modeSelect = h("select", { "data-testid": "perm-mode", title: "The agent's live permission mode" }) as HTMLSelectElement;
  const refreshBtn = h("button", { "data-testid": "perm-refresh", title: "Re-read the agent's permission context" }, "Refresh");
  const headerError = h("div", { class: "nbh-error", "data-testid": "perm-error", hidden: true });
  const warnings = h("div", {});
  const els = [h("div", { class: "nbh-row" }, title, h("span", { class: "nbh-muted" }, "mode"), modeSelect, refreshBtn, status), warnings, headerError];

  modeSelect.addEventListener("change", () => act("set_mode", { mode: modeSelect.value }, headerError));
  refreshBtn.addEventListener("click", () => act("refresh", {}, headerError));

  function render(): void {
    const ctx = model.get("context_view") || {};
    title.textContent = `Permissions of ${model.get("agent_name") || "agent"}`;
    const modes = ctx.modes || MODES_FALLBACK;
    clear(modeSelect);
    for (const m of modes) modeSelect.append(h("option", { value: m, selected: m === ctx.mode }, m));
    modeSelect.value = ctx.mode || "default";
    clear(warnings);
    if (ctx.state_in_sync === false) {
      warnings.append(h("div", { class: "nbh-warn", "data-testid": "perm-state-warning" },
        "agent.state.permission_context is not the context the agent's engine reads (the state was replaced after the agent was built). " +
        "Shown and changed here: the engine's context, which decides the agent's next call."));
    }
    if (ctx.permission_middlewares) {
      warnings.append(h("div", { class: "nbh-info" },
        `The agent has ${ctx.permission_middlewares} on_check_permission middleware(s): they can change a decision at run time. The explorer shows the engine's decision.`));
    }
  }

  return { els, render };
}
