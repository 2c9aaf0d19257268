// The page side of nb_hitl's ReplyWidget: a live transcript of one agent
// reply with its pauses drawn inline, one card per pause (card.ts, and
// cards/ for what each pause kind adds). Everything from the agent or the
// model is set with textContent (lib/dom.ts), or is the kernel's sanitised
// Markdown, sanitised again in the page (lib/safe_html.ts); the theme ships once per
// kernel with the page code (lib/theme.css, widgets/_page_code.py).
import type { AnyModel, Render } from "@anywidget/types";
import { h, clear } from "../lib/dom";
import { Rpc, probe, KERNEL_GONE } from "../lib/rpc";
import { Announcer, keepKeys } from "../lib/a11y";
import { safeFragment } from "../lib/safe_html";
import { notifyBlocked, notifyOn, notifySupported, notifyWaiting, toggleNotify } from "../lib/notify";
import type { ReplyProtocol } from "../messages";
import type { PauseView, ReplyModel } from "../types";
import { Transcript } from "./transcript";
import { TranscriptStream, markWaiting, type Changed } from "./stream";
import { CardSet } from "./card";
import { timeLeft } from "./record";
import { CardFeed } from "./feed";
import { noteView, watchWaiting } from "./waiting_banner";
import { WhatIf } from "./whatif";

const STATUS_TEXT: Record<string, string> = {
  running: "running",
  paused: "waiting for you",
  finished: "finished",
  interrupted: "interrupted",
  expired: "expired",
  error: "error",
};

/** The header chip's text: a paused reply "waits for you" only over a card to answer. */
export function statusText(status: string, openCards: number): string {
  if (status === "paused" && !openCards) return "paused (no card to answer has arrived)";
  return STATUS_TEXT[status] || status;
}

/** What the header chip says, and what the page announces of the reply: "not live" once the
 *  kernel that runs a running or paused reply is gone or silent, never "waiting for you" then. */
export function chipText(status: string, openCards: number, live: boolean | null): string {
  return live === false && (status === "running" || status === "paused") ? "not live" : statusText(status, openCards);
}

function drawHeader(
  header: HTMLElement,
  model: AnyModel<ReplyModel>,
  rpc: Rpc<ReplyProtocol>,
  live: boolean | null,
  openCards: number,
  showBanner: (t: string) => void,
): void {
  clear(header);
  const status = String(model.get("status") || "");
  header.append(
    h("span", { class: "nbh-title" }, String(model.get("agent_name") || "agent")),
    model.get("prompt") ? h("span", { class: "nbh-muted" }, `← ${model.get("prompt")}`) : "",
    h(
      "span",
      { class: "nbh-chip", "data-testid": "nbh-status", "data-status": live === false && (status === "running" || status === "paused") ? "not-live" : status },
      chipText(status, openCards, live),
    ),
  );
  if (status === "running" || status === "paused") {
    header.append(
      h(
        "button",
        {
          "data-testid": "nbh-interrupt",
          disabled: live === false,
          onclick: async () => {
            const reply = await rpc.request("interrupt", {});
            if (!reply.ok) showBanner(reply.error || "Could not interrupt.");
          },
        },
        "Interrupt",
      ),
    );
  }
  if ((status === "running" || status === "paused") && notifySupported()) {
    const on = notifyOn();
    header.append(
      h(
        "button",
        {
          "data-testid": "nbh-notify",
          "aria-pressed": on ? "true" : "false",
          // nothing will wait for anyone while the kernel is not live
          disabled: live === false,
          title: "Tell me outside this tab when a reply waits for me (browser notification)",
          onclick: async () => {
            await toggleNotify();
            header.dataset.notifyAsked = "1";
            drawHeader(header, model, rpc, live, openCards, showBanner);
          },
        },
        on ? "Notifying" : "Notify me",
      ),
    );
    // a click that could not turn them on says why, where the person clicked
    if (!on && header.dataset.notifyAsked && notifyBlocked()) {
      header.append(
        h(
          "span",
          { class: "nbh-warn", role: "status", "data-testid": "nbh-notify-blocked" },
          "This browser blocks notifications for this page: allow them in its site settings, then press Notify me again.",
        ),
      );
    }
  }
  const reason = String(model.get("status_reason") || "");
  if (reason && status !== "running" && status !== "paused") header.append(h("span", { class: "nbh-muted" }, reason));
}

