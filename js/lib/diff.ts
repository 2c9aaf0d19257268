// A unified diff computed by the kernel (nb_hitl.file_change), drawn as text:
// one text node per line in a span whose class says added / removed / hunk
// header / file header / context. Nothing is parsed as HTML, so a diff of a
// file holding `<script>` stays text.
import { h } from "./dom";

export type DiffLineKind = "add" | "del" | "hunk" | "meta" | "context";

/** The kind of each line of a unified diff ("" and a final newline give no line). */
export function diffLines(diff: string): { kind: DiffLineKind; text: string }[] {
  const lines = diff.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  let inHunk = false;
  return lines.map((text) => {
    let kind: DiffLineKind = "context";
    if (text.startsWith("@@")) {
      kind = "hunk";
      inHunk = true;
    } else if (!inHunk && (text.startsWith("--- ") || text.startsWith("+++ "))) kind = "meta";
    else if (text.startsWith("\\")) kind = "meta";
    else if (text.startsWith("+")) kind = "add";
    else if (text.startsWith("-")) kind = "del";
    return { kind, text };
  });
}

/** Lines (or side-by-side rows) a diff draws before it asks to show more: a long diff is paged. */
export const DIFF_PAGE_LINES = 400;

/** How many of `total` lines to draw when `shown` were asked for: at least one page, at most all. */
export function linesToDraw(total: number, shown: number): number {
  return Math.min(total, Math.max(shown, DIFF_PAGE_LINES));
}

/** The words of the button that draws the next page of a diff, `left` lines not drawn yet. */
export function moreLinesText(left: number): string {
  const next = Math.min(left, DIFF_PAGE_LINES);
  return next === left ? `Show the last ${left} line${left === 1 ? "" : "s"}` : `Show ${next} more lines (${left} not shown)`;
}

/** A labelled <pre> region holding the diff, one block span per line (copying keeps the lines),
 *  at most `limit` of them (all when `limit` is omitted); focusableScrollers makes it reachable by
 *  keyboard when it scrolls. */
export function diffView(diff: string, label: string, testid: string, limit = Infinity): HTMLElement {
  const pre = h("pre", { class: "nbh-pre nbh-diff", role: "region", "aria-label": label, "data-testid": testid });
  for (const line of diffLines(diff).slice(0, limit)) {
    pre.append(h("span", { class: `nbh-diff-${line.kind}`, "data-kind": line.kind }, line.text));
  }
  return pre;
}
