// A reply that waits for the person but has no view in the page.
//
// A page reloaded without saving (or a notebook closed and opened again)
// while its kernel still waits on a pause gets the kernel's live widget
// models back (JupyterLab's widget manager restores them from the kernel),
// but no output shows them: the cell's output was never saved. anywidget
// still calls the page code's `initialize` for each model, so here a reply
// with open pauses, no view anywhere in the page and a kernel that answers
// gets a small banner at the bottom of the page that says so and names the
// one action that brings the card back ("Show the card here"): the reply's
// own view, drawn in the banner, whose buttons answer as in the cell.
// Everything is DOM text (lib/dom.ts) in the theme's colours (lib/theme.css).
//
// The banner belongs to its notebook: it is drawn in the notebook's own panel
// (found from the widget manager's document path and JupyterLab's tab, see
// panelOf), so another notebook's tab never shows it, and it catches clicks
// only on its own box. It goes when what it says stops being true: a view of
// the reply is back, the kernel that ran the reply is gone (restarted, shut
// down, or the notebook now talks to another kernel), or the model closes.
import type { AnyModel, Render } from "@anywidget/types";
import { h } from "../lib/dom";
import { keepKeys } from "../lib/a11y";
import { Rpc } from "../lib/rpc";
import type { ReplyModel } from "../types";

// how long a model may be without a view before the banner offers its card:
// a cell's output draws its view right after the model is made, and a saved
// notebook draws its views while the widget manager restores the models
const GRACE_MS = 2500;
// how often a reply that waits looks again for a view of itself (a view may
// come later, or go: a cleared output)
const LOOK_MS = 2000;
const REGION_CLASS = "nbh-waiting-region";

/** What the page code sees of the widget manager that made a model (JupyterLab's
 *  `WidgetManager`: the notebook's document context and its kernel), when it is one. */
interface ManagerView {
  context?: { path?: unknown } | null;
  kernel?: { id?: unknown } | null;
}

function managerOf(model: AnyModel<ReplyModel>): ManagerView | null {
  const manager = (model as unknown as { widget_manager?: unknown }).widget_manager;
  return manager && typeof manager === "object" ? (manager as ManagerView) : null;
}

/** The id of the kernel the model's notebook talks to now ("" : not known, e.g. outside JupyterLab). */
export function kernelIdOf(model: AnyModel<ReplyModel>): string {
  const kernel = managerOf(model)?.kernel;
  return kernel && typeof kernel.id === "string" ? kernel.id : "";
}

/**
 * The JupyterLab panel of the notebook whose widget manager made `model`, or null
 * (another front end, or no tab for it). Lumino's dock panel labels each panel by
 * its tab (`aria-labelledby`), and a document's tab caption has a line
 * `Path: <path>` (JupyterLab's document widget title).
 */
export function panelOf(model: AnyModel<ReplyModel>, doc: Document = document): HTMLElement | null {
  const path = managerOf(model)?.context?.path;
  if (typeof path !== "string" || !path) return null;
  for (const tab of Array.from(doc.querySelectorAll<HTMLElement>('[role="tab"][id]'))) {
    if (!(tab.getAttribute("title") || "").split("\n").includes(`Path: ${path}`)) continue;
    const panel = doc.querySelector<HTMLElement>(`[aria-labelledby="${CSS.escape(tab.id)}"]`);
    if (panel) return panel;
  }
  return null;
}

/** The keys of the replies that have a banner in this page (one per reply). */
const shown = new Set<string>();

/** The drawn views of each reply (by `_nbh_key`): the page code is one module per page. */
const views = new Map<string, Set<HTMLElement>>();

/** Note a view of the reply `key` drawn in `el`; the returned function forgets it. */
export function noteView(key: string, el: HTMLElement): () => void {
  if (!key) return () => undefined;
  const mine = views.get(key) ?? new Set<HTMLElement>();
  views.set(key, mine);
  mine.add(el);
  return () => {
    mine.delete(el);
    if (!mine.size) views.delete(key);
  };
}

/** Whether a view of the reply `key` is in the page (a shadow root's included), outside `except`. */
export function hasView(key: string, except: Element | null): boolean {
  return Array.from(views.get(key) ?? []).some((el) => el.isConnected && !(except && except.contains(el)));
}

/** What the banner says about cells run meanwhile, from the kernel's `ping` answer. */
export function cellsNote(cell: string): string {
  if (cell === "its_cell")
    return "Cells you run wait until this reply ends: the cell that runs it is waiting for your answer.";
  if (cell === "another") return "The kernel is running a cell: cells you run wait until it ends.";
  return "";
}

