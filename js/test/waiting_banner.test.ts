// The banner of a reply that waits with no view in the page (C39: a page
// reloaded without saving): what it says is true for the state it is in,
// the panel shown or not, the reply waiting or ended, and when the cells
// show other replies' cards (the saved run's).
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { FakeModel, settle } from "./fake_model";
import { drawReply, liveKernel, pause } from "./page";
import reply from "../reply/index";
import { watchWaiting } from "../reply/waiting_banner";
import type { ReplyModel } from "../types";

const dom = installDom();
after(() => dom.window.close());

const GRACE = 2700; // the banner's grace (waiting_banner.ts) and a little more

describe("the waiting banner's words (C39)", () => {
  test("say whether the card is shown, that the cells' cards are other replies, and what follows the end", async () => {
    const saved = await drawReply([pause({ status: "delivered", decision: { action: "approve" } })], { status: "finished", _nbh_key: "saved-run" });
    const fake = new FakeModel<ReplyModel>({
      agent_name: "tidy",
      prompt: "tidy up",
      reply_id: "r2",
      status: "paused",
      status_reason: "",
      transcript: [],
      pauses: [pause({ reply_id: "r2" })],
      cards_seq: 0,
      final_text: "",
      transcript_seq: 0,
      final_entry: "",
      pending: 1,
      _nbh_key: "this-run",
    });
    fake.answer = (m) => (m.action === "ping" ? { live: true, cell: "another" } : liveKernel(m));
    const stop = new AbortController();
    watchWaiting(fake.model, stop.signal, reply.render);
    await new Promise((resolve) => setTimeout(resolve, GRACE));
    await settle();
    const banner = document.querySelector<HTMLElement>('[data-testid="nbh-waiting"]')!;
    const text = () => banner.querySelector('[data-testid="nbh-waiting-text"]')!.textContent;
    const cells = () => banner.querySelector<HTMLElement>('[data-testid="nbh-waiting-cells"]')!;
    assert.equal(
      text(),
      'The agent "tidy" is waiting for your answer (1 open pause), and no cell of this page shows its card. The reply cards in the cells are other replies, not this one.',
    );
    assert.equal(cells().textContent, "The kernel is running a cell: cells you run wait until it ends.");

    banner.querySelector<HTMLButtonElement>('[data-testid="nbh-waiting-show"]')!.click();
    await settle();
    assert.ok(banner.querySelector('[data-testid="nbh-waiting-panel"] [data-testid="nbh-card"]'));
    assert.equal(text(), 'The agent "tidy" is waiting for your answer (1 open pause): its card is below. The reply cards in the cells are other replies, not this one.');

    saved.close(); // the cells' card goes (a cleared output)
    fake.set("pending", 0);
    fake.set("status", "finished");
    assert.equal(text(), "This reply no longer waits for you. Its last state is shown below.");
    assert.match(cells().textContent!, /^JupyterLab shows a cell's output only in the page that ran it/);
    assert.equal(cells().hidden, false);

    banner.querySelector<HTMLButtonElement>('[data-testid="nbh-waiting-show"]')!.click();
    assert.equal(text(), "This reply no longer waits for you. Show the card to see its last state.");
    stop.abort();
    assert.equal(document.querySelector('[data-testid="nbh-waiting"]'), null);
  });
});