/** The notification of a reply that starts waiting: who waits and for which calls. */
function waitingNote(model: AnyModel<ReplyModel>, pauses: PauseView[]): [string, string] {
  const names = pauses.filter((p) => p.status === "open").map((p) => p.tool_name);
  const agent = String(model.get("agent_name") || "The agent");
  return [`${agent} is waiting for you`, names.length ? `To answer: ${names.join(", ")}` : "A pause needs your answer."];
}

const render: Render<ReplyModel> = ({ model, el }) => {
  // a decision keeps waiting for the kernel's answer (never "nothing was
  // sent" about a click the kernel may still apply); see lib/rpc.ts
  const rpc = new Rpc<ReplyProtocol>(model, 15000, true);
  const root = h("div", { class: "nbh nbh-reply", "data-testid": "nbh-reply", "data-nbh-key": String(model.get("_nbh_key") || "") });
  const banner = h("div", { class: "nbh-banner", "data-testid": "nbh-live-banner", role: "status", hidden: true });
  const header = h("div", { class: "nbh-row" });
  const groupBar = h("div", { class: "nbh-row", "data-testid": "nbh-group", hidden: true });
  // outside the bar: the bar is redrawn (and hidden with one call left) as
  // the sent cards change state, and the note must stay readable
  const groupNote = h("div", { class: "nbh-muted", "data-testid": "nbh-group-note", "aria-live": "polite" });
  // "Show all" on an entry the kernel sent a part of: the rest is in the kernel only
  const transcript = new Transcript(async (id) => {
    if (cards.live === false)
      return { error: "The rest of this text is in the kernel that ran this reply, and that kernel is not live." };
    const reply = await rpc.request("entry_text", { id }, { timeoutMs: 10000 });
    return reply.ok ? { text: String(reply.text ?? "") } : { error: reply.error || "Could not get the whole text." };
  });
  const looseCards = h("div", { class: "nbh-loose" });
  const pager = h("div", { class: "nbh-row", "data-testid": "nbh-pager", hidden: true });
  const finalEl = h("div", { class: "nbh-final", "data-testid": "nbh-final" });
  const announcer = new Announcer();
  // "Replay" / "What if…" on a finished reply, and the replies they start, below it
  const whatIf = new WhatIf(model, rpc, () => cards.live);
  root.append(announcer.el, banner, header, groupBar, groupNote, transcript.el, looseCards, pager, finalEl, whatIf.el);
  // the notebook's shortcuts must not take the keys of the cards' controls
  keepKeys(root);
  el.append(root);
  const forgetView = noteView(String(model.get("_nbh_key") || ""), root);

  // an open pause's deadline counts down once a second; the timer runs only
  // while the view shows one (a notebook of ended replies keeps no timers)
  let timer = 0;
  const tickDeadlines = () => {
    const spans = Array.from(root.querySelectorAll<HTMLElement>("[data-deadline]"));
    for (const span of spans) span.textContent = timeLeft(Number(span.dataset.deadline));
    if (!spans.length) {
      window.clearInterval(timer);
      timer = 0;
    }
  };
  const armDeadlines = () => {
    if (!timer && root.querySelector("[data-deadline]")) timer = window.setInterval(tickDeadlines, 1000);
  };

  const say = (text: string) => announcer.say(text);
  // the reply's status as the header chip says it (a kernel gone: "not live", not "waiting for you")
  const sayStatus = () => say(`${model.get("agent_name") || "agent"}: ${chipText(String(model.get("status") || ""), openCards(), cards.live)}`);
  // the cards stream as custom messages too (feed.ts): a change redraws only its card
  const feed = new CardFeed(model, rpc, (ids) => {
    if (ids) cards.drawSome(ids);
    else cards.drawAll();
    // the header says "waiting for you" only while a card can be answered
    if ((openCards() > 0) !== headerOpen) header_();
    markTitle();
    fromKernel();
  });
  const openCards = () => feed.all().filter((p) => p.status === "open").length;
  const cards = new CardSet(feed, rpc, { slotFor: (id) => transcript.slotFor(id), loose: looseCards, drawn: armDeadlines }, groupBar, groupNote, pager, say);

  const showBanner = (text: string) => {
    banner.hidden = false;
    banner.textContent = text;
  };
  // the transcript streams as custom messages (stream.ts); the trait is the saved record
  // a stream message redraws only the entries it changed (a sync: all of them)
  const onStream = (changed: Changed) => {
    transcript.draw(changed || entries());
    cards.place();
    drawFinal();
  };
  const stream = new TranscriptStream(model, rpc, (changed) => onStream(changed));
  const entries = () => stream.entries;
  let headerOpen = false;
  const header_ = () => {
    const open = openCards();
    headerOpen = open > 0;
    drawHeader(header, model, rpc, cards.live, open, showBanner);
  };
  let shownFinal: { text: string; html?: string } = { text: "" };
  const drawFinal = () => {
    const last = stream.lastText();
    // the final message is the last text block: shown with that block's Markdown, once rendered;
    // a block the kernel sent a part of is the final message in place, with its "Show all"
    const text = last?.more && stream.finalText() === last.text ? "" : stream.finalText();
    // the last text block's rendering when the final message is that block; else the
    // kernel's rendering of the message itself (`final_html`, sanitised again here)
    const html = transcript.hideRepeatedFinal(last, text) ?? (String(model.get("final_html") || "") || undefined);
    if (text === shownFinal.text && html === shownFinal.html) return;
    shownFinal = { text, html };
    finalEl.textContent = "";
    if (!text) return;
    const box = h("div", { class: html === undefined ? "nbh-ok" : "nbh-ok nbh-md", "data-testid": "nbh-final-text" });
    if (html === undefined) box.textContent = text;
    else box.append(safeFragment(html));
    finalEl.append(box);
  };
  const drawAll = () => {
    header_();
    whatIf.draw();
    transcript.draw(entries());
    cards.drawAll();
    drawFinal();
  };

  model.on("change:transcript", () => {
    if (!stream.fromTrait()) return; // the page's own write of what it holds
    transcript.draw(entries());
    cards.place();
    drawFinal();
  });
  const markTitle = () => markWaiting(root, model.get("status") === "paused" && cards.live !== false && openCards() > 0);
  let lastStatus = String(model.get("status") || "");
  model.on("change:status", () => {
    markTitle();
    const now = String(model.get("status") || "");
    if (now === "paused" && lastStatus !== "paused") {
      const [title, body] = waitingNote(model, feed.all());
      notifyWaiting(title, body, String(model.get("reply_id") || title));
    }
    lastStatus = now;
    // a reply that stopped (ended, or waits for a person): its record is saved as it stands
    if (now !== "running") {
      stream.saveNow();
      feed.saveNow();
    }
    sayStatus();
    header_();
    whatIf.draw();
    cards.drawAll();
  });
  model.on("change:status_reason", header_);
  model.on("change:final_text", drawFinal);
  model.on("change:final_html", drawFinal);
  model.on("change:final_entry", () => {
    drawFinal();
    stream.saveNow();
  });
  model.on("change:agent_name", header_);
  model.on("change:replay", () => whatIf.draw());
  model.on("change:nested", () => whatIf.drawNested());
  drawAll();
  whatIf.drawNested();
  markTitle();


  // Liveness: a ping answered means live; a send that fails means the
  // widget's comm is gone (the kernel restarted or stopped: final); no answer
  // means "not answering" (a blocking cell, or a notebook reopened without
  // its kernel), checked again every few seconds, since a busy kernel is not
  // a dead one. Any message from the kernel also proves it live.
  let disposed = false;
  let recheck = 0;
  const setLive = (state: "live" | "silent" | "gone") => {
    const was = cards.live;
    // shown over the open cards as they stand: none is rebuilt, so what a person typed or
    // chose there (and its focus and caret) outlives a kernel slow to answer
    cards.setLiveness(state);
    root.dataset.live = String(cards.live);
    root.dataset.kernel = state;
    if (state === "live") {
      if (!banner.dataset.slow) banner.hidden = true;
    } else if (state === "gone") {
      window.clearTimeout(recheck);
      delete banner.dataset.slow;
      showBanner(`No longer live: ${KERNEL_GONE}`);
    } else {
      showBanner(
        "Not answering: the kernel that ran this reply does not answer. It may be busy running a cell that blocks, or it stopped or restarted (a kernel started since does not know this reply); this is the saved record of what was pending or decided. This page checks again every few seconds.",
      );
    }
    markTitle();
    if (was === null) cards.liveKnown();
    if (was !== cards.live) {
      // the announced status follows the chip (it said "waiting for you" before the kernel went)
      if (was !== null) sayStatus();
      drawAll();
    }
  };
  // the transcript and the cards are brought in step once the kernel answers
  let synced = false;
  const resync = () => {
    if (synced || rpc.gone) return;
    synced = true;
    void stream.resync();
    void feed.resync();
  };
  const check = async () => {
    if (disposed || rpc.gone) return;
    window.clearTimeout(recheck);
    const state = await probe(rpc);
    if (disposed) return;
    if (cards.live !== true || state !== "live") setLive(state);
    if (state === "live") resync();
    if (state === "silent") recheck = window.setTimeout(check, 3000);
  };
  // On connect, one request does both: it tells a live kernel (any answer)
  // and brings the transcript and the cards in step ("sync"; the kernel
  // answers "current" for what the page holds at its seq already).
  const connect = async () => {
    const reply = await rpc.request("sync", { transcript_seq: stream.seq, cards_seq: feed.seq }, { timeoutMs: 4000 });
    if (disposed) return;
    if (!reply.ok && (reply.code === "no_kernel" || reply.code === "no_answer")) {
      setLive(reply.code === "no_kernel" ? "gone" : "silent");
      if (reply.code === "no_answer") recheck = window.setTimeout(check, 3000);
      return;
    }
    if (cards.live !== true) setLive("live");
    synced = true;
    // every owner (a local session, the AG-UI client, the service console) answers both streams
    if (reply.ok) {
      stream.take(reply.transcript);
      feed.take(reply.cards);
    }
  };
  rpc.onAnswer = () => {
    if (cards.live !== true && !rpc.gone) setLive("live");
    if (!rpc.waiting && banner.dataset.slow) {
      delete banner.dataset.slow;
      if (cards.live) banner.hidden = true;
    }
  };
  rpc.onGone = () => setLive("gone");
  rpc.onSlow = () => {
    if (rpc.gone) return;
    banner.dataset.slow = "1";
    showBanner(
      "Still waiting for the kernel: it has not answered yet (it may be busy running a cell). Your click is on its way and is applied when the kernel gets to it.",
    );
    void check();
  };
  // the widget's comm closes when its kernel restarts or stops
  // (@jupyter-widgets/base triggers "comm_live_update" on every model when
  // its kernel restarts or disconnects)
  model.on("comm_live_update" as any, () => void check());
  // a trait change from the kernel: it is live
  function fromKernel(): void {
    if (cards.live === false && !rpc.gone) void check();
  }
  model.on("change:status", fromKernel);
  void connect();

  return () => {
    disposed = true;
    forgetView();
    window.clearTimeout(recheck);
    window.clearInterval(timer);
    stream.dispose();
    feed.dispose();
    transcript.dispose();
    whatIf.dispose();
    markWaiting(root, false);
    rpc.dispose();
  };
};

/** Once per model, view or not: a reply that waits with no view gets a banner (waiting_banner.ts). */
function initialize({ model, signal }: { model: AnyModel<ReplyModel>; signal?: AbortSignal }): void {
  watchWaiting(model, signal, render);
}

export default { initialize, render };
