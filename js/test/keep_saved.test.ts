// C12, the kernel restarted before the save: a drawn widget and the models it
// refers to keep `comm_live` (what JupyterLab's widget manager saves by) while
// a view draws them, and only those whose kernel is gone; the mark goes with
// the last view.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { keepSaved, modelRefs, withReferences, type LiveFlag } from "../lib/keep_saved";

/** ipywidgets' `comm_live`: setting it fires "comm_live_update" (@jupyter-widgets/base). */
class Flagged implements LiveFlag {
  private live: boolean;
  private handlers = new Set<() => void>();
  constructor(
    readonly model_id: string,
    live: boolean,
    public attributes: Record<string, unknown> = {},
  ) {
    this.live = live;
  }
  get comm_live(): boolean {
    return this.live;
  }
  set comm_live(value: boolean) {
    this.live = value;
    for (const cb of [...this.handlers]) cb();
  }
  on(_event: string, cb: () => void): void {
    this.handlers.add(cb);
  }
  off(_event: string, cb: () => void): void {
    this.handlers.delete(cb);
  }
}

describe("keep a drawn widget saved once its kernel is gone (C12)", () => {
  test("a live widget is left alone; a restart's cleared flags are set again, each model's in turn", () => {
    const code = new Flagged("code", true);
    const own = new Flagged("own", true);
    const letGo = keepSaved(own, [own, code]);
    assert.deepEqual([own.comm_live, code.comm_live], [true, true]);

    // the widget manager's disconnect() on "restarting": one model after the other
    own.comm_live = false;
    assert.equal(own.comm_live, true, "set again at once");
    code.comm_live = false;
    assert.equal(code.comm_live, true, "the page-code model too, cleared after the widget's");

    letGo(); // the view is removed: nothing shows the record, it is not saved again
    assert.deepEqual([own.comm_live, code.comm_live], [false, false]);
  });

  test("a record restored from the notebook is kept while one of its views draws it", () => {
    const code = new Flagged("code", false);
    const own = new Flagged("own", false);
    const first = keepSaved(own, [own, code]);
    const second = keepSaved(own, [own, code]);
    assert.deepEqual([own.comm_live, code.comm_live], [true, true]);
    first();
    assert.deepEqual([own.comm_live, code.comm_live], [true, true], "the other view still draws it");
    second();
    assert.deepEqual([own.comm_live, code.comm_live], [false, false]);
  });

  test("a live model it refers to is never marked, nor cleared when the view goes", () => {
    const code = new Flagged("code", true); // e.g. a model of the kernel that runs now
    const own = new Flagged("own", false);
    const letGo = keepSaved(own, [own, code]);
    letGo();
    assert.deepEqual([own.comm_live, code.comm_live], [false, true]);
  });

  test("the models a state refers to: reference strings, unpacked models, nested lists; each once", async () => {
    const layout = new Flagged("layout", false);
    const code = new Flagged("code", false, { layout });
    const nested = new Flagged("nested", false);
    const own = new Flagged("own", false, {
      layout,
      _nbh_page_code: "IPY_MODEL_code",
      nested: [{ ref: "IPY_MODEL_nested", title: "x" }],
      text: "IPY_MODEL_", // not a reference
    });
    assert.deepEqual([...modelRefs(own.attributes)], ["layout", "code", "nested"]);
    const byId = new Map([layout, code, nested].map((m) => [m.model_id, m]));
    const found = await withReferences(own, async (id) => {
      const model = byId.get(id);
      if (!model) throw new Error("widget model not found");
      return model;
    });
    assert.deepEqual(
      found.map((m) => (m as Flagged).model_id),
      ["own", "layout", "code", "nested"],
    );
  });
});
