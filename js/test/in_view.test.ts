// A card that waits for the person comes into view once, when out of sight
// (Run All leaves the notebook scrolled to its last cell): never when it is in
// sight, not laid out, decided, or already brought into view once.
import { after, afterEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, pause } from "./page";
import { holdInPlace } from "../lib/in_view";

const dom = installDom();
after(() => dom.window.close());

// jsdom lays nothing out: each card gets the top given here (px from the window's top), 200 px tall
let cardTop = 2000;
let laidOut = true;
const scrolled: string[] = [];
const proto = window.HTMLElement.prototype as unknown as Record<string, unknown>;
const realRect = proto.getBoundingClientRect;
proto.getBoundingClientRect = function (this: HTMLElement) {
  const isCard = this.dataset.testid === "nbh-card" && laidOut;
  const top = isCard ? cardTop : 0;
  const height = isCard ? 200 : 0;
  return { top, bottom: top + height, height, left: 0, right: isCard ? 600 : 0, width: isCard ? 600 : 0, x: 0, y: top };
};
proto.scrollIntoView = function (this: HTMLElement) {
  scrolled.push(this.dataset.toolCallId || "?");
  cardTop = 10; // where a scroll puts it
};
after(() => {
  proto.getBoundingClientRect = realRect;
  delete proto.scrollIntoView;
});
afterEach(() => {
  scrolled.length = 0;
  cardTop = 2000;
  laidOut = true;
});

const frames = () => new Promise((resolve) => setTimeout(resolve, 120));

describe("an open card out of sight comes into view once", () => {
  test("scrolled to when the kernel is live, and not again on a redraw", async () => {
    const page = await drawReply([pause({ tool_call_id: "c1" }), pause({ tool_call_id: "c2" })]);
    await frames();
    assert.deepEqual(scrolled, ["c1"]); // the first; the second is then in sight
    cardTop = 2000; // the person scrolls away
    page.fake.set("pauses", [pause({ tool_call_id: "c1", title: "again" }), pause({ tool_call_id: "c2", title: "again" })]);
    await settle();
    await frames();
    assert.deepEqual(scrolled, ["c1"]);
    page.close();
  });

  test("not scrolled when in sight, decided, or not laid out", async () => {
    cardTop = 100;
    const inSight = await drawReply([pause()]);
    await frames();
    inSight.close();
    cardTop = 2000;
    const decided = await drawReply([pause({ status: "delivered", decision: { action: "approve" } })], { status: "finished" });
    await frames();
    decided.close();
    laidOut = false; // a notebook in a tab behind another
    const hidden = await drawReply([pause()]);
    await frames();
    hidden.close();
    assert.deepEqual(scrolled, []);
  });
});

describe("a card brought into view is held there while the page settles", () => {
  /** A card whose top the test moves, in a box that scrolls: the box's scroll moves the card back. */
  function world() {
    const box = document.createElement("div");
    const el = document.createElement("div");
    box.appendChild(el);
    document.body.appendChild(box);
    let shift = 0; // how far cells drawn above have pushed the card (px)
    let scrollTop = 0;
    Object.defineProperty(box, "scrollTop", { get: () => scrollTop, set: (v: number) => (scrollTop = v) });
    el.getBoundingClientRect = () => {
      const top = 300 + shift - scrollTop;
      return { top, bottom: top + 100, height: 100, left: 0, right: 600, width: 600, x: 0, y: top, toJSON: () => "" };
    };
    return { box, el, push: (px: number) => (shift += px), top: () => el.getBoundingClientRect().top };
  }

  test("cells drawn above push the card: the box scrolls it back to where it landed", async () => {
    const w = world();
    holdInPlace(w.el, w.box, 5_000);
    w.push(85); // the cells above it drawn at their real height
    await frames();
    assert.equal(w.top(), 300);
    w.push(-6);
    await frames();
    assert.equal(w.top(), 300);
    w.box.remove();
  });

  test("the person's own input ends the hold, and so does a new card brought into view", async () => {
    const w = world();
    holdInPlace(w.el, w.box, 5_000);
    window.dispatchEvent(new window.Event("wheel"));
    w.push(85);
    await frames();
    assert.equal(w.top(), 385); // the scroll is the person's now
    const a = world();
    const b = world();
    holdInPlace(a.el, a.box, 5_000);
    holdInPlace(b.el, b.box, 5_000); // the last one brought is the one held
    a.push(40);
    b.push(40);
    await frames();
    assert.deepEqual([a.top(), b.top()], [340, 300]);
    for (const x of [w, a, b]) x.box.remove();
  });

  test("a card answered meanwhile is no longer held", async () => {
    const w = world();
    let waits = true;
    holdInPlace(w.el, w.box, 5_000, () => waits);
    w.push(20);
    await frames();
    assert.equal(w.top(), 300);
    waits = false; // answered: a click, or a cell that answers from code
    await frames();
    w.push(50);
    await frames();
    assert.equal(w.top(), 350);
    w.box.remove();
  });

  test("the hold ends after its time", async () => {
    const w = world();
    holdInPlace(w.el, w.box, 30);
    await frames();
    w.push(50);
    await frames();
    assert.equal(w.top(), 350);
    w.box.remove();
  });
});
