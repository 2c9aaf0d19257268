// lib/edit_preview.ts: the diff of an edit (Modify, a review's edited result)
// asked of the kernel while it is typed: debounced, only the newest answer
// drawn, drawn as text; and on the cards, the request each card sends.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, liveKernel, pause } from "./page";
import { EditPreview, diffSummary, previewPart, readPreview, type PreviewState, type Timers } from "../lib/edit_preview";
import type { Answer } from "../messages";

const dom = installDom();
after(() => dom.window.close());

/** A file change whose path would be markup if it were parsed as HTML. */
const EVIL = "/w/<img src=x onerror=alert(1)>.txt";
const FILE = { path: EVIL, diff: `--- ${EVIL}\n+++ ${EVIL}\n@@ -1 +1 @@\n-old\n+new\n`, sha256_before: "ab", note: null };

const DIFF = '--- model\'s input\n+++ edited input\n@@ -1,3 +1,3 @@\n {\n-  "command": "ls"\n+  "command": "<img src=x onerror=alert(1)>"\n }\n';

/** Timers the test runs by hand: `fire()` runs what is due, as if the delay passed. */
function manualTimers(): Timers & { fire(): void; due: number } {
  const queue = new Map<number, () => void>();
  let n = 0;
  return {
    set: (run) => (queue.set(++n, run), n),
    clear: (id) => void queue.delete(id),
    fire() {
      const runs = Array.from(queue.values());
      queue.clear();
      runs.forEach((r) => r());
    },
    get due() {
      return queue.size;
    },
  };
}

describe("EditPreview", () => {
  test("asks once typing pauses, for the last text only", async () => {
    const asked: string[] = [];
    const seen: PreviewState[] = [];
    const timers = manualTimers();
    const pv = new EditPreview("orig", async (t) => (asked.push(t), { request_id: "", ok: true, preview: { diff: DIFF } }), (s) => seen.push(s), timers);
    pv.changed("a");
    pv.changed("ab");
    pv.changed("abc");
    assert.equal(timers.due, 1);
    assert.deepEqual(asked, []);
    timers.fire();
    await settle();
    assert.deepEqual(asked, ["abc"]);
    assert.deepEqual(seen, [{ kind: "waiting" }, { kind: "diff", diff: DIFF, file_change: null }]);
  });

  test("back to the original: no request, 'same'", () => {
    const timers = manualTimers();
    const seen: PreviewState[] = [];
    const pv = new EditPreview("orig", async () => assert.fail("no request"), (s) => seen.push(s), timers);
    pv.changed("x");
    pv.changed("orig");
    assert.equal(timers.due, 0);
    assert.deepEqual(seen.at(-1), { kind: "same" });
  });

  test("a slow answer to an older text is dropped", async () => {
    const answers: ((a: Answer<{ preview?: unknown }>) => void)[] = [];
    const seen: PreviewState[] = [];
    const pv = new EditPreview("o", (_t) => new Promise((resolve) => answers.push(resolve)), (s) => seen.push(s), manualTimers());
    pv.changed("first", true);
    pv.changed("second", true);
    answers[1]({ request_id: "", ok: true, preview: { diff: "new" } });
    await settle();
    answers[0]({ request_id: "", ok: true, preview: { diff: "old" } });
    await settle();
    assert.deepEqual(seen.at(-1), { kind: "diff", diff: "new", file_change: null });
    pv.dispose();
  });

  test("a refusal is shown as the kernel worded it; an unreadable answer says so", async () => {
    const seen: PreviewState[] = [];
    const refusal = "The input is not valid JSON: Expecting value (line 1, column 1).";
    const pv = new EditPreview("o", async (t) => (t === "bad" ? { request_id: "", ok: false as const, code: "refused", error: refusal } : { request_id: "", ok: true, preview: 7 }), (s) => seen.push(s), manualTimers());
    pv.changed("bad", true);
    await settle();
    assert.deepEqual(seen.at(-1), { kind: "error", error: refusal });
    pv.changed("odd", true);
    await settle();
    assert.deepEqual(seen.at(-1), { kind: "error", error: "The kernel's diff could not be read." });
  });
});

describe("the preview's words and drawing", () => {
  test("readPreview and diffSummary", () => {
    assert.deepEqual(readPreview({ diff: "d" }), { diff: "d", file_change: null });
    assert.deepEqual(readPreview({ diff: "d", file_change: FILE }), { diff: "d", file_change: FILE });
    assert.deepEqual(readPreview({ diff: "d", file_change: { path: 3, diff: "x" } }), { diff: "d", file_change: null });
    assert.equal(readPreview({ diff: 1, file_change: FILE }), null);
    assert.equal(readPreview(null), null);
    assert.equal(diffSummary(DIFF), "1 line removed, 1 added");
    assert.equal(diffSummary("@@ -0,0 +1,2 @@\n+a\n+b\n"), "2 lines added");
    assert.equal(diffSummary(""), "no change");
  });

  test("drawn as text in a labelled region, with a status line", () => {
    const part = previewPart("input", "nbh-modify-preview");
    part.show({ kind: "diff", diff: DIFF, file_change: null });
    assert.equal(part.el.dataset.state, "diff");
    const status = part.el.querySelector('[data-testid="nbh-modify-preview-status"]')!;
    assert.equal(status.getAttribute("role"), "status");
    assert.equal(status.textContent, "Your edit: 1 line removed, 1 added in the input (compared by the kernel).");
    const region = part.el.querySelector('[data-testid="nbh-modify-preview-diff"]')!;
    assert.equal(region.getAttribute("aria-label"), "What your edit changes in the input");
    assert.equal(region.querySelector("img"), null);
    assert.ok(Array.from(region.querySelectorAll("span")).some((s) => s.textContent === '+  "command": "<img src=x onerror=alert(1)>"'));
    part.show({ kind: "error", error: "bad" });
    assert.equal(part.el.querySelector('[data-testid="nbh-modify-preview-diff"]'), null);
    assert.equal(status.textContent, "No diff of your edit is shown: bad");
  });
});

