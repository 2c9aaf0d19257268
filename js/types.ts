// The data the kernel sends the page. `PauseView` mirrors
// `nb_hitl.pauses.PauseView` (a TypedDict, the return of `Pause.to_view()`)
// key for key; tests/unit/test_view_contract.py keeps the two in step.
// Traits of each widget model are typed here too, for `AnyModel<T>`; the
// messages of each widget are in messages.ts.
import type { ContextView, Decided, Decision, MatrixCall, MatrixResult, ReplayResult, TryResult } from "./messages";

/** The kinds of pause the reply widget draws (one card module each). */
export type PauseKind = "confirm" | "ask_user" | "external" | "review" | "form" | "elicitation" | "sampling";

/** open -> deciding (checks run) -> decided (queued for the agent) -> delivered; or expired. */
export type PauseStatus = "open" | "deciding" | "decided" | "delivered" | "expired";

/** One of AgentScope's `ToolCallBlock.suggested_rules`, as the page shows it. */
export interface SuggestedRuleView {
  index: number;
  label: string;
  tool_name: string;
  rule_content: string | null;
  behavior: string;
  /** what else the rule lets through, in one line (Markdown: its patterns in backticks) */
  reach: string;
  /** `reach` as the kernel's sanitised HTML (nb_hitl.markdown), or null when it reads the same as text */
  reach_html?: string | null;
}

/** One approval of a call that needs several: who, when (seconds), approve or modify. */
export interface ApprovalView {
  by: string;
  at: number;
  action: string;
}

/** An AskUser option (AgentScope's `AskUserParams` question option). */
export interface AskUserOption {
  label: string;
  description: string;
  preview?: string | null;
}

/** An AskUser question (AgentScope's `AskUserParams.questions[i]`). */
export interface AskUserQuestion {
  question: string;
  header: string;
  context?: string | null;
  options: AskUserOption[];
  multi_select?: boolean;
}

/** A decision as summarised by the kernel for the page and the saved notebook. */
export interface DecisionView {
  action?: string;
  accepted_rules?: string[];
  edited_input?: unknown;
  /** the edited input as JSON text (exact: integers beyond 2^53, invisible characters escaped) */
  edited_input_text?: string;
  /** Modify: the unified diff of the model's input and the edited one (pretty-printed JSON) */
  input_diff?: string;
  /** who decided when it was not the person: "timeout" or "cancelled" */
  cause?: string;
  /** the person's own words with a denial */
  reason?: string;
  /** what the model read about this decision besides AgentScope's own text */
  note?: string;
  /** "Always deny": the rules added as deny rules with the denial */
  denied_rules?: string[];
  answers?: { question: string; selected?: string[]; other?: string | null }[];
  state?: string;
  applied?: string;
  /** an accepted MCP elicitation: the values sent to the server */
  content?: Record<string, unknown>;
  [key: string]: unknown;
}

/** JSON Schema, as far as the page reads it (forms, tool input schemas). */
export type JsonSchema = Record<string, any>;

/** One pause of a reply: `Pause.to_view()`. */
export interface PauseView {
  tool_call_id: string;
  reply_id: string;
  kind: PauseKind;
  tool_name: string;
  /** the input the tool will receive (AgentScope's reading), invisible characters escaped */
  input_text: string;
  /** the model's own argument text, when it differs from input_text */
  sent_text: string | null;
  /** how input_text differs from what the model sent, one line each */
  input_changes: string[];
  /** why Approve is refused (ambiguous arguments), or null */
  approve_refused: string | null;
  /** the decisions offered for this call (Session(decisions=...)): approve, deny, modify, always_allow, always_deny */
  decisions: string[];
  input_schema: JsonSchema | null;
  permission_message: string | null;
  decision_reason: string | null;
  bypass_immune: boolean;
  suggested_rules: SuggestedRuleView[];
  ask_user: { questions: AskUserQuestion[] } | null;
  ask_user_error: string | null;
  created_at: number;
  deadline: number | null;
  policy: string | null;
  status: PauseStatus;
  decision: DecisionView | null;
  reason: string | null;
  title: string | null;
  message: string | null;
  review_output: string | null;
  review_state: string | null;
  review_error: string | null;
  response_schema: JsonSchema | null;
  form_error: string | null;
  /** kind elicitation, URL mode: the page the MCP server sends the person to (shown as text, opened only on a click) */
  elicitation_url: string | null;
  /** kind sampling: the MCP server's request (and, at stage "completion", the model's answer), as text */
  sampling: SamplingView | null;
  /** The team member (or leader) that asks; "" for a single agent. */
  agent: string;
  /** an MCP tool's annotation hints as its server declared them (destructiveHint, openWorldHint...), else null */
  tool_hints: Record<string, boolean> | null;
  /** a shell tool's confirmation: its simple commands, as the shell rules read them */
  shell_commands: ShellCommandView[];
  /** why (part of) that command line cannot be judged, one line each */
  shell_problems: string[];
  /** the approvals so far of a call that needs several (Policy(approvals=N)) */
  approvals: ApprovalView[];
  /** how many distinct approvals the call needs (1: one person decides) */
  approvals_needed: number;
  /** a file-editing call's confirmation: the diff of the file now against the file as the call would leave it */
  file_change?: FileChangeView | null;
  /** a confirmation the page may dry-run in a temporary copy (AgentScope's Write / Edit: nb_hitl/dry_run.py) */
  dry_run?: boolean;
  /** the tool call that was running when an MCP server raised this pause (elicitation, sampling):
   * its card is drawn in that call's transcript entry; null for a pause of its own call */
  parent_tool_call_id?: string | null;
}

