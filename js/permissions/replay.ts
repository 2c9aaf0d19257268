// The recorded log replayed against the rules and mode shown (the kernel runs
// nb_hitl.audit.replay on AgentScope's own engine): how many recorded calls
// would be decided otherwise, each change, calls a person denied that these
// rules allow, and the rules that never fired. Shown only when the explorer
// was opened with a log (explore(agent, history=path)).
import { h, clear } from "../lib/dom";
import { show, type Section } from "./channel";
import { badge } from "./rule_list";

export function replaySection({ model, act }: Section) {
  const button = h("button", { class: "nbh-primary", "data-testid": "perm-replay-btn" }, "Replay the recorded log against these rules");
  const error = h("div", { class: "nbh-error", "data-testid": "perm-replay-error", hidden: true });
  const box = h("div", { "data-testid": "perm-replay" });
  const title = h("h4", {});
  const el = h("section", { "data-testid": "perm-replay-section" }, title, h("div", { class: "nbh-row" }, button), error, box);

  button.addEventListener("click", () => {
    void act("replay", {}, error);
  });

  function render(): void {
    const name = model.get("history_name") || "";
    el.hidden = !name;
    title.textContent = `Replay of the recorded log ${name}`;
    const r = model.get("replay") || {};
    clear(box);
    if (!("calls" in r)) return;
    box.append(h("div", { "data-testid": "perm-replay-summary" },
      `${r.changed} of ${r.calls} recorded calls would be decided otherwise (mode ${r.mode}).`));
    if (r.rows.length) {
      const table = h("table", { class: "nbh-table" });
      table.append(h("tr", {}, h("th", {}, "call"), h("th", {}, "recorded"), h("th", {}, "person"), h("th", {}, "these rules")));
      for (const row of r.rows) {
        table.append(h("tr", { "data-testid": "perm-replay-row", "data-change": row.change, "data-denied-now-allowed": String(row.denied_now_allowed) },
          h("td", {}, h("code", {}, `${row.tool_name} ${JSON.stringify(row.input)}`)),
          h("td", {}, badge(row.recorded)),
          h("td", {}, row.person || "not asked", row.denied_now_allowed ? h("span", { class: "nbh-chip" }, "denied, now allowed") : null),
          h("td", {}, badge(row.candidate))));
      }
      box.append(table);
      if (r.changed > r.rows.length) box.append(h("div", { class: "nbh-muted" }, `the first ${r.rows.length} of ${r.changed} shown`));
    }
    if (r.never_fired.length) {
      box.append(h("div", { "data-testid": "perm-replay-never" }, `Never fired: ${r.never_fired.join(", ")}`));
    }
  }

  return { el, render };
}
