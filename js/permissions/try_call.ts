// "Try a call": the engine's decision on a call (in the live mode or
// another), nothing executed: why (the trace), which rules were checked, and
// its suggested rules, each one click from being added.
import { h, clear } from "../lib/dom";
import { decided, type DecisionDict } from "../messages";
import type { JsonSchema } from "../types";
import { show, type Section } from "./channel";
import { badge, ruleText } from "./rule_list";

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
    h("h4", {}, "Try a call: what does the engine decide? (the tool is not executed)"),
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
    let input: unknown;
    try {
      input = JSON.parse(tryInput.value);
    } catch (err) {
      show(tryError, `The input is not valid JSON: ${String(err)}`);
      return;
    }
    show(tryError, null);
    addToMatrix(JSON.stringify({ tool_name: tryTool.value, input }));
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
    box.prepend(h("div", { class: "nbh-muted" }, `${r.tool_name} in mode ${r.mode}: `, h("code", {}, JSON.stringify(r.input))));
    if (r.steps && r.steps.length) {
      box.append(h("div", {}, "Why:"), h("ol", { class: "perm-why", "data-testid": "perm-try-why" }, r.steps.map((s) => h("li", {}, s))));
    }
    if (r.agrees === false) {
      box.append(h("div", { class: "nbh-warn" }, "The trace above does not account for the engine's decision; the decision shown is the engine's."));
    }
    if (r.rules_checked && r.rules_checked.length) {
      const t = h("table", { class: "nbh-table", "data-testid": "perm-try-rules" }, h("tr", {}, h("th", {}, "rule"), h("th", {}, "matches?"), h("th", {}, "why")));
      for (const c of r.rules_checked) {
        t.append(h("tr", { "data-testid": "perm-try-rule", "data-label": c.label, "data-matched": String(c.matched) },
          h("td", {}, h("code", {}, c.label)), h("td", {}, c.matched ? "yes" : "no"), h("td", {}, c.explanation)));
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
