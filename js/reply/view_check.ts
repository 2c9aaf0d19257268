// The one place a pause view from the kernel is checked (reply/feed.ts calls
// it for every view that arrives: the `pauses` trait, a card op, a sync
// answer). A view that fits `PauseView` is drawn by its kind's card module; a
// field a view leaves out (an older kernel, a remote interrupt's view) takes
// its empty value; a view that does not fit (a field of the wrong type, an
// unknown kind or status, a form without a schema, AskUser questions without
// options...) is drawn as a card that says what is wrong, with a cancel
// action (reply/cards/invalid.ts). The card modules can then read every
// field as typed: nothing they draw throws on the kernel's data.
import { fileChange } from "../lib/file_change";
import type { ApprovalView, AskUserOption, AskUserQuestion, DecisionView, JsonSchema, PauseKind, PauseStatus, PauseView, SamplingView, ShellCommandView, SuggestedRuleView } from "../types";

export const KINDS: readonly PauseKind[] = ["confirm", "ask_user", "external", "review", "form", "elicitation", "sampling"];
export const STATUSES: readonly PauseStatus[] = ["open", "deciding", "decided", "delivered", "expired"];

/** A view as the cards read it, and what is wrong with it (null: nothing). */
export interface CheckedView {
  view: PauseView;
  /** why the view cannot be drawn as its kind, in one sentence per fault */
  problem: string | null;
  /** a remote (AG-UI) interrupt's view: it is cancelled with "cancel" */
  remote: boolean;
  /** the view names its tool call (a card that does not cannot send anything about it) */
  named: boolean;
}

type Raw = Record<string, unknown>;

const isObject = (v: unknown): v is Raw => typeof v === "object" && v !== null && !Array.isArray(v);

/** The fields of one view, read with a note of each that does not fit. */
class Reader {
  readonly faults: string[] = [];
  constructor(private readonly raw: Raw) {}

  private fault(key: string, what: string): void {
    this.faults.push(`${key} ${what}`);
  }

  /** a string; missing or null: `fallback` */
  str(key: string, fallback = ""): string {
    const v = this.raw[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v === "string") return v;
    this.fault(key, "is not text");
    return fallback;
  }

  /** a string or null; missing: null */
  optStr(key: string): string | null {
    const v = this.raw[key];
    if (v === undefined || v === null) return null;
    if (typeof v === "string") return v;
    this.fault(key, "is not text");
    return null;
  }

  num(key: string, fallback: number): number {
    const v = this.raw[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v === "number" && Number.isFinite(v)) return v;
    this.fault(key, "is not a number");
    return fallback;
  }

  optNum(key: string): number | null {
    return this.raw[key] === undefined || this.raw[key] === null ? null : this.num(key, 0);
  }

  bool(key: string): boolean {
    const v = this.raw[key];
    if (v === undefined || v === null) return false;
    if (typeof v === "boolean") return v;
    this.fault(key, "is not true or false");
    return false;
  }

  strings(key: string): string[] {
    const v = this.raw[key];
    if (v === undefined || v === null) return [];
    if (Array.isArray(v) && v.every((s) => typeof s === "string")) return v;
    this.fault(key, "is not a list of texts");
    return [];
  }

  /** a JSON object or null */
  optObject(key: string): Raw | null {
    const v = this.raw[key];
    if (v === undefined || v === null) return null;
    if (isObject(v)) return v;
    this.fault(key, "is not an object");
    return null;
  }

  oneOf<T extends string>(key: string, allowed: readonly T[], fallback: T): T {
    const v = this.raw[key];
    if (typeof v === "string" && (allowed as readonly string[]).includes(v)) return v as T;
    this.fault(key, v === undefined ? "is missing" : `${JSON.stringify(v).slice(0, 40)} is not one of ${allowed.join(", ")}`);
    return fallback;
  }

  /** The suggested rules: each needs its index and label; a remote
   * interrupt's carry only those (no content to narrow: rule_content null). */
  rules(): SuggestedRuleView[] {
    const v = this.raw.suggested_rules;
    if (v === undefined || v === null) return [];
    const text = (x: unknown) => x === undefined || x === null || typeof x === "string";
    const ok =
      Array.isArray(v) &&
      v.every(
        (r) =>
          isObject(r) &&
          typeof r.index === "number" &&
          typeof r.label === "string" &&
          text(r.tool_name) &&
          text(r.rule_content) &&
          text(r.behavior) &&
          text(r.reach) &&
          text(r.reach_html),
      );
    if (!ok) {
      this.fault("suggested_rules", "are not well formed");
      return [];
    }
    return (v as Raw[]).map((r) => ({
      index: r.index as number,
      label: r.label as string,
      tool_name: (r.tool_name as string | undefined) ?? "",
      rule_content: (r.rule_content as string | null | undefined) ?? null,
      behavior: (r.behavior as string | undefined) ?? "",
      reach: (r.reach as string | undefined) ?? "",
      reach_html: (r.reach_html as string | null | undefined) ?? null,
    }));
  }

