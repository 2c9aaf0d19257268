// reply/whatif.ts: "Replay" and "What if…" on a finished reply, and the
// replies they start drawn below it as views the widget manager makes.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, liveKernel, type Page } from "./page";
import type { Answerer } from "./fake_model";

const dom = installDom();
after(() => dom.window.close());

const bar = (page: Page) => page.el.querySelector('[data-testid="nbh-replay-bar"]')!;
const button = (page: Page, testid: string) => page.el.querySelector<HTMLButtonElement>(`[data-testid="${testid}"]`);

const CHOICE = {
  tool_call_id: "call_4717secret",
  tool_name: "bump",
  summary: 'bump (step=2, note="<img src=x onerror=alert(1)>")',
  answered: "Recorded answer: approve, by ada, 2026-12-02 12:38:51 UTC.",
};

const kernel: Answerer = (m) => {
  if (m.action === "what_if_list") return { pauses: [CHOICE], live: "" };
  if (m.action === "what_if" || m.action === "replay") return { started: "What if: bump (step=2) answered differently" };
  return liveKernel(m);
};

describe("Replay and What if…", () => {
  test("no buttons on a reply that is not finished, or whose session keeps no record", async () => {
    for (const over of [{ status: "running", replay: { ready: true } }, { status: "finished", replay: {} }]) {
      const page = await drawReply([], over);
      assert.equal(bar(page).childElementCount, 0, JSON.stringify(over));
      page.close();
    }
  });

  test("a reply that cannot be replayed shows the buttons disabled, saying why", async () => {
    const page = await drawReply([], { status: "finished", replay: { reason: "A what-if continuation is not recorded." } });
    assert.equal(button(page, "nbh-replay")!.disabled, true);
    assert.equal(button(page, "nbh-what-if")!.disabled, true);
    assert.equal(page.el.querySelector('[data-testid="nbh-replay-reason"]')!.textContent, "A what-if continuation is not recorded.");
    page.close();
  });

  test("What if… lists the pauses by tool and input, never by id, and sends the chosen one", async () => {
    const page = await drawReply([], { status: "finished", replay: { ready: true } }, kernel);
    button(page, "nbh-what-if")!.click();
    await settle();
    assert.equal(page.fake.actions("what_if_list").length, 1);
    const panel = page.el.querySelector<HTMLElement>('[data-testid="nbh-whatif-panel"]')!;
    assert.equal(panel.hidden, false);
    assert.ok(!panel.textContent!.includes("call_4717secret"), "the id is never shown");
    assert.equal(panel.querySelector("img"), null, "a summary is text");
    assert.ok(panel.textContent!.includes(CHOICE.summary) && panel.textContent!.includes(CHOICE.answered));
    button(page, "nbh-what-if-go")!.click();
    await settle();
    const [sent] = page.fake.actions("what_if");
    assert.equal(sent.tool_call_id, "call_4717secret");
    assert.equal(sent.live, false);
    assert.equal(panel.hidden, true);
    assert.match(page.el.querySelector('[data-testid="nbh-whatif-note"]')!.textContent!, /^Playing below: What if: bump/);
    page.close();
  });

  test("a refused Replay says why where it was clicked", async () => {
    const page = await drawReply([], { status: "finished", replay: { ready: true } }, (m) =>
      m.action === "replay" ? { refuse: "This session keeps no record to replay." } : liveKernel(m),
    );
    button(page, "nbh-replay")!.click();
    await settle();
    const note = page.el.querySelector('[data-testid="nbh-whatif-note"]')!;
    assert.equal(note.textContent, "This session keeps no record to replay.");
    assert.equal(note.className, "nbh-error");
    page.close();
  });

  test("each nested reply is drawn once, under its heading, as a view the widget manager makes", async () => {
    const made: string[] = [];
    const removed: string[] = [];
    const page = await drawReply([], { status: "finished", replay: { ready: true } });
    (page.fake as unknown as { widget_manager: unknown }).widget_manager = {
      get_model: async (id: string) => ({ id }),
      create_view: async (child: { id: string }) => {
        made.push(child.id);
        const el = document.createElement("div");
        el.dataset.testid = `view-${child.id}`;
        return { el, remove: () => removed.push(child.id) };
      },
    };
    const nested = [{ ref: "IPY_MODEL_abc", title: "Replay of this reply" }, { ref: "not-a-ref", title: "ignored" }];
    page.fake.set("nested", nested);
    await settle();
    page.fake.set("nested", [...nested]); // the same again: not drawn twice
    await settle();
    assert.deepEqual(made, ["abc"]);
    const shown = page.el.querySelectorAll('[data-testid="nbh-nested-reply"]');
    assert.equal(shown.length, 1);
    assert.equal(shown[0].querySelector('[data-testid="nbh-nested-title"]')!.textContent, "Replay of this reply");
    assert.ok(shown[0].querySelector('[data-testid="view-abc"]'));
    page.close();
    await settle();
    assert.deepEqual(removed, ["abc"], "the view is taken down with the reply's");
  });
});