/**
 * The banner's sentence, true for the state it is in.
 *
 * @param agent the reply's agent name ("" : none).
 * @param open how many pauses wait for the person (0: the reply no longer waits).
 * @param panelShown whether the banner's panel shows the reply's card now.
 * @param others whether the page's cells show other replies' cards (a notebook
 *   reloaded without saving shows the saved run's: they are not this reply).
 */
export function waitingText(agent: string, open: number, panelShown: boolean, others: boolean): string {
  const who = agent ? `The agent "${agent}" is` : "An agent is";
  const first =
    open > 0
      ? `${who} waiting for your answer (${open} open pause${open === 1 ? "" : "s"})` + (panelShown ? ": its card is below." : ", and no cell of this page shows its card.")
      : "This reply no longer waits for you." + (panelShown ? " Its last state is shown below." : " Show the card to see its last state.");
  return others ? `${first} The reply cards in the cells are other replies, not this one.` : first;
}

/** What the banner says of the cell that awaited a reply that has ended (`cell`: the last `ping`'s). */
export function endedCellsNote(cell: string): string {
  return cell
    ? "JupyterLab shows a cell's output only in the page that ran it: if the cell that awaited this reply ran before this page was loaded, what it prints now is not shown here."
    : "";
}

/** Whether a view of a reply other than `key` is in `host` (the banner's notebook), outside every banner. */
export function hasOtherViews(key: string, host: Element): boolean {
  return Array.from(views.entries()).some(
    ([k, els]) => k !== key && Array.from(els).some((el) => el.isConnected && host.contains(el) && !inRegion(el)),
  );
}

/** The region of banners in `host` (a notebook's panel, or the page's body outside JupyterLab). */
function region(host: HTMLElement): HTMLElement {
  let el = Array.from(host.children).find((c): c is HTMLElement => c instanceof HTMLElement && c.classList.contains(REGION_CLASS)) ?? null;
  if (!el) {
    el = h("div", {
      class: `${REGION_CLASS}${host === document.body ? " nbh-waiting-page" : ""}`,
      role: "region",
      "aria-label": "Agent replies waiting for you",
      "data-testid": "nbh-waiting-region",
    });
    host.append(el);
  }
  return el;
}

function dropRegionIfEmpty(el: Element | null): void {
  if (el && !el.childElementCount) el.remove();
}

/** Whether `el` is inside one of the page's banner regions. */
function inRegion(el: Element | null): Element | null {
  return el ? el.closest(`.${REGION_CLASS}`) : null;
}

/**
 * Watch one reply model for "waits for the person, shown nowhere".
 *
 * @param model the model anywidget gives `initialize`.
 * @param signal aborted when the model goes (its notebook closed) or is bound again.
 * @param render the reply's view (index.ts), drawn in the banner on request.
 */
