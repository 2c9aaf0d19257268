// A confirmation (AgentScope's permission engine asked): approve, deny,
// approve with a modified input, or approve and add suggested rules.
import { fitRowsAsTyped, h } from "../../lib/dom";
import { showMarkdown } from "../../lib/safe_html";
import { enterPresses } from "../../lib/a11y";
import { fileChangeParts } from "../../lib/file_change";
import { shellCommandsView } from "./shell";
import { dryRunPart } from "./dry_run";
import { EditPreview, previewPart } from "../../lib/edit_preview";
import type { PauseView, SuggestedRuleView } from "../../types";
import { approvalsLine, approvalsRecord } from "./approvals";
import type { CardCtx } from "../card";
import type { CardKind } from "./index";

export { approvalsLine, approvalsRecord };

// What runs, exactly as the kernel computed it (AgentScope's own reading of
// the model's arguments; invisible characters escaped, big integers exact):
// never re-parsed here, JSON.parse would round integers beyond 2^53.
function appendInput(card: HTMLElement, p: PauseView): void {
  const changed = p.sent_text !== null && p.sent_text !== undefined;
  if (changed) card.append(h("div", { class: "nbh-muted" }, "The tool will receive:"));
  card.append(h("pre", { class: "nbh-pre", "data-testid": "nbh-input" }, p.input_text));
  if (!changed) return;
  const changes = p.input_changes || [];
  card.append(
    h(
      "div",
      { class: "nbh-warn", "data-testid": "nbh-input-differs" },
      "This is not exactly what the model sent: AgentScope repairs the model's arguments before the tool runs.",
      changes.length ? h("ul", {}, changes.map((c) => h("li", {}, c))) : null,
    ),
    h("div", { class: "nbh-muted" }, "The model sent:"),
    h("pre", { class: "nbh-pre", "data-testid": "nbh-sent-input" }, p.sent_text),
  );
}

// What a file-editing call would do to its file: the kernel's unified diff of
// the file now against the file as the call would leave it, drawn as text.
function appendFileChange(card: HTMLElement, p: PauseView): void {
  if (p.file_change) card.append(...fileChangeParts(p.file_change, "nbh-file"));
}

/** What a confirmation's card offers besides Deny (its `decisions`, see
 * Session(decisions=...)): a view without them (an older kernel, a remote
 * interrupt) offers everything. `always` is the label of the button that opens
 * the suggested rules, or null when there is none to offer. */
export interface ConfirmOffers {
  approve: boolean;
  modify: boolean;
  alwaysAllow: boolean;
  alwaysDeny: boolean;
  always: string | null;
}

export function confirmOffers(p: Pick<PauseView, "decisions" | "suggested_rules">): ConfirmOffers {
  const offers = (d: string) => !p.decisions || !p.decisions.length || p.decisions.includes(d);
  const alwaysAllow = offers("always_allow");
  const alwaysDeny = offers("always_deny");
  const always =
    (p.suggested_rules || []).length && (alwaysAllow || alwaysDeny)
      ? alwaysAllow && alwaysDeny
        ? "Always allow / deny…"
        : alwaysAllow
          ? "Always allow…"
          : "Always deny…"
      : null;
  return { approve: offers("approve"), modify: offers("modify"), alwaysAllow, alwaysDeny, always };
}

// An MCP tool's annotations, as its server declared them: hints, not guarantees.
const HINT_WORDS: Record<string, [string, string]> = {
  readOnlyHint: ["read-only", "not read-only"],
  destructiveHint: ["destructive", "not destructive"],
  idempotentHint: ["idempotent", "not idempotent"],
  openWorldHint: ["reaches the outside world", "closed world"],
};

function hintsLine(p: PauseView): HTMLElement | null {
  const hints = p.tool_hints;
  if (!hints) return null;
  const words = Object.keys(HINT_WORDS)
    .filter((k) => typeof hints[k] === "boolean")
    .map((k) => HINT_WORDS[k][hints[k] ? 0 : 1]);
  const text = words.length
    ? `Its MCP server says this tool is ${words.join(", ")} (hints, not guarantees).`
    : "Its MCP server declared no hints about this tool (MCP assumes a tool may be destructive).";
  return h("div", { class: "nbh-muted", "data-testid": "nbh-tool-hints" }, text);
}

// What else a suggested rule lets through: the kernel's Markdown (its patterns in backticks) as the
// kernel rendered and sanitised it (reach_html), walked again by the page (lib/safe_html.ts) like
// the model's Markdown; the plain line when it has none.
function reachLine(r: SuggestedRuleView): HTMLElement {
  const el = h("div", { class: "nbh-muted", "data-testid": "nbh-rule-reach" });
  showMarkdown(el, r.reach || "", r.reach_html);
  return el;
}

