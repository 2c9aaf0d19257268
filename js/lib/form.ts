// A form generated from a JSON Schema (object with properties of type string,
// number, integer, boolean, enum, string format date/date-time). The page
// only collects and type-converts values; the kernel validates them with a
// JSON Schema library before anything reaches the agent.
import { h } from "./dom";
import type { JsonSchema } from "../types";

export interface FormValue {
  ok: boolean;
  value?: Record<string, unknown>;
  error: string;
  field: string;
}

/** A property of the form's schema, as far as the form reads it. */
export interface SchemaProp {
  type?: string | string[];
  enum?: unknown[];
  format?: string;
  maxLength?: number;
  title?: string;
  description?: string;
  default?: unknown;
}

/** The control a property gets: a select, a checkbox, a number, a date or
 * date-time picker, a text area (long or unbounded strings) or a text line. */
export type FieldKind = "enum" | "boolean" | "number" | "integer" | "date" | "date-time" | "textarea" | "text";

/** What one field holds: absent (left empty), a value, or why it has none. */
export interface FieldRead {
  present: boolean;
  value?: unknown;
  error?: string;
}

/** The property's type, the first that is not "null" when it names several. */
export function propType(p: SchemaProp): string | undefined {
  return Array.isArray(p.type) ? p.type.find((t) => t !== "null") : p.type;
}

export function fieldKind(p: SchemaProp): FieldKind {
  const type = propType(p);
  if (Array.isArray(p.enum)) return "enum";
  if (type === "boolean") return "boolean";
  if (type === "number" || type === "integer") return type;
  if (type === "string" && (p.format === "date" || p.format === "date-time")) return p.format;
  if (type === "string" && (p.maxLength === undefined || p.maxLength > 200)) return "textarea";
  return "text";
}

// a decimal number as a person types it (JSON's, with an optional "+" and leading or trailing "."):
// never hex, binary or octal literals, "Infinity" or "NaN", which Number() would also read
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** A number field's text (surrounding spaces ignored): absent when blank, else its number,
 *  or "not a number" for text that is not a finite decimal number ("1e", "12a", "0x10", "1e400"). */
export function readNumber(text: string): FieldRead {
  const t = text.trim();
  if (t === "") return { present: false };
  const v = Number(t);
  if (!DECIMAL.test(t) || !Number.isFinite(v)) return { present: true, error: "not a number" };
  return { present: true, value: v };
}

/** A text line's value: a string property keeps the text; one of another
 * (or no) declared type is read as JSON when it parses. */
export function readText(text: string, p: SchemaProp): FieldRead {
  if (text === "") return { present: false };
  const type = propType(p);
  return { present: true, value: type === "string" || !type ? text : safeJson(text) };
}

/** The form's value from each field's read, or the error lines ("<title>: <what>") and the first field at fault. */
export function collect(props: Record<string, SchemaProp>, reads: [string, FieldRead][]): FormValue {
  const out: Record<string, unknown> = {};
  const errors: string[] = [];
  let first = "";
  for (const [name, r] of reads) {
    if (r.error) {
      errors.push(`${String((props[name] || {}).title || name)}: ${r.error}`);
      first = first || "value." + name;
    } else if (r.present) out[name] = r.value;
  }
  if (errors.length) return { ok: false, error: errors.join("\n"), field: first };
  return { ok: true, value: out, error: "", field: "" };
}

function propsOf(schema: JsonSchema | null | undefined): Record<string, SchemaProp> {
  const props: unknown = schema && schema.properties;
  return props && typeof props === "object" && !Array.isArray(props) ? (props as Record<string, SchemaProp>) : {};
}

export interface FormOptions {
  disabled?: boolean;
  error?: string;
  errorField?: string;
}

