// A question asked on a card before it sends: a click that would drop what a
// person typed (an edit under Accept, an answer under Decline) says so and
// offers each reading of the click, and Cancel (nothing sent).
import { h } from "../lib/dom";

/** One reading of the click: its button's text, test id and what it sends. */
export interface AskChoice {
  label: string;
  testid: string;
  run: () => void;
}

/** The question's box (hidden until asked) and `ask(text, choices)`, which fills and shows it. */
export function askFirst(): { el: HTMLElement; ask: (text: string, choices: AskChoice[]) => void } {
  const el = h("div", { class: "nbh-warn", "data-testid": "nbh-ask-first", hidden: true });
  const ask = (text: string, choices: AskChoice[]) => {
    el.replaceChildren(
      h("div", {}, text),
      h("div", { class: "nbh-row" }, ...choices.map((c) => h("button", { "data-testid": c.testid, onclick: c.run }, c.label)), h("button", { "data-testid": "nbh-ask-cancel", onclick: () => (el.hidden = true) }, "Cancel")),
    );
    el.hidden = false;
  };
  return { el, ask };
}
