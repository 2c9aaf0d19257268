// lib/diff.ts: the kernel's unified diff drawn as text, one classed span per
// line; reply/view_check.ts keeps a view's file_change only when it fits.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { diffLines, diffView } from "../lib/diff";
import { fileDiffView, splitChosen, splitRows } from "../lib/diff_split";
import { fileChange } from "../reply/view_check";

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
