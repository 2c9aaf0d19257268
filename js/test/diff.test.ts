// lib/diff.ts: the kernel's unified diff drawn as text, one classed span per
// line; reply/view_check.ts keeps a view's file_change only when it fits.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { diffLines, diffView } from "../lib/diff";
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
