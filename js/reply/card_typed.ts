// What a person typed or chose on a card, carried over every rebuild of it.
//
// A card is rebuilt when its state changes (a refusal, "Sending…", a mode
// change, a status change: card.ts's redraw). Before that, readTyped takes the
// raw state of every form control of the old card (a text's value and caret, a
// choice's checked, a select's options, a disclosure's open); after the new
// card is built (its kind has drawn its controls, from its `kept` answer when
// it has one), putTyped puts each back into the control with the same key
// (lib/a11y.ts keyedControls: test id, field, index, a choice's value, and the
// rank among controls with the same) when it is there and of the same type.
// The text the person sees and typed wins over the kind's `kept` answer: it is
// what they typed, including what no answer holds (an un-ticked "Other" text,
// a number field's "1e", an edit not sent yet). A card that is not open has no
// controls, so a card reopened after a remote refusal is drawn from its kind's
// `kept` (what was sent) alone. Each control put back gets the events typing or
// clicking would give it, so the kind's listeners (previews, notes, the group
// bar) see it; texts first, then choices, since typing may tick a choice (an
// "Other" box ticks Other) that the person had left as it was. What is put
// back is what a refusal on the new card is about, so it clears none (card.ts).
import { keyedControls } from "../lib/a11y";

/** The raw state of one control (`tag`/`type` say what it is: put back only into the same). */
export interface TypedControl {
  tag: string;
  type: string;
  /** an input's or textarea's value */
  value?: string;
  /** the caret or selection of a text control: [start, end, direction] */
  selection?: [number, number, "forward" | "backward" | "none"];
  /** a radio's or checkbox's checked */
  checked?: boolean;
  /** a select's selected option values */
  selected?: string[];
  /** a `<details>` element's open */
  open?: boolean;
}

/** A card's controls by key ({@link keyedControls}). */
export type TypedCard = Map<string, TypedControl>;

const CHOICES = ["radio", "checkbox"];
// inputs with a value that is not typed (or that a page cannot set)
const NOT_TYPED = ["button", "submit", "reset", "image", "file", "hidden"];
// inputs whose caret a page may read and set (others throw)
const SELECTABLE = ["text", "search", "url", "tel", "password"];

function typeOf(el: HTMLElement): string {
  return el instanceof HTMLInputElement ? el.type : "";
}

function selectionOf(el: HTMLInputElement | HTMLTextAreaElement): TypedControl["selection"] {
  if (el instanceof HTMLInputElement && !SELECTABLE.includes(el.type)) return undefined;
  if (el.selectionStart === null || el.selectionEnd === null) return undefined;
  return [el.selectionStart, el.selectionEnd, el.selectionDirection || "none"];
}

/** The raw state of one control, or null when it holds nothing a person types or picks. */
function read(el: HTMLElement): TypedControl | null {
  const base = { tag: el.tagName, type: typeOf(el) };
  if (el instanceof HTMLInputElement) {
    if (NOT_TYPED.includes(el.type)) return null;
    if (CHOICES.includes(el.type)) return { ...base, checked: el.checked };
    return { ...base, value: el.value, selection: selectionOf(el) };
  }
  if (el instanceof HTMLTextAreaElement) return { ...base, value: el.value, selection: selectionOf(el) };
  if (el instanceof HTMLSelectElement) return { ...base, selected: Array.from(el.options).filter((o) => o.selected).map((o) => o.value) };
  if (el instanceof HTMLDetailsElement) return { ...base, open: el.open };
  return null;
}

/**
 * The raw state of every control of `card` a person types into or picks.
 *
 * @param card the card about to be replaced (a card that is not open has no controls: empty).
 * @returns key ({@link keyedControls}) -> the control's state.
 */
export function readTyped(card: HTMLElement): TypedCard {
  const out: TypedCard = new Map();
  for (const [key, el] of keyedControls(card)) {
    const state = read(el);
    if (state) out.set(key, state);
  }
  return out;
}

function fire(el: HTMLElement): void {
  el.dispatchEvent(new Event("input", { bubbles: true }));
  el.dispatchEvent(new Event("change", { bubbles: true }));
}

/** Put a text, select or disclosure back; true when it changed. */
function putValue(el: HTMLElement, t: TypedControl): boolean {
  if ((el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) && t.value !== undefined) {
    if (el.value === t.value) return false;
    el.value = t.value;
    return true;
  }
  if (el instanceof HTMLSelectElement && t.selected) {
    const now = Array.from(el.options).map((o) => o.selected);
    const want = Array.from(el.options).map((o) => t.selected!.includes(o.value));
    if (now.every((v, i) => v === want[i])) return false;
    Array.from(el.options).forEach((o, i) => (o.selected = want[i]));
    return true;
  }
  if (el instanceof HTMLDetailsElement && t.open !== undefined && el.open !== t.open) el.open = t.open; // its toggle event comes by itself
  return false;
}

/**
 * Put `typed` back into the rebuilt `card`: each control with the same key and
 * type gets its state, and the input and change events a person's typing or
 * click would give it when that changed it (texts and selects first, then
 * choices); then each text's caret. Controls the new card does not have (another
 * mode's) and controls the old card did not have keep what the kind drew.
 *
 * @param card the new card, built (and in the page: its kind's listeners may look it up).
 * @param typed what {@link readTyped} read from the card it replaces.
 */
export function putTyped(card: HTMLElement, typed: TypedCard): void {
  if (!typed.size) return;
  const pairs: [HTMLElement, TypedControl][] = [];
  for (const [key, el] of keyedControls(card)) {
    const t = typed.get(key);
    if (t && t.tag === el.tagName && t.type === typeOf(el)) pairs.push([el, t]);
  }
  for (const [el, t] of pairs) if (t.checked === undefined && putValue(el, t)) fire(el);
  for (const [el, t] of pairs) {
    if (t.checked === undefined || !(el instanceof HTMLInputElement) || el.checked === t.checked) continue;
    el.checked = t.checked;
    fire(el);
  }
  for (const [el, t] of pairs) {
    if (t.selection && (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) && el.value === t.value) {
      el.setSelectionRange(...t.selection);
    }
  }
}
