// "Replay" and "What if…" on a finished reply, and the replies they start,
// drawn below it (nb_hitl/session/_whatif.py). A click sends a typed request
// over the reply's comm; the kernel plays the replay or the fork in the
// background as a new reply widget and names it in this reply's `nested`
// trait; each is drawn here as a view of that widget's model, made by the
// page's widget manager. Past pauses are named by their tool and a summary of
// their input, never by their ids. Every string from the kernel is text.
import type { AnyModel } from "@anywidget/types";
import { h, clear } from "../lib/dom";
import type { Rpc } from "../lib/rpc";
import type { ReplyProtocol, WhatIfChoice } from "../messages";
import type { NestedReply, ReplayOffer, ReplyModel } from "../types";

const PREFIX = "IPY_MODEL_";

/** A view the widget manager made (an ipywidgets view: its element, and how to take it down). */
interface ChildView {
  el: HTMLElement;
  remove(): void;
}

/** The part of the page's widget manager a nested reply needs (ipywidgets' manager has both). */
interface ViewMaker {
  get_model(id: string): Promise<unknown>;
  create_view?(model: unknown): Promise<ChildView>;
}

/** The offer a reply's `replay` trait holds, read defensively. */
export function readOffer(value: unknown): ReplayOffer {
  if (!value || typeof value !== "object") return {};
  const { ready, reason } = value as ReplayOffer;
  return { ready: ready === true, reason: typeof reason === "string" ? reason : undefined };
}

/** The nested replies a reply's `nested` trait names, read defensively. */
export function readNested(value: unknown): NestedReply[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (n): n is NestedReply => !!n && typeof n.ref === "string" && n.ref.startsWith(PREFIX) && typeof n.title === "string",
  );
}

export class WhatIf {
  readonly el = h("div", { class: "nbh-whatif", "data-testid": "nbh-whatif" });
  private bar = h("div", { class: "nbh-row", "data-testid": "nbh-replay-bar" });
  private note = h("div", { class: "nbh-muted", "data-testid": "nbh-whatif-note", role: "status" });
  private panel = h("div", { class: "nbh-card", "data-testid": "nbh-whatif-panel", hidden: true });
  private nestedEl = h("div", { "data-testid": "nbh-nested" });
  private views = new Map<string, Promise<ChildView | null>>();
  private busy = false;
  private disposed = false;

  constructor(
    private model: AnyModel<ReplyModel>,
    private rpc: Rpc<ReplyProtocol>,
    private live: () => boolean | null,
  ) {
    this.el.append(this.bar, this.note, this.panel, this.nestedEl);
  }

  /** The buttons: shown on a finished reply whose session keeps a record; disabled, saying why, when it cannot be replayed. */
  draw(): void {
    clear(this.bar);
    const offer = readOffer(this.model.get("replay"));
    const finished = String(this.model.get("status") || "") === "finished";
    if (!finished || (!offer.ready && !offer.reason)) {
      this.panel.hidden = true;
      return;
    }
    const gone = this.live() === false;
    const why = offer.reason || (gone ? "The kernel that ran this reply is not live, so it cannot play it again." : "");
    const off = !offer.ready || gone || this.busy;
    this.bar.append(
      h(
        "button",
        { "data-testid": "nbh-replay", disabled: off, title: why || "Play this reply again from the record, below it: nothing runs", onclick: () => void this.replay() },
        "Replay",
      ),
      h(
        "button",
        { "data-testid": "nbh-what-if", disabled: off, title: why || "Go back to one of this reply's pauses and answer it differently", onclick: () => void this.openList() },
        "What if…",
      ),
    );
    if (why) this.bar.append(h("span", { class: "nbh-muted", "data-testid": "nbh-replay-reason" }, why));
  }

  private say(text: string, error = false): void {
    this.note.className = error ? "nbh-error" : "nbh-muted";
    this.note.textContent = text;
  }

  private async run<T>(work: () => Promise<T>): Promise<T | undefined> {
    if (this.busy) return undefined;
    this.busy = true;
    this.draw();
    try {
      return await work();
    } finally {
      this.busy = false;
      if (!this.disposed) this.draw();
    }
  }

  private async replay(): Promise<void> {
    this.say("Starting the replay…");
    const reply = await this.run(() => this.rpc.request("replay", {}, { timeoutMs: 20000 }));
    if (!reply || this.disposed) return;
    if (reply.ok) this.say(`Playing below: ${reply.started || "the replay"}.`);
    else this.say(reply.error || "Could not start the replay.", true);
  }

