// How an open card shows whether the kernel that ran its reply answers,
// without being rebuilt: a kernel that is slow to answer (a busy kernel, a
// cell that blocks, a loaded machine) and answers again must not take what a
// person typed or chose on the card, nor its focus and caret. Liveness is
// drawn over the card as it stands (its chip, its line, its buttons),
// and every field that takes typing stays as it is, enabled.
//
// While the kernel is not live, every button of an open card is marked
// aria-disabled (its own `disabled`, e.g. "Sending…", is left alone): still
// focusable, read as unavailable, drawn as disabled (theme.css). A press of
// one (a click, Enter in a one-line field, a key on the button) sends
// nothing and the card says so. Nothing is queued to be sent later: the
// person's answer stays in the card, and the buttons come back when the
// kernel answers (the page checks again every few seconds).
import { h } from "../lib/dom";

/** What the page knows of the kernel: not yet, it answers, it does not answer, its comm is gone. */
export type Liveness = "unknown" | "live" | "silent" | "gone";

/** Whether the card's answer can be sent (as far as the page knows). */
export function canSend(state: Liveness): boolean {
  return state === "live" || state === "unknown";
}

// "Not answering", not "No longer live": a kernel busy running a cell does not answer either, and its reply is live
const SILENT = "Not answering: the kernel that ran this reply does not answer (it may be busy running a cell, or it stopped).";

/** The card's line while the kernel is not live; `sending`: an answer from this card left before and waits. */
function line(state: "silent" | "gone", sending: boolean): string {
  if (state === "gone") return "No longer live: the kernel that ran this reply is gone.";
  return sending
    ? `${SILENT} Your answer left this page before it stopped answering: if the kernel is only busy, it applies it when it gets to it.`
    : `${SILENT} What you type here is kept, and can be sent when it answers again.`;
}

const NOT_SENT: Record<"silent" | "gone", string> = {
  silent:
    "Nothing was sent: the kernel that ran this reply does not answer. What you typed stays in this card; the buttons come back when the kernel answers (this page checks every few seconds).",
  gone: "Nothing was sent: the kernel that ran this reply restarted or stopped, so nothing can reach its agent. What you typed stays in this card.",
};

/** The card's line about liveness (hidden while the kernel is live), kept by {@link showLiveness}. */
export function livenessLine(): HTMLElement {
  return h("div", { class: "nbh-warn", "data-testid": "nbh-not-live", hidden: true });
}

/** A text that depends on liveness (e.g. what a button would do): `live` while the card can send, else `notLive`. */
export function liveText(el: HTMLElement, live: string, notLive: string): HTMLElement {
  el.dataset.nbhLiveText = live;
  el.dataset.nbhNotLiveText = notLive;
  el.textContent = live;
  return el;
}

/** What {@link showLiveness} says of a card: its kind chip's text, its title, whether an answer from it waits. */
export interface CardWords {
  label: string;
  title: string;
  sending: boolean;
}

/**
 * Show `state` on the open card `card` as it stands: its class, its kind chip
 * (`[data-nbh-label]`) and name (`label: title`), its liveness line, its
 * {@link liveText} texts, and its buttons (aria-disabled while it cannot
 * send; their own `disabled` is left alone).
 */
export function showLiveness(card: HTMLElement, state: Liveness, { label, title, sending }: CardWords): void {
  const act = canSend(state);
  card.classList.toggle("nbh-open", act);
  card.classList.toggle("nbh-closed", !act);
  card.setAttribute("aria-label", `${label}: ${title}`);
  const chip = card.querySelector<HTMLElement>("[data-nbh-label]");
  if (chip) chip.textContent = label;
  const said = card.querySelector<HTMLElement>('[data-testid="nbh-not-live"]');
  if (said) {
    said.hidden = act;
    said.removeAttribute("role");
    said.textContent = act ? "" : line(state as "silent" | "gone", sending);
  }
  for (const el of Array.from(card.querySelectorAll<HTMLElement>("[data-nbh-live-text]"))) {
    el.textContent = (act ? el.dataset.nbhLiveText : el.dataset.nbhNotLiveText) ?? "";
  }
  for (const b of Array.from(card.querySelectorAll<HTMLButtonElement>("button"))) {
    if (act) b.removeAttribute("aria-disabled");
    else b.setAttribute("aria-disabled", "true");
  }
}

/**
 * Keep a press of a button of `card` from acting while the kernel is not live
 * (`state()`): the press is stopped before the button's own handler, and the
 * card's liveness line says nothing was sent, and why.
 */
export function holdPresses(card: HTMLElement, state: () => Liveness): void {
  card.addEventListener(
    "click",
    (event) => {
      const target = event.target instanceof Element ? event.target.closest("button") : null;
      const now = state();
      if (!target || !card.contains(target) || canSend(now)) return;
      event.preventDefault();
      event.stopPropagation();
      const said = card.querySelector<HTMLElement>('[data-testid="nbh-not-live"]');
      if (!said) return;
      said.textContent = NOT_SENT[now as "silent" | "gone"];
      said.setAttribute("role", "alert");
      said.hidden = false;
    },
    true,
  );
}
