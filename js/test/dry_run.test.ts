// reply/cards/dry_run.ts: the "Dry run" button of a confirmation whose view
// allows it, the request it sends (not an answer: the card stays open), and
// the result drawn as text and diffs under the card, never as HTML.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, liveKernel, pause } from "./page";
import { fileInCopy, readDryRun } from "../reply/cards/dry_run";
import { checkView } from "../reply/view_check";

const dom = installDom();
after(() => dom.window.close());

const RESULT = {
  tool_call_id: "c1",
  tool_name: "Write",
  sandbox: "a temporary copy",
  folder: "",
  summary: "Dry run in a temporary copy: Write ran with the input Approve would run and ended with state success; 1 file changed.",
  state: "success",
  output: "The file /w/<b>x</b>.txt has been written successfully (1 lines).",
  files: [
    {
      path: "/w/<b>x</b>.txt",
      change: "created",
      diff: { path: "/w/<b>x</b>.txt", diff: "--- /dev/null\n+++ /w/x.txt\n@@ -0,0 +1 @@\n+<img src=x onerror=alert(1)>\n", sha256_before: null, note: null },
    },
  ],
};

const WRITE = { tool_name: "Write", input_text: '{"file_path": "/w/x.txt", "content": "hi"}', dry_run: true };

describe("the Dry run button", () => {
  test("only on a confirmation whose view allows it", async () => {
    const page = await drawReply([pause({ tool_call_id: "c1", ...WRITE }), pause({ tool_call_id: "c2" })]);
    assert.ok(page.control("c1", "nbh-dry-run"));
    assert.equal(page.control("c2", "nbh-dry-run"), null); // a Bash call: dry_run false
    page.close();
  });

  test("a view from an older kernel (no dry_run) offers none", () => {
    const { dry_run, ...old } = pause(WRITE);
    assert.equal(dry_run, true);
    assert.equal(checkView(old, "c1").view.dry_run, false);
    assert.equal(checkView({ ...old, dry_run: "yes" }, "c1").view.dry_run, false);
  });

  test("a click sends dry_run for this call; the result is drawn as text, and the card stays open", async () => {
    const page = await drawReply([pause(WRITE)], {}, (m) => (m.action === "dry_run" ? { dry_run: RESULT } : liveKernel(m)));
    page.control("c1", "nbh-dry-run")!.click();
    await settle();
    const sent = page.fake.actions("dry_run");
    assert.equal(sent.length, 1);
    assert.deepEqual({ ...sent[0], request_id: "" }, { action: "dry_run", tool_call_id: "c1", reply_id: "r1", request_id: "" });
    const card = page.card("c1");
    assert.equal(card.dataset.status, "open");
    assert.equal(page.control("c1", "nbh-dry-run-summary")!.textContent, RESULT.summary);
    assert.equal(page.control("c1", "nbh-dry-run-sandbox")!.textContent, "Ran in: a temporary copy");
    assert.equal(page.control("c1", "nbh-dry-run-file")!.textContent, "Created in a copy of /w/<b>x</b>.txt");
    const lines = Array.from(page.control("c1", "nbh-dry-run-diff")!.querySelectorAll("span")).map((s) => [s.dataset.kind, s.textContent]);
    assert.deepEqual(lines.at(-1), ["add", "+<img src=x onerror=alert(1)>"]);
    assert.equal(page.control("c1", "nbh-dry-run-output")!.textContent, RESULT.output);
    assert.equal(card.querySelector("img"), null);
    assert.equal(card.querySelector("b"), null);
    // no answer was sent, and Approve still works
    assert.equal(page.fake.sent.filter((m) => !["sync", "ping", "dry_run"].includes(m.action)).length, 0);
    assert.equal(page.control("c1", "nbh-approve")!.disabled, false);
    assert.equal(page.control("c1", "nbh-dry-run")!.disabled, false);
    page.close();
  });

  test("a card decided while its dry run runs is drawn decided when the result arrives", async () => {
    const page = await drawReply([pause(WRITE)], {}, (m) => (m.action === "dry_run" ? null : liveKernel(m)));
    page.control("c1", "nbh-dry-run")!.click();
    await settle();
    assert.equal(page.control("c1", "nbh-dry-run")!.disabled, true);
    const decided = pause({ ...WRITE, status: "decided", decision: { action: "approve" } });
    page.fake.emit({ type: "nbh_cards", seq: 1, ops: [{ op: "card", view: decided }] });
    await settle();
    const [asked] = page.fake.actions("dry_run");
    page.fake.emit({ request_id: asked.request_id, ok: true, dry_run: RESULT });
    await settle();
    assert.equal(page.card("c1").dataset.status, "decided");
    assert.equal(page.control("c1", "nbh-dry-run"), null);
    page.close();
  });

  test("a refusal is shown on the card", async () => {
    const page = await drawReply([pause(WRITE)], {}, (m) => (m.action === "dry_run" ? { refuse: "Write (content=\"x\") cannot be dry-run: the call names no absolute file_path." } : liveKernel(m)));
    page.control("c1", "nbh-dry-run")!.click();
    await settle();
    assert.equal(page.control("c1", "nbh-dry-run-error")!.textContent, "Write (content=\"x\") cannot be dry-run: the call names no absolute file_path.");
    assert.equal(page.control("c1", "nbh-dry-run-result"), null);
    page.close();
  });
});

describe("readDryRun", () => {
  test("keeps an answer that fits, as text; drops one that does not", () => {
    assert.deepEqual(readDryRun(RESULT), RESULT);
    assert.equal(readDryRun({ summary: 3, state: "success" }), null);
    assert.equal(readDryRun("x"), null);
    assert.deepEqual(readDryRun({ summary: "s", state: "error", files: [{ path: 1, diff: null }, "x"] })!.files, [
      { path: "", change: "", diff: { path: "", diff: "", sha256_before: null, note: null } },
    ]);
  });
});

describe("a file in the copy, as a person reads it", () => {
  test("a copied folder's file by its path inside the folder, never the real folder's path", () => {
    const view = readDryRun({ ...RESULT, folder: "/tmp/box/" })!;
    const file = (path: string, change: string) => ({ path, change, diff: { path, diff: "", sha256_before: null, note: null } });
    assert.equal(fileInCopy(view, file("/tmp/box/draft.md", "deleted")), "Deleted in the copy: draft.md");
    assert.equal(fileInCopy(view, file("/tmp/box/src/a.py", "changed")), "Changed in the copy: src/a.py");
    // outside the copied folder (or no folder: Write, Edit): a copy of the named file
    assert.equal(fileInCopy(view, file("/tmp/boxes/x", "created")), "Created in a copy of /tmp/boxes/x");
  });
});
