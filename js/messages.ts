// The messages between the page and the kernel, typed. The page sends
// `{request_id, action, ...}` (the kernel validates decisions with pydantic:
// nb_hitl/messages.py); the kernel answers each one with `{request_id, ok,
// ...}` or `{request_id, ok: false, error, code, field}`
// (nb_hitl/widgets/_base.py) and also pushes numbered stream messages
// (`nbh_transcript`, `nbh_cards`: nb_hitl/session/_core.py, _cards.py;
// `nbh_inbox`: nb_hitl/widgets/inbox.py).
// Each widget's actions are one protocol: action -> what the page sends
// with it and what the kernel answers (lib/rpc.ts reads them).
import type { ApprovalView, DecisionView, FileChangeView, PauseView, ShellCommandView, TranscriptEntry } from "./types";

// -- the channel --------------------------------------------------------

/** One action of a protocol: the fields the page sends besides `action` and
 * `request_id`, and the fields of the kernel's answer besides `request_id` and `ok`. */
export interface ActionSpec {
  send: object;
  answer: object;
}

/** A widget's actions (see the protocols below). */
export type Protocol = { [action: string]: ActionSpec };

/** The kernel refused (or the channel gave up: codes "no_kernel", "no_answer"). */
export interface Refusal {
  request_id: string;
  ok: false;
  error: string;
  code: string;
  /** the field at fault, "input", "answers.0", "value.start"... */
  field?: string | null;
}

/** The kernel accepted a request; `T` is what it answered. */
export type Accepted<T extends object = object> = { request_id: string; ok: true } & T;

/** The kernel's answer to one request: accepted (with `T`) or refused. */
export type Answer<T extends object = object> = Accepted<T> | Refusal;

/** Every message the page can send under protocol `P`: a union discriminated by `action`. */
export type PageMessage<P extends Protocol> = {
  [A in keyof P & string]: { action: A; request_id: string } & P[A]["send"];
}[keyof P & string];

/** The liveness probe every widget answers itself (nb_hitl/widgets/_base.py). */
export type PingProtocol = {
  /** `cell`: "its_cell" while the cell that made the widget runs, "another" while another cell runs, "" otherwise */
  ping: { send: Record<string, never>; answer: { live?: boolean; cell?: "its_cell" | "another" | "" } };
};

// -- decisions on a pause (nb_hitl/messages.py) ---------------------------

/** A suggested rule narrowed or edited before "Always allow" adds it (`RuleEditIn`). */
export interface RuleEdit {
  index: number;
  rule_content: string | null;
}

/** One AskUser answer (`AnswerIn`). */
export interface AnswerIn {
  question: string;
  selected: string[];
  other: string | null;
}

/** A decision on one pause, as a card builds it (`PageMessage` of nb_hitl/messages.py,
 * plus "cancel", which a remote (AG-UI) interrupt takes: nb_hitl/agui/mapping.py). */
export type Decision =
  | { action: "approve"; rules?: number[]; rule_edits?: RuleEdit[] }
  | { action: "deny"; reason?: string | null; deny_rules?: number[] }
  | { action: "modify"; input: string; name?: string | null; rules?: number[] }
  | { action: "answer"; answers: AnswerIn[] }
  | { action: "external_result"; output: string; state: "success" | "error" }
  | { action: "return_error"; message?: string | null }
  | { action: "accept"; content?: Record<string, unknown> }
  | { action: "decline" }
  | { action: "edit"; output: string }
  | { action: "edit"; messages: string[] }
  | { action: "reject"; reason?: string | null }
  | { action: "submit"; value: unknown }
  | { action: "cancel" };

export type DecisionAction = Decision["action"];

/** The pause a decision is about. */
export interface PauseRef {
  tool_call_id: string;
  reply_id: string;
}

/** A decision as sent: it names its pause. */
export type DecisionItem = Decision & PauseRef;

/** What the kernel answers to an accepted decision (the page reads none of it: the card's new view follows). */
export interface DecisionAnswer {
  status?: string;
  decision?: DecisionView;
  sent?: boolean;
  /** a Session's: the card's new view follows the agent's next event (nb_hitl/session/_core.py, _push_soon) */
  card_follows?: boolean;
}

/** One item's outcome in a batch answer, in item order. */
export interface BatchResult {
  tool_call_id: string | null;
  ok: boolean;
  /** set when the item was taken for the agent (not on an approval that waits for more) */
  decision?: DecisionView;
  error?: string;
  field?: string | null;
  code?: string;
}

// -- the streams (nb_hitl/session/_transcript.py, _cards.py) ----------------