/** An MCP server's sampling request as the card shows it (`Pause.sampling`); every string is text. */
export interface SamplingView {
  /** "request": before the notebook's model is called; "completion": before its answer goes back */
  stage: "request" | "completion";
  messages: { role: string; text: string }[];
  system_prompt: string | null;
  model_hints: string[];
  priorities: Record<string, number>;
  max_tokens: number | null;
  temperature: number | null;
  stop_sequences: string[];
  include_context: string | null;
  completion: string | null;
  model: string | null;
  /** which of the server's settings the notebook's model takes for this call, and which not (null: it set none) */
  settings_note: string | null;
  /** the notebook's model failed on this request: what failed and what to set (the server got an error) */
  error: string | null;
}

/** What a call would do to a file (`nb_hitl.file_change.FileChangeView`); every string is text. */
export interface FileChangeView {
  path: string;
  /** unified diff ("" when not drawn: `note` says why) */
  diff: string;
  /** SHA-256 of the file's bytes the diff was computed on; null: no file */
  sha256_before: string | null;
  note: string | null;
}

/** One simple command of a shell command line (`nb_hitl.pauses.ShellCommandView`). */
export interface ShellCommandView {
  program: string | null;
  args: string[];
  redirections: string[];
  assignments: string[];
  text: string;
  /** how it is reached when nested: "$(...)", "sh -c", ...; "" at the top level */
  via: string;
  /** what the permission engine says of it alone: allow, ask or deny; "" when the shell rules did not judge it */
  behavior: string;
  why: string;
  /** the files its redirections open: access is "reads", "writes" or "appends" */
  files: ShellFileView[];
}

/** A file a shell command's redirection opens (`nb_hitl.pauses.ShellFileView`). */
export interface ShellFileView {
  access: string;
  path: string;
}

/** A remote (AG-UI) pause's view: `nb_hitl.pauses.RemotePauseView`, the keys the AG-UI client adds. */
export interface RemotePauseView extends PauseView {
  /** the server's reason it refused the answer given on this card */
  refused?: string | null;
  /** the answer the server refused, as this card sent it: its editor starts from it (nothing typed is lost) */
  refused_answer?: Decision | null;
  /** the interrupt's metadata is malformed (form_error says how); it can only be cancelled */
  unanswerable?: boolean;
}

/** One transcript entry of a reply (see nb_hitl/widgets/reply.py). */
export interface TranscriptEntry {
  kind: "text" | "tool_call" | "tool_result" | "note" | "thinking" | "step" | "hint" | "data";
  id: string;
  text: string;
  name?: string;
  state?: string;
  tool_call_id?: string;
  /** in a team: the agent that wrote the entry (leader or member); team steps also name the `member` */
  agent?: string;
  member?: string;
  /** step (one model call): AgentScope's ModelCallStart/EndEvent; state calling, done, failed or stopped */
  model_name?: string;
  /** step that failed: the error's class name */
  error?: string;
  started_at?: number;
  elapsed?: number;
  input_tokens?: number;
  output_tokens?: number;
  /** hint: HintBlockEvent.source; data: DataBlock fields */
  source?: string;
  media_type?: string;
  url?: string;
  bytes?: number;
  /** characters of `text` the kernel did not send (it sends at most 20,000; "Show all" asks for the rest) */
  more?: number;
  /** text, thinking: the Markdown rendered and sanitised by the kernel once the block ended */
  html?: string;
}

/** Reply status (the header chip). */
export type ReplyStatus = "running" | "paused" | "finished" | "interrupted" | "expired" | "error";

/** The synced traits of `ReplyWidget`. */
export interface ReplyModel {
  agent_name: string;
  prompt: string;
  reply_id: string;
  status: ReplyStatus | string;
  status_reason: string;
  transcript: TranscriptEntry[];
  /** the pause views as the kernel sent them: read only through reply/feed.ts, which checks each (reply/view_check.ts) */
  pauses: unknown[];
  /** seq of the last nbh_cards message `pauses` includes */
  cards_seq: number;
  final_text: string;
  final_html?: string;
  /** seq of the last nbh_transcript message `transcript` includes */
  transcript_seq: number;
  /** id of the transcript entry whose text is the final text ("" : none) */
  final_entry: string;
  /** how many pauses wait for the person */
  pending?: number;
  /** a random id of the widget, carried by each of its views */
  _nbh_key?: string;
  /** "Replay" / "What if…" on a finished reply: {} none, {ready: true}, or {reason} (shown disabled) */
  replay?: ReplayOffer;
  /** the replays and what-ifs started from this reply, drawn below it */
  nested?: NestedReply[];
}

/** What "Replay" and "What if…" offer (the `replay` trait). */
export interface ReplayOffer {
  ready?: boolean;
  reason?: string;
}

/** A reply started from this one: a ReplyWidget's model ("IPY_MODEL_<id>") and its heading. */
export interface NestedReply {
  ref: string;
  title: string;
}

/** The synced traits of `AuditLogTable`. */
export interface AuditModel {
  columns: string[];
  rows: Record<string, string>[];
  path: string;
}

/** A tool the permission explorer can try (`nb_hitl.permissions.list_tools`). */
export interface ToolView {
  name: string;
  input_schema: JsonSchema;
  read_only: boolean;
  kind: string;
}

/** The synced traits of `PermissionExplorer` (nb_hitl/widgets/permissions.py). */
export interface PermissionsModel {
  agent_name: string;
  context_view: ContextView;
  /** the rules, as JSON text (one string instead of thousands of dicts) */
  rules_json: string;
  tools: ToolView[];
  last_try: Decided<TryResult>;
  matrix: Decided<MatrixResult>;
  matrix_calls: MatrixCall[];
  revision: number;
  /** the recorded log's file name, "" without one */
  history_name: string;
  replay: ReplayResult | Record<string, never>;
}
