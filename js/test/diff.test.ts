// lib/diff.ts: the kernel's unified diff drawn as text, one classed span per
// line; reply/view_check.ts keeps a view's file_change only when it fits.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { DIFF_PAGE_LINES, diffLines, diffView, linesToDraw, moreLinesText } from "../lib/diff";
import { WIDE_PX, fileDiffView, resetSplitChoice, splitChosen, splitRows } from "../lib/diff_split";
import { fileChange } from "../lib/file_change";

const dom = installDom();
after(() => dom.window.close());

const DIFF = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n <img src=x onerror=alert(1)>\n-old\n+new\n\\ No newline at end of file\n";

describe("diffLines", () => {
  test("each line gets its kind; header lines only before the first hunk", () => {
    assert.deepEqual(
      diffLines(DIFF + "--- not a header\n").map((l) => l.kind),
      ["meta", "meta", "hunk", "context", "del", "add", "meta", "del"],
    );
    assert.deepEqual(diffLines(""), []);
  });
});

describe("diffView", () => {
  test("draws text nodes in a labelled region, never HTML", () => {
    const pre = diffView(DIFF, "Changes to f", "nbh-file-diff");
    assert.equal(pre.tagName, "PRE");
    assert.equal(pre.getAttribute("role"), "region");
    assert.equal(pre.getAttribute("aria-label"), "Changes to f");
    const spans = Array.from(pre.querySelectorAll("span"));
    assert.deepEqual(
      spans.map((s) => [s.className, s.textContent]),
      [
        ["nbh-diff-meta", "--- a/f"],
        ["nbh-diff-meta", "+++ b/f"],
        ["nbh-diff-hunk", "@@ -1,2 +1,2 @@"],
        ["nbh-diff-context", " <img src=x onerror=alert(1)>"],
        ["nbh-diff-del", "-old"],
        ["nbh-diff-add", "+new"],
        ["nbh-diff-meta", "\\ No newline at end of file"],
      ],
    );
    assert.equal(pre.querySelector("img"), null);
  });
});

describe("fileChange", () => {
  test("keeps a view's file_change when it fits, drops it otherwise", () => {
    assert.deepEqual(fileChange({ path: "p", diff: "d", sha256_before: 3, note: "n" }), { path: "p", diff: "d", sha256_before: null, note: "n" });
    assert.equal(fileChange({ path: "p" }), null);
    assert.equal(fileChange("x"), null);
  });
});

describe("splitRows / fileDiffView (side by side)", () => {
  const EDIT = "--- a/f\n+++ b/f\n@@ -3,4 +3,5 @@\n ctx\n-old1\n-old2\n+new1\n+new2\n+new3\n tail\n";

  test("pairs removed and added lines, numbers each side from the hunk header", () => {
    const rows = splitRows(EDIT);
    const pairs = rows.filter((r) => r.kind === "pair").map((r) => (r.kind === "pair" ? [r.left && `${r.left.no}${r.left.kind[0]}:${r.left.text}`, r.right && `${r.right.no}${r.right.kind[0]}:${r.right.text}`] : []));
    assert.deepEqual(rows.slice(0, 3).map((r) => r.kind), ["meta", "meta", "hunk"]);
    assert.deepEqual(pairs, [
      ["3c:ctx", "3c:ctx"],
      ["4d:old1", "4a:new1"],
      ["5d:old2", "5a:new2"],
      [null, "6a:new3"],
      ["6c:tail", "7c:tail"],
    ]);
    const created = splitRows("--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+a\n+b\n").filter((r) => r.kind === "pair");
    assert.deepEqual(created.map((r) => (r.kind === "pair" ? [r.left, r.right?.no] : [])), [[null, 1], [null, 2]]);
  });

  test("the toggle switches views, says its state, keeps focus and the choice; text only", () => {
    const box = fileDiffView(DIFF, "Changes to f", "nbh-file-diff");
    document.body.append(box);
    const toggle = () => box.querySelector<HTMLButtonElement>('[data-testid="nbh-file-diff-split-toggle"]')!;
    assert.equal(toggle().getAttribute("aria-pressed"), "false");
    assert.ok(box.querySelector('[data-testid="nbh-file-diff"]'));
    toggle().click();
    assert.equal(toggle().getAttribute("aria-pressed"), "true");
    assert.equal(document.activeElement, toggle());
    assert.equal(box.querySelector('[data-testid="nbh-file-diff"]'), null);
    const split = box.querySelector('[data-testid="nbh-file-diff-split"]')!;
    assert.equal(split.getAttribute("role"), "region");
    assert.equal(split.querySelector("caption")!.textContent, "Changes to f, side by side");
    assert.deepEqual(Array.from(split.querySelectorAll("th")).map((t) => t.textContent), ["Line before", "Before", "Line after", "After"]);
    assert.equal(split.querySelector("img"), null);
    const before = Array.from(split.querySelectorAll('td[data-side="before"]')).map((t) => t.textContent);
    assert.deepEqual(before, [" <img src=x onerror=alert(1)>".slice(1), "removed: old"]);
    // a diff drawn later (a redraw) keeps the choice
    assert.equal(splitChosen(), true);
    assert.ok(fileDiffView(DIFF, "x", "t").querySelector('[data-testid="t-split"]'));
    toggle().click();
    assert.equal(splitChosen(), false);
    box.remove();
  });
});

