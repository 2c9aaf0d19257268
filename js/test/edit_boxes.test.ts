// The edit boxes of the cards are as tall as their text, 4 to 24 rows, and follow what is typed
// (lib/dom.ts fitRowsAsTyped): the Modify box's input, a review's result, a sampling request's
// messages and the model's answer. They had the textarea's default height, whatever the text.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, pause, typeInto } from "./page";
import type { SamplingView } from "../types";

const dom = installDom();
after(() => dom.window.close());

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join("\n");

function sampling(over: Partial<SamplingView>): SamplingView {
  return {
    stage: "request", messages: [], system_prompt: null, model_hints: [], priorities: {}, max_tokens: 50, temperature: null,
    stop_sequences: [], include_context: null, completion: null, model: null, settings_note: null, error: null, ...over,
  };
}

/** The box of each card kind, drawn with `text` in it. */
const BOXES: Record<string, (text: string) => Promise<[HTMLTextAreaElement, () => void]>> = {
  async modify(text) {
    const page = await drawReply([pause({ tool_name: "write_note", input_text: text })]);
    page.control("c1", "nbh-modify")!.click();
    await settle();
    return [page.control<HTMLTextAreaElement>("c1", "nbh-modify-input")!, () => page.close()];
  },
  async review(text) {
    const page = await drawReply([pause({ kind: "review", tool_name: "lookup", review_output: text, review_state: "success" })]);
    return [page.control<HTMLTextAreaElement>("c1", "nbh-review-output")!, () => page.close()];
  },
  async "sampling request"(text) {
    const view = sampling({ messages: [{ role: "user", text }] });
    const page = await drawReply([pause({ kind: "sampling", tool_name: "mcp__db__summarize", sampling: view })]);
    return [page.control<HTMLTextAreaElement>("c1", "nbh-sampling-message-0")!, () => page.close()];
  },
  async "sampling answer"(text) {
    const view = sampling({ stage: "completion", messages: [{ role: "user", text: "Summarize." }], completion: text, model: "scripted" });
    const page = await drawReply([pause({ kind: "sampling", tool_name: "mcp__db__summarize", sampling: view })]);
    return [page.control<HTMLTextAreaElement>("c1", "nbh-sampling-completion")!, () => page.close()];
  },
};

describe("an edit box is as tall as its text, 4 to 24 rows", () => {
  for (const [kind, draw] of Object.entries(BOXES)) {
    test(`the ${kind} box`, async () => {
      for (const [n, rows] of [[1, 4], [10, 11], [100, 24]] as const) {
        const [area, close] = await draw(lines(n));
        assert.equal(area.value, lines(n));
        assert.equal(area.rows, rows, `${n} lines`);
        close();
      }
      const [area, close] = await draw("short");
      typeInto(area, lines(15)); // it follows what is typed
      assert.equal(area.rows, 16);
      typeInto(area, "short again");
      assert.equal(area.rows, 4);
      close();
    });
  }
});
