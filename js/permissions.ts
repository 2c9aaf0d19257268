// PermissionExplorer (nb_hitl/widgets/permissions.py): an AgentScope agent's
// permission context, live. The page only shows data and sends actions; every
// decision comes from the kernel, which asks AgentScope's PermissionEngine.
// Text from the agent (rules, tool inputs, messages) reaches the page only
// through h() / textContent.
const css = ""; // the theme ships once per kernel with the page code (nb_hitl/widgets/_page_code.py)
import type { RenderProps } from "@anywidget/types";
import { h, clear } from "./lib/dom";
import { Rpc, isLive } from "./lib/rpc";
import { decided, type Accepted, type DecisionDict, type PermissionsProtocol, type Refusal } from "./messages";
import type { JsonSchema, PermissionsModel } from "./types";
import { Rule, RuleList, badge, groupByTool, ruleText } from "./permissions/rule_list";

const PERM_CSS = `
.nbh-perm section { margin: 8px 0; }
.nbh-perm h4 { margin: 6px 0 4px; font-size: var(--jp-ui-font-size1, 13px); color: var(--jp-ui-font-color0, #000); }
.nbh-perm .perm-b { display: inline-block; min-width: 44px; text-align: center; padding: 0 6px; border-radius: 3px; font-weight: 600;
  font-size: var(--jp-ui-font-size0, 11px); color: var(--jp-ui-inverse-font-color0, #fff); }
.nbh-perm .perm-b-allow { background: var(--jp-success-color1, #388e3c); }
.nbh-perm .perm-b-deny { background: var(--jp-error-color1, #d32f2f); }
.nbh-perm .perm-b-ask { background: var(--jp-warn-color1, #f57c00); }
.nbh-perm .perm-b-passthrough { background: var(--jp-layout-color4, #999); }
.nbh-perm code { font-family: var(--jp-code-font-family, monospace); font-size: var(--jp-code-font-size, 12px); }
.nbh-perm td.perm-live { outline: 2px solid var(--jp-brand-color1, #1976d2); outline-offset: -2px; }
.nbh-perm .perm-why li { margin: 2px 0; }
.nbh-perm input.perm-content { min-width: 260px; }
.nbh-perm textarea.perm-short { min-height: 60px; }
`;

type Action = keyof PermissionsProtocol & string;

const MODES_FALLBACK = ["default", "accept_edits", "explore", "bypass", "dont_ask"];

function skeleton(schema: JsonSchema | null): string {
  const out: Record<string, unknown> = {};
  const props = (schema && schema.properties) || {};
  for (const key of (schema && schema.required) || []) {
    const t = props[key]?.type;
    out[key] = t === "integer" || t === "number" ? 0 : t === "boolean" ? false : t === "array" ? [] : t === "object" ? {} : "";
  }
  return JSON.stringify(out, null, 2);
}

