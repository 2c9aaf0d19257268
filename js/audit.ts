// The audit log table: rows of strings, drawn with textContent only. The
// theme ships once per kernel with the page code (lib/theme.css).
import type { Render } from "@anywidget/types";
import { h, clear } from "./lib/dom";
import { Rpc } from "./lib/rpc";
import { keepKeys } from "./lib/a11y";
import type { AuditProtocol } from "./messages";
import type { AuditModel } from "./types";

const render: Render<AuditModel> = ({ model, el }) => {
  const rpc = new Rpc<AuditProtocol>(model);
  const root = h("div", { class: "nbh", "data-testid": "nbh-audit" });
  const table = h("table", { class: "nbh-table", "aria-label": "Audit log" });
  const status = h("span", { class: "nbh-muted", role: "status" });
  root.append(
    h(
      "div",
      { class: "nbh-row" },
      h("span", { class: "nbh-title" }, "Audit log"),
      h("code", {}, String(model.get("path") || "")),
      h(
        "button",
        {
          onclick: async () => {
            const r = await rpc.request("refresh", {});
            status.textContent = r.ok ? "" : r.error || "";
          },
        },
        "Refresh",
      ),
      status,
    ),
    table,
  );
  // Enter / Space on Refresh are the button's, not the notebook's
  keepKeys(root);
  el.append(root);
  const draw = () => {
    clear(table);
    const cols = model.get("columns") || [];
    const rows = model.get("rows") || [];
    table.append(h("tr", {}, cols.map((c) => h("th", { scope: "col" }, c))));
    for (const r of rows) table.append(h("tr", { "data-testid": "nbh-audit-row" }, cols.map((c) => h("td", {}, String(r[c] ?? "")))));
    if (!rows.length) table.append(h("tr", {}, h("td", { colspan: cols.length || 1, class: "nbh-muted" }, "No decisions yet.")));
  };
  model.on("change:rows", draw);
  draw();
  return () => rpc.dispose();
};

export default { render };