export function renderSchemaForm(schema: JsonSchema | null, opts: FormOptions = {}): { el: HTMLElement; value: () => FormValue } {
  const el = h("div", { class: "nbh-form", "data-testid": "nbh-form" });
  const props = propsOf(schema);
  const required: unknown[] = schema && Array.isArray(schema.required) ? schema.required : [];
  if (schema && schema.description) el.append(h("div", { class: "nbh-muted" }, String(schema.description)));
  const getters: [string, () => FieldRead][] = [];
  for (const [name, prop] of Object.entries(props)) {
    const p: SchemaProp = prop || {};
    const title = String(p.title || name) + (required.includes(name) ? " *" : "");
    const id = `nbh-f-${name}-${Math.random().toString(36).slice(2, 8)}`;
    const label = h("label", { for: id, class: "nbh-title" }, title);
    let input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;
    const type = propType(p);
    const kind = fieldKind(p);
    if (kind === "enum") {
      const options = p.enum || [];
      const sel = h("select", { id, "data-field": name, disabled: !!opts.disabled }) as HTMLSelectElement;
      sel.append(h("option", { value: "" }, "—"));
      options.forEach((v, i) => sel.append(h("option", { value: String(i) }, String(v))));
      input = sel;
      getters.push([name, () => (sel.value === "" ? { present: false } : { present: true, value: options[Number(sel.value)] })]);
    } else if (kind === "boolean") {
      const cb = h("input", { id, type: "checkbox", "data-field": name, disabled: !!opts.disabled }) as HTMLInputElement;
      if (p.default === true) cb.checked = true;
      input = cb;
      getters.push([name, () => ({ present: true, value: cb.checked })]);
    } else if (kind === "number" || kind === "integer") {
      // a text field, not type="number": the page reads what was typed ("1e" on its way to "1e3"),
      // says when it is not a number, and keeps it across the card's rebuilds (type="number" reads "")
      const num = h("input", { id, type: "text", inputmode: "decimal", "data-field": name, disabled: !!opts.disabled }) as HTMLInputElement;
      if (typeof p.default === "number") num.value = String(p.default);
      input = num;
      getters.push([name, () => readNumber(num.value)]);
    } else if (kind === "date" || kind === "date-time") {
      const d = h("input", { id, type: kind === "date" ? "date" : "datetime-local", "data-field": name, disabled: !!opts.disabled }) as HTMLInputElement;
      if (typeof p.default === "string") d.value = pickerValue(p.default, kind);
      input = d;
      getters.push([name, () => (d.value ? { present: true, value: kind === "date-time" ? withZone(d.value) : d.value } : { present: false })]);
    } else if (kind === "textarea") {
      const ta = h("textarea", { id, "data-field": name, disabled: !!opts.disabled }) as HTMLTextAreaElement;
      if (typeof p.default === "string") ta.value = p.default;
      input = ta;
      getters.push([name, () => (ta.value === "" ? { present: false } : { present: true, value: ta.value })]);
    } else {
      const t = h("input", { id, type: "text", "data-field": name, disabled: !!opts.disabled }) as HTMLInputElement;
      if (p.default !== undefined) t.value = String(p.default);
      input = t;
      getters.push([name, () => readText(t.value, p)]);
    }
    const row = h("div", { class: "nbh-field", "data-testid": "nbh-field", "data-name": name }, label, h("div", {}, input));
    const described: string[] = [];
    if (kind === "date-time") {
      // the browser's wall clock is sent with its UTC offset: say which zone that is
      const zoneId = `${id}-zone`;
      described.push(zoneId);
      row.append(h("div", { class: "nbh-muted", id: zoneId, "data-testid": "nbh-field-zone" }, `Time zone: ${browserZone()}`));
    }
    if (p.description) {
      const descId = `${id}-desc`;
      described.push(descId);
      row.append(h("div", { class: "nbh-muted", id: descId }, String(p.description)));
    }
    if (required.includes(name)) input.setAttribute("aria-required", "true");
    const fieldError = errorFor(name, String(p.title || name), opts);
    if (fieldError) {
      const errId = `${id}-err`;
      described.push(errId);
      input.setAttribute("aria-invalid", "true");
      row.append(h("div", { class: "nbh-error", "data-testid": "nbh-field-error", id: errId, role: "alert" }, fieldError));
    }
    if (described.length) input.setAttribute("aria-describedby", described.join(" "));
    el.append(row);
  }
  return { el, value: () => collect(props, getters.map(([name, get]) => [name, get()])) };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The browser's IANA time zone (Europe/Berlin), or "UTC±hh:mm" when unnamed. */
export function browserZone(): string {
  try {
    const z = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (z) return z;
  } catch {
    /* fall through */
  }
  return "UTC" + offsetText(new Date());
}

function offsetText(d: Date): string {
  const off = -d.getTimezoneOffset(); // minutes east of UTC
  const sign = off < 0 ? "-" : "+";
  const a = Math.abs(off);
  return `${sign}${String(Math.floor(a / 60)).padStart(2, "0")}:${String(a % 60).padStart(2, "0")}`;
}

/** A datetime-local value ("2026-07-15T13:10", local wall time) as an RFC 3339
 * instant with the browser's offset at that date ("2026-07-15T13:10:00+02:00"). */
export function withZone(local: string): string {
  const full = local.length === 16 ? local + ":00" : local;
  const d = new Date(full); // no offset in the text: parsed as local time
  if (Number.isNaN(d.getTime())) return full;
  return full + offsetText(d);
}

const pad2 = (n: number) => String(n).padStart(2, "0");

/** A schema's default for a date ("2026-07-15") or date-time field (an RFC 3339
 * instant, "2026-07-15T11:10:00Z") as the picker's value: the date as given; the
 * instant as the browser's wall time then ("2026-07-15T13:10" in Europe/Berlin),
 * seconds kept when not zero, the inverse of {@link withZone}. "" (the field starts
 * empty) for text that is no such value: the kernel validates what is sent. */
export function pickerValue(value: string, kind: "date" | "date-time"): string {
  if (kind === "date") return /^\d{4}-\d{2}-\d{2}$/.test(value) ? value : "";
  if (!/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}/.test(value)) return "";
  const d = new Date(value.replace(" ", "T")); // no offset in the text: read as the browser's wall time
  if (Number.isNaN(d.getTime())) return "";
  const day = `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
  const time = `${pad2(d.getHours())}:${pad2(d.getMinutes())}` + (d.getSeconds() ? `:${pad2(d.getSeconds())}` : "");
  return `${day}T${time}`;
}

/** The error lines meant for field `name`: the kernel (and value()) send one
 * line per invalid field, "<title>: <what is wrong>"; the single errorField
 * names the first, whose whole text is used when no line names it. */
function errorFor(name: string, title: string, opts: FormOptions): string {
  if (!opts.error) return "";
  const lines = opts.error.split("\n").filter((l) => l.startsWith(title + ": "));
  if (lines.length) return lines.join("\n");
  const f = opts.errorField || "";
  if (f === name || f.startsWith(name + ".") || f === "value." + name || f.startsWith("value." + name + ".")) return opts.error;
  return "";
}

/** True when every line of `error` is shown at one of the schema's fields. */
export function errorAtFields(schema: JsonSchema | null, error: string): boolean {
  const props = propsOf(schema);
  const titles = Object.entries(props).map(([n, p]) => String((p || {}).title || n) + ": ");
  return error !== "" && error.split("\n").every((l) => titles.some((t) => l.startsWith(t)));
}