/** One change of the transcript. */
export type TranscriptOp =
  | { op: "add"; entry: TranscriptEntry }
  | { op: "append"; id: string; text: string }
  /** a field set to null is removed (the `html` of a text that changed after it was rendered) */
  | { op: "set"; id: string; fields: { [K in keyof TranscriptEntry]?: TranscriptEntry[K] | null } };

export interface TranscriptMsg {
  type: "nbh_transcript";
  seq: number;
  ops: TranscriptOp[];
}

/** One change of the pause cards: a card new or replaced, or one that left the reply. */
export type CardOp = { op: "card"; view: PauseView } | { op: "drop"; id: string };

export interface CardsMsg {
  type: "nbh_cards";
  seq: number;
  ops: CardOp[];
}

/** What the kernel pushes to a reply's page unasked. */
export type StreamMsg = TranscriptMsg | CardsMsg;

/** A sync answer that says the page already holds `seq`. */
export interface SyncCurrent {
  seq: number;
  current: true;
}

/** To the connect request: the messages up to `seq` went out before this answer. */
export interface SyncSent {
  seq: number;
  sent: true;
}

export type TranscriptSync = SyncCurrent | SyncSent | { seq: number; entries: TranscriptEntry[] };
export type CardsSync = SyncCurrent | { seq: number; pauses: PauseView[] };

// -- the reply widget (nb_hitl/session/_actions.py, nb_hitl/agui/remote.py) --

type DecisionProtocol = {
  [D in Decision as D["action"]]: { send: Omit<D, "action"> & PauseRef; answer: DecisionAnswer };
};

export type ReplyProtocol = PingProtocol &
  DecisionProtocol & {
    /** group actions ("Approve all", "Submit all"): one resume */
    batch: { send: { items: DecisionItem[] }; answer: { results: BatchResult[]; card_follows?: boolean } };
    /** on connect: both streams in one answer (every owner: a local session, the AG-UI
     * client, the service console; nb_hitl/widgets/_transcript_feed.py) */
    sync: { send: { transcript_seq: number; cards_seq: number }; answer: { transcript: TranscriptSync; cards: CardsSync } };
    transcript_sync: { send: { seq: number }; answer: TranscriptSync };
    cards_sync: { send: { seq: number }; answer: CardsSync };
    /** "Show all" on an entry the page holds a part of */
    entry_text: { send: { id: string }; answer: { id: string; text: string } };
    interrupt: { send: Record<string, never>; answer: { status?: string } };
    /** "Dry run" on a confirmation: not an answer, the card stays open (nb_hitl/dry_run.py) */
    dry_run: { send: PauseRef; answer: DryRunAnswer };
    /** what an edit would change, while it is typed: not an answer (nb_hitl/edit_preview.py) */
    preview: { send: PreviewEdit & PauseRef; answer: PreviewAnswer };
    /** "Replay" on a finished reply: the kernel plays it again below it (nb_hitl/session/_whatif.py) */
    replay: { send: Record<string, never>; answer: { started?: string } };
    /** "What if…" opened: the reply's past pauses that can be answered differently */
    what_if_list: { send: Record<string, never>; answer: { pauses?: WhatIfChoice[]; live?: string } };
    /** one past pause chosen: the fork plays below the reply, that pause's card open */
    what_if: { send: { tool_call_id: string; live: boolean }; answer: { started?: string } };
  };

/** The edit to compare: a confirmation's edited input (JSON text) or a review's edited result. */
export type PreviewEdit = { input: string } | { output: string };

/** The kernel's answer to "preview" (unchecked: the page reads it with readPreview into an EditPreviewView). */
export interface PreviewAnswer {
  preview?: unknown;
}

/** A "preview" answer as read (`nb_hitl.edit_preview.EditPreview`): the unified diff of the edit
 * ("" when it changes nothing) and, for Modify on a file-editing call, what the edited call would
 * do to its file (its path may differ from the card's when the edit retargets the call); null for
 * a review, a call that changes no file, or a remote card. */
export interface EditPreviewView {
  diff: string;
  file_change: FileChangeView | null;
}

/** A past pause "What if…" offers: the tool and a summary of its input, and what was answered then.
 * `tool_call_id` is sent back, never shown. */
export interface WhatIfChoice {
  tool_call_id: string;
  tool_name: string;
  summary: string;
  answered: string;
}

/** One file a dry run created, changed or deleted in its temporary copy (`nb_hitl.dry_run.DryRunFile`). */
export interface DryRunFile {
  path: string;
  change: string;
  diff: FileChangeView;
}

