// What an edit on a card changes, shown while the person types (Modify on a
// confirmation, the edited result of a review): the page asks the kernel
// (nb_hitl/edit_preview.py) for the diff, at most once per pause in typing
// (debounced), and draws only the answer to the newest request as text
// (lib/diff.ts). The kernel reads the edit as the decision would, so the diff
// and its refusals are the ones "send" would meet. For Modify on a
// file-editing call the answer also carries what the edited call would do to
// its file (the file it now writes, when the edit changed its path), drawn
// under the input's diff as the card draws its own (lib/file_change.ts).
import { h } from "./dom";
import { diffLines, diffView } from "./diff";
import { fileChange, fileChangeParts } from "./file_change";
import type { Answer, EditPreviewView } from "../messages";
import type { FileChangeView } from "../types";

/** Milliseconds of quiet typing before the page asks for a diff. */
export const PREVIEW_DELAY_MS = 300;

/** How long the page waits for the kernel's diff (ms): a preview applies nothing, so one the
 *  kernel is too busy to answer is given up (and said), not waited for. */
export const PREVIEW_TIMEOUT_MS = 10_000;

/** What the preview shows: nothing asked yet, waiting, a diff, or why there is none. */
export type PreviewState =
  | { kind: "same" }
  | { kind: "waiting" }
  | { kind: "diff"; diff: string; file_change: FileChangeView | null }
  | { kind: "error"; error: string };

/** The kernel's `preview` answer when its diff is a string (else null); a file change that is
 *  missing or malformed reads as none. */
export function readPreview(raw: unknown): EditPreviewView | null {
  if (typeof raw !== "object" || raw === null) return null;
  const got = raw as { diff?: unknown; file_change?: unknown };
  return typeof got.diff === "string" ? { diff: got.diff, file_change: fileChange(got.file_change) } : null;
}

/** The line counts of a unified diff, in words: "2 lines removed, 3 added", "no change". */
export function diffSummary(diff: string): string {
  let add = 0;
  let del = 0;
  for (const line of diffLines(diff)) {
    if (line.kind === "add") add++;
    else if (line.kind === "del") del++;
  }
  if (!add && !del) return "no change";
  const lines = (n: number) => `${n} line${n === 1 ? "" : "s"}`;
  if (!del) return `${lines(add)} added`;
  if (!add) return `${lines(del)} removed`;
  return `${lines(del)} removed, ${add} added`;
}

/** The timer functions the preview uses (the page's own; tests pass theirs). */
export interface Timers {
  set(run: () => void, ms: number): number;
  clear(id: number): void;
}

const windowTimers: Timers = {
  set: (run, ms) => window.setTimeout(run, ms),
  clear: (id) => window.clearTimeout(id),
};

/**
 * Debounced diff requests for one edit box. `ask(text)` is the kernel request;
 * `show(state)` is told every change of what to show. Answers to all but the
 * newest request are dropped, so a slow answer never replaces a newer one.
 */
export class EditPreview {
  private timer = 0;
  private asked = 0;
  state: PreviewState = { kind: "same" };

  constructor(
    private original: string,
    private ask: (text: string) => Promise<Answer<{ preview?: unknown }>>,
    private show: (state: PreviewState) => void,
    private timers: Timers = windowTimers,
    private delayMs: number = PREVIEW_DELAY_MS,
  ) {}

  private set(state: PreviewState): void {
    this.state = state;
    this.show(state);
  }

  /** The edit box now holds `text`: ask for its diff once typing pauses (`now`: at once). */
  changed(text: string, now = false): void {
    if (this.timer) this.timers.clear(this.timer);
    this.timer = 0;
    const n = ++this.asked;
    if (text === this.original) {
      this.set({ kind: "same" });
      return;
    }
    if (this.state.kind !== "waiting") this.set({ kind: "waiting" });
    const go = () => void this.fetch(text, n);
    if (now) go();
    else this.timer = this.timers.set(go, this.delayMs);
  }

  private async fetch(text: string, n: number): Promise<void> {
    this.timer = 0;
    const answer = await this.ask(text);
    if (n !== this.asked) return; // a newer edit was made meanwhile
    if (!answer.ok) {
      this.set({ kind: "error", error: answer.error || "The kernel did not compute the diff." });
      return;
    }
    const got = readPreview(answer.preview);
    this.set(got === null ? { kind: "error", error: "The kernel's diff could not be read." } : { kind: "diff", ...got });
  }

  /** Stop: a pending request's answer is dropped. */
  dispose(): void {
    if (this.timer) this.timers.clear(this.timer);
    this.timer = 0;
    this.asked++;
  }
}

/**
 * The preview's part of a card: a status line read out politely ("Your edit:
 * 2 lines removed, 3 added") and the diff itself as text; under it, the edited
 * call's file change (`${testid}-file-path`, `-file-diff`, `-file-note`), with a
 * warning (`${testid}-file-other`) when it is not the file the card shows
 * (`cardFile`, the path of the card's own diff, or null). `what` names the
 * edited thing ("input", "result"); `testid` prefixes the parts' test ids; `said`
 * gives the refusal the card shows above the preview, if any (the preview then
 * points to it instead of repeating it).
 */
export function previewPart(
  what: string,
  testid: string,
  cardFile: string | null = null,
  said: () => string | null = () => null,
): { el: HTMLElement; show: (state: PreviewState) => void } {
  const status = h("div", { class: "nbh-muted", role: "status", "data-testid": `${testid}-status` });
  const body = h("div", { "data-testid": `${testid}-body` });
  const el = h("div", { class: "nbh-preview", "data-testid": testid }, status, body);
  const show = (state: PreviewState) => {
    el.dataset.state = state.kind;
    if (state.kind === "same") {
      status.textContent = `Your edit: no change to the ${what} yet.`;
      body.replaceChildren();
    } else if (state.kind === "waiting") {
      status.textContent = `Your edit: computing what it changes in the ${what}…`;
    } else if (state.kind === "error") {
      // the card's refusal above the preview says this already: said once, where the person looks
      status.textContent = state.error === said() ? "No diff of your edit is shown: see the refusal above." : `No diff of your edit is shown: ${state.error}`;
      body.replaceChildren();
    } else {
      status.textContent = `Your edit: ${diffSummary(state.diff)} in the ${what} (compared by the kernel).`;
      body.replaceChildren(...(state.diff ? [diffView(state.diff, `What your edit changes in the ${what}`, `${testid}-diff`)] : []), ...fileParts(state.file_change, testid, cardFile));
    }
  };
  show({ kind: "same" });
  return { el, show };
}

/** The edited call's file change, drawn as the card draws its own, and a warning when the edit
 *  writes another file than the card's diff shows. */
function fileParts(change: FileChangeView | null, testid: string, cardFile: string | null): HTMLElement[] {
  if (!change) return [];
  const other =
    cardFile !== null && change.path !== cardFile
      ? [h("div", { class: "nbh-warn", "data-testid": `${testid}-file-other` }, `Your edit changes ${change.path}, not ${cardFile} as the model's call does: the change below is the one you approve.`)]
      : [];
  return [...other, ...fileChangeParts(change, `${testid}-file`, "The edited call changes")];
}
