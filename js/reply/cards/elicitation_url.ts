// An MCP server sends the person to a page while its tool runs (MCP
// elicitation, URL mode: a sign-in, a payment, a secret that must not pass
// through the client). The address is the server's, untrusted: shown as
// text (never markup) with its host set apart, opened only by a click, in a
// new tab with no opener. "Done" tells the server the person finished there
// (MCP's accept), "Decline" that they would not; nothing else is sent, and
// the card never passes the address to the agent's model (that reads the
// tool's result, which the server writes).
import { h } from "../../lib/dom";
import type { PauseView } from "../../types";
import type { CardCtx } from "../card";

/** An address as the card shows it: the text sent, cut around its host. */
export type UrlParts =
  | { ok: true; href: string; host: string; before: string; hostText: string; after: string }
  | { ok: false; error: string };

/**
 * Read a URL-mode address the way the browser would open it. Offered: an
 * absolute https or http URL with a host and no user name or password
 * (`https://bank.example@evil.example` reads as one host and opens
 * another). `host` is the browser's reading (an international name in its
 * ASCII form, so look-alike letters show); `before` / `hostText` / `after`
 * cut the text as sent around the host where it stands in it.
 */
export function urlParts(raw: string): UrlParts {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return { ok: false, error: "The server's URL cannot be read." };
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") return { ok: false, error: `The server's URL is not a web address (${u.protocol}).` };
  if (!u.hostname) return { ok: false, error: "The server's URL names no host." };
  if (u.username || u.password) return { ok: false, error: "The server's URL carries a user name or password before its host; it is not opened." };
  const start = raw.indexOf("//") + 2;
  const shown = raw.slice(start, start + u.host.length);
  if (start >= 2 && shown.toLowerCase() === u.host) {
    return { ok: true, href: u.href, host: u.hostname, before: raw.slice(0, start), hostText: shown, after: raw.slice(start + u.host.length) };
  }
  return { ok: true, href: u.href, host: u.hostname, before: raw, hostText: "", after: "" };
}

/** Open `href` in a new tab that cannot reach back to this page. */
export function openPage(win: Pick<Window, "open">, href: string): void {
  win.open(href, "_blank", "noopener,noreferrer");
}

/** The body of an open URL-mode card. */
export function buildUrlCard(card: HTMLElement, p: PauseView, ctx: CardCtx): void {
  const { ui } = ctx;
  const dis = ui.pending;
  ctx.setDraft(() => null); // sent on its own, never with "Submit all"
  if (p.message) card.append(h("div", { class: "nbh-info", "data-testid": "nbh-elicitation-message" }, p.message));
  const decline = h("button", { "data-testid": "nbh-elicitation-decline", disabled: dis, onclick: () => void ctx.send({ action: "decline" }) }, "Decline");
  const parts = urlParts(p.elicitation_url || "");
  if (!parts.ok) {
    const cancel = h("button", { "data-testid": "nbh-elicitation-cancel", disabled: dis, onclick: () => void ctx.send({ action: "cancel" }) }, "Cancel");
    card.append(h("div", { class: "nbh-error", "data-testid": "nbh-url-invalid" }, parts.error), ctx.errorBox() || "", h("div", { class: "nbh-row" }, decline, cancel));
    return;
  }
  card.append(
    h("div", { class: "nbh-info", "data-testid": "nbh-url-site" }, "It opens a page on ", h("strong", { "data-testid": "nbh-url-host" }, parts.host)),
    h("code", { class: "nbh-pre", "data-testid": "nbh-url" }, parts.before, parts.hostText ? h("strong", {}, parts.hostText) : "", parts.after),
    h("div", { class: "nbh-muted" }, "Open it, finish there, then press Done. The address is for you: this card does not pass it to the agent's model (the model reads the tool's result), and the server is told only Done or Decline."),
    ctx.errorBox() || "",
    h(
      "div",
      { class: "nbh-row" },
      h("button", { "data-testid": "nbh-url-open", onclick: () => openPage(window, parts.href) }, "Open page"),
      h("button", { class: "nbh-primary", "data-testid": "nbh-url-done", disabled: dis, onclick: () => void ctx.send({ action: "accept" }) }, "Done"),
      decline,
    ),
  );
}
