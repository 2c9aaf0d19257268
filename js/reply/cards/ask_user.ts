// AgentScope's AskUser tool: one panel per question (single or multi
// select, an "Other" answer, an option's preview beside the list), or, when
// the model's questions break AskUserParams, the error to return to it.
import { h } from "../../lib/dom";
import { enterPresses, uid } from "../../lib/a11y";
import type { AnswerIn } from "../../messages";
import type { AskUserOption, PauseView } from "../../types";
import type { CardCtx } from "../card";
import { askFirst } from "../ask_first";
import { clip } from "../record";
import type { CardKind } from "./index";

function buildInvalid(card: HTMLElement, p: PauseView, ctx: CardCtx, dis: boolean): void {
  card.append(
    h("div", { class: "nbh-error", "data-testid": "nbh-askuser-invalid" }, "The agent's questions are invalid and cannot be shown as asked:\n" + (p.ask_user_error || "")),
    h("pre", { class: "nbh-pre", "data-testid": "nbh-askuser-input" }, clip(p.input_text)),
    ctx.errorBox() || "",
    h("button", { class: "nbh-primary", "data-testid": "nbh-return-error", disabled: dis, onclick: () => ctx.send({ action: "return_error" }) }, "Return this error to the agent"),
  );
}

/**
 * The preview column: the shown preview over one hidden copy of every
 * option's preview, all in one grid cell, so the column is as tall as the
 * tallest preview whatever is shown. Hovering an option then moves nothing
 * under the pointer (a card anchored at its bottom, as in the waiting banner,
 * would otherwise move its options away from the pointer, end the hover and
 * shrink back, over and over, and a click could land on another option).
 */
function previewBox(options: AskUserOption[], shown: HTMLElement): HTMLElement {
  const sizers = options
    .filter((o) => o.preview)
    .map((o) => h("div", { class: "nbh-preview-sizer", "aria-hidden": "true" }, h("div", { class: "nbh-muted nbh-preview-head" }, "\u00a0"), h("pre", { class: "nbh-pre" }, o.preview || "")));
  return h("div", { class: "nbh-preview-box", "data-testid": "nbh-preview-box" }, ...sizers, shown);
}

