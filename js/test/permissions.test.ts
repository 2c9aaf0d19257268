// The permission explorer's page logic (permissions/*): the skeleton input
// of "Try a call", the traits that hold a result or its error, the rule
// list's grouping, the channel that shows a refusal where it was asked, and
// the replay section (candidate rules replayed once typing pauses, rows paged).
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { FakeModel, settle } from "./fake_model";
import { Rpc } from "../lib/rpc";
import { decided, type PermissionsProtocol } from "../messages";
import { Channel } from "../permissions/channel";
import { REPLAY_DEBOUNCE_MS, replaySection } from "../permissions/replay";
import { groupByTool, ruleText } from "../permissions/rule_list";
import { rulesSection } from "../permissions/rules";
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

  test("the new rule's hint is the kernel's Markdown drawn as a card's reach: its patterns as code, never markup", async () => {
    const evil = '<img src=x onerror="alert(1)">';
    const line = `This rule in a Session covers \`git\` and ${evil}`;
    // the kernel's sanitised HTML, and what a kernel's fault could add to it: walked again by the page
    let html: string | null = `<p>This rule in a Session covers <code>git</code> and &lt;img&gt;</p>${evil}<script>alert(2)</script>`;
    const fake = new FakeModel({ rules_json: "[]", tools: [] } as unknown as PermissionsModel);
    fake.answer = (m) => (m.action === "reach" ? { text: line, html } : null);
    const rpc = new Rpc<PermissionsProtocol>(fake.model);
    const section = rulesSection({ model: fake.model, act: new Channel(rpc, document.createElement("span"), document.createElement("div")).act, rpc });
    section.render();
    const hint = section.el.querySelector("[data-testid=perm-new-reach]") as HTMLElement;
    const type = async (text: string) => {
      const content = section.el.querySelector("[data-testid=perm-new-content]") as HTMLInputElement;
      (section.el.querySelector("[data-testid=perm-new-tool]") as HTMLInputElement).value = "Bash";
      content.value = text;
      content.dispatchEvent(new window.Event("input"));
      await new Promise((resolve) => setTimeout(resolve, 400)); // asked once typing pauses
      await settle();
    };
    await type("git:*");
    assert.equal(hint.hidden, false);
    assert.equal(hint.querySelector("code")?.textContent, "git");
    assert.equal(hint.querySelector("img, script"), null);
    assert.ok(!hint.textContent!.includes("`") && hint.classList.contains("nbh-md"), hint.textContent!);
    html = null; // a line without Markdown: its text as it is
    await type("ls");
    assert.equal(hint.textContent, line);
    assert.equal(hint.querySelector("img, code"), null);
    assert.ok(!hint.classList.contains("nbh-md"));
    rpc.dispose();
  });

  test("the replay section replays the candidate once typing pauses and asks for one page at a time", async () => {
    const fake = new FakeModel({ history_name: "day.jsonl", replay: {}, context_view: {} } as unknown as PermissionsModel);
    fake.answer = (m) => (m.action === "replay_page" ? { page: { run: 1, offset: 50, limit: 50, total: 120, only_changed: true, rows: [] } } : { superseded: true });
    const rpc = new Rpc<PermissionsProtocol>(fake.model);
    const section = replaySection({ model: fake.model, act: new Channel(rpc, document.createElement("span"), document.createElement("div")).act, rpc });
    section.render();
    const box = section.el.querySelector("[data-testid=perm-replay-rules]") as HTMLTextAreaElement;
    for (const text of ["[", "[{", '[{"tool_name": "lookup"}]']) {
      box.value = text;
      box.dispatchEvent(new window.Event("input"));
    }
    assert.equal(fake.actions("replay").length, 0); // not while typing
    await new Promise((resolve) => setTimeout(resolve, REPLAY_DEBOUNCE_MS + 100));
    assert.deepEqual(fake.actions("replay").map((m) => m.rules), ['[{"tool_name": "lookup"}]']);

    const row = { index: 4, tool_name: "send_mail", input_text: '{"to": "<b>x</b>"}', recorded: "ask", person: "deny", candidate: "allow", change: "ask -> allow", denied_now_allowed: true, problem: null };
    fake.set("replay", { run: 1, source: "candidate", rule_count: 1, calls: 400, changed: 120, denied_now_allowed: 40, mode: "default", never_fired: [], never_fired_count: 0,
      page: { run: 1, offset: 0, limit: 50, total: 120, only_changed: true, rows: [row] } } as unknown as PermissionsModel["replay"]);
    section.render();
    const rows = section.el.querySelectorAll("[data-testid=perm-replay-row]");
    assert.equal(rows.length, 1);
    assert.equal(rows[0].querySelector("code")?.textContent, 'send_mail {"to": "<b>x</b>"}'); // text, never markup
    assert.equal(section.el.querySelector("[data-testid=perm-replay-where]")?.textContent, "1–1 of 120");
    (section.el.querySelector("[data-testid=perm-replay-next]") as HTMLButtonElement).click();
    await settle();
    assert.deepEqual(fake.actions("replay_page").map((m) => [m.offset, m.only_changed]), [[1, true]]);
    section.dispose();
    rpc.dispose();
  });
});