// The button that opens each edit panel, and the field the keyboard lands on in it.
const PANEL_OPENER = { modify: "nbh-modify", rules: "nbh-always", deny: "nbh-deny-reason-open" } as const;
const PANEL_FIELD = { modify: "nbh-modify-input", rules: "nbh-rule", deny: "nbh-deny-reason" } as const;

function build(card: HTMLElement, p: PauseView, ctx: CardCtx): void {
  const { ui } = ctx;
  const hints = hintsLine(p);
  if (hints) card.append(hints);
  if (p.permission_message) {
    // a policy's rule source names the policy the message and the chip already name: not said a third time
    const why = p.decision_reason && !(p.policy && p.permission_message.includes(`'${p.policy}'`)) ? ` (${p.decision_reason})` : "";
    card.append(h("div", { class: "nbh-muted", "data-testid": "nbh-permission-message" }, p.permission_message + why));
  }
  if (p.message) card.append(h("div", { class: "nbh-info" }, p.message));
  const approvals = approvalsLine(p);
  if (approvals) card.append(h("div", { class: "nbh-info", "data-testid": "nbh-approvals" }, approvals));
  const dis = ui.pending;
  const offers = confirmOffers(p);
  const toMode = (mode: typeof ui.mode) => () => {
    const from = ui.mode;
    ui.mode = mode;
    ui.error = "";
    ctx.redraw();
    // an edit opens with the keyboard in its first field; back in the buttons,
    // the keyboard returns to the one that opened the edit
    if (mode !== "view") ctx.focus(PANEL_FIELD[mode]);
    else if (from !== "view") ctx.focus(PANEL_OPENER[from]);
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
    area.value = kept && kept.action === "modify" ? kept.input : p.input_text;
    fitRowsAsTyped(area);
    ctx.setDraft(() => ({ action: "modify", input: area.value }));
    ctx.setHeld(() => (area.value !== p.input_text ? { what: "an edit", draft: { action: "modify", input: area.value } } : null));
    // the kernel's refusal of the edit sent, right under the box: the preview does not say it again
    // (it only points to it), and it goes once the edit it was about is changed
    const refusal = ctx.errorBox("input") || ctx.errorBox("name") || ctx.errorBox();
    // what the edit changes against the model's input, as the kernel reads it, while it is typed
    const shown = previewPart("input", "nbh-modify-preview", p.file_change ? p.file_change.path : null, () => (refusal?.isConnected ? refusal.textContent : null));
    const preview = new EditPreview(p.input_text, (text) => ctx.preview({ input: text }), shown.show);
    area.addEventListener("input", () => {
      ctx.clearError("input");
      preview.changed(area.value);
    });
    if (area.value !== p.input_text) preview.changed(area.value, true);
    card.append(
      h("div", { class: "nbh-muted" }, `Edit the input of ${p.tool_name} (JSON). The tool name cannot change; the edit is checked against the tool's schema and the permission rules.`),
      area,
      refusal || "",
      shown.el,
      h(
        "div",
        { class: "nbh-row" },
        h("button", { class: "nbh-primary", "data-testid": "nbh-modify-submit", disabled: dis, onclick: () => ctx.send({ action: "modify", input: area.value }) }, "Approve modified input"),
        h("button", { "data-testid": "nbh-modify-cancel", disabled: ui.pending, onclick: toMode("view") }, "Cancel"),
      ),
    );
    return;
  }
  appendInput(card, p);
  const shell = shellCommandsView(p);
  if (shell) card.append(shell);
  appendFileChange(card, p);
  const dryRun = ui.mode === "view" ? dryRunPart(p, ctx) : null;
  if (dryRun) card.append(dryRun);
  const refused = p.approve_refused;
  if (ui.mode === "deny") {
    const reason = h("textarea", { "data-testid": "nbh-deny-reason", "aria-label": "Reason for the denial (optional)", rows: 2 });
    const kept = ctx.kept;
    reason.value = kept && kept.action === "deny" ? String(kept.reason || "") : "";
    ctx.setDraft(() => ({ action: "deny", reason: reason.value }));
    ctx.setHeld(() => (reason.value.trim() ? { what: "a reason", draft: { action: "deny", reason: reason.value } } : null));
    card.append(
      h("div", { class: "nbh-muted" }, `Deny ${p.tool_name}. The agent reads your reason, if you give one.`),
      reason,
      ctx.errorBox() || "",
      h(
        "div",
        { class: "nbh-row" },
        h("button", { class: "nbh-danger", "data-testid": "nbh-deny-submit", disabled: dis, onclick: () => ctx.send({ action: "deny", reason: reason.value }) }, "Deny"),
        h("button", { "data-testid": "nbh-deny-cancel", disabled: ui.pending, onclick: toMode("view") }, "Cancel"),
      ),
    );
    return;
  }
  if (ui.mode === "rules") {
    // No rule is pre-ticked (C18): each says what else it lets through.
    const boxes: HTMLInputElement[] = [];
    const contents: HTMLInputElement[] = [];
    const list = h("div", { class: "nbh-rules", role: "group", "aria-label": "Rules to add" });
    const ticked = ctx.remembered();
    for (const r of p.suggested_rules) {
      const cb = h("input", { type: "checkbox", "data-testid": "nbh-rule", "data-index": r.index });
      cb.checked = Array.isArray(ticked) && ticked.includes(r.index);
      cb.addEventListener("change", () => {
        ctx.remember(chosen());
        // "No rule is ticked" is no longer true once one is
        if (chosen().length) ctx.clearError("rules");
      });
      boxes.push(cb);
      // the rule's content can be narrowed or edited; the kernel checks it still matches this call
      const content = h("input", {
        type: "text",
        "data-testid": "nbh-rule-content",
        "aria-label": `Rule content for ${r.tool_name}`,
        placeholder: "(whole tool)",
        disabled: r.rule_content === null,
      });
      content.value = r.rule_content ?? "";
      contents.push(content);
      list.append(
        h(
          "div",
          { class: "nbh-rule" },
          h("label", { class: "nbh-row" }, cb, h("code", {}, r.label)),
          r.rule_content === null ? null : content,
          reachLine(r),
        ),
      );
    }
    const chosen = () => boxes.filter((b) => b.checked).map((b) => Number(b.dataset.index));
    const edits = () =>
      p.suggested_rules
        .map((r, i) => ({ index: r.index, rule_content: contents[i].value, was: r.rule_content, on: boxes[i].checked }))
        .filter((e) => e.on && e.was !== null && e.rule_content !== e.was)
        .map((e) => ({ index: e.index, rule_content: e.rule_content }));
    // ticked rules are sent with the allow or the deny button of this panel only: no group action takes them
    ctx.setHeld(() => (chosen().length ? { what: "ticked rules", draft: null } : null));
    const none = () => {
      ui.error = "No rule is ticked, so nothing was sent: tick the rules to add, or use Approve / Deny for this call only.";
      ui.errorField = "rules";
      ctx.redraw();
    };
    const allow = offers.alwaysAllow
      ? h(
          "button",
          {
            class: "nbh-primary",
            "data-testid": "nbh-rules-submit",
            disabled: dis || !!refused,
            onclick: () => (chosen().length ? ctx.send({ action: "approve", rules: chosen(), rule_edits: edits() }) : none()),
          },
          "Approve and always allow the ticked rules",
        )
      : null;
    // Enter on a rule (or its content) presses the allow button, as in a form
    if (allow) enterPresses(list, allow);
    card.append(
      h("div", { class: "nbh-muted" }, "Always: the ticked rules are added to the agent's permission rules, so matching calls run (or are refused) without asking."),
      list,
      ctx.errorBox() || "",
      h(
        "div",
        { class: "nbh-row" },
        allow,
        offers.alwaysDeny
          ? h(
              "button",
              {
                class: "nbh-danger",
                "data-testid": "nbh-deny-rules-submit",
                disabled: dis,
                onclick: () => (chosen().length ? ctx.send({ action: "deny", deny_rules: chosen() }) : none()),
              },
              "Deny and always deny the ticked rules",
            )
          : null,
        h("button", { "data-testid": "nbh-rules-cancel", disabled: ui.pending, onclick: toMode("view") }, "Cancel"),
      ),
    );
    return;
  }
  if (refused) card.append(h("div", { class: "nbh-warn", "data-testid": "nbh-approve-refused" }, refused));
  card.append(
    ctx.errorBox() || "",
    h(
      "div",
      { class: "nbh-row" },
      offers.approve
        ? h("button", { class: "nbh-primary", "data-testid": "nbh-approve", disabled: dis || !!refused, onclick: () => ctx.send({ action: "approve" }) }, "Approve")
        : null,
      h("button", { class: "nbh-danger", "data-testid": "nbh-deny", disabled: dis, onclick: () => ctx.send({ action: "deny" }) }, "Deny"),
      h("button", { "data-testid": "nbh-deny-reason-open", disabled: dis, onclick: toMode("deny") }, "Deny with reason…"),
      offers.modify ? h("button", { "data-testid": "nbh-modify", disabled: dis, onclick: toMode("modify") }, "Modify…") : null,
      offers.always ? h("button", { "data-testid": "nbh-always", disabled: dis, onclick: toMode("rules") }, offers.always) : null,
    ),
  );
}

export const confirmCard: CardKind = {
  openLabel: "Needs your confirmation",
  closedLabel: "Confirmation",
  build,
  recordHead: (p) => {
    const text = approvalsRecord(p);
    return text ? h("div", { class: "nbh-muted", "data-testid": "nbh-approvals" }, text) : null;
  },
  bulk: [
    // an open edit is approved as edited, a typed reason denies with that reason
    { label: "Approve all", testid: "nbh-approve-all", action: "approve", takes: ["modify"] },
    { label: "Deny all", testid: "nbh-deny-all", action: "deny", takes: ["deny"] },
  ],
};
