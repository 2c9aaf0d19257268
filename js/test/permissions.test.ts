// The permission explorer's page logic (permissions/*): the skeleton input
// of "Try a call", the traits that hold a result or its error, the rule
// list's grouping, and the channel that shows a refusal where it was asked.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { FakeModel, settle } from "./fake_model";
import { Rpc } from "../lib/rpc";
import { decided, type PermissionsProtocol } from "../messages";
import { Channel } from "../permissions/channel";
import { groupByTool, ruleText } from "../permissions/rule_list";
import { skeleton } from "../permissions/try_call";
import type { PermissionsModel } from "../types";

const dom = installDom();
after(() => dom.window.close());

describe("permission explorer logic", () => {
  test("skeleton: each required property at its type's empty value", () => {
    const schema = { required: ["command", "n", "on", "list", "obj"], properties: { command: { type: "string" }, n: { type: "integer" }, on: { type: "boolean" }, list: { type: "array" }, obj: { type: "object" } } };
    assert.deepEqual(JSON.parse(skeleton(schema)), { command: "", n: 0, on: false, list: [], obj: {} });
    assert.equal(skeleton(null), "{}");
  });

  test("decided: a result, its error, or nothing yet", () => {
    assert.deepEqual(decided({}), {});
    assert.deepEqual(decided(undefined), {});
    assert.deepEqual(decided({ error: "unknown tool", field: "tool_name" }), { error: "unknown tool" });
    const result = { modes: ["default"], live_mode: "default", rows: [] };
    assert.deepEqual(decided(result), { result });
  });

  test("rules grouped by tool, in the engine's order; their text", () => {
    const rules = [
      { tool_name: "Bash", rule_content: "rm:*", behavior: "deny", source: "s" },
      { tool_name: "Read", rule_content: null, behavior: "allow", source: "s" },
      { tool_name: "Bash", rule_content: "ls:*", behavior: "allow", source: "s" },
    ];
    assert.deepEqual(Object.entries(groupByTool(rules)).map(([t, rs]) => [t, rs.map(ruleText)]), [
      ["Bash", ["deny Bash(rm:*)", "allow Bash(ls:*)"]],
      ["Read", ["allow Read"]],
    ]);
  });

  test("the channel marks the explorer busy and shows a refusal in the section's box", async () => {
    const fake = new FakeModel({} as PermissionsModel);
    fake.answer = (m) => (m.action === "set_mode" ? { refuse: "Unknown mode 'x'.", field: "mode" } : { context: {} });
    const status = document.createElement("span");
    const root = document.createElement("div");
    const box = document.createElement("div");
    const channel = new Channel(new Rpc<PermissionsProtocol>(fake.model), status, root);
    const refused = channel.act("set_mode", { mode: "x" }, box);
    assert.equal(root.getAttribute("data-busy"), "true");
    assert.equal(status.textContent, "…");
    assert.equal(await refused, null);
    assert.equal(box.textContent, "Unknown mode 'x'. [mode]");
    assert.equal(box.hidden, false);
    const ok = await channel.act("refresh", {}, box);
    assert.deepEqual(ok?.context, {});
    assert.equal(box.hidden, true);
    assert.equal(root.getAttribute("data-busy"), null);
    await settle();
  });
});
