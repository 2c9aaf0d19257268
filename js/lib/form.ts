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
          if (num.value.trim() === "") return { present: false };
          const v = Number(num.value);
          if (!Number.isFinite(v)) return { present: true, error: "not a number" };
          return { present: true, value: v };
        },
      ]);
    } else if (type === "string" && (p.format === "date" || p.format === "date-time")) {
      const d = h("input", { id, type: p.format === "date" ? "date" : "datetime-local", "data-field": name, disabled: !!opts.disabled }) as HTMLInputElement;
      input = d;
      getters.push([name, () => (d.value ? { present: true, value: p.format === "date-time" && d.value.length === 16 ? d.value + ":00Z" : d.value } : { present: false })]);
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
    if (p.description) {
      const descId = `${id}-desc`;
      described.push(descId);
      row.append(h("div", { class: "nbh-muted", id: descId }, String(p.description)));
    }
    if (required.includes(name)) input.setAttribute("aria-required", "true");
    if (opts.error && opts.errorField && (opts.errorField === name || opts.errorField.startsWith(name + ".") || opts.errorField === "value." + name)) {
      const errId = `${id}-err`;
      described.push(errId);
      input.setAttribute("aria-invalid", "true");
      row.append(h("div", { class: "nbh-error", "data-testid": "nbh-field-error", id: errId, role: "alert" }, opts.error));
    }
    if (described.length) input.setAttribute("aria-describedby", described.join(" "));
    el.append(row);
  }
  return {
    el,
    value: () => {
      const out: Record<string, any> = {};
      for (const [name, get] of getters) {
        const r = get();
        if (r.error) return { ok: false, error: `${name}: ${r.error}`, field: name };
        if (r.present) out[name] = r.value;
      }
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
