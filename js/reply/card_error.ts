// A card's refusal (the kernel's error for one of its fields, or for the whole
// answer): drawn where its field is, and gone once the person made that field
// valid, so the card never keeps saying something that is no longer true.
import { h } from "../lib/dom";
import type { CardUi } from "./card";

/** The refusal's box when it belongs to `field` (any field when omitted), or null (no refusal). */
export function errorBox(ui: CardUi, field?: string): HTMLElement | null {
  if (!ui.error) return null;
  if (field !== undefined && !(ui.errorField || "").startsWith(field)) return null;
  return h("div", { class: "nbh-error", "data-testid": "nbh-error", "data-field": ui.errorField, role: "alert" }, ui.error);
}

/** The person made `field` valid: a refusal of it (or of a part, `field.x`) leaves the card and its state. */
export function clearError(ui: CardUi, field: string): void {
  if (!ui.error || (ui.errorField !== field && !ui.errorField.startsWith(field + "."))) return;
  for (const box of Array.from(ui.el?.querySelectorAll<HTMLElement>('[data-testid="nbh-error"]') || [])) {
    if (box.dataset.field === ui.errorField) box.remove();
  }
  ui.error = ui.errorField = "";
}