export function watchWaiting(model: AnyModel<ReplyModel>, signal: AbortSignal | undefined, render: Render<ReplyModel>): void {
  if (typeof document === "undefined") return;
  const key = String(model.get("_nbh_key") || "");
  if (!key) return; // a widget made before replies carried a key
  const rpc = new Rpc(model, 15000, false);
  let banner: HTMLElement | null = null;
  let panel: HTMLElement | null = null;
  let text: HTMLElement | null = null;
  let cells: HTMLElement | null = null;
  let button: HTMLButtonElement | null = null;
  let cleanup: (() => void) | null = null;
  let timer = 0;
  let asking = false;
  let stopped = false;
  // the kernel that answered when the banner was made: another one later does not know this reply
  let kernel = "";

  // `pending` follows every decision; `pauses` reaches the page only now and then
  const open = () => {
    const pending = model.get("pending");
    return typeof pending === "number" ? pending : ((model.get("pauses") || []) as unknown[]).filter((p) => typeof p === "object" && p !== null && (p as { status?: unknown }).status === "open").length;
  };
  const waiting = () => {
    const status = String(model.get("status") || "");
    return (status === "paused" || status === "running") && open() > 0;
  };
  const panelShown = () => !!panel && !panel.hidden;
  // where the banner goes: its notebook's panel in JupyterLab, else the page
  const host = () => panelOf(model) ?? document.body;

  const remove = () => {
    if (!banner) return;
    cleanup?.();
    cleanup = null;
    const was = banner.parentElement;
    banner.remove();
    banner = panel = text = cells = button = null;
    shown.delete(key);
    dropRegionIfEmpty(was);
  };

  /** The reply can no longer be answered from this page (its kernel is gone): the banner goes for good. */
  const stop = () => {
    stopped = true;
    window.clearTimeout(timer);
    remove();
  };

  // the kernel of the reply is gone when a send fails (the comm closed), or when
  // the notebook talks to another kernel than the one that answered
  const kernelGone = () => rpc.gone || (!!kernel && kernelIdOf(model) !== kernel);

  const toggle = () => {
    if (!panel || !button) return;
    if (panel.hidden && !panel.childElementCount) {
      const mounted = render({ model, el: panel } as Parameters<Render<ReplyModel>>[0]);
      Promise.resolve(mounted).then((done) => {
        if (typeof done === "function") cleanup = done as () => void;
      });
    }
    panel.hidden = !panel.hidden;
    words();
    button.textContent = panel.hidden ? "Show the card here" : "Hide the card";
    button.setAttribute("aria-expanded", panel.hidden ? "false" : "true");
    if (!panel.hidden) panel.querySelector<HTMLElement>('[data-testid="nbh-card"][data-status="open"] button')?.focus();
  };

  let lastCell = "";
  const words = () => {
    if (!text || !banner) return;
    const home = inRegion(banner)?.parentElement ?? document.body;
    text.textContent = waitingText(String(model.get("agent_name") || ""), waiting() ? open() : 0, panelShown(), hasOtherViews(key, home));
    if (cells) {
      cells.textContent = waiting() ? cellsNote(lastCell) : endedCellsNote(lastCell);
      cells.hidden = !cells.textContent;
    }
  };

  const make = (cell: string) => {
    text = h("span", { "data-testid": "nbh-waiting-text", role: "status" });
    button = h(
      "button",
      { class: "nbh-primary", "data-testid": "nbh-waiting-show", "aria-expanded": "false", onclick: () => toggle() },
      "Show the card here",
    );
    const close = h("button", { "data-testid": "nbh-waiting-close", title: "Close this banner", onclick: () => remove() }, "Close");
    lastCell = cell;
    kernel = kernelIdOf(model);
    cells = h("div", { class: "nbh-muted", "data-testid": "nbh-waiting-cells" });
    panel = h("div", { class: "nbh-waiting-panel", "data-testid": "nbh-waiting-panel", hidden: true });
    banner = h(
      "div",
      { class: "nbh nbh-waiting", "data-testid": "nbh-waiting", "data-nbh-key": key },
      h("div", { class: "nbh-row" }, text, button, close),
      cells,
      panel,
    );
    keepKeys(banner);
    shown.add(key);
    region(host()).append(banner);
    words();
  };

  // the banner follows its notebook's panel (found once JupyterLab has its tab; a renamed notebook)
  const rehome = () => {
    if (!banner) return;
    const home = host();
    const current = inRegion(banner);
    if (current?.parentElement === home) return;
    const keep = document.activeElement instanceof HTMLElement && banner.contains(document.activeElement) ? document.activeElement : null;
    region(home).append(banner);
    dropRegionIfEmpty(current);
    keep?.focus();
  };

  const ping = async () => {
    asking = true;
    try {
      return await rpc.request("ping", {}, { timeoutMs: 4000 });
    } finally {
      asking = false;
    }
  };
  const look = async () => {
    timer = 0;
    if (stopped) return;
    if (kernelGone()) return stop();
    if (banner) {
      rehome();
      words();
      // a view of the reply came back (a redrawn output): the banner is not needed
      if (!panelShown() && (hasView(key, banner) || !waiting())) remove();
      else if (waiting() && !asking) {
        // the note on cells stays true: the cell that blocked them may have ended
        const reply = await ping();
        if (stopped) return;
        if (kernelGone()) return stop();
        if (reply.ok && waiting()) {
          lastCell = String(reply.cell || "");
          words();
        }
      }
    } else if (waiting() && !shown.has(key) && !hasView(key, null) && !asking) {
      // only a kernel that answers: a record restored from a saved notebook is not waiting
      const reply = await ping();
      if (stopped) return;
      if (kernelGone()) return stop();
      if (reply.ok && waiting() && !shown.has(key) && !hasView(key, null)) make(String(reply.cell || ""));
    }
    if (banner || waiting()) schedule(LOOK_MS);
  };
  const schedule = (ms: number) => {
    if (!timer && !stopped) timer = window.setTimeout(() => void look(), ms);
  };
  const changed = () => {
    words(); // once the reply ends, the cell it blocked can end: the note on cells says what follows
    schedule(GRACE_MS);
  };
  model.on("change:pauses", changed);
  model.on("change:status", changed);
  model.on("change:pending", changed);
  // @jupyter-widgets/base tells every model when its kernel restarts or disconnects: look now
  model.on("comm_live_update" as any, () => {
    window.clearTimeout(timer);
    timer = 0;
    void look();
  });
  schedule(GRACE_MS);

  signal?.addEventListener("abort", () => {
    stop();
    rpc.dispose();
  });
}
