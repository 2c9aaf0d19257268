// A widget drawn in the page stays in the notebook's saved widget state when
// its kernel is gone.
//
// JupyterLab's widget manager saves (setting `saveState`) only the models
// whose comm is live: `get_state_sync` keeps those with `comm_live` set. A
// kernel restart sets `comm_live` false on every model of the old kernel
// (`disconnect()` on the status "restarting"), and a model restored from a
// saved notebook has no comm at all. Saved then, the notebook keeps the cell's
// output, which names the model, but not the model: reopened, JupyterLab draws
// "Error displaying widget: model not found" where the reply's record was
// (C12, the kernel restarted before the save).
//
// While a view draws the widget, its model and the page-code model it is
// drawn with keep `comm_live` set (as ipywidgets' own error widget sets it on
// a model with no comm, so it is saved): the notebook saves the record the
// page shows, and the page code says that its kernel is gone (it pings, and a
// send over a closed comm fails). The mark goes with the model's last view
// (a cleared output), so a record nobody sees is not saved again.

/** What the page code needs of a widget model: ipywidgets' `comm_live` flag and its event. */
export interface LiveFlag {
  comm_live: boolean;
  /** the model's comm; undefined for a model restored from a saved notebook */
  comm?: unknown;
  attributes?: Record<string, unknown>;
  on?(event: string, callback: () => void): void;
  off?(event: string, callback: () => void): void;
}

const REF = "IPY_MODEL_";

/** The ids of the models a widget's state refers to (in order, each once): an
 *  `"IPY_MODEL_<id>"` string at any depth (as ipywidgets writes a reference: a
 *  page-code model) or a model itself (what ipywidgets puts in place of a
 *  reference it unpacked: the `layout`), never looked into. */
export function modelRefs(value: unknown, depth = 8, found = new Set<string>()): Set<string> {
  const model = value as { model_id?: unknown; comm_live?: unknown } | null;
  if (typeof value === "string") {
    if (value.startsWith(REF) && value.length > REF.length) found.add(value.slice(REF.length));
  } else if (typeof model?.model_id === "string" && typeof model.comm_live === "boolean") {
    found.add(model.model_id);
  } else if (depth > 0 && value && typeof value === "object" && (Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype)) {
    for (const item of Object.values(value)) modelRefs(item, depth - 1, found);
  }
  return found;
}

/**
 * The model `own` and every model its state refers to, and theirs in turn (at most
 * `limit`): what the saved notebook needs to draw `own` again (ipywidgets resolves each
 * reference when it restores a model, and fails on one it does not have).
 *
 * @param getModel the widget manager's `get_model`; a model it does not have is left out.
 */
export async function withReferences(own: LiveFlag, getModel: (id: string) => Promise<unknown>, limit = 50): Promise<LiveFlag[]> {
  const models = [own];
  const seen = new Set<string>();
  for (let i = 0; i < models.length && models.length < limit; i++) {
    for (const id of modelRefs(models[i].attributes)) {
      if (seen.has(id)) continue;
      seen.add(id);
      const model = (await getModel(id).catch(() => null)) as LiveFlag | null;
      if (typeof model?.comm_live === "boolean" && !models.includes(model)) models.push(model);
    }
  }
  return models;
}

/** How many views hold the mark of each model whose `comm_live` this module set. */
const holds = new Map<LiveFlag, number>();

/**
 * Keep `models` in the notebook's saved widget state for as long as one view draws them.
 *
 * @param own the drawn widget's model: while its `comm_live` is set by its own
 *   comm (a live kernel), nothing is marked.
 * @param models `own` and the models it needs to be drawn again (its page
 *   code). One whose comm is live is never marked (and never cleared here).
 * @returns the function that lets go (the view is removed).
 */
export function keepSaved(own: LiveFlag, models: LiveFlag[]): () => void {
  const held = new Set<LiveFlag>();
  const hold = () => {
    if (own.comm_live && !held.has(own)) return; // live: the widget manager saves it anyway
    for (const model of models) {
      if (!held.has(model)) {
        if (model.comm_live) continue; // live (or kept by another view): saved anyway
        held.add(model);
        holds.set(model, (holds.get(model) ?? 0) + 1);
      }
      if (!model.comm_live) model.comm_live = true; // set again after a restart cleared it
    }
  };
  // a restart clears each model's flag in turn: look again at every change
  for (const model of models) model.on?.("comm_live_update", hold);
  hold();
  return () => {
    for (const model of models) model.off?.("comm_live_update", hold);
    for (const model of held) {
      const left = (holds.get(model) ?? 1) - 1;
      if (left > 0) {
        holds.set(model, left);
        continue;
      }
      holds.delete(model);
      model.comm_live = false; // its kernel is gone: not saved once nothing shows it
    }
    held.clear();
  };
}