/** What a dry run did (`nb_hitl.dry_run.DryRunView`); every string is text. */
export interface DryRunView {
  tool_call_id: string;
  tool_name: string;
  /** where it ran: "a temporary copy" */
  sandbox: string;
  /** the real folder that was copied; "" when only the files the call names were (Write, Edit) */
  folder: string;
  summary: string;
  /** the tool's end state (AgentScope's ToolResultState: "success", "error"...) */
  state: string;
  output: string;
  files: DryRunFile[];
}

/** The kernel's answer to "dry_run" (unchecked: the page reads it with readDryRun). */
export interface DryRunAnswer {
  dry_run?: unknown;
}

export type ReplyMessage = PageMessage<ReplyProtocol>;

// -- the audit table and the inbox (nb_hitl/widgets/audit.py, inbox.py) ----

export type AuditProtocol = PingProtocol & {
  refresh: { send: Record<string, never>; answer: object };
};

/** One inbox row (`InboxEntry.to_view()`, nb_hitl/service/inbox.py); every string is shown as text. */
export interface InboxRow {
  agent_id: string;
  agent: string;
  session_id: string;
  session: string;
  /** AgentScope's SessionStatus ("awaiting_permission", "awaiting_external_result", "running") or "stranded" */
  status: string;
  reply_id?: string | null;
  tool: string;
  tool_call_id: string;
  calls: number;
  summary: string;
  /** when the pause opened, seconds since the epoch */
  since: number;
  note: string;
  /** the service user who may answer it (the session's owner) */
  may_answer: string;
  /** approvals its first call needs (a console policy's approvals=N; 1: one person decides) */
  approvals_needed: number;
  /** its approvals so far, as the console's ledger holds them */
  approvals: ApprovalView[];
}

/** One session's result of "Approve selected" (`ServiceClient.approve_selected`). */
export interface ApproveResult {
  session_id: string;
  ok: boolean;
  /** "delivered", or why not: the front door's code, the outcome's status, "nothing_to_approve" */
  code: string;
  text: string;
}

/** One change of the inbox's rows, keyed by the session: a row added or changed, or one that left. */
export type RowOp = { op: "row"; row: InboxRow } | { op: "drop"; id: string };

/** What the kernel pushes to the inbox's page unasked (nb_hitl/widgets/inbox.py). */
export interface InboxMsg {
  type: "nbh_inbox";
  seq: number;
  ops: RowOp[];
}

/** The answer to "rows_sync": every row and the seq they include, or "you hold it". */
export type InboxSync = SyncCurrent | { seq: number; rows: InboxRow[] };

export type InboxProtocol = PingProtocol & {
  /** every row and the seq they include (a view that opens, or found a gap) */
  rows_sync: { send: { seq: number }; answer: InboxSync };
  /** open a parked session below the list */
  open: { send: { session_id: string; agent_id: string }; answer: { opened?: string; pauses?: number } };
  refresh: { send: Record<string, never>; answer: { entries?: number } };
  /** a new user message to a session (the console's `say`: the session must be idle);
   * `started`: the session began its reply (false: no sign of it yet, the service may be busy) */
  say: { send: { session_id: string; text: string }; answer: { sent?: string; started?: boolean } };
  /** approve every open confirmation of each selected session: one request per session */
  approve_selected: {
    send: { items: { session_id: string; agent_id: string }[] };
    answer: { results: ApproveResult[] };
  };
};

// -- the permission explorer (nb_hitl/widgets/permissions.py) ----------------

/** A permission rule as the kernel sends and takes it (`rule_to_dict`, plus `label` in views). */
export interface RuleDict {
  tool_name: string;
  rule_content: string | null;
  behavior: string;
  source: string;
  label?: string;
}

/** `describe_context` without its rule lists (the `context_view` trait). */
export interface ContextView {
  mode?: string;
  modes?: string[];
  cwd?: string;
  working_directories?: { path: string; source: string }[];
  counts?: { allow: number; deny: number; ask: number };
  state_in_sync?: boolean | null;
  permission_middlewares?: number;
}

/** One engine decision (`_decision_dict`). */
export interface DecisionDict {
  behavior: string;
  message?: string;
  decision_reason?: string | null;
  bypass_immune?: boolean;
  suggested_rules?: RuleDict[];
}

