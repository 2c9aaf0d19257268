// Keyboard and screen-reader support shared by the widgets.
//
// Inside JupyterLab a widget sits in a notebook cell's output, and the
// notebook's command-mode shortcuts (ArrowUp/Down move to another cell,
// Enter enters edit mode, Space scrolls...) would take keys the widget's own
// controls need. Lumino's CommandRegistry gives a shortcut up when the event's
// target, or an element between it and the shortcut's selector, carries
// `data-lm-suppress-shortcuts` (see keepKeys).

let counter = 0;

/** A page-unique id for aria-labelledby / aria-describedby. */
export function uid(prefix = "nbh"): string {
  counter += 1;
  return `${prefix}-${counter.toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
}

const SUPPRESS = "data-lm-suppress-shortcuts";

/** Keep JupyterLab's (and Notebook 7's) keyboard shortcuts away from keys
 *  pressed inside `root`, with Lumino's own `data-lm-suppress-shortcuts`.
 *
 *  Lumino's CommandRegistry (`matchKeyBinding`) walks from the event's target
 *  up and gives a binding up at the first element carrying the attribute; but
 *  it tests the target itself first, and the notebook's command-mode bindings
 *  select `.jp-Notebook.jp-mod-commandMode:not(.jp-mod-readWrite) :focus`,
 *  which the focused control itself matches. So the attribute on `root` alone
 *  stops only bindings on its ancestors (`body` ones such as Save); each
 *  control that takes the focus inside `root` carries it too (set as it
 *  gets the focus, so controls drawn later are covered). Keys still reach the
 *  widget's own handlers (Enter, Escape) and the browser (Tab). */
export function keepKeys(root: HTMLElement): void {
  root.setAttribute(SUPPRESS, "true");
  root.addEventListener("focusin", (event: FocusEvent) => {
    const target = event.target;
    if (target instanceof HTMLElement && !target.hasAttribute(SUPPRESS)) target.setAttribute(SUPPRESS, "true");
  });
}

export function isTextField(el: Element): boolean {
  if (el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement) return true;
  if (!(el instanceof HTMLInputElement)) return false;
  return !["radio", "checkbox", "button", "submit", "reset"].includes(el.type);
}

/** Enter on a choice (radio, checkbox) or a one-line text field inside `scope`
 *  presses `button`, like a form's implicit submission. */
export function enterPresses(scope: HTMLElement, button: HTMLButtonElement): void {
  scope.addEventListener("keydown", (event: KeyboardEvent) => {
    if (event.key !== "Enter" || event.shiftKey || event.ctrlKey || event.altKey || event.metaKey || event.isComposing) return;
    const target = event.target;
    if (!(target instanceof HTMLInputElement)) return;
    event.preventDefault();
    if (!button.disabled) button.click();
  });
}

const FOCUSABLE = 'input:not([disabled]):not([type="hidden"]), textarea:not([disabled]), select:not([disabled]), button:not([disabled]), [tabindex]:not([tabindex="-1"])';

/** The first control a keyboard user would reach in `el`, if any. */
export function firstControl(el: HTMLElement): HTMLElement | null {
  for (const c of Array.from(el.querySelectorAll<HTMLElement>(FOCUSABLE))) {
    if (c.hidden || c.closest("[hidden]")) continue;
    if (c instanceof HTMLInputElement && c.type === "radio" && !c.checked) {
      // a radio group is one tab stop: its checked radio, else its first
      const group = Array.from(el.querySelectorAll<HTMLInputElement>(`input[type="radio"][name="${CSS.escape(c.name)}"]`));
      const checked = group.find((r) => r.checked && !r.disabled);
      if (checked) return checked;
    }
    return c;
  }
  return null;
}

// what names a control across builds of its card: its test id and the data its card gives it
const KEYED = "[data-testid], [data-field], [data-index]";

/** What names `el` in any build of its card: its data-testid, data-label, data-index and
 *  data-field, and a choice's value (a radio or checkbox), or null when it has none of these.
 *  Never a text control's value: that is what the person types. */
function baseKey(el: HTMLElement): string | null {
  const parts = ["testid", "label", "index", "field"].map((k) => el.dataset[k] || "");
  if (!parts.some((p) => p)) return null;
  if (el instanceof HTMLInputElement && (el.type === "radio" || el.type === "checkbox")) parts.push(el.value);
  return [el.tagName, ...parts].join("\u0000");
}

/**
 * Every element of `root` that a rebuilt `root` has again, by a key unique in `root`:
 * its {@link baseKey} and its rank among the elements of `root` with the same one (the
 * "Other" boxes of two questions share a test id), in document order.
 *
 * @param root a card (or any element whose builds draw the same controls in the same order).
 * @returns key -> element, in document order; elements without a base key are left out.
 */
export function keyedControls(root: HTMLElement): Map<string, HTMLElement> {
  const seen = new Map<string, number>();
  const out = new Map<string, HTMLElement>();
  for (const el of Array.from(root.querySelectorAll<HTMLElement>(KEYED))) {
    const base = baseKey(el);
    if (base === null) continue;
    const n = seen.get(base) || 0;
    seen.set(base, n + 1);
    out.set(`${base}\u0000${n}`, el);
  }
  return out;
}

/** The key that finds `el` again in a rebuilt `root` ({@link keyedControls}), or null. */
export function controlKey(root: HTMLElement, el: Element | null): string | null {
  if (!(el instanceof HTMLElement) || !root.contains(el)) return null;
  for (const [key, c] of keyedControls(root)) if (c === el) return key;
  return null;
}

/** The enabled element of `root` with this key ({@link controlKey}), or null. */
export function findControl(root: HTMLElement, key: string | null): HTMLElement | null {
  if (!key) return null;
  const c = keyedControls(root).get(key);
  return c && !(c as HTMLInputElement).disabled ? c : null;
}

/** Blocks of text that scroll get a tab stop and a name, so the keyboard can scroll them. */
export function focusableScrollers(el: HTMLElement): void {
  requestAnimationFrame(() => {
    for (const pre of Array.from(el.querySelectorAll<HTMLElement>(".nbh-pre"))) {
      const scrolls = pre.scrollHeight > pre.clientHeight + 1 || pre.scrollWidth > pre.clientWidth + 1;
      if (scrolls && !pre.hasAttribute("tabindex")) {
        pre.tabIndex = 0;
        pre.setAttribute("role", "region");
        if (!pre.hasAttribute("aria-label")) pre.setAttribute("aria-label", "Scrollable text");
      }
    }
  });
}

/** A polite live region: what changed (a pause arrived, a decision was
 *  recorded, the reply finished) is read out without moving focus. */
export class Announcer {
  readonly el: HTMLElement;
  private last = "";

  constructor() {
    this.el = document.createElement("div");
    this.el.className = "nbh-sr-only";
    this.el.setAttribute("role", "status");
    this.el.setAttribute("aria-live", "polite");
    this.el.setAttribute("data-testid", "nbh-announce");
  }

  say(text: string): void {
    if (!text || text === this.last) return;
    this.last = text;
    this.el.textContent = text;
  }
}
