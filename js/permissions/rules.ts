// The explorer's rules: the list (rule_list.ts: paginated, filtered, Edit and
// Remove on each row) and the form that adds a rule or saves an edited one,
// with what else the rule being typed lets through (asked of the kernel once
// typing pauses: nb_hitl.permissions.rule_reach, its Markdown drawn as a
// card's reach is, lib/safe_html.ts showMarkdown; an invalid rule just hides
// the hint).
import { h, clear } from "../lib/dom";
import { showMarkdown } from "../lib/safe_html";
import type { RuleDict } from "../messages";
import type { Section } from "./channel";
import { RuleList, groupByTool } from "./rule_list";

/** A rule as the kernel takes it back (its view adds `label`). */
function strip(r: RuleDict): RuleDict {
  return { tool_name: r.tool_name, rule_content: r.rule_content, behavior: r.behavior, source: r.source };
}

export function rulesSection({ model, act, rpc }: Section) {
  const ruleList = new RuleList({
    onRemove: (r) => {
      act("remove_rule", { rule: strip(r) }, ruleError);
    },
    onEdit: (r) => startEdit(r),
  });
  const newBehavior = h("select", { "data-testid": "perm-new-behavior" },
    h("option", { value: "allow" }, "allow"), h("option", { value: "deny" }, "deny"), h("option", { value: "ask" }, "ask")) as HTMLSelectElement;
  const toolList = h("datalist", { id: `perm-tools-${Math.random().toString(36).slice(2)}` });
  const newTool = h("input", { type: "text", "data-testid": "perm-new-tool", placeholder: "tool name", list: toolList.id, size: 12 }) as HTMLInputElement;
  const newContent = h("input", { type: "text", class: "perm-content", "data-testid": "perm-new-content", placeholder: "rule_content, e.g. git:*  or  /data/**" }) as HTMLInputElement;
  const newWhole = h("input", { type: "checkbox", "data-testid": "perm-new-whole" }) as HTMLInputElement;
  const addBtn = h("button", { class: "nbh-primary", "data-testid": "perm-add-rule" }, "Add rule");
  const cancelEdit = h("button", { "data-testid": "perm-cancel-edit", hidden: true }, "Cancel");
  const ruleError = h("div", { class: "nbh-error", "data-testid": "perm-rule-error", hidden: true });
  const reachHint = h("div", { class: "nbh-muted", "data-testid": "perm-new-reach", hidden: true });
  let editing: RuleDict | null = null;
  newWhole.addEventListener("change", () => { newContent.disabled = newWhole.checked; });

  let reachTimer: number | undefined;
  let reachSeq = 0;
  function askReach() {
    window.clearTimeout(reachTimer);
    reachTimer = window.setTimeout(async () => {
      const seq = ++reachSeq;
      const tool = newTool.value.trim();
      const content = newWhole.checked ? null : newContent.value;
      if (!tool || content === "") { reachHint.hidden = true; return; }
      // not an action of the person's: asked outside the channel's busy mark
      const reply = await rpc.request("reach", { rule: { tool_name: tool, rule_content: content, behavior: newBehavior.value } });
      if (seq !== reachSeq) return;
      // the kernel's Markdown (its patterns in backticks) drawn as a card's reach: never as markup here
      if (reply.ok) showMarkdown(reachHint, reply.text, reply.html);
      reachHint.hidden = !reply.ok;
    }, 250);
  }
  for (const input of [newTool, newContent, newWhole, newBehavior]) input.addEventListener(input === newWhole || input === newBehavior ? "change" : "input", askReach);

  function startEdit(r: RuleDict) {
    editing = strip(r);
    newBehavior.value = r.behavior;
    newTool.value = r.tool_name;
    newWhole.checked = r.rule_content === null;
    newContent.disabled = newWhole.checked;
    newContent.value = r.rule_content ?? "";
    addBtn.textContent = "Save rule";
    cancelEdit.hidden = false;
  }
  function stopEdit() {
    editing = null;
    addBtn.textContent = "Add rule";
    cancelEdit.hidden = true;
  }
  cancelEdit.addEventListener("click", stopEdit);
  addBtn.addEventListener("click", async () => {
    const rule: RuleDict = {
      tool_name: newTool.value.trim(),
      rule_content: newWhole.checked ? null : newContent.value,
      behavior: newBehavior.value,
      source: editing ? editing.source : "nb_hitl",
    };
    const reply = editing
      ? await act("edit_rule", { old: editing, new: rule }, ruleError)
      : await act("add_rule", { rule }, ruleError);
    if (reply) {
      stopEdit();
      newContent.value = "";
      askReach();
    }
  });

  const el = h("section", {},
    h("h4", {}, "Rules (deny, then ask, then allow: the engine's order)"),
    ruleList.el,
    h("div", { class: "nbh-row" }, newBehavior, newTool, toolList, newContent,
      h("label", { class: "nbh-muted" }, newWhole, " the whole tool (no pattern: every call of it)"), addBtn, cancelEdit),
    reachHint,
    ruleError,
  );

  // The list is only rebuilt when the kernel sent new rules (a refresh that
  // changed nothing keeps the same text): thousands of rules are not laid
  // out again on every revision.
  let shownRules: string | null = null;
  function render(): void {
    const rulesJson = model.get("rules_json") || "[]";
    if (rulesJson !== shownRules) {
      shownRules = rulesJson;
      ruleList.setRules(groupByTool(JSON.parse(rulesJson)));
    }
    const tools = model.get("tools") || [];
    clear(toolList);
    for (const t of tools) toolList.append(h("option", { value: t.name }));
  }

  return { el, render };
}
