// The explorer's working directories: the process cwd (always one), those
// of the agent's context with their source, Remove on each, and a field to
// add one.
import { h, clear } from "../lib/dom";
import type { Section } from "./channel";

export function workdirsSection({ model, act }: Section) {
  const wdBox = h("div", { "data-testid": "perm-workdirs" });
  const wdInput = h("input", { type: "text", "data-testid": "perm-new-workdir", placeholder: "/absolute/path", size: 30 }) as HTMLInputElement;
  const wdBtn = h("button", { "data-testid": "perm-add-workdir" }, "Add working directory");
  const wdError = h("div", { class: "nbh-error", hidden: true });
  wdBtn.addEventListener("click", async () => {
    if (await act("add_working_directory", { path: wdInput.value.trim() }, wdError)) wdInput.value = "";
  });
  const el = h("section", {},
    h("h4", {}, "Working directories"),
    wdBox,
    h("div", { class: "nbh-row" }, wdInput, wdBtn),
    wdError,
  );

  function render(): void {
    const ctx = model.get("context_view") || {};
    clear(wdBox);
    wdBox.append(h("div", { class: "nbh-muted" }, `process cwd (always a working directory): ${ctx.cwd || "?"}`));
    for (const wd of ctx.working_directories || []) {
      const rm = h("button", {}, "Remove");
      rm.addEventListener("click", () => act("remove_working_directory", { path: wd.path }, wdError));
      wdBox.append(h("div", { class: "nbh-row" }, h("code", {}, wd.path), h("span", { class: "nbh-muted" }, `source: ${wd.source}`), rm));
    }
  }

  return { el, render };
}
