// PermissionExplorer (nb_hitl/widgets/permissions.py): an AgentScope agent's
// permission context, live. The page only shows data and sends actions; every
// decision comes from the kernel, which asks AgentScope's PermissionEngine.
// Text from the agent (rules, tool inputs, messages) reaches the page only
// through h() / textContent. One module per section: header.ts (mode,
// refresh, warnings), rules.ts (the list and the rule form), workdirs.ts,
// try_call.ts, matrix.ts, io.ts (import / export), replay.ts (a recorded log
// replayed against the rules shown); channel.ts sends the
// actions; the theme ships once per kernel with the page code
// (nb_hitl/widgets/_page_code.py), style.ts holds the explorer's own styles.
import type { RenderProps } from "@anywidget/types";
import { h } from "../lib/dom";
import { Rpc, isLive } from "../lib/rpc";
import type { PermissionsProtocol } from "../messages";
import type { PermissionsModel } from "../types";
import { Channel, type Section } from "./channel";
import { MODES_FALLBACK, headerSection } from "./header";
import { ioSection } from "./io";
import { matrixSection } from "./matrix";
import { replaySection } from "./replay";
import { rulesSection } from "./rules";
import { PERM_CSS } from "./style";
import { trySection } from "./try_call";
import { workdirsSection } from "./workdirs";

const TRAITS = ["context_view", "rules_json", "tools", "last_try", "matrix", "revision", "agent_name", "history_name", "replay"] as const;

function render({ model, el }: Pick<RenderProps<PermissionsModel>, "model" | "el">) {
  const rpc = new Rpc<PermissionsProtocol>(model);
  const style = h("style", {});
  style.textContent = PERM_CSS;
  const root = h("div", { class: "nbh nbh-perm", "data-testid": "perm-explorer" });
  el.append(style, root);

  const status = h("span", { class: "nbh-muted", "data-testid": "perm-status" });
  const channel = new Channel(rpc, status, root);
  const section: Section = { model, act: channel.act, rpc };
  const header = headerSection(section, status);
  const rules = rulesSection(section);
  const workdirs = workdirsSection(section);
  const matrix = matrixSection(section);
  const tryCall = trySection(section, matrix.addLine);
  const io = ioSection(section);
  const replay = replaySection(section);
  root.append(...header.els, rules.el, workdirs.el, tryCall.el, matrix.el, replay.el, io.el);

  function renderAll() {
    const ctx = model.get("context_view") || {};
    header.render();
    root.setAttribute("data-mode", ctx.mode || "");
    tryCall.renderModes(ctx.modes || MODES_FALLBACK, ctx.mode);
    rules.render();
    workdirs.render();
    tryCall.renderTools();
    tryCall.renderResult();
    matrix.render();
    replay.render();
  }

  // Re-read the context when the person comes back to the widget, so rules
  // accepted elsewhere ("Always allow") are there when they look.
  const onEnter = () => {
    if (!channel.busy) void rpc.request("refresh", {});
  };
  root.addEventListener("pointerenter", onEnter);

  const onChange = () => renderAll();
  for (const name of TRAITS) model.on(`change:${name}`, onChange);
  renderAll();
  // A notebook reopened after its kernel stopped shows the saved view; say so.
  isLive(rpc).then((live) => {
    if (!live) {
      root.setAttribute("data-live", "false");
      root.prepend(h("div", { class: "nbh-banner", "data-testid": "perm-not-live" },
        "Not live: the kernel that owned this explorer is gone. This is the saved view; run the cell again to explore."));
    } else {
      root.setAttribute("data-live", "true");
    }
  });

  return () => {
    for (const name of TRAITS) model.off(`change:${name}`, onChange);
    root.removeEventListener("pointerenter", onEnter);
    io.dispose();
    replay.dispose();
    rpc.dispose();
  };
}

export default { render };
