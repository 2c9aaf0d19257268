// The side-by-side view of a unified diff (the kernel's, lib/diff.ts), for
// wide screens: a table of the file before (left) and after (right), with
// line numbers read from each hunk header, a removed line beside the added
// line that replaces it, and context on both sides. Built from the same diff
// text as the unified view (so it is cut where the kernel cut it) and drawn
// as text nodes only. `fileDiffView` offers both with a toggle button
// (aria-pressed) and remembers the choice for the page; until a person
// chooses, a diff whose box is wide (WIDE_PX) is drawn side by side. A long
// diff is drawn a page of lines at a time (DIFF_PAGE_LINES), with a button
// for the next page.
import { h } from "./dom";
import { focusableScrollers } from "./a11y";
import { DIFF_PAGE_LINES, diffLines, diffView, linesToDraw, moreLinesText } from "./diff";
import type { DiffLineKind } from "./diff";

/** One side of a row: its line number in that file and its text (without the +/-/space mark). */
export interface SplitCell {
  no: number | null;
  text: string;
  kind: DiffLineKind;
}

/** A row of the side-by-side table: a hunk header or file header across, or a pair of sides. */
export type SplitRow = { kind: "hunk" | "meta"; text: string } | { kind: "pair"; left: SplitCell | null; right: SplitCell | null };

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/;

/** The rows of the side-by-side view of a unified diff (see the module's header). */
export function splitRows(diff: string): SplitRow[] {
  const rows: SplitRow[] = [];
  let left = 0;
  let right = 0;
  let dels: SplitCell[] = [];
  let adds: SplitCell[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) rows.push({ kind: "pair", left: dels[i] ?? null, right: adds[i] ?? null });
    dels = [];
    adds = [];
  };
  for (const line of diffLines(diff)) {
    if (line.kind === "hunk" || line.kind === "meta") {
      flush();
      const m = line.kind === "hunk" ? HUNK.exec(line.text) : null;
      if (m) {
        left = Number(m[1]);
        right = Number(m[2]);
        // an empty side ("-0,0") starts at line 0: its first line is 1
        if (left === 0) left = 1;
        if (right === 0) right = 1;
      }
      rows.push({ kind: line.kind, text: line.text });
    } else if (line.kind === "del") dels.push({ no: left++, text: line.text.slice(1), kind: "del" });
    else if (line.kind === "add") adds.push({ no: right++, text: line.text.slice(1), kind: "add" });
    else {
      flush();
      const text = line.text.slice(1);
      rows.push({ kind: "pair", left: { no: left++, text, kind: "context" }, right: { no: right++, text, kind: "context" } });
    }
  }
  flush();
  return rows;
}

const SIDE_WORDS: Record<string, string> = { del: "removed", add: "added", context: "" };

function cells(cell: SplitCell | null, side: "before" | "after"): HTMLElement[] {
  if (!cell) return [h("td", { class: "nbh-split-no" }), h("td", { class: "nbh-split-text nbh-split-empty" })];
  const word = SIDE_WORDS[cell.kind];
  return [
    h("td", { class: "nbh-split-no" }, String(cell.no ?? "")),
    h(
      "td",
      { class: `nbh-split-text nbh-diff-${cell.kind}`, "data-kind": cell.kind, "data-side": side },
      // read out, not seen: the tint says it to the eye
      word ? h("span", { class: "nbh-sr-only" }, `${word}: `) : null,
      cell.text,
    ),
  ];
}

/** The side-by-side table of `diff` in a labelled scrolling region (text nodes only), at most
 *  `limit` rows of it (all when omitted). */
