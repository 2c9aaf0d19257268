// The mode matrix: calls (one JSON line each) decided in all five modes, each
// cell on a copy of the context (the agent is untouched), the live mode's
// column outlined.
import { h, clear } from "../lib/dom";
import { decided, type DecisionDict } from "../messages";
import { show, type Section } from "./channel";
import { MODES_FALLBACK } from "./header";
import { badge } from "./rule_list";

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
    const calls: unknown[] = [];
    const lines = matrixInput.value.split("\n").map((l) => l.trim()).filter(Boolean);
    for (let i = 0; i < lines.length; i++) {
      try {
        calls.push(JSON.parse(lines[i]));
      } catch (err) {
        show(matrixError, `Line ${i + 1} is not valid JSON: ${String(err)}`);
        return;
      }
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
    }
    // the calls of the last matrix, until the person types their own
    if (!matrixInput.value.trim()) {
      const calls = model.get("matrix_calls") || [];
      if (calls.length) matrixInput.value = calls.map((c) => JSON.stringify(c)).join("\n");
    }
  }

  return { el, render, addLine };
}