describe("the edited call's file change", () => {
  test("an answer with a file change is a state with it", async () => {
    const seen: PreviewState[] = [];
    const pv = new EditPreview("o", async () => ({ request_id: "", ok: true, preview: { diff: DIFF, file_change: FILE } }), (s) => seen.push(s), manualTimers());
    pv.changed("edited", true);
    await settle();
    assert.deepEqual(seen.at(-1), { kind: "diff", diff: DIFF, file_change: FILE });
  });

  test("drawn under the input's diff, the path as text; another file than the card's is said", () => {
    const part = previewPart("input", "nbh-modify-preview", "/w/a.txt");
    part.show({ kind: "diff", diff: DIFF, file_change: FILE });
    const q = (id: string) => part.el.querySelector(`[data-testid="nbh-modify-preview-${id}"]`);
    assert.equal(q("file-path")!.textContent, `The edited call changes ${EVIL}:`);
    assert.equal(part.el.querySelector("img"), null);
    const body = q("body")!;
    assert.ok(q("diff")!.compareDocumentPosition(q("file-path")!) & window.Node.DOCUMENT_POSITION_FOLLOWING);
    assert.ok(body.contains(q("file-diff-box")));
    assert.ok(Array.from(q("file-diff-box")!.querySelectorAll("span, td")).some((c) => c.textContent?.includes("new")));
    assert.equal(q("file-other")!.textContent, `Your edit changes ${EVIL}, not /w/a.txt as the model's call does: the change below is the one you approve.`);
    part.show({ kind: "diff", diff: DIFF, file_change: { ...FILE, path: "/w/a.txt", diff: "", note: "The file's text would not change." } });
    assert.equal(q("file-other"), null);
    assert.equal(q("file-diff-box"), null);
    assert.equal(q("file-note")!.textContent, "The file's text would not change.");
    part.show({ kind: "diff", diff: DIFF, file_change: null });
    assert.equal(q("file-path"), null);
    part.show({ kind: "waiting" });
    part.show({ kind: "error", error: "bad" });
    assert.equal(q("file-path"), null);
  });
});

describe("on the cards", () => {
  test("Modify sends preview with the edited input; the diff appears under the box", async () => {
    const page = await drawReply([pause()], {}, (m) => (m.action === "preview" ? { preview: { diff: DIFF } } : liveKernel(m)));
    page.control("c1", "nbh-modify")!.click();
    await settle();
    const area = page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!;
    assert.equal(page.control("c1", "nbh-modify-preview")!.dataset.state, "same");
    area.value = '{"command": "<img src=x onerror=alert(1)>"}';
    area.dispatchEvent(new window.Event("input"));
    await new Promise((r) => setTimeout(r, 350));
    await settle();
    const sent = page.fake.actions("preview");
    assert.equal(sent.length, 1);
    assert.deepEqual({ ...sent[0], request_id: "" }, { action: "preview", input: area.value, tool_call_id: "c1", reply_id: "r1", request_id: "" });
    assert.ok(page.control("c1", "nbh-modify-preview-diff"));
    assert.equal(page.card("c1").dataset.status, "open");
    page.close();
  });

  test("Modify of a file-editing call draws the edited call's file under the input's diff", async () => {
    const card = pause({ file_change: { path: "/w/a.txt", diff: "--- /dev/null\n+++ /w/a.txt\n@@ -0,0 +1 @@\n+new\n", sha256_before: null, note: null } });
    const page = await drawReply([card], {}, (m) => (m.action === "preview" ? { preview: { diff: DIFF, file_change: FILE } } : liveKernel(m)));
    page.control("c1", "nbh-modify")!.click();
    await settle();
    const area = page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!;
    area.value = '{"file_path": "elsewhere"}';
    area.dispatchEvent(new window.Event("input"));
    await new Promise((r) => setTimeout(r, 350));
    await settle();
    assert.equal(page.control("c1", "nbh-modify-preview-file-path")!.textContent, `The edited call changes ${EVIL}:`);
    assert.ok(page.control("c1", "nbh-modify-preview-file-other"));
    assert.equal(page.card("c1").querySelector("img"), null);
    page.close();
  });

  test("a review's edit sends preview with the edited output", async () => {
    const review = pause({ kind: "review", tool_name: "lookup", review_output: "secret: 42\n", review_state: "success" });
    const page = await drawReply([review], {}, (m) => (m.action === "preview" ? { preview: { diff: "--- tool's result\n+++ edited result\n@@ -1 +1 @@\n-secret: 42\n+secret: [redacted]\n" } } : liveKernel(m)));
    const area = page.control<HTMLTextAreaElement>("c1", "nbh-review-output")!;
    area.value = "secret: [redacted]\n";
    area.dispatchEvent(new window.Event("input"));
    await new Promise((r) => setTimeout(r, 350));
    await settle();
    const [sent] = page.fake.actions("preview");
    assert.equal(sent.output, "secret: [redacted]\n");
    assert.equal(page.control("c1", "nbh-review-preview-status")!.textContent, "Your edit: 1 line removed, 1 added in the result (compared by the kernel).");
    page.close();
  });
});
