// The audit log table: rows of strings, drawn with textContent only.
import css from "./lib/theme.css";
import { h, clear } from "./lib/dom";
import { Rpc, AnyModelLike } from "./lib/rpc";

function render({ model, el }: { model: AnyModelLike; el: HTMLElement }) {
  const rpc = new Rpc(model);
  const style = h("style", {});
  style.textContent = css;
  const root = h("div", { class: "nbh", "data-testid": "nbh-audit" });
  const table = h("table", { class: "nbh-table" });
  const status = h("span", { class: "nbh-muted" });
  root.append(
    h("div", { class: "nbh-row" }, h("span", { class: "nbh-title" }, "Audit log"), h("code", {}, String(model.get("path") || "")),
      h("button", { onclick: async () => { const r = await rpc.request("refresh"); status.textContent = r.ok ? "" : r.error || ""; } }, "Refresh"), status),
    table,
  );
  el.append(style, root);
  const draw = () => {
    clear(table);
    const cols: string[] = model.get("columns") || [];
    const rows: Record<string, string>[] = model.get("rows") || [];
    table.append(h("tr", {}, cols.map((c) => h("th", {}, c))));
    for (const r of rows) table.append(h("tr", { "data-testid": "nbh-audit-row" }, cols.map((c) => h("td", {}, String(r[c] ?? "")))));
    if (!rows.length) table.append(h("tr", {}, h("td", { colspan: cols.length || 1, class: "nbh-muted" }, "No decisions yet.")));
  };
  model.on("change:rows", draw);
  draw();
  return () => rpc.dispose();
}

export default { render };
