// "Try a call": the engine's decision on a call (in the live mode or
// another), nothing executed: why (the trace), which rules were checked, and
// its suggested rules, each one click from being added.
import { h, clear } from "../lib/dom";
import { decided, type DecisionDict } from "../messages";
import type { JsonSchema } from "../types";
import { show, type Section } from "./channel";
import { badge, ruleText } from "./rule_list";
import { shellCommandsView } from "../reply/cards/shell";
import { parseJson } from "../lib/json_words";

/** A tool input with each required property at its type's empty value, as JSON text. */
export function skeleton(schema: JsonSchema | null): string {
  const out: Record<string, unknown> = {};
  const props = (schema && schema.properties) || {};
  for (const key of (schema && schema.required) || []) {
    const t = props[key]?.type;
    out[key] = t === "integer" || t === "number" ? 0 : t === "boolean" ? false : t === "array" ? [] : t === "object" ? {} : "";
  }
  return JSON.stringify(out, null, 2);
}

/** One engine decision: its behaviour, message, bypass-immunity and reason. */
export function decisionBlock(d: DecisionDict, testPrefix: string): HTMLElement {
  const box = h("div", { class: `nbh-card`, "data-testid": testPrefix, "data-behavior": d.behavior });
  box.append(h("div", { class: "nbh-row" }, badge(d.behavior, `${testPrefix}-behavior`),
    h("span", { "data-testid": `${testPrefix}-message` }, d.message || ""),
    d.bypass_immune ? h("span", { class: "nbh-chip", "data-testid": `${testPrefix}-bypass-immune` }, "bypass-immune: allow rules cannot silence it") : null));
  if (d.decision_reason) box.append(h("div", { class: "nbh-muted", "data-testid": `${testPrefix}-reason` }, `decision_reason: ${d.decision_reason}`));
  return box;
}