  askUser(): { questions: AskUserQuestion[] } | null {
    const v = this.raw.ask_user;
    if (v === undefined || v === null) return null;
    const questions = isObject(v) ? v.questions : undefined;
    if (!Array.isArray(questions) || !questions.length) {
      this.fault("ask_user", "has no questions");
      return null;
    }
    const out: AskUserQuestion[] = [];
    for (const [i, q] of questions.entries()) {
      const where = `ask_user question ${i + 1}`;
      if (!isObject(q) || typeof q.question !== "string") {
        this.fault(where, "has no question text");
        return null;
      }
      const options = q.options;
      if (!Array.isArray(options) || !options.length || !options.every((o) => isObject(o) && typeof o.label === "string")) {
        this.fault(where, "has no options (each with a label)");
        return null;
      }
      out.push({
        question: q.question,
        header: typeof q.header === "string" ? q.header : "",
        context: typeof q.context === "string" ? q.context : null,
        multi_select: q.multi_select === true,
        options: (options as Raw[]).map(
          (o): AskUserOption => ({
            label: o.label as string,
            description: typeof o.description === "string" ? o.description : "",
            preview: typeof o.preview === "string" ? o.preview : null,
          }),
        ),
      });
    }
    return { questions: out };
  }
}

/** An MCP tool's hints: only boolean values are kept (anything else is dropped, not a problem). */
function toolHints(raw: unknown): Record<string, boolean> | null {
  if (!isObject(raw)) return null;
  const out: Record<string, boolean> = {};
  for (const [k, v] of Object.entries(raw)) if (typeof v === "boolean") out[k] = v;
  return out;
}

/** The approvals so far of a call that needs several: the entries that fit are kept
 *  (a pause view's, and an inbox row's: inbox_logic.ts). */
export function approvals(raw: unknown): ApprovalView[] {
  if (!Array.isArray(raw)) return [];
  return raw
    .filter((a) => isObject(a) && typeof a.by === "string" && typeof a.at === "number")
    .map((a) => ({ by: a.by as string, at: a.at as number, action: typeof a.action === "string" ? a.action : "approve" }));
}

/** How many approvals a call needs: a whole number from 1, else 1 (one person decides). */
export function approvalsNeeded(raw: unknown): number {
  return Number.isInteger(raw) && (raw as number) >= 1 ? (raw as number) : 1;
}

/** A shell call's simple commands: the entries that fit are kept, as text. */
function shellCommands(raw: unknown): ShellCommandView[] {
  if (!Array.isArray(raw)) return [];
  const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
  const str = (v: unknown): string => (typeof v === "string" ? v : "");
  return raw.filter(isObject).map((c) => ({
    program: typeof c.program === "string" ? c.program : null,
    args: strs(c.args),
    redirections: strs(c.redirections),
    assignments: strs(c.assignments),
    text: str(c.text),
    via: str(c.via),
    behavior: str(c.behavior),
    why: str(c.why),
    files: (Array.isArray(c.files) ? c.files : [])
      .filter((f): f is Raw => isObject(f) && typeof f.access === "string" && typeof f.path === "string")
      .map((f) => ({ access: f.access as string, path: f.path as string })),
  }));
}

/** An MCP sampling request (`Pause.sampling`): drawn only when every part is of its type; a
 *  request that is not is a fault (the card then offers only what an invalid card offers). */
function sampling(raw: unknown, faults: string[]): SamplingView | null {
  if (raw === undefined || raw === null) return null;
  const text = (v: unknown) => v === null || v === undefined || typeof v === "string";
  const num = (v: unknown) => v === null || v === undefined || (typeof v === "number" && Number.isFinite(v));
  const ok =
    isObject(raw) &&
    (raw.stage === "request" || raw.stage === "completion") &&
    Array.isArray(raw.messages) &&
    raw.messages.every((m) => isObject(m) && typeof m.role === "string" && typeof m.text === "string") &&
    text(raw.system_prompt) && text(raw.include_context) && text(raw.completion) && text(raw.model) &&
    text(raw.settings_note) && text(raw.error) &&
    num(raw.max_tokens) && num(raw.temperature) &&
    (raw.model_hints === undefined || (Array.isArray(raw.model_hints) && raw.model_hints.every((x) => typeof x === "string"))) &&
    (raw.stop_sequences === undefined || (Array.isArray(raw.stop_sequences) && raw.stop_sequences.every((x) => typeof x === "string"))) &&
    (raw.priorities === undefined || (isObject(raw.priorities) && Object.values(raw.priorities).every((x) => typeof x === "number")));
  if (!ok) {
    faults.push("sampling is not a well-formed sampling request");
    return null;
  }
  const r = raw as Raw;
  const opt = (v: unknown): string | null => (typeof v === "string" ? v : null);
  const optN = (v: unknown): number | null => (typeof v === "number" ? v : null);
  return {
    stage: r.stage as SamplingView["stage"],
    messages: (r.messages as Raw[]).map((m) => ({ role: m.role as string, text: m.text as string })),
    system_prompt: opt(r.system_prompt),
    model_hints: (r.model_hints as string[] | undefined) || [],
    priorities: (r.priorities as Record<string, number> | undefined) || {},
    max_tokens: optN(r.max_tokens),
    temperature: optN(r.temperature),
    stop_sequences: (r.stop_sequences as string[] | undefined) || [],
    include_context: opt(r.include_context),
    completion: opt(r.completion),
    model: opt(r.model),
    settings_note: opt(r.settings_note),
    error: opt(r.error),
  };
}

