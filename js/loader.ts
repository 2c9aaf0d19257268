// The per-widget ES module of nb_hitl's widgets: a small loader, not the
// widget's page code. The code (and the theme) travel and are saved once per
// kernel, in one shared "page code" model (nb_hitl/widgets/_page_code.py);
// each widget names it in its `_nbh_page_code` trait ("IPY_MODEL_<id>"), and
// this loader gets it through anywidget's `model.widget_manager.get_model`,
// checks it against the SHA-256 digest the kernel wrote into this loader
// (`_esm` is kernel-authored; a model's traits may be written by a page),
// imports it from a Blob URL (as anywidget imports an `_esm`) and renders
// with it. The module is imported once per page per digest, and the theme is
// one constructed stylesheet adopted by each document or shadow root a widget
// is drawn in.
//
// anywidget calls a widget's `initialize` once per model, when the model is
// made, with or without a view (a page reloaded while its kernel runs gets
// the kernel's live models back before any view, and none at all for outputs
// that were not saved); the loader hands it to the page code's `initialize`.
//
// While a view draws a widget, the widget and the models it refers to (its
// page code, its layout) stay in the notebook's saved widget state even once
// their kernel is gone (a restart, then a save): lib/keep_saved.ts. A widget
// restored from the saved notebook has no comm: its page code is told at once
// that a send cannot reach a kernel (its kernel is gone), not left waiting.
import type { AnyModel, RenderProps } from "@anywidget/types";
import { keepSaved, withReferences, type LiveFlag } from "./lib/keep_saved";

// replaced by the kernel with the digest of the page code it serves
const DIGEST = "__NBH_PAGE_CODE_DIGEST__";
const PREFIX = "IPY_MODEL_";
// how long a widget waits for its page-code model (a notebook being
// restored may register it after the widget; anywidget's own lookup gives up
// after 2 s, and a host may never answer for a model it does not have)
const LOOKUP_MS = 10_000;
const LOOKUP_PAUSE_MS = 200;

interface InitializeProps {
  model: AnyModel;
  signal?: AbortSignal;
}
interface WidgetDef {
  initialize?: (props: InitializeProps) => unknown;
  render?: (props: RenderProps) => unknown;
}
interface Loaded {
  widget: WidgetDef;
  sheet: CSSStyleSheet;
}

const registry = globalThis as unknown as { __nbhPageCode?: Map<string, Promise<Loaded>> };
const cache: Map<string, Promise<Loaded>> = (registry.__nbhPageCode ??= new Map());

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The id of the page-code model `model` names ("" : none). */
function pageCodeId(model: AnyModel): string {
  const ref = String(model.get("_nbh_page_code") || "");
  return ref.startsWith(PREFIX) ? ref.slice(PREFIX.length) : ref;
}

async function sharedModel(model: AnyModel): Promise<AnyModel> {
  const id = pageCodeId(model);
  if (!id) throw new Error("this widget names no page-code model");
  const deadline = Date.now() + LOOKUP_MS;
  let last: unknown = null;
  while (Date.now() < deadline) {
    try {
      const found = await Promise.race([
        model.widget_manager.get_model(id),
        pause(Math.max(deadline - Date.now(), 0)).then(() => null),
      ]);
      if (found) return found;
    } catch (err) {
      last = err;
    }
    await pause(LOOKUP_PAUSE_MS);
  }
  throw new Error(`its page-code model ${id} is not in this page (${last ?? "not found"})`);
}

