// The mode matrix: calls (one JSON line each) decided in all five modes, each
// cell on a copy of the context (the agent is untouched), the live mode's
// column outlined.
import { parseJson } from "../lib/json_words";
import { h, clear } from "../lib/dom";
import { decided, type DecisionDict } from "../messages";
import { show, type Section } from "./channel";
import { MODES_FALLBACK } from "./header";
import { badge } from "./rule_list";

/** What an "immune" chip means, under a matrix that shows one: true next to a "bypass: allow" cell. */
export const IMMUNE_NOTE =
  "immune: the tool's own safety check asks and no allow rule can silence it; " +
  "bypass mode skips safety checks, so its column can say allow for the same call.";

const CALL_SHAPE = '{"tool_name": "Bash", "input": {"command": "ls"}}';

/** The calls of the matrix's text box (one JSON object a line; blank lines skipped), or
 * what is wrong with the first line that is not a call, named by its line number in the box. */
export function matrixCalls(text: string): { calls: unknown[]; problem?: string } {
  const calls: unknown[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) continue;
    const parsed = parseJson(line);
    if ("problem" in parsed) return { calls, problem: `Line ${i + 1} is not a call: ${parsed.problem}. Write each call on its own line as ${CALL_SHAPE}.` };
    const v = parsed.value;
    if (typeof v !== "object" || v === null || Array.isArray(v) || typeof (v as { tool_name?: unknown }).tool_name !== "string")
      return { calls, problem: `Line ${i + 1} is JSON but not a call: it needs a "tool_name" (text) and an "input" (an object), e.g. ${CALL_SHAPE}.` };
    calls.push(v);
  }
  return { calls };
}

export function matrixSection({ model, act }: Section) {
  const matrixInput = h("textarea", { class: "perm-short", "data-testid": "perm-matrix-input", spellcheck: "false",
    placeholder: 'one call per line: {"tool_name": "Bash", "input": {"command": "git status"}}' }) as HTMLTextAreaElement;
  const matrixBtn = h("button", { class: "nbh-primary", "data-testid": "perm-matrix-btn" }, "Decide in all five modes");
  const matrixError = h("div", { class: "nbh-error", "data-testid": "perm-matrix-error", hidden: true });
  const matrixBox = h("div", { "data-testid": "perm-matrix" });
  const el = h("section", {},
    h("h4", {}, "Mode matrix (each cell decided on a copy of the context; the agent is untouched)"),
    matrixInput,
    h("div", { class: "nbh-row" }, matrixBtn),
    matrixError,
    matrixBox,
  );

  matrixBtn.addEventListener("click", () => {
    const { calls, problem } = matrixCalls(matrixInput.value);
    if (problem) {
      show(matrixError, problem);
      return;
    }
    act("matrix", { calls }, matrixError);
  });

  /** Add a call (one JSON line) to the matrix's input. */
  function addLine(line: string): void {
    matrixInput.value = matrixInput.value.trim() ? `${matrixInput.value.trim()}\n${line}` : line;
  }

  function render(): void {
    const { result: m, error } = decided(model.get("matrix"));
    const ctx = model.get("context_view") || {};
    clear(matrixBox);
    if (!m || !m.rows) {
      if (error) matrixBox.append(h("div", { class: "nbh-error" }, error));
    } else {
      const modes = m.modes || MODES_FALLBACK;
      const table = h("table", { class: "nbh-table" });
      table.append(h("tr", {}, h("th", {}, "call"), modes.map((mode) => h("th", { class: mode === ctx.mode ? "perm-live" : "" }, mode === ctx.mode ? `${mode} (live)` : mode))));
      m.rows.forEach((row, i) => {
        const tr = h("tr", { "data-testid": "perm-matrix-row", "data-row": i });
        tr.append(h("td", {}, h("code", {}, `${row.tool_name} ${JSON.stringify(row.input)}`)));
        for (const mode of modes) {
          const cell: Partial<DecisionDict> = row.cells[mode] || {};
          tr.append(h("td", { class: mode === ctx.mode ? "perm-live" : "", "data-testid": "perm-matrix-cell", "data-mode": mode, "data-behavior": cell.behavior,
            title: `${cell.message || ""}${cell.decision_reason ? "\n" + cell.decision_reason : ""}` },
            badge(cell.behavior || "?"), cell.bypass_immune ? h("span", { class: "nbh-chip" }, "immune") : null));
        }
        table.append(tr);
      });
      matrixBox.append(table);
      if (m.rows.some((row) => modes.some((mode) => row.cells[mode]?.bypass_immune)))
        matrixBox.append(h("p", { class: "nbh-muted", "data-testid": "perm-matrix-note" }, IMMUNE_NOTE));
    }
    // the calls of the last matrix, until the person types their own
    if (!matrixInput.value.trim()) {
      const calls = model.get("matrix_calls") || [];
      if (calls.length) matrixInput.value = calls.map((c) => JSON.stringify(c)).join("\n");
    }
  }

  return { el, render, addLine };
}
