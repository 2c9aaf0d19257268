// The kernel's numbered streams (lib/seq_stream.ts): the transcript's ops
// (reply/stream.ts) and the pause cards' ops (reply/feed.ts) applied in
// order; a gap buffers what came early and asks the kernel to sync, then
// replays it; what the page holds is written into its own model.
import { after, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { FakeModel, settle } from "./fake_model";
import { MAX_MESSAGE_BYTES, Rpc } from "../lib/rpc";
import { TranscriptStream, type Changed } from "../reply/stream";
import { CardFeed } from "../reply/feed";
import type { ReplyProtocol, TranscriptOp } from "../messages";
import type { PauseView, ReplyModel, TranscriptEntry } from "../types";

const dom = installDom();
after(() => dom.window.close());

function replyTraits(over: Partial<ReplyModel> = {}): ReplyModel {
  return {
    agent_name: "helper",
    prompt: "",
    reply_id: "r1",
    status: "running",
    status_reason: "",
    transcript: [],
    pauses: [],
    cards_seq: 0,
    final_text: "",
    transcript_seq: 0,
    final_entry: "",
    ...over,
  };
}

const text = (id: string, t: string): TranscriptEntry => ({ kind: "text", id, text: t });
const msg = (seq: number, ...ops: TranscriptOp[]) => ({ type: "nbh_transcript", seq, ops });

describe("transcript ops", () => {
  let fake: FakeModel<ReplyModel>;
  let stream: TranscriptStream;
  let changes: Changed[];
  beforeEach(() => {
    fake = new FakeModel(replyTraits());
    changes = [];
    stream = new TranscriptStream(fake.model, new Rpc<ReplyProtocol>(fake.model), (c) => changes.push(c ? c.map((e) => ({ ...e })) : null));
  });

  test("add, append and set change the entries in op order, each touched entry once", () => {
    fake.emit(msg(1, { op: "add", entry: text("t1", "Hel") }, { op: "append", id: "t1", text: "lo" }, { op: "add", entry: { kind: "tool_call", id: "call:c1", text: "{}", name: "Bash" } }));
    assert.deepEqual(stream.entries.map((e) => [e.id, e.text]), [["t1", "Hello"], ["call:c1", "{}"]]);
    assert.deepEqual(changes[0]?.map((e) => e.id), ["t1", "call:c1"]);
    fake.emit(msg(2, { op: "set", id: "t1", fields: { html: "<p>Hello</p>", agent: "lead" } }, { op: "append", id: "t1", text: "!" }));
    assert.equal(stream.get("t1")?.html, "<p>Hello</p>");
    assert.equal(stream.get("t1")?.agent, "lead");
    assert.equal(stream.get("t1")?.text, "Hello!");
    assert.deepEqual(changes[1]?.map((e) => e.id), ["t1"]);
    assert.equal(stream.seq, 2);
  });

  test("a field set to null is removed (a text that changed after it was rendered)", () => {
    fake.emit(msg(1, { op: "add", entry: { ...text("t1", "a"), html: "<p>a</p>" } }));
    fake.emit(msg(2, { op: "set", id: "t1", fields: { html: null } }));
    assert.equal("html" in stream.get("t1")!, false);
  });

  test("an entry added twice stays one; ops on unknown entries change nothing", () => {
    fake.emit(msg(1, { op: "add", entry: text("t1", "a") }, { op: "add", entry: text("t1", "b") }, { op: "append", id: "nope", text: "x" }));
    assert.deepEqual(stream.entries, [text("t1", "a")]);
    assert.deepEqual(changes[0]?.map((e) => e.id), ["t1"]);
  });

  test("the last text entry is tracked as entries come", () => {
    fake.emit(msg(1, { op: "add", entry: text("t1", "a") }, { op: "add", entry: { kind: "note", id: "n", text: "x" } }, { op: "add", entry: text("t2", "b") }));
    assert.equal(stream.lastText()?.id, "t2");
  });

  test("messages of other streams and malformed ones are ignored", () => {
    fake.emit({ type: "nbh_cards", seq: 1, ops: [] });
    fake.emit({ type: "nbh_transcript", seq: "1", ops: [] });
    fake.emit({ type: "nbh_transcript", seq: 1 });
    fake.emit(null);
    assert.equal(stream.seq, 0);
    assert.equal(fake.sent.length, 0);
  });
});

describe("seq_stream gaps", () => {
  test("a message after a gap is buffered, the page syncs and replays it", async () => {
    const fake = new FakeModel(replyTraits());
    const stream = new TranscriptStream(fake.model, new Rpc<ReplyProtocol>(fake.model), () => undefined);
    fake.emit(msg(1, { op: "add", entry: text("t1", "a") }));
    fake.answer = (m) => (m.action === "transcript_sync" ? { seq: 2, entries: [text("t1", "ab"), text("t2", "c")] } : null);
    fake.emit(msg(3, { op: "append", id: "t2", text: "d" }));
    assert.equal(stream.seq, 1, "nothing applied past the gap");
    assert.deepEqual(fake.actions("transcript_sync").map((m) => m.seq), [1]);
    await settle();
    assert.equal(stream.seq, 3);
    assert.deepEqual(stream.entries.map((e) => e.text), ["ab", "cd"]);
    assert.equal(stream.resyncs, 1);
    // the sync is written at once: a notebook saved now holds it
    assert.equal(fake.get("transcript_seq"), 3);
    assert.deepEqual(fake.get("transcript").map((e) => e.text), ["ab", "cd"]);
  });

  test("a message the page already holds is skipped", () => {
    const fake = new FakeModel(replyTraits({ transcript: [text("t1", "a")], transcript_seq: 4 }));
    const stream = new TranscriptStream(fake.model, new Rpc<ReplyProtocol>(fake.model), () => undefined);
    fake.emit(msg(4, { op: "append", id: "t1", text: "again" }));
    assert.equal(stream.get("t1")?.text, "a");
    assert.equal(fake.sent.length, 0);
  });

  test("an unknown seq (a widget saved before it was kept) syncs before applying anything", () => {
    const traits = replyTraits();
    delete (traits as Partial<ReplyModel>).transcript_seq;
    const fake = new FakeModel(traits);
    const stream = new TranscriptStream(fake.model, new Rpc<ReplyProtocol>(fake.model), () => undefined);
    assert.equal(stream.seq, -1);
    fake.emit(msg(1, { op: "add", entry: text("t1", "a") }));
    assert.equal(fake.actions("transcript_sync").length, 1);
    assert.deepEqual(stream.entries, []);
  });

  test("still a gap after the sync: the rest is kept and the page asks again", async () => {
    const fake = new FakeModel(replyTraits());
    const stream = new TranscriptStream(fake.model, new Rpc<ReplyProtocol>(fake.model), () => undefined);
    fake.answer = (m) => (m.action === "transcript_sync" && m.seq === 0 ? { seq: 2, entries: [text("t1", "a"), text("t2", "b")] } : null);
    fake.emit(msg(2, { op: "add", entry: text("t2", "b") }));
    fake.emit(msg(4, { op: "add", entry: text("t4", "d") }));
    await settle();
    assert.equal(stream.seq, 2);
    assert.deepEqual(fake.actions("transcript_sync").map((m) => m.seq), [0, 2]);
    assert.equal(stream.get("t4"), undefined);
  });

  test("take(current) keeps what the page holds; take(sent) asks only when the page missed messages", async () => {
    const fake = new FakeModel(replyTraits({ transcript: [text("t1", "a")], transcript_seq: 2 }));
    const stream = new TranscriptStream(fake.model, new Rpc<ReplyProtocol>(fake.model), () => undefined);
    stream.take({ seq: 2, current: true });
    assert.deepEqual(stream.entries, [text("t1", "a")]);
    stream.take({ seq: 2, sent: true });
    assert.equal(fake.actions("transcript_sync").length, 0);
    stream.take({ seq: 5, sent: true });
    assert.equal(fake.actions("transcript_sync").length, 1);
  });

  test("the page's own write of its record is not read back as the kernel's", () => {
    const fake = new FakeModel(replyTraits());
    const stream = new TranscriptStream(fake.model, new Rpc<ReplyProtocol>(fake.model), () => undefined);
    const read: boolean[] = [];
    fake.on("change:transcript", () => read.push(stream.fromTrait()));
    fake.emit(msg(1, { op: "add", entry: text("t1", "a") }));
    stream.saveNow();
    assert.deepEqual(read, [false]);
    fake.set("transcript", [text("k", "from the kernel")]);
    assert.deepEqual(read, [false, true]);
    assert.equal(stream.get("k")?.text, "from the kernel");
  });
});

describe("two views of one widget (each applies every message; each writes the model they share)", () => {
  // a view as the page draws it: its stream, and the model's record read when another view writes it
  function view(fake: FakeModel<ReplyModel>): TranscriptStream {
    const stream = new TranscriptStream(fake.model, new Rpc<ReplyProtocol>(fake.model), () => undefined);
    fake.on("change:transcript", () => stream.fromTrait());
    return stream;
  }

  test("the record written holds the entries at the seq written, not as the writer changes them after", () => {
    const fake = new FakeModel(replyTraits());
    const a = view(fake);
    fake.emit(msg(1, { op: "add", entry: text("t1", "a") }));
    a.saveNow();
    fake.emit(msg(2, { op: "append", id: "t1", text: "b" }));
    assert.equal(fake.get("transcript_seq"), 1);
    assert.deepEqual(fake.get("transcript").map((e) => e.text), ["a"]);
    // a view drawn now starts from that pair, and takes the rest from the kernel
    const b = view(fake);
    assert.equal(b.seq, 1);
    assert.deepEqual(b.entries.map((e) => e.text), ["a"]);
  });

  test("a record another view wrote at a later seq is taken with its seq: the messages it includes are not applied again", () => {
    const fake = new FakeModel(replyTraits());
    const b = view(fake);
    fake.emit(msg(1, { op: "add", entry: text("t1", "w1 ") }));
    // another view, one message further, writes what it holds
    fake.set("transcript_seq", 2);
    fake.set("transcript", [text("t1", "w1 w2 ")]);
    fake.emit(msg(2, { op: "append", id: "t1", text: "w2 " }));
    fake.emit(msg(3, { op: "append", id: "t1", text: "w3 " }));
    assert.equal(b.get("t1")?.text, "w1 w2 w3 ");
    assert.equal(b.seq, 3);
    assert.equal(fake.actions("transcript_sync").length, 0);
  });

  test("a record older than the messages a view applied is not taken (nothing it applied is lost)", () => {
    const fake = new FakeModel(replyTraits());
    const b = view(fake);
    fake.emit(msg(1, { op: "add", entry: text("t1", "w1 ") }));
    fake.emit(msg(2, { op: "append", id: "t1", text: "w2 " }));
    fake.set("transcript_seq", 1);
    fake.set("transcript", [text("t1", "w1 ")]);
    fake.emit(msg(3, { op: "append", id: "t1", text: "w3 " }));
    assert.equal(b.get("t1")?.text, "w1 w2 w3 ");
  });

  test("two views writing in turn while the stream goes on end with the kernel's text, each", () => {
    const fake = new FakeModel(replyTraits());
    const a = view(fake);
    const b = view(fake);
    let whole = "";
    for (let seq = 1; seq <= 40; seq++) {
      const word = `w${seq} `;
      whole += word;
      fake.emit(msg(seq, seq === 1 ? { op: "add", entry: text("t1", word) } : { op: "append", id: "t1", text: word }));
      if (seq % 3 === 0) a.saveNow();
      if (seq % 5 === 0) b.saveNow();
    }
    assert.equal(a.get("t1")?.text, whole);
    assert.equal(b.get("t1")?.text, whole);
    assert.equal(fake.actions("transcript_sync").length, 0);
  });
});

describe("pause card ops", () => {
  const view = (id: string, status: PauseView["status"] = "open") => ({ tool_call_id: id, reply_id: "r1", kind: "confirm", status }) as PauseView;
  const cards = (seq: number, ops: unknown[]) => ({ type: "nbh_cards", seq, ops });

  test("a new card is appended, a known one replaced, a dropped one removed", () => {
    const fake = new FakeModel(replyTraits({ pauses: [view("a")], cards_seq: 1 }));
    const changed: (string[] | null)[] = [];
    const feed = new CardFeed(fake.model, new Rpc<ReplyProtocol>(fake.model), (ids) => changed.push(ids));
    fake.emit(cards(2, [{ op: "card", view: view("b") }, { op: "card", view: view("a", "decided") }]));
    assert.deepEqual(feed.all().map((p) => [p.tool_call_id, p.status]), [["a", "decided"], ["b", "open"]]);
    assert.equal(feed.position("b"), 1);
    fake.emit(cards(3, [{ op: "drop", id: "a" }]));
    assert.deepEqual(feed.all().map((p) => p.tool_call_id), ["b"]);
    assert.equal(feed.position("b"), 0);
    assert.equal(feed.position("a"), -1);
    assert.deepEqual(changed, [["b", "a"], ["a"]]);
  });

  test("a card added or dropped is in the page's record at once (the kernel never sends the whole list); a changed one soon", () => {
    const fake = new FakeModel(replyTraits({ pauses: [view("a")], cards_seq: 1 }));
    const feed = new CardFeed(fake.model, new Rpc<ReplyProtocol>(fake.model), () => undefined);
    fake.emit(cards(2, [{ op: "card", view: view("b") }]));
    assert.deepEqual((fake.get("pauses") as PauseView[]).map((p) => p.tool_call_id), ["a", "b"]);
    assert.equal(fake.get("cards_seq"), 2);
    fake.emit(cards(3, [{ op: "card", view: view("a", "decided") }]));
    assert.equal(fake.get("cards_seq"), 2, "a change alone is written with the next coalesced write");
    fake.emit(cards(4, [{ op: "drop", id: "b" }]));
    assert.deepEqual((fake.get("pauses") as PauseView[]).map((p) => [p.tool_call_id, p.status]), [["a", "decided"]]);
    assert.equal(fake.get("cards_seq"), 4);
    feed.dispose();
  });

  test("a save asked for before a record just sent was read keeps that record (a remote reply: cards and status in one update)", async () => {
    const fake = new FakeModel(replyTraits({ cards_seq: 0 }));
    const feed = new CardFeed(fake.model, new Rpc<ReplyProtocol>(fake.model), () => undefined);
    fake.set("pauses", [view("a"), view("b")]); // its change is read in a microtask
    feed.saveNow(); // the status change of the same update saves first
    await settle();
    assert.deepEqual(feed.all().map((p) => p.tool_call_id), ["a", "b"]);
    assert.deepEqual((fake.get("pauses") as PauseView[]).map((p) => p.tool_call_id), ["a", "b"]);
    // the status's change event before the record's: the value is in the model, its event not fired yet
    fake.setBeforeItsEvent("pauses", [view("c")]);
    feed.saveNow();
    assert.deepEqual(feed.all().map((p) => p.tool_call_id), ["c"]);
    assert.deepEqual((fake.get("pauses") as PauseView[]).map((p) => p.tool_call_id), ["c"]);
    feed.dispose();
  });

  test("the trait is taken unless the card messages applied are newer", async () => {
    const fake = new FakeModel(replyTraits({ cards_seq: 0 }));
    const feed = new CardFeed(fake.model, new Rpc<ReplyProtocol>(fake.model), () => undefined);
    fake.emit(cards(1, [{ op: "card", view: view("a") }]));
    fake.emit(cards(2, [{ op: "card", view: view("b") }]));
    fake.set("pauses", [view("a")]);
    fake.set("cards_seq", 1);
    await settle();
    assert.deepEqual(feed.all().map((p) => p.tool_call_id), ["a", "b"], "an older trait is not taken");
    fake.set("pauses", [view("c")]);
    fake.set("cards_seq", 5);
    await settle();
    assert.deepEqual(feed.all().map((p) => p.tool_call_id), ["c"]);
    assert.equal(feed.seq, 5);
  });
});

describe("rpc: a message too large for the kernel's websocket", () => {
  test("is refused in the page, nothing sent, and the next message goes as usual", async () => {
    const fake = new FakeModel(replyTraits());
    const rpc = new Rpc<ReplyProtocol>(fake.model);
    fake.answer = () => ({});
    // 3 MiB of a 3-byte character: 9 MiB of UTF-8, though its JSON has 3 M characters
    const input = JSON.stringify({ path: "\u20ac".repeat(3 * 1024 * 1024) });
    const refused = await rpc.request("modify", { input, tool_call_id: "c1" } as never);
    assert.equal(refused.ok, false);
    assert.equal(!refused.ok && refused.code, "too_large");
    assert.match(!refused.ok ? refused.error : "", /^This is too large to send to the kernel: 9\.0 MB, and a message carries at most 8\.0 MB\. Nothing was sent/);
    assert.equal(fake.actions("modify").length, 0);
    assert.equal(rpc.waiting, false);
    const small = await rpc.request("modify", { input: '{"path": "a"}', tool_call_id: "c1" } as never);
    assert.equal(small.ok, true);
    assert.equal(fake.actions("modify").length, 1);
    assert.ok(MAX_MESSAGE_BYTES < 10 * 1024 * 1024);
  });
});