  private async openList(): Promise<void> {
    this.say("");
    const reply = await this.run(() => this.rpc.request("what_if_list", {}, { timeoutMs: 20000 }));
    if (!reply || this.disposed) return;
    if (!reply.ok) {
      this.say(reply.error || "Could not list this reply's pauses.", true);
      return;
    }
    const choices = (Array.isArray(reply.pauses) ? reply.pauses : []).filter(
      (c): c is WhatIfChoice => !!c && typeof c.tool_call_id === "string",
    );
    this.drawList(choices, typeof reply.live === "string" ? reply.live : "");
  }

  private drawList(choices: WhatIfChoice[], liveWhyNot: string): void {
    clear(this.panel);
    this.panel.hidden = false;
    const close = h("button", { "data-testid": "nbh-what-if-close", onclick: () => (this.panel.hidden = true) }, "Close");
    if (!choices.length) {
      this.panel.append(h("div", { class: "nbh-muted" }, "This reply had no pause with a recorded answer to go back to."), close);
      return;
    }
    const group = `nbh-whatif-${Math.random().toString(36).slice(2)}`;
    const list = h("div", { class: "nbh-options", role: "radiogroup", "aria-label": "The pause to answer differently" });
    const radios: HTMLInputElement[] = [];
    choices.forEach((c, i) => {
      const radio = h("input", { type: "radio", name: group, value: String(i), checked: i === choices.length - 1 });
      radios.push(radio);
      list.append(
        h(
          "label",
          { class: "nbh-row", "data-testid": "nbh-what-if-choice" },
          radio,
          h("span", {}, h("span", { class: "nbh-title" }, c.summary || c.tool_name), " ", h("span", { class: "nbh-muted" }, c.answered)),
        ),
      );
    });
    const live = h("input", { type: "checkbox", "data-testid": "nbh-what-if-live", disabled: !!liveWhyNot });
    const go = h(
      "button",
      {
        "data-testid": "nbh-what-if-go",
        onclick: () => {
          const at = radios.findIndex((r) => r.checked);
          if (at >= 0) void this.fork(choices[at], live.checked);
        },
      },
      "Answer it differently",
    );
    this.panel.append(
      h("div", { class: "nbh-title" }, "Go back to one of this reply's pauses and answer it differently"),
      h("div", { class: "nbh-muted" }, "The reply plays again from the record up to that pause, and its card waits below for your new answer. " +
          "After it the model's turns are the recorded ones, except that where it quoted a tool's result it quotes what the tool gives now."),
      list,
      h(
        "label",
        { class: "nbh-row nbh-check" },
        live,
        h("span", {}, "Run the real tools after that pause (they change things for real; otherwise they give their recorded results and nothing runs)"),
      ),
      liveWhyNot ? h("div", { class: "nbh-muted" }, liveWhyNot) : "",
      h("div", { class: "nbh-row" }, go, close),
    );
  }

  private async fork(choice: WhatIfChoice, live: boolean): Promise<void> {
    this.say(`Going back to ${choice.summary || choice.tool_name}…`);
    const reply = await this.run(() => this.rpc.request("what_if", { tool_call_id: choice.tool_call_id, live }, { timeoutMs: 20000 }));
    if (!reply || this.disposed) return;
    if (reply.ok) {
      this.panel.hidden = true;
      this.say(`Playing below: ${reply.started || "the what-if"}. Answer its open card there.`);
    } else this.say(reply.error || "Could not go back to this pause.", true);
  }

  /** The replies started from this one, each under its heading, drawn once per model. */
  drawNested(): void {
    for (const nested of readNested(this.model.get("nested"))) {
      if (this.views.has(nested.ref)) continue;
      const slot = h("div", { class: "nbh-nested-body" });
      this.nestedEl.append(
        h("div", { class: "nbh-nested", "data-testid": "nbh-nested-reply" }, h("div", { class: "nbh-title", "data-testid": "nbh-nested-title" }, nested.title), slot),
      );
      this.views.set(nested.ref, this.viewOf(nested.ref, slot));
    }
  }

  private async viewOf(ref: string, slot: HTMLElement): Promise<ChildView | null> {
    const manager = this.model.widget_manager as unknown as ViewMaker;
    try {
      if (typeof manager.create_view !== "function") throw new Error("this page's widget manager makes no views");
      const child = await manager.get_model(ref.slice(PREFIX.length));
      const view = await manager.create_view(child);
      if (this.disposed) {
        view.remove();
        return null;
      }
      slot.append(view.el);
      return view;
    } catch (err) {
      slot.append(
        h(
          "div",
          { class: "nbh-error", role: "alert" },
          `This page could not draw the reply started here (${err instanceof Error ? err.message : String(err)}). ` +
            "It still plays in the kernel.",
        ),
      );
      return null;
    }
  }

  dispose(): void {
    this.disposed = true;
    for (const view of this.views.values()) void view.then((v) => v?.remove());
    this.views.clear();
  }
}