describe("a long diff is paged", () => {
  const long = (n: number) => "--- a/f\n+++ b/f\n@@ -1,0 +1," + n + " @@\n" + Array.from({ length: n }, (_, i) => `+line ${i}`).join("\n") + "\n";

  test("linesToDraw and moreLinesText", () => {
    assert.equal(linesToDraw(10, 0), 10);
    assert.equal(linesToDraw(1000, 0), DIFF_PAGE_LINES);
    assert.equal(linesToDraw(1000, 900), 900);
    assert.equal(moreLinesText(600), `Show ${DIFF_PAGE_LINES} more lines (600 not shown)`);
    assert.equal(moreLinesText(3), "Show the last 3 lines");
    assert.equal(moreLinesText(1), "Show the last 1 line");
  });

  test("draws a page, then the next on each click, keeping the keyboard on the button", () => {
    resetSplitChoice();
    const box = fileDiffView(long(1000), "Changes to f", "t");
    document.body.append(box);
    const drawn = () => box.querySelectorAll('[data-testid="t"] span').length;
    const more = () => box.querySelector<HTMLButtonElement>('[data-testid="t-more"]');
    assert.equal(drawn(), DIFF_PAGE_LINES);
    assert.equal(more()!.textContent, `Show ${DIFF_PAGE_LINES} more lines (${1003 - DIFF_PAGE_LINES} not shown)`);
    more()!.click();
    assert.equal(drawn(), 2 * DIFF_PAGE_LINES);
    assert.equal(document.activeElement, more());
    more()!.click();
    assert.equal(drawn(), 1003);
    assert.equal(more(), null);
    assert.equal(document.activeElement, box.querySelector('[data-testid="t-split-toggle"]'));
    // side by side keeps what was drawn so far (rows, not lines)
    box.querySelector<HTMLButtonElement>('[data-testid="t-split-toggle"]')!.click();
    assert.equal(box.querySelectorAll('[data-testid="t-split"] tbody tr').length, 1003);
    resetSplitChoice();
    box.remove();
  });
});

describe("side by side on a wide box until a person chooses", () => {
  test("follows the box's width, then the person's choice", () => {
    resetSplitChoice();
    const observed: ((entries: { contentRect: { width: number } }[]) => void)[] = [];
    const g = globalThis as unknown as { ResizeObserver?: unknown };
    const had = g.ResizeObserver;
    g.ResizeObserver = class {
      constructor(cb: (entries: { contentRect: { width: number } }[]) => void) {
        observed.push(cb);
      }
      observe(): void {}
    };
    try {
      assert.equal(splitChosen(WIDE_PX), true);
      assert.equal(splitChosen(WIDE_PX - 1), false);
      const box = fileDiffView(DIFF, "Changes to f", "w");
      document.body.append(box);
      const resize = (width: number) => observed[0]([{ contentRect: { width } }]);
      assert.ok(box.querySelector('[data-testid="w"]'));
      resize(WIDE_PX + 100);
      assert.ok(box.querySelector('[data-testid="w-split"]'));
      // a card drawn again starts from the width last seen: no flicker
      assert.ok(fileDiffView(DIFF, "again", "w2").querySelector('[data-testid="w2-split"]'));
      resize(800);
      assert.ok(box.querySelector('[data-testid="w"]'));
      box.querySelector<HTMLButtonElement>('[data-testid="w-split-toggle"]')!.click();
      assert.ok(box.querySelector('[data-testid="w-split"]'));
      resize(700);  // the person chose: the width no longer decides
      assert.ok(box.querySelector('[data-testid="w-split"]'));
      box.remove();
    } finally {
      g.ResizeObserver = had;
      resetSplitChoice();
    }
  });
});
