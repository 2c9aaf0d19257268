// What a card says in words and how much it shows: the sentence of a
// decision (the decided record, the screen reader's announcement), whether
// it refused the call, an input cut to a readable length, and the deadline's
// countdown chip.
import { h } from "../lib/dom";
import { diffView } from "../lib/diff";
import { visibleText } from "../lib/visible";
import type { DecisionView, PauseView } from "../types";

export function decisionText(d: DecisionView | null, p?: Pick<PauseView, "kind"> & Partial<Pick<PauseView, "sampling">>): string {
  const dec = d || {};
  if (p && p.kind === "sampling") return samplingText(dec, p.sampling?.stage === "completion");
  switch (dec.action) {
    case "approve":
      // the rules' labels carry their behaviour ("allow Bash(ls:*)")
      return dec.accepted_rules && dec.accepted_rules.length ? `Approved, with rules: ${dec.accepted_rules.join(", ")}` : "Approved";
    case "deny":
      if (dec.cause === "timeout") return "Not answered before the deadline: did not run";
      if (dec.cause === "cancelled") return "Cancelled without an answer: did not run";
      // "Deny and always deny the ticked rules": the card names the rules as an approval's does
      return dec.denied_rules && dec.denied_rules.length ? `Denied, with rules: ${dec.denied_rules.join(", ")}` : "Denied";
    case "modify":
      // the edit is drawn under this line ("Modified to:", recordBody), never repeated in it
      return dec.edited_input !== undefined ? "Approved with modified input (below)" : "Approved with modified input";
    case "answer":
      return (
        "Answered: " +
        (dec.answers || [])
          .map((a) => `${a.question} → ${[...(a.selected || []), ...(a.other ? [`"${a.other}"`] : [])].join(", ")}`)
          .join("; ")
      );
    case "external_result":
      return `Result sent (${dec.state})`;
    case "return_error":
      // AskUser's and a form's "Decline to answer": the agent reads an error result saying the user declined
      if (p && (p.kind === "ask_user" || p.kind === "form")) return "Declined: the agent was told you did not answer";
      return "Error returned to the agent";
    case "accept":
      // an MCP server's question carries the values sent (a page it sent the person to, none);
      // a review accepts the result as it is
      if (p && p.kind === "elicitation" && dec.content === undefined) return "Done: the MCP server was told you finished on its page";
      return dec.content !== undefined ? `Accepted: sent to the MCP server ${JSON.stringify(dec.content)}` : "Result accepted";
    case "decline":
      return "Declined: the MCP server was told no";
    case "cancel":
      if (dec.cause === "timeout") return "Not answered before the deadline: the MCP server was told cancel";
      if (dec.cause === "cancelled") return "Cancelled without an answer: the MCP server was told cancel";
      return "Cancelled: the MCP server was told cancel";
    case "edit":
      return "Result edited before the model saw it";
    case "reject":
      return "Result rejected";
    case "submit":
      return "Form submitted";
    case "timeout":
      return `Deadline passed: ${dec.applied || "default applied"}`;
    default:
      return dec.action ? String(dec.action) : "Decided";
  }
}

/** The sentence of a decision on an MCP sampling request (the request, or the model's completion). */
function samplingText(dec: DecisionView, completion: boolean): string {
  const what = completion ? "the completion" : "the request";
  switch (dec.action) {
    case "approve":
      return completion ? "Approved: the completion was sent to the MCP server" : "Approved: the notebook's model was called";
    case "edit":
      return completion ? "Edited: your text was sent to the MCP server" : "Edited: the notebook's model was called with your messages";
    case "deny":
      if (dec.cause === "timeout") return `Not answered before the deadline: ${what} was refused, the MCP server got an error`;
      if (dec.cause === "cancelled") return `Cancelled without an answer: ${what} was refused, the MCP server got an error`;
      return `Denied: ${what} was refused, the MCP server got an error` + (dec.reason ? ` with your reason: ${visibleText(dec.reason)}` : "");
    case "timeout":
      return `Deadline passed: ${dec.applied || "default applied"}`;
    default:
      return dec.action ? String(dec.action) : "Decided";
  }
}

// a decision that refused something (not drawn in the approval colour)
export function refusal(d: DecisionView | null): boolean {
  const a = d ? d.action : undefined;
  return a === "deny" || a === "reject" || a === "cancelled" || a === "return_error" || a === "timeout" || a === "decline" || a === "cancel";
}

/** The most characters of a call's input a card shows (a huge input stays readable and cheap to draw). */
export const MAX_SHOWN_CHARS = 20000;

/** `text`, cut to {@link MAX_SHOWN_CHARS} with a note saying how much is left out. */
export function clip(text: string): string {
  const s = String(text ?? "");
  return s.length <= MAX_SHOWN_CHARS ? s : `${s.slice(0, MAX_SHOWN_CHARS)}\n… (${s.length - MAX_SHOWN_CHARS} more characters not shown)`;
}

export function timeLeft(deadline: number): string {
  const s = Math.max(0, Math.round(deadline - Date.now() / 1000));
  return s > 0 ? `${s}s left` : "deadline passed";
}

export function deadlineEl(p: PauseView): HTMLElement | null {
  if (!p.deadline || p.status !== "open") return null;
  const span = h("span", { class: "nbh-chip", "data-testid": "nbh-deadline", "data-deadline": String(p.deadline) });
  span.textContent = timeLeft(p.deadline);
  return span;
}

// a decided or expired pause: what was decided (or why it expired), and the input it was about
export function appendDecisionRecord(card: HTMLElement, p: PauseView, showInput: boolean): void {
  const cls = p.status === "expired" || refusal(p.decision) ? "nbh-warn" : "nbh-ok";
  const text =
    p.status === "expired"
      ? `No longer live: ${p.reason || "the reply ended"}`
      : p.status === "deciding"
        ? "Recording your decision…"
        : decisionText(p.decision, p);
  card.append(h("div", { class: cls, "data-testid": "nbh-decision" }, text));
  if (p.decision && p.decision.edited_input !== undefined) {
    card.append(
      h("div", { class: "nbh-muted" }, "Asked for:"),
      h("pre", { class: "nbh-pre" }, clip(p.input_text)),
      h("div", { class: "nbh-muted" }, p.status === "decided" ? "Modified to (not run yet):" : "Modified to:"),
      h("pre", { class: "nbh-pre", "data-testid": "nbh-edited-input" }, p.decision.edited_input_text ?? JSON.stringify(p.decision.edited_input, null, 2)),
    );
    if (typeof p.decision.input_diff === "string" && p.decision.input_diff)
      card.append(h("div", { class: "nbh-muted" }, "What the edit changed:"), diffView(p.decision.input_diff, "What the edit changed", "nbh-input-diff"));
  } else if (showInput) {
    card.append(h("pre", { class: "nbh-pre" }, clip(p.input_text)));
  }
  if (p.decision && p.decision.action === "submit" && typeof p.decision.output === "string")
    card.append(h("div", { class: "nbh-muted" }, "Submitted:"), h("pre", { class: "nbh-pre", "data-testid": "nbh-submitted" }, p.decision.output));
  if (p.decision && typeof p.decision.note === "string" && p.decision.note)
    card.append(h("div", { class: "nbh-muted", "data-testid": "nbh-decision-note" }, `The agent was told: ${visibleText(p.decision.note)}`));
}