/** `try_call`'s result (the `last_try` trait), or the error of a re-decided try. */
export interface TryResult extends DecisionDict {
  tool_name: string;
  input: unknown;
  mode: string;
  read_only?: boolean;
  /** AgentScope's engine alone; the top-level decision is the Session's (they differ only for a shell tool) */
  engine?: DecisionDict;
  /** per rule: whether it matches the whole call, why, and (a shell tool) the simple commands it covers */
  rules_checked?: { label: string; matched: boolean; explanation: string; shell_covers?: string[] | null }[];
  rules_omitted?: number;
  steps?: string[];
  why?: string;
  agrees?: boolean;
  /** a shell tool: nb_hitl's shell rules' verdict, with the simple commands the line runs */
  shell?: ShellVerdictView | null;
}

/** What the shell rules found for a tried shell call (`try_call`'s `shell`). */
export interface ShellVerdictView extends DecisionDict {
  commands: ShellCommandView[];
  problems: string[];
  /** whether it is not the engine's decision */
  changed: boolean;
}

/** `mode_matrix`'s result (the `matrix` trait). */
export interface MatrixResult {
  modes: string[];
  live_mode: string;
  rows: { tool_name: string; input: unknown; cells: Record<string, DecisionDict> }[];
}

/** A trait the kernel sets to a result, `{error, field}` when deciding it again failed, or `{}`. */
/** A recorded call replayed against candidate rules (nb_hitl.audit.replay; nb_hitl/widgets/_replay.py). */
export interface ReplayRow {
  /** the call's position among the log's calls */
  index: number;
  tool_name: string;
  /** the input as JSON text, cut to a few hundred characters */
  input_text: string;
  recorded: string;
  person: string | null;
  candidate: string;
  change: string;
  denied_now_allowed: boolean;
  problem: string | null;
}

/** One page of a replay's rows (the kernel keeps the whole result). */
export interface ReplayPage {
  /** the replay these rows belong to */
  run: number;
  offset: number;
  /** rows per page */
  limit: number;
  total: number;
  only_changed: boolean;
  rows: ReplayRow[];
}

/** The explorer's last replay of its recorded log (empty before the first). */
export interface ReplayResult {
  run: number;
  /** "agent": the rules shown; "candidate": rules typed in the replay section */
  source: "agent" | "candidate";
  rule_count: number;
  calls: number;
  changed: number;
  denied_now_allowed: number;
  mode: string;
  never_fired: string[];
  never_fired_count: number;
  /** the first page of changed calls */
  page: ReplayPage;
}

export type Decided<T> = T | { error: string; field?: string | null } | Record<string, never>;

/** What a {@link Decided} trait holds: its result, its error, or neither (nothing decided yet). */
export function decided<T extends object>(value: Decided<T> | null | undefined): { result?: T; error?: string } {
  if (!value || typeof value !== "object" || !Object.keys(value).length) return {};
  const error = (value as { error?: unknown }).error;
  if (typeof error === "string") return { error };
  return { result: value as T };
}

/** A call of the mode matrix, as the page sends it. */
export interface MatrixCall {
  tool_name: string;
  input: unknown;
}

type ContextAnswer = { context: ContextView };

export type PermissionsProtocol = PingProtocol & {
  refresh: { send: Record<string, never>; answer: ContextAnswer };
  set_mode: { send: { mode: string }; answer: ContextAnswer };
  add_rule: { send: { rule: RuleDict }; answer: ContextAnswer & { rule: RuleDict } };
  remove_rule: { send: { rule: RuleDict }; answer: ContextAnswer };
  edit_rule: { send: { old: RuleDict; new: RuleDict }; answer: ContextAnswer & { rule: RuleDict } };
  add_working_directory: { send: { path: string }; answer: ContextAnswer };
  remove_working_directory: { send: { path: string }; answer: ContextAnswer };
  try_call: { send: { tool_name: string; input: string; mode: string | null }; answer: { result: TryResult } };
  matrix: { send: { calls: unknown[] }; answer: { matrix: MatrixResult } };
  /** a rule being typed: what else it lets through, in one line of Markdown (`text`), and that line as the
   *  kernel's sanitised HTML (nb_hitl.markdown), or null when it reads the same as text */
  reach: { send: { rule: RuleDict | Omit<RuleDict, "source"> }; answer: { text: string; html: string | null } };
  export: { send: Record<string, never>; answer: { text: string } };
  import: { send: { text: string; replace: boolean }; answer: ContextAnswer & { count: number } };
  /** no rules: the rules shown; rules: a rules file's text (a newer replay answers the older one `superseded`) */
  replay: { send: { rules?: string; mode?: string }; answer: { replay: ReplayResult } | { superseded: true } };
  replay_page: { send: { offset: number; only_changed: boolean }; answer: { page: ReplayPage } };
  /** the last replay's candidate rules as a rules file */
  replay_export: { send: Record<string, never>; answer: { text: string } };
};
