// What an edit on a card changes, shown while the person types (Modify on a
// confirmation, the edited result of a review): the page asks the kernel
// (nb_hitl/edit_preview.py) for the diff, at most once per pause in typing
// (debounced), and draws only the answer to the newest request as text
// (lib/diff.ts). The kernel reads the edit as the decision would, so the diff
// and its refusals are the ones "send" would meet.
import { h } from "./dom";
import { diffLines, diffView } from "./diff";
import type { Answer } from "../messages";

/** Milliseconds of quiet typing before the page asks for a diff. */
export const PREVIEW_DELAY_MS = 300;

/** How long the page waits for the kernel's diff (ms): a preview applies nothing, so one the
 *  kernel is too busy to answer is given up (and said), not waited for. */
export const PREVIEW_TIMEOUT_MS = 10_000;

/** What the preview shows: nothing asked yet, waiting, a diff, or why there is none. */
export type PreviewState =
  | { kind: "same" }
  | { kind: "waiting" }
  | { kind: "diff"; diff: string }
  | { kind: "error"; error: string };

/** The kernel's `preview` answer's diff when it has the expected shape (a string), else null. */
export function readPreview(raw: unknown): string | null {
  if (typeof raw !== "object" || raw === null) return null;
  const diff = (raw as { diff?: unknown }).diff;
  return typeof diff === "string" ? diff : null;
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
    const diff = readPreview(answer.preview);
    this.set(diff === null ? { kind: "error", error: "The kernel's diff could not be read." } : { kind: "diff", diff });
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
 * 2 lines removed, 3 added") and the diff itself as text. `what` names the
 * edited thing ("input", "result"); `testid` prefixes the parts' test ids.
 */
export function previewPart(what: string, testid: string): { el: HTMLElement; show: (state: PreviewState) => void } {
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
      status.textContent = `No diff of your edit is shown: ${state.error}`;
      body.replaceChildren();
    } else {
      status.textContent = `Your edit: ${diffSummary(state.diff)} in the ${what} (compared by the kernel).`;
      body.replaceChildren(...(state.diff ? [diffView(state.diff, `What your edit changes in the ${what}`, `${testid}-diff`)] : []));
    }
  };
  show({ kind: "same" });
  return { el, show };
}