/** A schema a form can be drawn from: an object whose `properties`, if any, is an object. */
function formSchemaProblem(schema: JsonSchema | null): string | null {
  if (!schema) return "the form has no schema";
  const props: unknown = schema.properties;
  if (props !== undefined && !isObject(props)) return "the form's schema has properties that are not an object";
  return null;
}

/**
 * Check one pause view from the kernel.
 *
 * @param raw whatever arrived as a view (a `Pause.to_view()` dict, or a remote interrupt's).
 * @param fallbackId the id to draw it under when it names none (its place in the list).
 * @returns the view with every field of its declared type, and the problem, if any.
 */
export function checkView(raw: unknown, fallbackId: string): CheckedView {
  if (!isObject(raw)) {
    return { view: emptyView(fallbackId), problem: "the card's data is not an object", remote: false, named: false };
  }
  const r = new Reader(raw);
  const id = r.str("tool_call_id");
  if (!id) r.faults.push("tool_call_id is missing");
  const view: PauseView = {
    tool_call_id: id || fallbackId,
    reply_id: r.str("reply_id"),
    kind: r.oneOf("kind", KINDS, "external"),
    tool_name: r.str("tool_name"),
    input_text: r.str("input_text"),
    sent_text: r.optStr("sent_text"),
    input_changes: r.strings("input_changes"),
    approve_refused: r.optStr("approve_refused"),
    decisions: r.strings("decisions"),
    // not read by the page: a value of another type is dropped, not a problem
    input_schema: isObject(raw.input_schema) ? raw.input_schema : null,
    permission_message: r.optStr("permission_message"),
    decision_reason: r.optStr("decision_reason"),
    bypass_immune: r.bool("bypass_immune"),
    suggested_rules: r.rules(),
    ask_user: r.askUser(),
    ask_user_error: r.optStr("ask_user_error"),
    created_at: typeof raw.created_at === "number" ? raw.created_at : 0,
    deadline: r.optNum("deadline"),
    policy: r.optStr("policy"),
    status: r.oneOf("status", STATUSES, "open"),
    decision: r.optObject("decision") as DecisionView | null,
    reason: r.optStr("reason"),
    title: r.optStr("title"),
    message: r.optStr("message"),
    review_output: r.optStr("review_output"),
    review_state: r.optStr("review_state"),
    review_error: r.optStr("review_error"),
    response_schema: r.optObject("response_schema"),
    form_error: r.optStr("form_error"),
    elicitation_url: r.optStr("elicitation_url"),
    sampling: sampling(raw.sampling, r.faults),
    agent: r.str("agent"),
    tool_hints: toolHints(raw.tool_hints),
    shell_commands: shellCommands(raw.shell_commands),
    shell_problems: r.strings("shell_problems"),
    approvals: approvals(raw.approvals),
    approvals_needed: approvalsNeeded(raw.approvals_needed),
    file_change: fileChange(raw.file_change),
    dry_run: raw.dry_run === true,
    parent_tool_call_id: r.optStr("parent_tool_call_id"),
  };
  // what a remote view adds (RemotePauseView): kept when they fit
  const remote = typeof raw.interrupt_id === "string" || raw.unanswerable === true;
  const extra: Raw = {};
  for (const key of ["refused", "interrupt_id"]) if (typeof raw[key] === "string") extra[key] = raw[key];
  if (raw.unanswerable === true) extra.unanswerable = true;
  // the answer the server refused, as the card sent it (a page message: its editor starts from it)
  if (isObject(raw.refused_answer) && typeof raw.refused_answer.action === "string") extra.refused_answer = raw.refused_answer;
  // what the kind needs to draw an open card (the form and AskUser cards
  // draw their own error when the kernel says the schema or questions are bad)
  if (view.kind === "form" && !view.form_error && raw.unanswerable !== true) {
    const problem = formSchemaProblem(view.response_schema);
    if (problem) r.faults.push(problem);
  }
  if (view.kind === "sampling" && !view.sampling && !r.faults.some((f) => f.startsWith("sampling"))) r.faults.push("sampling has no request");
  if (view.kind === "ask_user" && !view.ask_user && !view.ask_user_error && !r.faults.some((f) => f.startsWith("ask_user")))
    r.faults.push("ask_user has no questions");
  return { view: { ...view, ...extra }, problem: r.faults.length ? r.faults.join("; ") : null, remote, named: !!id };
}

function emptyView(id: string): PauseView {
  return checkView({ tool_call_id: id, kind: "external", status: "open" }, id).view;
}
