// DOM helpers. Text from the agent or the model only ever reaches the page
// through textContent / attribute values set here: nothing builds HTML from
// strings, so `<img onerror>` or `<script>` in a tool input stays text.

export type Child = Node | string | number | null | undefined | false;
export type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value as EventListener);
    } else if (key === "class") {
      el.className = String(value);
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  // a box as wide as its placeholder (in characters; the theme caps it at the row's width), so the
  // hint is never cut: a box sized by its own `size` keeps it
  if (tag === "input" && attrs.placeholder && attrs.size === undefined) el.setAttribute("size", String(placeholderSize(String(attrs.placeholder))));
  append(el, children);
  return el;
}

/** The `size` (characters) of an input box that shows `placeholder` whole: its length and one
 *  more (a box of `size` n is a little narrower than n of its characters), at least 20 (the
 *  browser's default). */
export function placeholderSize(placeholder: string): number {
  return Math.max(20, Array.from(placeholder).length + 1);
}

export function append(el: Element, children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

/** Size a text box to its text: a row per line and one to type in, within `min` and `max` rows
 *  (a longer text scrolls in the box; the person may still drag it taller). */
export function fitRows(area: HTMLTextAreaElement, min = 4, max = 24): void {
  const lines = area.value.split("\n").length + 1;
  area.rows = Math.min(max, Math.max(min, lines));
}

/** Keep an edit box sized to its text ({@link fitRows}: 4 to 24 rows) now and whenever its text
 *  changes by typing (or by a rebuild putting back what was typed, which fires the same event).
 *  Call it once its first text is set. */
export function fitRowsAsTyped(area: HTMLTextAreaElement): void {
  fitRows(area);
  area.addEventListener("input", () => fitRows(area));
}

/** Pretty-print a JSON string for display; falls back to the raw text. */
export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
