// The bar of a reply parked on several calls: each card keeps its own
// controls (card.ts), and these act on every open card at once.
import { h, clear } from "../lib/dom";
import type { PauseView } from "../types";
import type { Draft } from "./card";
import { bulkActions } from "./cards/index";

/** Send `pick(p)` for each of `items` (those it gives a draft for) as one batch. */
export type SendAll = (items: PauseView[], pick: (p: PauseView) => Draft | null) => Promise<void>;

/** Draw the group bar over `open` (the open cards that can be shown; hidden below two):
 *  Approve all / Deny all per kind, and Submit all of the drafts `draftOf` gives; `note`
 *  says what Submit all sent and what is left. */
export function drawGroupBar(bar: HTMLElement, note: HTMLElement, open: PauseView[], send: SendAll, draftOf: (p: PauseView) => Draft | null): void {
  if (!open.length) note.textContent = "";
  clear(bar);
  bar.hidden = open.length < 2;
  if (open.length < 2) return;
  bar.setAttribute("role", "group");
  bar.setAttribute("aria-label", "All open calls of this reply");
  bar.append(h("span", { class: "nbh-muted" }, `${open.length} open calls in this reply`));
  for (const bulk of bulkActions()) {
    const items = open.filter((p) => p.kind === bulk.kind);
    if (!items.length) continue;
    bar.append(
      h(
        "button",
        { "data-testid": bulk.testid, onclick: () => send(items, () => ({ action: bulk.action })) },
        `${bulk.label} (${items.length})`,
      ),
    );
  }
  bar.append(
    h(
      "button",
      {
        class: "nbh-primary",
        "data-testid": "nbh-submit-all",
        onclick: async () => {
          const ready = open.filter((p) => draftOf(p));
          const waiting = open.filter((p) => !ready.includes(p)).map((p) => p.tool_name);
          note.textContent = ready.length
            ? waiting.length
              ? `Sent what is filled in; still to answer: ${waiting.join(", ")}.`
              : ""
            : `Nothing to send yet: answer ${waiting.join(", ")} first (confirmations: use their buttons, or Approve all / Deny all).`;
          await send(ready, draftOf);
        },
      },
      "Submit all",
    ),
  );
}
