// reply/transcript.ts: entries drawn as they stream (text grows at its end,
// the kernel's Markdown replaces it once, sanitised again), the note and
// "Show all" of an entry sent in part, and the final message shown once.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { Transcript, entryHtml, stepText } from "../reply/transcript";
import type { TranscriptEntry } from "../types";

const dom = installDom();
after(() => dom.window.close());

const text = (id: string, t: string, over: Partial<TranscriptEntry> = {}): TranscriptEntry => ({ kind: "text", id, text: t, ...over });

describe("Transcript", () => {
  test("streamed text grows in place; the rendered Markdown replaces it once, sanitised", () => {
    const tr = new Transcript();
    tr.draw([text("t1", "Hel")]);
    const body = tr.el.querySelector<HTMLElement>('[data-testid="nbh-text"] div')!;
    const first = body.firstChild;
    tr.draw([text("t1", "Hello")]);
    assert.equal(body.textContent, "Hello");
    assert.equal(body.firstChild, first, "the text already shown is not set again");
    tr.draw([text("t1", "Hello", { html: '<p>Hello <img src=x onerror="alert(1)"><script>x</script></p>' })]);
    assert.equal(body.querySelector("img"), null);
    assert.equal(body.querySelector("script"), null);
    assert.equal(body.innerHTML, "<p>Hello </p>");
    assert.ok(body.classList.contains("nbh-md"));
    // the text changed after it was rendered: back to plain text
    tr.draw([text("t1", "Hello again")]);
    assert.equal(body.textContent, "Hello again");
    assert.equal(body.classList.contains("nbh-md"), false);
  });

  test("an entry sent in part says how much is left; Show all fetches and shows the whole text", async () => {
    const asked: string[] = [];
    const tr = new Transcript(async (id) => {
      asked.push(id);
      return { text: "abcdef" };
    });
    tr.draw([{ kind: "tool_result", id: "res:c1", text: "abc", more: 3, name: "Read", state: "success" }]);
    assert.equal(tr.el.querySelector('[data-testid="nbh-more"]')!.firstChild!.textContent, "… 3 more characters not shown");
    tr.el.querySelector<HTMLButtonElement>('[data-testid="nbh-show-all"]')!.click();
    await settle();
    assert.deepEqual(asked, ["res:c1"]);
    assert.equal(tr.el.querySelector('[data-testid="nbh-tool-result"] .nbh-pre')!.textContent, "abcdef");
    assert.equal(tr.el.querySelector('[data-testid="nbh-more"]'), null);
  });

  test("a tool call's entry has the slot its card goes in", () => {
    const tr = new Transcript();
    assert.equal(tr.slotFor("c1"), undefined);
    tr.draw([{ kind: "tool_call", id: "call:c1", text: '{"a":1}', name: "Bash" }]);
    assert.ok(tr.slotFor("c1")?.slot);
    assert.equal(tr.slotFor("c1")!.body.textContent, '{\n  "a": 1\n}');
  });

  test("the final message repeated by the last text block is shown once", () => {
    const tr = new Transcript();
    const last = text("t1", "Done.\n\nAll files tidy.", { html: "<p>Done.</p>" });
    tr.draw([last]);
    assert.equal(tr.hideRepeatedFinal(last, "Done. All files tidy."), undefined, "differs in whitespace only: hidden, its rendering not reused");
    assert.equal(tr.el.querySelector<HTMLElement>('[data-testid="nbh-text"]')!.hidden, true);
    assert.equal(tr.hideRepeatedFinal(last, "Done.\n\nAll files tidy."), "<p>Done.</p>");
    assert.equal(tr.hideRepeatedFinal(last, "Something else"), undefined);
    assert.equal(tr.el.querySelector<HTMLElement>('[data-testid="nbh-text"]')!.hidden, false);
  });
});

describe("entry helpers", () => {
  test("entryHtml: only text and thinking carry rendered Markdown", () => {
    assert.equal(entryHtml(text("t", "a", { html: "<p>a</p>" })), "<p>a</p>");
    assert.equal(entryHtml({ kind: "tool_result", id: "r", text: "a", html: "<p>a</p>" }), undefined);
    assert.equal(entryHtml(undefined), undefined);
  });
  test("stepText: a finished model call", () => {
    assert.equal(
      stepText({ kind: "step", id: "s", text: "", model_name: "m", state: "done", elapsed: 2.44, input_tokens: 120, output_tokens: 45 }),
      "model call (m) · 2.4 s · 120 in / 45 out tokens",
    );
  });
});
