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

/** A string that finds "the same" control in a rebuilt card. */
export function controlKey(el: Element | null): string | null {
  if (!(el instanceof HTMLElement)) return null;
  const parts = ["testid", "label", "index", "field"].map((k) => el.dataset[k] || "");
  if (el instanceof HTMLInputElement) parts.push(el.value);
  return parts.some((p) => p) ? parts.join("\u0000") : null;
}

export function findControl(el: HTMLElement, key: string | null): HTMLElement | null {
  if (!key) return null;
  for (const c of Array.from(el.querySelectorAll<HTMLElement>("[data-testid], [data-field], [data-index]"))) {
    if (controlKey(c) === key && !(c as HTMLInputElement).disabled) return c;
  }
  return null;
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