function build(card: HTMLElement, p: PauseView, ctx: CardCtx): void {
  const { ui } = ctx;
  const dis = ui.pending;
  if (p.message) card.append(h("div", { class: "nbh-info" }, p.message));
  if (!p.ask_user) {
    buildInvalid(card, p, ctx, dis);
    return;
  }
  const collectors: (() => AnswerIn)[] = [];
  // what was typed in each question's "Other" box, sent or not (Decline asks before it drops it)
  const typedOthers: (() => { question: string; text: string })[] = [];
  p.ask_user.questions.forEach((q, qi) => {
    const multi = q.multi_select === true; // AskUserParams: multi_select defaults to false (C08)
    const name = `nbh-${p.tool_call_id}-${qi}`;
    const qEl = h("fieldset", { class: "nbh-card", "data-testid": "nbh-question", "data-question": q.question });
    const legendId = uid("nbh-q");
    qEl.append(h("legend", { id: legendId }, h("span", { class: "nbh-chip", "data-testid": "nbh-header" }, q.header), " ", h("span", { class: "nbh-title" }, q.question)));
    if (q.context) qEl.append(h("pre", { class: "nbh-pre", "data-testid": "nbh-context" }, q.context));
    const hasPreview = !multi && q.options.some((o) => o.preview);
    const previewText = h("pre", { class: "nbh-pre nbh-preview", "data-testid": "nbh-preview" });
    const previewHead = h("div", { class: "nbh-muted nbh-preview-head", "data-testid": "nbh-preview-label" });
    const preview = h("div", { class: "nbh-preview-shown" }, previewHead, previewText);
    // the preview says whose it is: the selected option, or one only hovered
    const showPreview = (o?: AskUserOption) => {
      const picked = inputs.find((i) => i.input.checked);
      const shown = o || (picked ? q.options.find((x) => x.label === picked.label) : undefined);
      previewText.textContent = shown && shown.preview ? shown.preview : "";
      const selected = !!(shown && picked && picked.label === shown.label);
      previewHead.textContent = shown ? (selected ? `Preview of your choice: ${shown.label}` : `Preview of ${shown.label} (hover; not selected)`) : "";
      preview.style.visibility = shown && shown.preview ? "" : "hidden";
    };
    // one radio group per single-select question (arrow keys move and pick),
    // a group of checkboxes per multi-select one; both named by the question
    const optsEl = h("div", { class: "nbh-options", role: multi ? "group" : "radiogroup", "aria-labelledby": legendId });
    const inputs: { input: HTMLInputElement; label: string }[] = [];
    const otherNote = h("div", { class: "nbh-warn", "data-testid": "nbh-other-kept", hidden: true });
    for (const o of q.options) {
      const input = h("input", { type: multi ? "checkbox" : "radio", name, value: o.label, disabled: dis, "data-testid": "nbh-option-input" });
      input.addEventListener("change", () => {
        showPreview(o);
        noteOther();
        answered();
      });
      input.addEventListener("focus", () => showPreview(o));
      inputs.push({ input, label: o.label });
      const label = h(
        "label",
        { class: "nbh-row", "data-testid": "nbh-option", "data-label": o.label },
        input,
        h("span", { class: "nbh-title" }, o.label),
        h("span", { class: "nbh-muted" }, o.description),
      );
      label.addEventListener("mouseenter", () => showPreview(o));
      label.addEventListener("mouseleave", () => showPreview(undefined));
      optsEl.append(label);
    }
    const otherToggle = h("input", { type: multi ? "checkbox" : "radio", name, value: "__other__", disabled: dis, "data-testid": "nbh-other-toggle" });
    const otherText = h("input", { type: "text", placeholder: "Other: your own answer", disabled: dis, "data-testid": "nbh-other-text", "aria-label": "Other answer" });
    // single select: picking an option after typing "Other" keeps the text but says it is not sent
    const noteOther = () => {
      const dropped = !multi && !!otherText.value.trim() && !otherToggle.checked;
      otherNote.textContent = dropped ? `Your "Other" answer is kept but not sent: "${otherText.value}" (an option is picked; pick Other to send it).` : "";
      otherNote.hidden = !dropped;
    };
    // a refusal of this question ("Choose an option…") goes once it has an answer
    const answered = () => {
      const other = otherToggle.checked && !!otherText.value.trim();
      if (inputs.some((i) => i.input.checked) || other) ctx.clearError(`answers.${qi}`);
    };
    otherText.addEventListener("input", () => {
      if (otherText.value) otherToggle.checked = true;
      noteOther();
      answered();
    });
    otherToggle.addEventListener("change", () => {
      noteOther();
      answered();
    });
    optsEl.append(h("label", { class: "nbh-row" }, otherToggle, h("span", {}, "Other"), otherText), otherNote);
    showPreview(undefined);
    const kept = ctx.kept;
    const keptAnswer = kept && kept.action === "answer" ? kept.answers.find((a) => a.question === q.question) : undefined;
    if (keptAnswer) {
      for (const i of inputs) i.input.checked = keptAnswer.selected.includes(i.label);
      if (keptAnswer.other) {
        otherToggle.checked = true;
        otherText.value = keptAnswer.other;
      }
      showPreview(q.options.find((o) => keptAnswer.selected.includes(o.label)));
    }
    const body = hasPreview
      ? h("div", { class: "nbh-row", style: "align-items:flex-start" }, h("div", { style: "flex:1;min-width:0" }, optsEl), h("div", { style: "flex:1;min-width:0" }, previewBox(q.options, preview)))
      : optsEl;
    qEl.append(body, ctx.errorBox(`answers.${qi}`) || "");
    card.append(qEl);
    typedOthers.push(() => ({ question: q.question, text: otherText.value.trim() }));
    collectors.push(() => ({
      question: q.question,
      selected: inputs.filter((i) => i.input.checked).map((i) => i.label),
      other: otherToggle.checked && otherText.value.trim() ? otherText.value : null,
    }));
  });
  ctx.setDraft(() => {
    const answers = collectors.map((c) => c());
    return answers.some((a) => a.selected.length || a.other) ? { action: "answer", answers } : null;
  });
  const general = ui.errorField.startsWith("answers.") ? null : ctx.errorBox();
  const sendAnswers = () => ctx.send({ action: "answer", answers: collectors.map((c) => c()) });
  const submit = h("button", { class: "nbh-primary", "data-testid": "nbh-answer-submit", disabled: dis, onclick: sendAnswers }, "Submit answers");
  // Enter on an option (or in "Other") submits, as in a form
  enterPresses(card, submit);
  const { el: question, ask } = askFirst();
  // C34: Decline never drops typed text without a word: it asks which is meant
  const decline = () => {
    const typed = typedOthers.map((t) => t()).filter((t) => t.text);
    if (!typed.length) {
      void ctx.send({ action: "return_error", message: DECLINED });
      return;
    }
    ask(`You typed an answer (${typed.map((t) => `"${t.text}"`).join(", ")}). Decline to answer does not send it. Which do you mean?`, [
      { label: "Submit my answers", testid: "nbh-decline-submit", run: sendAnswers },
      { label: "Decline, and tell the agent what I typed", testid: "nbh-decline-with-text", run: () => ctx.send({ action: "return_error", message: declinedWith(typed) }) },
      { label: "Decline, and drop what I typed", testid: "nbh-decline-drop", run: () => ctx.send({ action: "return_error", message: DECLINED }) },
    ]);
  };
  card.append(general || "", question, h("div", { class: "nbh-row" }, submit, h("button", { "data-testid": "nbh-decline", disabled: dis, onclick: decline }, "Decline to answer")));
}

