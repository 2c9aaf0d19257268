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
import { panelOf, watchWaiting } from "../reply/waiting_banner";
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

/** A reply that waits on one pause, its kernel answering pings, seen by `watchWaiting`. */
function waitingReply(manager?: { context: { path: string }; kernel: { id: string } | null }) {
  const fake = new FakeModel<ReplyModel>({
    agent_name: "tidy",
    prompt: "tidy up",
    reply_id: "r3",
    status: "paused",
    status_reason: "",
    transcript: [],
    pauses: [pause({ reply_id: "r3" })],
    cards_seq: 0,
    final_text: "",
    transcript_seq: 0,
    final_entry: "",
    pending: 1,
    _nbh_key: `run-${Math.random()}`,
  });
  if (manager) Object.assign(fake, { widget_manager: manager });
  fake.answer = (m) => (m.action === "ping" ? { live: true, cell: "another" } : liveKernel(m));
  const stop = new AbortController();
  watchWaiting(fake.model, stop.signal, reply.render);
  return { fake, stop };
}

/** Two notebook tabs and their panels as JupyterLab's dock panel draws them. */
function twoNotebooks(): { a: HTMLElement; b: HTMLElement; drop(): void } {
  const made = ["a.ipynb", "b.ipynb"].map((path, i) => {
    const tab = document.createElement("li");
    tab.setAttribute("role", "tab");
    tab.id = `tab-key-9-${i}`;
    tab.title = `Name: ${path}\nPath: ${path}\nLast Saved: today`;
    const panel = document.createElement("div");
    panel.setAttribute("role", "tabpanel");
    panel.setAttribute("aria-labelledby", tab.id);
    document.body.append(tab, panel);
    return [tab, panel];
  });
  return { a: made[0][1], b: made[1][1], drop: () => made.flat().forEach((el) => el.remove()) };
}

const banners = () => document.querySelectorAll('[data-testid="nbh-waiting"]').length;

describe("the waiting banner belongs to its notebook and its kernel", () => {
  test("it is drawn in its own notebook's panel, never over another notebook", async () => {
    const { a, b, drop } = twoNotebooks();
    const manager = { context: { path: "b.ipynb" }, kernel: { id: "k1" } };
    assert.equal(panelOf({ widget_manager: manager } as never), b);
    assert.equal(panelOf({} as never), null, "outside JupyterLab: no panel, the banner goes over the page");
    const { stop } = waitingReply(manager);
    await new Promise((resolve) => setTimeout(resolve, GRACE));
    await settle();
    assert.equal(b.querySelectorAll('[data-testid="nbh-waiting"]').length, 1);
    assert.equal(a.querySelector('[data-testid="nbh-waiting"]'), null);
    assert.equal(b.querySelector('[data-testid="nbh-waiting-region"]')!.classList.contains("nbh-waiting-page"), false);
    stop.abort();
    assert.equal(b.querySelector('[data-testid="nbh-waiting-region"]'), null, "an empty region goes with its last banner");
    drop();
  });

  test("a kernel restart takes the banner away, its card shown or not, and it does not come back", async () => {
    const { fake, stop } = waitingReply();
    await new Promise((resolve) => setTimeout(resolve, GRACE));
    await settle();
    assert.equal(banners(), 1);
    document.querySelector<HTMLButtonElement>('[data-testid="nbh-waiting-show"]')!.click();
    await settle();
    fake.closeComm();
    await settle();
    assert.equal(banners(), 0);
    assert.equal(document.querySelector('[data-testid="nbh-waiting-region"]'), null);
    await new Promise((resolve) => setTimeout(resolve, GRACE));
    assert.equal(banners(), 0, "a reply whose kernel is gone is not waiting for anyone");
    stop.abort();
  });

  test("the notebook now talks to another kernel: the banner goes", async () => {
    const manager: { context: { path: string }; kernel: { id: string } | null } = { context: { path: "c.ipynb" }, kernel: { id: "k1" } };
    const { stop } = waitingReply(manager);
    await new Promise((resolve) => setTimeout(resolve, GRACE));
    await settle();
    assert.equal(banners(), 1);
    manager.kernel = { id: "k2" }; // Kernel > Change Kernel… (the old comm may stay open a while)
    await new Promise((resolve) => setTimeout(resolve, 2100)); // the banner looks again every 2 s
    await settle();
    assert.equal(banners(), 0);
    stop.abort();
  });
});