export function splitView(diff: string, label: string, testid: string, limit = Infinity): HTMLElement {
  const body = h("tbody", {});
  for (const row of splitRows(diff).slice(0, limit)) {
    if (row.kind === "pair") body.append(h("tr", {}, ...cells(row.left, "before"), ...cells(row.right, "after")));
    else body.append(h("tr", {}, h("td", { colspan: 4, class: `nbh-diff-${row.kind}`, "data-kind": row.kind }, row.text)));
  }
  const table = h(
    "table",
    { class: "nbh-split" },
    h("caption", { class: "nbh-sr-only" }, `${label}, side by side`),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col", class: "nbh-split-no" }, h("span", { class: "nbh-sr-only" }, "Line before")),
        h("th", { scope: "col" }, "Before"),
        h("th", { scope: "col", class: "nbh-split-no" }, h("span", { class: "nbh-sr-only" }, "Line after")),
        h("th", { scope: "col" }, "After"),
      ),
    ),
    body,
  );
  return h("div", { class: "nbh-pre nbh-diff nbh-split-box", role: "region", "aria-label": `${label} (side by side)`, "data-testid": testid }, table);
}

/** A diff box at least this wide (CSS pixels) is drawn side by side until a person chooses. */
export const WIDE_PX = 1200;

// the page's choice, for every file diff drawn after it (a card is redrawn often); null: none yet
let sideBySide: boolean | null = null;
// the width a diff box last had: a redrawn card starts from it (no flicker between views)
let lastWidth = 0;

/** Whether file diffs are drawn side by side: the last toggle's choice, else whether the box is wide. */
export function splitChosen(width = 0): boolean {
  return sideBySide ?? width >= WIDE_PX;
}

/** Forget the page's choice (a new page starts without one). */
export function resetSplitChoice(): void {
  sideBySide = null;
}

/**
 * A file's diff with a "Side by side" toggle button: the unified view
 * (`testid`) or the side-by-side table (`testid`-split). The button says its
 * state with aria-pressed and keeps the keyboard on itself when pressed.
 * Until a person presses it, the view follows the box's width (a
 * ResizeObserver, where the browser has one). Past DIFF_PAGE_LINES lines
 * (rows), a "Show … more lines" button (`testid`-more) draws the next page
 * and keeps the keyboard on itself.
 */
export function fileDiffView(diff: string, label: string, testid: string): HTMLElement {
  const box = h("div", { class: "nbh-file-diff", "data-testid": `${testid}-box` });
  let width = lastWidth;
  let shown = 0;
  let drawnSplit: boolean | null = null;
  const draw = (focus: "toggle" | "more" | null) => {
    const split = splitChosen(width);
    drawnSplit = split;
    const total = split ? splitRows(diff).length : diffLines(diff).length;
    shown = linesToDraw(total, shown);
    const toggle = h(
      "button",
      {
        type: "button",
        class: "nbh-split-toggle",
        "data-testid": `${testid}-split-toggle`,
        "aria-pressed": split ? "true" : "false",
        title: "Show the file before and after in two columns (for wide screens)",
        onclick: () => {
          sideBySide = !split;
          draw("toggle");
        },
      },
      "Side by side",
    );
    const more =
      shown < total
        ? h(
            "button",
            {
              type: "button",
              class: "nbh-diff-more",
              "data-testid": `${testid}-more`,
              onclick: () => {
                shown = Math.min(total, shown + DIFF_PAGE_LINES);
                draw("more");
              },
            },
            moreLinesText(total - shown),
          )
        : null;
    box.replaceChildren(
      h("div", { class: "nbh-row" }, toggle),
      split ? splitView(diff, label, `${testid}-split`, shown) : diffView(diff, label, testid, shown),
      ...(more ? [more] : []),
    );
    focusableScrollers(box);
    if (focus === "toggle") toggle.focus();
    else if (focus === "more") (more ?? toggle).focus();
  };
  draw(null);
  if (typeof ResizeObserver !== "undefined") {
    new ResizeObserver((entries) => {
      width = entries[entries.length - 1]?.contentRect.width ?? width;
      if (box.isConnected && width > 0) lastWidth = width;
      if (splitChosen(width) !== drawnSplit) draw(box.contains(document.activeElement) ? "toggle" : null);
    }).observe(box);
  }
  return box;
}
