// "Dry run" on a confirmation whose view allows it (`dry_run`: AgentScope's
// Write or Edit, nb_hitl/dry_run.py; Bash in a bubblewrap sandbox,
// nb_hitl/dry_run_shell.py): the kernel runs the real tool in a throw-away
// copy and answers what it did, and where. It is not an answer: the
// card stays open. The result is drawn under the card's input as text and
// diffs (lib/diff.ts), never as HTML, and kept across the card's redraws.
import { h } from "../../lib/dom";
import { fileDiffView } from "../../lib/diff_split";
import type { Answer, DryRunFile, DryRunView } from "../../messages";
import type { PauseView } from "../../types";
import type { CardCtx, CardUi } from "../card";
import { liveText } from "../card_live";

/** What a card's last dry run came to: running, its result, or the refusal. */
export interface DryRunState {
  running: boolean;
  view: DryRunView | null;
  error: string;
}

// per card (its CardUi lives as long as the card's pause is known)
const states = new WeakMap<CardUi, DryRunState>();

/** The dry-run state of a card (tests read it). */
export function dryRunState(ui: CardUi): DryRunState | undefined {
  return states.get(ui);
}

const CHANGE_WORDS: Record<string, string> = { created: "Created", changed: "Changed", deleted: "Deleted" };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The kernel's `dry_run` answer when it has the expected shape, else null (every field text). */
export function readDryRun(raw: unknown): DryRunView | null {
  if (!isObject(raw)) return null;
  const str = (v: unknown) => (typeof v === "string" ? v : "");
  const files: DryRunFile[] = (Array.isArray(raw.files) ? raw.files : []).filter(isObject).map((f) => {
    const d = isObject(f.diff) ? f.diff : {};
    return {
      path: str(f.path),
      change: str(f.change),
      diff: { path: str(d.path), diff: str(d.diff), sha256_before: typeof d.sha256_before === "string" ? d.sha256_before : null, note: typeof d.note === "string" ? d.note : null },
    };
  });
  if (typeof raw.summary !== "string" || typeof raw.state !== "string") return null;
  return { tool_call_id: str(raw.tool_call_id), tool_name: str(raw.tool_name), sandbox: str(raw.sandbox), folder: str(raw.folder), summary: raw.summary, state: raw.state, output: str(raw.output), files };
}

/** A file the dry run touched, as a person reads it: its path inside the copied folder ("Deleted in
 * the copy: draft.md"), or, when only the files the call names were copied, "a copy of" its real path. */
export function fileInCopy(view: DryRunView, f: DryRunFile): string {
  const word = CHANGE_WORDS[f.change] ?? f.change;
  const folder = view.folder.replace(/\/+$/, "");
  if (folder && f.path.startsWith(folder + "/")) return `${word} in the copy: ${f.path.slice(folder.length + 1)}`;
  return `${word} in a copy of ${f.path}`;
}

/** The result of a dry run as elements (text and diffs only). */
export function dryRunResult(view: DryRunView): HTMLElement {
  const box = h(
    "div",
    { class: view.state === "success" ? "nbh-info" : "nbh-warn", role: "region", "aria-label": "Dry run result", "data-testid": "nbh-dry-run-result", "data-state": view.state },
    h("div", { "data-testid": "nbh-dry-run-summary" }, view.summary),
    view.sandbox ? h("div", { class: "nbh-muted", "data-testid": "nbh-dry-run-sandbox" }, `Ran in: ${view.sandbox}`) : null,
  );
  for (const f of view.files) {
    box.append(h("div", { class: "nbh-muted", "data-testid": "nbh-dry-run-file", "data-change": f.change }, fileInCopy(view, f)));
    if (f.diff.diff) box.append(fileDiffView(f.diff.diff, `Dry run: ${f.change} ${f.path}`, "nbh-dry-run-diff"));
    if (f.diff.note) box.append(h("div", { class: "nbh-muted", "data-testid": "nbh-dry-run-note" }, f.diff.note));
  }
  if (view.output) box.append(h("div", { class: "nbh-muted" }, "The tool's output (it ran on the copy: a path it names stands for the copy's file; the real files were not touched):"), h("pre", { class: "nbh-pre", "data-testid": "nbh-dry-run-output" }, view.output));
  return box;
}

/** Ask the kernel for a dry run of this card's call and redraw the card with what it answers. */
async function run(ctx: CardCtx): Promise<void> {
  const state: DryRunState = { running: true, view: states.get(ctx.ui)?.view ?? null, error: "" };
  states.set(ctx.ui, state);
  ctx.redraw();
  const answer = (await ctx.request("dry_run")) as Answer<{ dry_run?: unknown }>;
  state.running = false;
  if (!answer.ok) state.error = answer.error || "The dry run was refused.";
  else {
    state.view = readDryRun(answer.dry_run);
    if (!state.view) state.error = "The kernel's answer to the dry run could not be read.";
  }
  ctx.redraw();
  ctx.focus("nbh-dry-run");
}

/** The "Dry run" button (null when the view does not allow one) and, under it, the last result. */
export function dryRunPart(p: PauseView, ctx: CardCtx): HTMLElement | null {
  if (!p.dry_run) return null;
  const state = states.get(ctx.ui);
  const part = h(
    "div",
    { "data-testid": "nbh-dry-run-part" },
    h(
      "div",
      { class: "nbh-row" },
      h(
        "button",
        { "data-testid": "nbh-dry-run", disabled: ctx.ui.pending || !!state?.running, onclick: () => void run(ctx) },
        "Dry run",
      ),
      state?.running
        ? h("span", { class: "nbh-muted" }, "Running the call in a throw-away copy…")
        : liveText(
            h("span", { class: "nbh-muted" }),
            "Runs the call in a throw-away copy (the result says which sandbox): your files are not touched, and the call still waits for your answer.",
            "Not available: the kernel that ran this reply is not live.",
          ),
    ),
  );
  if (state?.error) part.append(h("div", { class: "nbh-error", role: "alert", "data-testid": "nbh-dry-run-error" }, state.error));
  if (state?.view && !state.running) part.append(dryRunResult(state.view));
  return part;
}
