// A structured question: a form drawn from the agent's JSON Schema
// (lib/form.ts); the kernel validates the answer before the agent sees it.
import { h } from "../../lib/dom";
import { errorAtFields, renderSchemaForm, type FormValue, type SchemaProp } from "../../lib/form";
import { enterPresses } from "../../lib/a11y";
import type { JsonSchema, PauseView, RemotePauseView } from "../../types";
import type { CardCtx } from "../card";
import { clip } from "../record";
import type { CardKind } from "./index";

/** Put a form's values back into its fields (a card reopened after a remote refusal: what was sent). */
export function restoreFormValues(formEl: HTMLElement, schema: JsonSchema, values: unknown): void {
  if (typeof values !== "object" || values === null || Array.isArray(values)) return;
  const props: Record<string, SchemaProp> = (schema && schema.properties) || {};
  for (const [name, v] of Object.entries(values)) {
    const input = Array.from(formEl.querySelectorAll<HTMLElement>("[data-field]")).find((e) => e.dataset.field === name);
    if (!input) continue;
    const p = props[name] || {};
    if (input instanceof HTMLSelectElement) {
      const i = Array.isArray(p.enum) ? p.enum.findIndex((x) => JSON.stringify(x) === JSON.stringify(v)) : -1;
      if (i >= 0) input.value = String(i);
    } else if (input instanceof HTMLInputElement && input.type === "checkbox") {
      input.checked = v === true;
    } else if (input instanceof HTMLInputElement && input.type === "datetime-local") {
      input.value = String(v).slice(0, 16);
    } else if (input instanceof HTMLInputElement || input instanceof HTMLTextAreaElement) {
      input.value = typeof v === "string" ? v : JSON.stringify(v);
    }
  }
}

function build(card: HTMLElement, p: PauseView, ctx: CardCtx): void {
  const { ui } = ctx;
  const dis = ui.pending;
  if (p.message) card.append(h("div", { class: "nbh-info" }, p.message));
  if ((p as RemotePauseView).unanswerable) {
    // a remote interrupt whose metadata is malformed: say what is wrong; it can only be cancelled
    card.append(
      h("div", { class: "nbh-error", "data-testid": "nbh-unanswerable" }, "This question cannot be answered: " + (p.form_error || "its metadata is malformed.")),
      ctx.errorBox() || "",
      h("button", { class: "nbh-primary", "data-testid": "nbh-cancel", disabled: dis, onclick: () => ctx.send({ action: "cancel" }) }, "Cancel it"),
    );
    return;
  }
  if (p.form_error) {
    card.append(
      h("div", { class: "nbh-error", "data-testid": "nbh-form-invalid" }, "The agent's form cannot be shown: " + p.form_error),
      h("pre", { class: "nbh-pre" }, clip(p.input_text)),
      ctx.errorBox() || "",
      h("button", { class: "nbh-primary", "data-testid": "nbh-return-error", disabled: dis, onclick: () => ctx.send({ action: "return_error" }) }, "Return this error to the agent"),
    );
    return;
  }
  const schema: JsonSchema = p.response_schema || {};
  const drawn = schemaForm(schema, ctx, dis, {
    testid: "nbh-form-submit",
    label: "Submit",
    send: (value) => ctx.send({ action: "submit", value }),
  });
  ctx.setDraft(() => {
    const v = drawn.value();
    return v.ok && Object.keys(v.value || {}).length ? { action: "submit", value: v.value } : null;
  });
  // as AskUser's "Decline to answer": the agent reads that the user declined, and nothing typed is sent
  const decline = h(
    "button",
    { "data-testid": "nbh-form-decline", disabled: dis, title: "Nothing typed in this form is sent", onclick: () => void ctx.send({ action: "return_error", message: FORM_DECLINED }) },
    "Decline to answer",
  );
  card.append(drawn.form, drawn.errorBox, h("div", { class: "nbh-row" }, drawn.button, decline));
}

/** What the agent reads when the person declines a form (its tool's ERROR result). */
export const FORM_DECLINED = "The user declined to fill in this form.";

/** What {@link schemaForm} draws: the form, the error box (empty when the form shows the error at its field), the button. */
export interface SchemaFormUi {
  form: HTMLElement;
  errorBox: HTMLElement | "";
  button: HTMLElement;
  /** the form's value now */
  value(): FormValue;
}

/**
 * A form drawn from `schema` with its primary button: the values of the card's kept
 * answer are put back (a submit's value, an MCP accept's content: a card reopened after
 * a remote refusal; on any other rebuild card_typed.ts puts back what was typed), the
 * button checks the value and shows a field's error at the field (the kernel checks
 * again), Enter in a one-line field presses it.
 * Used by the form card and by the MCP elicitation card.
 */
export function schemaForm(
  schema: JsonSchema,
  ctx: CardCtx,
  disabled: boolean,
  action: { testid: string; label: string; send: (value: Record<string, unknown>) => unknown },
): SchemaFormUi {
  const { ui } = ctx;
  const form = renderSchemaForm(schema, { disabled, errorField: ui.errorField, error: ui.error });
  const kept = ctx.kept;
  restoreFormValues(form.el, schema, kept?.action === "submit" ? kept.value : kept?.action === "accept" ? kept.content : undefined);
  // an error the form already shows at its field is not repeated below
  const props = (schema && schema.properties) || {};
  const top = ui.errorField.startsWith("value.") ? ui.errorField.slice(6) : ui.errorField;
  const atField = (top !== "" && Object.prototype.hasOwnProperty.call(props, top) && !ui.error.includes("\n")) || errorAtFields(schema, ui.error);
  const button = h(
    "button",
    {
      class: "nbh-primary",
      "data-testid": action.testid,
      disabled,
      onclick: () => {
        const value = form.value();
        if (!value.ok) {
          ui.error = value.error;
          ui.errorField = value.field;
          ctx.redraw();
          return;
        }
        void action.send(value.value as Record<string, unknown>);
      },
    },
    action.label,
  );
  // Enter in a one-line field presses it, as in a form
  enterPresses(form.el, button);
  return { form: form.el, errorBox: atField ? "" : ctx.errorBox() || "", button, value: form.value };
}

export const formCard: CardKind = {
  openLabel: "The agent asks for input",
  closedLabel: "Form",
  build,
  // a submitted form shows its values ("Submitted:"), not the schema it was asked with
  showsInputWhenClosed: (p) => !(p.decision && p.decision.action === "submit"),
};