/** @param addToMatrix takes the tried call as one matrix line (JSON text) */
export function trySection({ model, act }: Section, addToMatrix: (line: string) => void) {
  const tryTool = h("select", { "data-testid": "perm-try-tool" }) as HTMLSelectElement;
  const tryMode = h("select", { "data-testid": "perm-try-mode", title: "Decide in another mode without changing the agent" }) as HTMLSelectElement;
  const tryInput = h("textarea", { class: "perm-short", "data-testid": "perm-try-input", spellcheck: "false" }) as HTMLTextAreaElement;
  const tryBtn = h("button", { class: "nbh-primary", "data-testid": "perm-try-btn" }, "Try (nothing runs)");
  const matrixAdd = h("button", { "data-testid": "perm-matrix-add" }, "Add to matrix");
  const tryError = h("div", { class: "nbh-error", "data-testid": "perm-try-error", hidden: true });
  const tryResult = h("div", { "data-testid": "perm-try-result" });
  const el = h("section", {},
    h("h4", {}, "Try a call: what does a Session decide? (the tool is not executed)"),
    h("div", { class: "nbh-row" }, h("span", { class: "nbh-muted" }, "tool"), tryTool,
      h("span", { class: "nbh-muted" }, "in mode"), tryMode, tryBtn, matrixAdd),
    tryInput,
    tryError,
    tryResult,
  );

  function fillSkeleton() {
    const tools = model.get("tools") || [];
    const t = tools.find((x) => x.name === tryTool.value);
    tryInput.value = t ? skeleton(t.input_schema) : "{}";
  }
  tryTool.addEventListener("change", fillSkeleton);
  tryBtn.addEventListener("click", () => {
    act("try_call", { tool_name: tryTool.value, input: tryInput.value, mode: tryMode.value || null }, tryError);
  });
  matrixAdd.addEventListener("click", () => {
    const parsed = parseJson(tryInput.value);
    if ("problem" in parsed) {
      show(tryError, `The input cannot be added: ${parsed.problem}.`);
      return;
    }
    show(tryError, null);
    addToMatrix(JSON.stringify({ tool_name: tryTool.value, input: parsed.value }));
  });

  /** The modes to try in: the live one first (the agent's), then each by name. */
  function renderModes(modes: string[], live: string | undefined): void {
    const keep = tryMode.value;
    clear(tryMode);
    tryMode.append(h("option", { value: "" }, `live (${live || "?"})`));
    for (const m of modes) tryMode.append(h("option", { value: m }, m));
    tryMode.value = keep && modes.includes(keep) ? keep : "";
  }

  function renderTools(): void {
    const tools = model.get("tools") || [];
    const keep = tryTool.value;
    clear(tryTool);
    for (const t of tools) tryTool.append(h("option", { value: t.name }, t.read_only ? `${t.name} (read-only)` : t.name));
    if (keep && tools.some((t) => t.name === keep)) tryTool.value = keep;
    if (!tryInput.value.trim()) fillSkeleton();
  }

  function renderResult(): void {
    const { result: r, error } = decided(model.get("last_try"));
    clear(tryResult);
    if (error !== undefined) {
      tryResult.append(h("div", { class: "nbh-error" }, error));
      return;
    }
    if (!r) return;
    const box = decisionBlock(r, "perm-try");
    box.prepend(h("div", { class: "nbh-muted" }, `${r.tool_name} in mode ${r.mode}, as a Session decides it: `, h("code", {}, JSON.stringify(r.input))));
    const shell = r.shell;
    if (shell && shell.changed && r.engine) {
      box.append(h("div", { class: "nbh-muted", "data-testid": "perm-try-engine" },
        `AgentScope's engine alone, matching rules against the whole command line, says ${r.engine.behavior}: ${r.engine.message || ""} `
        + `nb_hitl's shell rules, which a Session applies to each command, make it ${shell.behavior}.`));
    }
    if (shell) {
      const parsed = shellCommandsView({ shell_commands: shell.commands, shell_problems: shell.problems });
      if (parsed) box.append(h("div", { "data-testid": "perm-try-shell" }, parsed));
    }
    if (r.steps && r.steps.length) {
      box.append(h("div", {}, "Why:"), h("ol", { class: "perm-why", "data-testid": "perm-try-why" }, r.steps.map((s) => h("li", {}, s))));
    }
    if (r.agrees === false) {
      box.append(h("div", { class: "nbh-warn" }, "The steps above do not account for AgentScope's engine decision; the decision shown is still the one a Session takes."));
    }
    if (r.rules_checked && r.rules_checked.length) {
      const head = h("tr", {}, h("th", {}, "rule"), h("th", {}, shell ? "matches the whole line?" : "matches?"));
      if (shell) head.append(h("th", {}, "commands it covers (shell rules)"));
      head.append(h("th", {}, "why"));
      const t = h("table", { class: "nbh-table", "data-testid": "perm-try-rules" }, head);
      for (const c of r.rules_checked) {
        const row = h("tr", { "data-testid": "perm-try-rule", "data-label": c.label, "data-matched": String(c.matched) },
          h("td", {}, h("code", {}, c.label)), h("td", {}, c.matched ? "yes" : "no"));
        if (shell) {
          const covers = c.shell_covers || [];
          row.append(h("td", { "data-testid": "perm-try-rule-covers" },
            covers.length ? covers.map((text) => h("code", {}, text)) : "none"));
        }
        row.append(h("td", {}, c.explanation));
        t.append(row);
      }
      box.append(t);
    }
    if (r.rules_omitted) {
      box.append(h("div", { class: "nbh-muted", "data-testid": "perm-try-omitted" },
        `… and ${r.rules_omitted} more ${r.tool_name} rule(s) that do not match this call (not listed).`));
    }
    const sugg = r.suggested_rules || [];
    if (sugg.length) {
      const row = h("div", { class: "nbh-row", "data-testid": "perm-try-suggested" }, h("span", { class: "nbh-muted" }, "suggested_rules:"));
      for (const s of sugg) {
        const b = h("button", { title: "Add this rule to the agent", "data-testid": "perm-add-suggested" }, `+ ${ruleText(s)}`);
        b.addEventListener("click", () => act("add_rule", { rule: s }, tryError));
        row.append(b);
      }
      box.append(row);
    } else {
      box.append(h("div", { class: "nbh-muted" }, "suggested_rules: none"));
    }
    tryResult.append(box);
  }

  return { el, renderModes, renderTools, renderResult };
}