async function sha256(text: string): Promise<string | null> {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) return null; // not a secure context (plain http off localhost)
  const bytes = new Uint8Array(await subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function load(model: AnyModel): Promise<Loaded> {
  const shared = await sharedModel(model);
  const code = String(shared.get("code") || "");
  const css = String(shared.get("css") || "");
  const seen = await sha256(code + "\0" + css);
  if (seen !== null && seen !== DIGEST) {
    throw new Error("its page-code model does not hold the code this widget was made with");
  }
  const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
  let mod: { default?: WidgetDef | (() => WidgetDef | Promise<WidgetDef>) };
  try {
    mod = await import(/* webpackIgnore: true */ /* @vite-ignore */ url);
  } finally {
    URL.revokeObjectURL(url);
  }
  const def = typeof mod.default === "function" ? await mod.default() : mod.default;
  if (!def || typeof def.render !== "function") throw new Error("its page code has no render function");
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(css);
  return { widget: def, sheet };
}

function loaded(model: AnyModel): Promise<Loaded> {
  let entry = cache.get(DIGEST);
  if (!entry) {
    entry = load(model);
    cache.set(DIGEST, entry);
    entry.catch(() => cache.delete(DIGEST)); // a later widget may find the model
  }
  return entry;
}

function adopt(el: HTMLElement, sheet: CSSStyleSheet, tries = 300): void {
  // the view's element may be attached only after render: adopt the sheet
  // into the document or shadow root it ends up in
  if (!el.isConnected) {
    addTo(document, sheet); // most hosts draw into the document itself
    if (tries > 0) requestAnimationFrame(() => adopt(el, sheet, tries - 1));
    return;
  }
  const root = el.getRootNode();
  addTo(root instanceof ShadowRoot ? root : document, sheet);
}

function addTo(host: Document | ShadowRoot, sheet: CSSStyleSheet): void {
  if (!host.adoptedStyleSheets.includes(sheet)) host.adoptedStyleSheets = [...host.adoptedStyleSheets, sheet];
}

async function render(props: RenderProps): Promise<unknown> {
  let got: Loaded;
  try {
    got = await loaded(props.model);
  } catch (err) {
    const note = document.createElement("div");
    note.setAttribute("role", "alert");
    note.dataset.testid = "nbh-load-error";
    note.textContent =
      `nb_hitl could not draw this widget: ${err instanceof Error ? err.message : String(err)}. ` +
      "If this front end cannot hand one widget model to another, set NB_HITL_PAGE_CODE=inline in the kernel " +
      '(os.environ["NB_HITL_PAGE_CODE"] = "inline" before the widgets are made) and run the cell again.';
    props.el.replaceChildren(note);
    return undefined;
  }
  adopt(props.el, got.sheet);
  const own = await ownModel(props.model);
  // a model restored from the saved notebook, with no comm: its kernel is gone (the kernel's
  // own models come with their comm), and a send that goes nowhere must say so, not wait
  const drawn = own && own.comm === undefined ? { ...props, model: { ...props.model, send: noComm } } : props;
  const cleanup = await got.widget.render?.(drawn as RenderProps);
  const letGo = own ? keepSaved(own, await withReferences(own, getModelOf(props.model))) : () => undefined;
  return () => {
    letGo();
    if (typeof cleanup === "function") cleanup();
  };
}

function noComm(): never {
  throw new Error("no comm: its kernel is gone");
}

function getModelOf(model: AnyModel): (id: string) => Promise<unknown> {
  return (id) => model.widget_manager.get_model(id) as Promise<unknown>;
}

/** The widget manager's own model of `model` (anywidget hands the page a narrower one), found
 *  by the id the kernel gave it; null when the host does not hand out its models. */
async function ownModel(model: AnyModel): Promise<LiveFlag | null> {
  const id = String(model.get("_nbh_model_id") || "");
  if (!id) return null; // a widget made before it carried its id
  const own = (await getModelOf(model)(id).catch(() => null)) as LiveFlag | null;
  return typeof own?.comm_live === "boolean" ? own : null;
}

function initialize(props: InitializeProps): void {
  // not awaited: anywidget gives a model 2 s to initialize, and the page-code
  // model may come later; a widget that cannot load says so when drawn (render)
  void loaded(props.model)
    .then((got) => {
      if (props.signal?.aborted || !got.widget.initialize) return;
      addTo(document, got.sheet); // what the page code draws outside a view is in the document
      return got.widget.initialize(props);
    })
    .catch(() => undefined);
}

export default { initialize, render };
