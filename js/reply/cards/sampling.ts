// An MCP server asks the notebook's model for a completion while its tool
// runs (MCP sampling). Two cards, one after the other (nb_hitl/kinds/sampling.py):
// the server's request (messages, system prompt, model preferences, token
// limit) before the model is called, then the model's answer before it goes
// back to the server. Each: Approve, send an edit, or Deny (the server then
// gets an error, never a completion). Everything the server sent is shown as
// text; the kernel checks every answer before anything is called or sent.
import { fitRowsAsTyped, h } from "../../lib/dom";
import type { PauseView, SamplingView } from "../../types";
import type { CardCtx } from "../card";
import type { CardKind } from "./index";

/** The request's settings in one line each (only those the server gave). */
function settings(s: SamplingView): HTMLElement {
  const lines: string[] = [];
  if (s.model_hints.length) lines.push(`Model hints: ${s.model_hints.join(", ")}`);
  const prio = Object.entries(s.priorities);
  if (prio.length) lines.push(`Priorities: ${prio.map(([k, v]) => `${k} ${v}`).join(", ")}`);
  if (s.max_tokens !== null) lines.push(`Max tokens: ${s.max_tokens}`);
  if (s.temperature !== null) lines.push(`Temperature: ${s.temperature}`);
  if (s.stop_sequences.length) lines.push(`Stop sequences: ${s.stop_sequences.map((x) => JSON.stringify(x)).join(", ")}`);
  if (s.include_context && s.include_context !== "none") lines.push(`Include context: ${s.include_context} (not sent: only these messages are)`);
  return h(
    "div",
    { class: "nbh-muted", "data-testid": "nbh-sampling-settings" },
    ...lines.map((l) => h("div", {}, l)),
    s.settings_note ? h("div", { "data-testid": "nbh-sampling-applied" }, s.settings_note) : "",
  );
}

function systemPrompt(s: SamplingView): HTMLElement | string {
  return s.system_prompt ? h("div", {}, h("div", { class: "nbh-muted" }, "System prompt"), h("pre", { class: "nbh-pre", "data-testid": "nbh-sampling-system" }, s.system_prompt)) : "";
}

/** The messages as text (a closed card, or the completion stage). */
function messagesText(s: SamplingView): HTMLElement {
  return h("div", { "data-testid": "nbh-sampling-messages" }, ...s.messages.map((m) => h("div", {}, h("div", { class: "nbh-muted" }, m.role), h("pre", { class: "nbh-pre" }, m.text))));
}

/** What an edit sent (the decision's `content`, local or remote), as text: the
 * completion the MCP server got, or the messages the notebook's model was asked. */
function sentEdit(p: PauseView): HTMLElement | string {
  const content = p.decision?.action === "edit" ? p.decision.content : undefined;
  if (!content) return "";
  if (p.sampling?.stage === "completion") {
    if (typeof content.text !== "string") return "";
    return h("div", {}, h("div", { class: "nbh-muted" }, "Your edit, sent to the MCP server"), h("pre", { class: "nbh-pre", "data-testid": "nbh-sampling-sent" }, content.text));
  }
  // the kernel's decision holds {role, text} per message; a remote answer the texts, in the request's order
  const roles = p.sampling?.messages || [];
  const raw: unknown[] = Array.isArray(content.messages) ? content.messages : [];
  const sent = raw.flatMap((m, i) => {
    if (typeof m === "string") return [{ role: roles[i]?.role || "", text: m }];
    const o = m as { role?: unknown; text?: unknown } | null;
    return o && typeof o.text === "string" ? [{ role: typeof o.role === "string" ? o.role : roles[i]?.role || "", text: o.text }] : [];
  });
  if (!sent.length) return "";
  return h(
    "div",
    { "data-testid": "nbh-sampling-sent" },
    h("div", { class: "nbh-muted" }, "Your edit, sent to the notebook's model"),
    ...sent.map((m) => h("div", {}, h("div", { class: "nbh-muted" }, m.role), h("pre", { class: "nbh-pre" }, m.text))),
  );
}

/** The texts of a kept edit (a remote server refused it): the answer's, or each message's; else null. */
function keptEdit(kept: CardCtx["kept"], completion: boolean): unknown[] | null {
  if (kept?.action !== "edit") return null;
  if (completion) return "output" in kept ? [kept.output] : null;
  return "messages" in kept && Array.isArray(kept.messages) ? kept.messages : null;
}