const DECLINED = "The user declined to answer these questions.";

/** What the model reads when the person declines but keeps what they typed in "Other" boxes. */
export function declinedWith(typed: { question: string; text: string }[]): string {
  return `The user declined to answer these questions, and wrote:\n${typed.map((t) => `- "${t.question}": ${t.text}`).join("\n")}`;
}

/** The questions a closed card asked, read-only (each with its header, context and options), when
 *  its record does not list them: it expired, was declined or was cancelled; an answer's record
 *  names each question with what was chosen. */
export function askedRecord(p: PauseView): HTMLElement | null {
  if (!p.ask_user || (p.decision && p.decision.action === "answer")) return null;
  return h(
    "div",
    { "data-testid": "nbh-asked" },
    h("div", { class: "nbh-muted" }, p.ask_user.questions.length === 1 ? "The agent asked:" : "The agent asked these questions:"),
    p.ask_user.questions.map((q) =>
      h(
        "div",
        { class: "nbh-card", "data-testid": "nbh-asked-question", "data-question": q.question },
        h("div", {}, h("span", { class: "nbh-chip" }, q.header), " ", h("span", { class: "nbh-title" }, q.question)),
        q.context ? h("pre", { class: "nbh-pre" }, q.context) : null,
        h(
          "ul",
          { class: "nbh-muted", "aria-label": q.multi_select === true ? "Options (several could be chosen)" : "Options (one could be chosen)" },
          q.options.map((o) => h("li", {}, h("span", { class: "nbh-title" }, o.label), o.description ? ` — ${o.description}` : "")),
        ),
      ),
    ),
  );
}

export const askUserCard: CardKind = {
  openLabel: "The agent asks you",
  closedLabel: "Question",
  build,
  // the decided record already lists the answers to the questions
  showsInputWhenClosed: (p) => !p.ask_user,
  recordHead: askedRecord,
};