function render({ model, el }: Pick<RenderProps<PermissionsModel>, "model" | "el">) {
  const rpc = new Rpc<PermissionsProtocol>(model);
  const style = h("style", {});
  style.textContent = css + PERM_CSS;
  const root = h("div", { class: "nbh nbh-perm", "data-testid": "perm-explorer" });
  el.append(style, root);

  // ---- header ---------------------------------------------------------
  const title = h("span", { class: "nbh-title" });
  const modeSelect = h("select", { "data-testid": "perm-mode", title: "The agent's live permission mode" }) as HTMLSelectElement;
  const refreshBtn = h("button", { "data-testid": "perm-refresh", title: "Re-read the agent's permission context" }, "Refresh");
  const status = h("span", { class: "nbh-muted", "data-testid": "perm-status" });
  const headerError = h("div", { class: "nbh-error", "data-testid": "perm-error", hidden: true });
  const warnings = h("div", {});
  root.append(
    h("div", { class: "nbh-row" }, title, h("span", { class: "nbh-muted" }, "mode"), modeSelect, refreshBtn, status),
    warnings,
    headerError,
  );

  // ---- rules ----------------------------------------------------------
  const ruleList = new RuleList({
    onRemove: (r) => { act("remove_rule", { rule: strip(r) }, ruleError); },
    onEdit: (r) => startEdit(r),
  });
  const wdBox = h("div", { "data-testid": "perm-workdirs" });
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
  let editing: Rule | null = null;
  newWhole.addEventListener("change", () => { newContent.disabled = newWhole.checked; });
  // What else the rule being typed lets through (nb_hitl.permissions.rule_reach), asked
  // of the kernel once typing pauses; an invalid rule just hides the hint.
  let reachTimer: number | undefined;
  let reachSeq = 0;
  function askReach() {
    window.clearTimeout(reachTimer);
    reachTimer = window.setTimeout(async () => {
      const seq = ++reachSeq;
      const tool = newTool.value.trim();
      const content = newWhole.checked ? null : newContent.value;
      if (!tool || content === "") { reachHint.hidden = true; return; }
      const reply = await rpc.request("reach", { rule: { tool_name: tool, rule_content: content, behavior: newBehavior.value } }).catch(() => null);
      if (seq !== reachSeq) return;
      reachHint.textContent = reply && reply.ok ? `This rule ${reply.text}` : "";
      reachHint.hidden = !(reply && reply.ok);
    }, 250);
  }
  for (const input of [newTool, newContent, newWhole, newBehavior]) input.addEventListener(input === newWhole || input === newBehavior ? "change" : "input", askReach);

  const wdInput = h("input", { type: "text", "data-testid": "perm-new-workdir", placeholder: "/absolute/path", size: 30 }) as HTMLInputElement;
  const wdBtn = h("button", { "data-testid": "perm-add-workdir" }, "Add working directory");
  const wdError = h("div", { class: "nbh-error", hidden: true });

  root.append(
    h("section", {},
      h("h4", {}, "Rules (deny, then ask, then allow: the engine's order)"),
      ruleList.el,
      h("div", { class: "nbh-row" }, newBehavior, newTool, toolList, newContent,
        h("label", { class: "nbh-muted" }, newWhole, " whole tool (rule_content null)"), addBtn, cancelEdit),
      reachHint,
      ruleError,
    ),
    h("section", {},
      h("h4", {}, "Working directories"),
      wdBox,
      h("div", { class: "nbh-row" }, wdInput, wdBtn),
      wdError,
    ),
  );

  // ---- try a call -----------------------------------------------------
  const tryTool = h("select", { "data-testid": "perm-try-tool" }) as HTMLSelectElement;
  const tryMode = h("select", { "data-testid": "perm-try-mode", title: "Decide in another mode without changing the agent" }) as HTMLSelectElement;
  const tryInput = h("textarea", { class: "perm-short", "data-testid": "perm-try-input", spellcheck: "false" }) as HTMLTextAreaElement;
  const tryBtn = h("button", { class: "nbh-primary", "data-testid": "perm-try-btn" }, "Try (nothing runs)");
  const addToMatrix = h("button", { "data-testid": "perm-matrix-add" }, "Add to matrix");
  const tryError = h("div", { class: "nbh-error", "data-testid": "perm-try-error", hidden: true });
  const tryResult = h("div", { "data-testid": "perm-try-result" });
  root.append(
    h("section", {},
      h("h4", {}, "Try a call: what does the engine decide? (the tool is not executed)"),
      h("div", { class: "nbh-row" }, h("span", { class: "nbh-muted" }, "tool"), tryTool,
        h("span", { class: "nbh-muted" }, "in mode"), tryMode, tryBtn, addToMatrix),
      tryInput,
      tryError,
      tryResult,
    ),
  );

  // ---- matrix ---------------------------------------------------------
  const matrixInput = h("textarea", { class: "perm-short", "data-testid": "perm-matrix-input", spellcheck: "false",
    placeholder: 'one call per line: {"tool_name": "Bash", "input": {"command": "git status"}}' }) as HTMLTextAreaElement;
  const matrixBtn = h("button", { class: "nbh-primary", "data-testid": "perm-matrix-btn" }, "Decide in all five modes");
  const matrixError = h("div", { class: "nbh-error", "data-testid": "perm-matrix-error", hidden: true });
  const matrixBox = h("div", { "data-testid": "perm-matrix" });
  root.append(
    h("section", {},
      h("h4", {}, "Mode matrix (each cell decided on a copy of the context; the agent is untouched)"),
      matrixInput,
      h("div", { class: "nbh-row" }, matrixBtn),
      matrixError,
      matrixBox,
    ),
  );

  // ---- import / export ------------------------------------------------
  const ioText = h("textarea", { class: "perm-short", "data-testid": "perm-io-text", spellcheck: "false",
    placeholder: "rules file: a JSON list of PermissionRule objects" }) as HTMLTextAreaElement;
  const exportBtn = h("button", { "data-testid": "perm-export" }, "Export");
  const downloadLink = h("a", { "data-testid": "perm-download", hidden: true, download: "permission_rules.json" }, "download") as HTMLAnchorElement;
  const fileInput = h("input", { type: "file", accept: ".json,application/json", "data-testid": "perm-import-file" }) as HTMLInputElement;
  const replaceBox = h("input", { type: "checkbox", "data-testid": "perm-import-replace" }) as HTMLInputElement;
  const importBtn = h("button", { "data-testid": "perm-import" }, "Import (all or nothing)");
  const ioError = h("div", { class: "nbh-error", "data-testid": "perm-io-error", hidden: true });
  const ioInfo = h("div", { class: "nbh-ok", "data-testid": "perm-io-info", hidden: true });
  root.append(
    h("section", {},
      h("h4", {}, "Import / export rules"),
      h("div", { class: "nbh-row" }, exportBtn, downloadLink, fileInput,
        h("label", { class: "nbh-muted" }, replaceBox, " replace existing rules"), importBtn),
      ioText,
      ioError,
      ioInfo,
    ),
  );

  // ---- helpers ----------------------------------------------------------
  function show(box: HTMLElement, text: string | null) {
    box.textContent = text || "";
    box.hidden = !text;
  }
  function failure(reply: Refusal): string {
    const field = reply.field ? ` [${reply.field}]` : "";
    return `${reply.error || "Refused."}${field}`;
  }
  let busy = 0;
  async function act<A extends Action>(
    action: A,
    payload: PermissionsProtocol[A]["send"],
    errorBox: HTMLElement,
  ): Promise<Accepted<PermissionsProtocol[A]["answer"]> | null> {
    busy++;
    status.textContent = "…";
    root.setAttribute("data-busy", "true");
    try {
      const reply = await rpc.request(action, payload);
      if (!reply.ok) {
        show(errorBox, failure(reply));
        return null;
      }
      show(errorBox, null);
      return reply;
    } finally {
      busy--;
      if (busy === 0) {
        status.textContent = "";
        root.removeAttribute("data-busy");
      }
    }
  }

  // ---- rendering --------------------------------------------------------
  function renderHeader() {
    const ctx = model.get("context_view") || {};
    title.textContent = `Permissions of ${model.get("agent_name") || "agent"}`;
    const modes = ctx.modes || MODES_FALLBACK;
    clear(modeSelect);
    for (const m of modes) modeSelect.append(h("option", { value: m, selected: m === ctx.mode }, m));
    modeSelect.value = ctx.mode || "default";
    root.setAttribute("data-mode", ctx.mode || "");
    const keep = tryMode.value;
    clear(tryMode);
    tryMode.append(h("option", { value: "" }, `live (${ctx.mode || "?"})`));
    for (const m of modes) tryMode.append(h("option", { value: m }, m));
    tryMode.value = keep && modes.includes(keep) ? keep : "";
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

  // The context view is only rebuilt when the kernel sent a new one (a
  // refresh that changed nothing keeps the same object): thousands of rules
  // are not laid out again on every revision.
  let shownRules: string | null = null;
  function renderRules() {
    const ctx = model.get("context_view") || {};
    const rulesJson = model.get("rules_json") || "[]";
    if (rulesJson !== shownRules) {
      shownRules = rulesJson;
      ruleList.setRules(groupByTool(JSON.parse(rulesJson)));
    }
    clear(wdBox);
    wdBox.append(h("div", { class: "nbh-muted" }, `process cwd (always a working directory): ${ctx.cwd || "?"}`));
    for (const wd of ctx.working_directories || []) {
      const rm = h("button", {}, "Remove");
      rm.addEventListener("click", () => act("remove_working_directory", { path: wd.path }, wdError));
      wdBox.append(h("div", { class: "nbh-row" }, h("code", {}, wd.path), h("span", { class: "nbh-muted" }, `source: ${wd.source}`), rm));
    }
  }

  function strip(r: Rule): Rule {
    return { tool_name: r.tool_name, rule_content: r.rule_content, behavior: r.behavior, source: r.source };
  }

  function startEdit(r: Rule) {
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

  function renderTools() {
    const tools = model.get("tools") || [];
    const keep = tryTool.value;
    clear(tryTool);
    clear(toolList);
    for (const t of tools) {
      tryTool.append(h("option", { value: t.name }, t.read_only ? `${t.name} (read-only)` : t.name));
      toolList.append(h("option", { value: t.name }));
    }
    if (keep && tools.some((t) => t.name === keep)) tryTool.value = keep;
    if (!tryInput.value.trim()) fillSkeleton();
  }
  function fillSkeleton() {
    const tools = model.get("tools") || [];
    const t = tools.find((x) => x.name === tryTool.value);
    tryInput.value = t ? skeleton(t.input_schema) : "{}";
  }
  tryTool.addEventListener("change", fillSkeleton);

  function decisionBlock(d: DecisionDict, testPrefix: string): HTMLElement {
    const box = h("div", { class: `nbh-card`, "data-testid": testPrefix, "data-behavior": d.behavior });
    box.append(h("div", { class: "nbh-row" }, badge(d.behavior, `${testPrefix}-behavior`),
      h("span", { "data-testid": `${testPrefix}-message` }, d.message || ""),
      d.bypass_immune ? h("span", { class: "nbh-chip", "data-testid": `${testPrefix}-bypass-immune` }, "bypass-immune: allow rules cannot silence it") : null));
    if (d.decision_reason) box.append(h("div", { class: "nbh-muted", "data-testid": `${testPrefix}-reason` }, `decision_reason: ${d.decision_reason}`));
    return box;
  }

  function renderTry() {
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

  function renderMatrix() {
    const { result: m, error } = decided(model.get("matrix"));
    const ctx = model.get("context_view") || {};
    clear(matrixBox);
    if (!m || !m.rows) {
      if (error) matrixBox.append(h("div", { class: "nbh-error" }, error));
      return;
    }
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

  function renderAll() {
    renderHeader();
    renderRules();
    renderTools();
    renderTry();
    renderMatrix();
    if (!matrixInput.value.trim()) {
      const calls = model.get("matrix_calls") || [];
      if (calls.length) matrixInput.value = calls.map((c) => JSON.stringify(c)).join("\n");
    }
  }

  // ---- actions ----------------------------------------------------------
  modeSelect.addEventListener("change", () => act("set_mode", { mode: modeSelect.value }, headerError));
  refreshBtn.addEventListener("click", () => act("refresh", {}, headerError));
  addBtn.addEventListener("click", async () => {
    const rule: Rule = {
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
  wdBtn.addEventListener("click", async () => {
    if (await act("add_working_directory", { path: wdInput.value.trim() }, wdError)) wdInput.value = "";
  });
  tryBtn.addEventListener("click", () => {
    act("try_call", { tool_name: tryTool.value, input: tryInput.value, mode: tryMode.value || null }, tryError);
  });
  addToMatrix.addEventListener("click", () => {
    let input: unknown;
    try {
      input = JSON.parse(tryInput.value);
    } catch (err) {
      show(tryError, `The input is not valid JSON: ${String(err)}`);
      return;
    }
    show(tryError, null);
    const line = JSON.stringify({ tool_name: tryTool.value, input });
    matrixInput.value = matrixInput.value.trim() ? `${matrixInput.value.trim()}\n${line}` : line;
  });
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
  exportBtn.addEventListener("click", async () => {
    const reply = await act("export", {}, ioError);
    if (!reply) return;
    ioText.value = reply.text;
    if (downloadLink.href) URL.revokeObjectURL(downloadLink.href);
    downloadLink.href = URL.createObjectURL(new Blob([reply.text], { type: "application/json" }));
    downloadLink.hidden = false;
    show(ioInfo, null);
  });
  fileInput.addEventListener("change", async () => {
    const file = fileInput.files && fileInput.files[0];
    if (file) ioText.value = await file.text();
  });
  importBtn.addEventListener("click", async () => {
    const reply = await act("import", { text: ioText.value, replace: replaceBox.checked }, ioError);
    show(ioInfo, reply ? `Imported ${reply.count} rule(s).` : null);
  });
  // Re-read the context when the person comes back to the widget, so rules
  // accepted elsewhere ("Always allow") are there when they look.
  const onEnter = () => { if (!busy) rpc.request("refresh", {}).catch(() => undefined); };
  root.addEventListener("pointerenter", onEnter);

  const onChange = () => renderAll();
  for (const name of ["context_view", "rules_json", "tools", "last_try", "matrix", "revision", "agent_name"]) model.on(`change:${name}`, onChange);
  renderAll();
  // A notebook reopened after its kernel stopped shows the saved view; say so.
  isLive(rpc).then((live) => {
    if (!live) {
      root.setAttribute("data-live", "false");
      root.prepend(h("div", { class: "nbh-banner", "data-testid": "perm-not-live" },
        "Not live: the kernel that owned this explorer is gone. This is the saved view; run the cell again to explore."));
    } else {
      root.setAttribute("data-live", "true");
    }
  });

  return () => {
    for (const name of ["context_view", "rules_json", "tools", "last_try", "matrix", "revision", "agent_name"]) model.off(`change:${name}`, onChange);
    root.removeEventListener("pointerenter", onEnter);
    if (downloadLink.href) URL.revokeObjectURL(downloadLink.href);
    rpc.dispose();
  };
}

export default { render };
