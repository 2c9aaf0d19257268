// What a file-editing call would do to its file (nb_hitl.file_change's
// FileChangeView), read from the kernel's JSON and drawn: the path as text,
// the diff with the unified / side-by-side view (lib/diff_split.ts), and the
// kernel's note. The confirmation card draws the call's change with it, and a
// Modify's preview the change of the edited call (lib/edit_preview.ts).
import { h } from "./dom";
import { fileDiffView } from "./diff_split";
import type { FileChangeView } from "../types";

/** A file edit's diff: kept when its path and diff are text, every other value text or null;
 *  anything else draws no diff (null). */
export function fileChange(raw: unknown): FileChangeView | null {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return null;
  const r = raw as Record<string, unknown>;
  if (typeof r.path !== "string" || typeof r.diff !== "string") return null;
  const opt = (v: unknown): string | null => (typeof v === "string" ? v : null);
  return { path: r.path, diff: r.diff, sha256_before: opt(r.sha256_before), note: opt(r.note) };
}

/**
 * The parts that show `change`: a line `${lead} ${path}:` (`${testid}-path`), the diff
 * (`${testid}-diff`, when there is one) and the note (`${testid}-note`, when there is one).
 * Every string is set as text, never parsed as HTML.
 */
export function fileChangeParts(change: FileChangeView, testid: string, lead = "Changes to"): HTMLElement[] {
  const parts: HTMLElement[] = [h("div", { class: "nbh-muted", "data-testid": `${testid}-path` }, `${lead} ${change.path}:`)];
  if (change.diff) parts.push(fileDiffView(change.diff, `${lead} ${change.path}`, `${testid}-diff`));
  if (change.note) parts.push(h("div", { class: "nbh-warn", "data-testid": `${testid}-note` }, change.note));
  return parts;
}