function build(card: HTMLElement, p: PauseView, ctx: CardCtx): void {
  const { ui } = ctx;
  const dis = ui.pending;
  ctx.setDraft(() => null); // an answer to a server is sent on its own, never with "Submit all"
  if (p.message) card.append(h("div", { class: "nbh-info", "data-testid": "nbh-sampling-note" }, p.message));
  const reason = h("input", { type: "text", placeholder: "Reason (optional, the server and the model read it)", disabled: dis, "data-testid": "nbh-sampling-reason", "aria-label": "Reason for denying" });
  const deny = h("button", { class: "nbh-danger", "data-testid": "nbh-sampling-deny", disabled: dis, onclick: () => void ctx.send(reason.value.trim() ? { action: "deny", reason: reason.value } : { action: "deny" }) }, "Deny");
  const s = p.sampling;
  if (!s || p.form_error) {
    card.append(
      h("div", { class: "nbh-error", "data-testid": "nbh-sampling-invalid" }, "The server's request cannot be sent: " + (p.form_error || "it carries no request.")),
      ...(s ? [systemPrompt(s), messagesText(s)] : []),
      ctx.errorBox() || "",
      h("div", { class: "nbh-row" }, deny, reason),
    );
    return;
  }
  const completion = s.stage === "completion";
  // the editable texts: each message of the request, or the model's answer
  const originals = completion ? [s.completion || ""] : s.messages.map((m) => m.text);
  // a card reopened after a remote refusal starts from the edit that was sent (card_typed.ts puts
  // back what was typed on any other rebuild)
  const sentTexts = keptEdit(ctx.kept, completion);
  const areas = originals.map((text, i) => {
    const area = h("textarea", {
      "data-testid": completion ? "nbh-sampling-completion" : `nbh-sampling-message-${i}`,
      "aria-label": completion ? "The model's answer" : `Message ${i + 1} (${s.messages[i].role})`,
      spellcheck: "false",
      disabled: dis,
    });
    area.value = sentTexts && typeof sentTexts[i] === "string" ? sentTexts[i] : text;
    fitRowsAsTyped(area); // as tall as its text, 4 to 24 rows, as the Modify box
    return area;
  });
  const edited = () => areas.some((a, i) => a.value !== originals[i]);
  const edit = () => void ctx.send(completion ? { action: "edit", output: areas[0].value } : { action: "edit", messages: areas.map((a) => a.value) });
  const question = h("div", { class: "nbh-warn", "data-testid": "nbh-ask-first", hidden: true });
  const approve = () => {
    if (!edited()) return void ctx.send({ action: "approve" });
    // an edit is never thrown away without a word
    question.replaceChildren(
      h("div", {}, "You edited the text. Approve sends the server's own, not your edit. Which one do you mean?"),
      h(
        "div",
        { class: "nbh-row" },
        h("button", { "data-testid": "nbh-sampling-send-edit", onclick: edit }, "Send my edit"),
        h("button", { "data-testid": "nbh-sampling-approve-original", onclick: () => void ctx.send({ action: "approve" }) }, "Discard my edit"),
        h("button", { onclick: () => (question.hidden = true) }, "Cancel"),
      ),
    );
    question.hidden = false;
  };
  const body = completion
    ? [
        h("details", { "data-testid": "nbh-sampling-asked" }, h("summary", {}, "What the model was asked"), systemPrompt(s), messagesText(s)),
        h("div", { class: "nbh-muted" }, `The notebook's model${s.model ? ` (${s.model})` : ""} answered. The MCP server has not seen it; edit the text to change what it gets.`),
        areas[0],
      ]
    : [
        systemPrompt(s),
        ...s.messages.map((m, i) => h("div", {}, h("div", { class: "nbh-muted" }, m.role), areas[i])),
        settings(s),
        h("div", { class: "nbh-muted" }, "The notebook's model has not been called. Edit the messages to change what it is asked."),
      ];
  card.append(
    ...body,
    ctx.errorBox("messages") || ctx.errorBox("output") || ctx.errorBox() || "",
    question,
    h(
      "div",
      { class: "nbh-row" },
      h("button", { class: "nbh-primary", "data-testid": "nbh-sampling-approve", disabled: dis, onclick: approve }, completion ? "Approve & send" : "Approve & call the model"),
      h("button", { "data-testid": "nbh-sampling-edit", disabled: dis, onclick: edit }, completion ? "Send my edit" : "Call the model with my edit"),
      deny,
      reason,
    ),
  );
}

export const samplingCard: CardKind = {
  openLabel: "An MCP server asks your model",
  closedLabel: "MCP sampling",
  build,
  // the record says what was asked or answered; the tool's own input is on its call above
  showsInputWhenClosed: () => false,
  recordHead: (p) => {
    const s = p.sampling;
    if (!s) return null;
    // the model failed on an approved request: said where the person clicked (the server got an error)
    const failed = s.error ? h("div", { class: "nbh-error", role: "alert", "data-testid": "nbh-sampling-error" }, s.error) : "";
    return s.stage === "completion"
      ? h("div", {}, h("div", { class: "nbh-muted" }, "The model's answer"), h("pre", { class: "nbh-pre", "data-testid": "nbh-sampling-answer" }, s.completion || ""), sentEdit(p))
      : h("div", {}, failed, systemPrompt(s), messagesText(s), sentEdit(p));
  },
};
