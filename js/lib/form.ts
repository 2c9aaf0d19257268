// A form generated from a JSON Schema (object with properties of type string,
// number, integer, boolean, enum, string format date/date-time). The page
// only collects and type-converts values; the kernel validates them with a
// JSON Schema library before anything reaches the agent.
import { h } from "./dom";

export interface FormValue {
  ok: boolean;
  value?: any;
  error: string;
  field: string;
}

export interface FormOptions {
  disabled?: boolean;
  error?: string;
  errorField?: string;
}

export function renderSchemaForm(schema: any, opts: FormOptions = {}): { el: HTMLElement; value: () => FormValue } {
  const el = h("div", { class: "nbh-form", "data-testid": "nbh-form" });
  const props: Record<string, any> = (schema && schema.properties) || {};
  const required: string[] = (schema && schema.required) || [];
  if (schema && schema.description) el.append(h("div", { class: "nbh-muted" }, String(schema.description)));
  const getters: [string, () => { present: boolean; value?: any; error?: string }][] = [];
  for (const [name, prop] of Object.entries(props)) {
    const p: any = prop || {};
    const title = String(p.title || name) + (required.includes(name) ? " *" : "");
    const id = `nbh-f-${name}-${Math.random().toString(36).slice(2, 8)}`;
    const label = h("label", { for: id, class: "nbh-title" }, title);
    let input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;
    const type = Array.isArray(p.type) ? p.type.find((t: string) => t !== "null") : p.type;
    if (Array.isArray(p.enum)) {
      const sel = h("select", { id, "data-field": name, disabled: !!opts.disabled }) as HTMLSelectElement;
      sel.append(h("option", { value: "" }, "—"));
      p.enum.forEach((v: any, i: number) => sel.append(h("option", { value: String(i) }, String(v))));
      input = sel;
      getters.push([name, () => (sel.value === "" ? { present: false } : { present: true, value: p.enum[Number(sel.value)] })]);
    } else if (type === "boolean") {
      const cb = h("input", { id, type: "checkbox", "data-field": name, disabled: !!opts.disabled }) as HTMLInputElement;
      if (p.default === true) cb.checked = true;
      input = cb;
      getters.push([name, () => ({ present: true, value: cb.checked })]);
    } else if (type === "number" || type === "integer") {
      const num = h("input", { id, type: "number", step: type === "integer" ? "1" : "any", "data-field": name, disabled: !!opts.disabled }) as HTMLInputElement;
      if (typeof p.default === "number") num.value = String(p.default);
      input = num;
      getters.push([
        name,
        () => {
          // text the browser cannot read as a number leaves value "" with badInput set
          if (num.validity && num.validity.badInput) return { present: true, error: "not a number" };
          if (num.value.trim() === "") return { present: false };
          const v = Number(num.value);
          if (!Number.isFinite(v)) return { present: true, error: "not a number" };
          return { present: true, value: v };
        },
      ]);
    } else if (type === "string" && (p.format === "date" || p.format === "date-time")) {
      const d = h("input", { id, type: p.format === "date" ? "date" : "datetime-local", "data-field": name, disabled: !!opts.disabled }) as HTMLInputElement;
      input = d;
      getters.push([name, () => (d.value ? { present: true, value: p.format === "date-time" ? withZone(d.value) : d.value } : { present: false })]);
    } else if (type === "string" && (p.maxLength === undefined || p.maxLength > 200)) {
      const ta = h("textarea", { id, "data-field": name, disabled: !!opts.disabled }) as HTMLTextAreaElement;
      if (typeof p.default === "string") ta.value = p.default;
      input = ta;
      getters.push([name, () => (ta.value === "" ? { present: false } : { present: true, value: ta.value })]);
    } else {
      const t = h("input", { id, type: "text", "data-field": name, disabled: !!opts.disabled }) as HTMLInputElement;
      if (p.default !== undefined) t.value = String(p.default);
      input = t;
      getters.push([name, () => (t.value === "" ? { present: false } : { present: true, value: type === "string" || !type ? t.value : safeJson(t.value) })]);
    }
    const row = h("div", { class: "nbh-field", "data-testid": "nbh-field", "data-name": name }, label, h("div", {}, input));
    const described: string[] = [];
    if (type === "string" && p.format === "date-time") {
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
  return {
    el,
    value: () => {
      const out: Record<string, any> = {};
      const errors: string[] = [];
      let first = "";
      for (const [name, get] of getters) {
        const r = get();
        if (r.error) {
          errors.push(`${String((props[name] || {}).title || name)}: ${r.error}`);
          first = first || "value." + name;
        } else if (r.present) out[name] = r.value;
      }
      if (errors.length) return { ok: false, error: errors.join("\n"), field: first };
      return { ok: true, value: out, error: "", field: "" };
    },
  };
}

function safeJson(text: string): any {
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
export function errorAtFields(schema: any, error: string): boolean {
  const props: Record<string, any> = (schema && schema.properties) || {};
  const titles = Object.entries(props).map(([n, p]) => String((p || {}).title || n) + ": ");
  return error !== "" && error.split("\n").every((l) => titles.some((t) => l.startsWith(t)));
}
