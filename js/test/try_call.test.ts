// The explorer's "Try a call" draws the decision a Session takes (C38): the
// shell rules' verdict as the headline, AgentScope's engine alone beside it,
// the simple commands the line runs and what each rule covers; the mode
// matrix and "Add to matrix" say in plain words what is wrong with a line.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { FakeModel } from "./fake_model";
import { Rpc } from "../lib/rpc";
import { jsonProblem } from "../lib/json_words";
import type { PermissionsProtocol } from "../messages";
import { Channel } from "../permissions/channel";
import { matrixCalls } from "../permissions/matrix";
import { trySection } from "../permissions/try_call";
import type { PermissionsModel } from "../types";

const dom = installDom();
after(() => dom.window.close());

const denied = "Permission to use Bash has been denied: the command `sudo rm -rf x` is denied (Rule: rm:* matches `rm -rf x`).";
const tried = {
  tool_name: "Bash", input: { command: "sudo rm -rf x" }, mode: "bypass",
  behavior: "deny", message: denied, decision_reason: "Rule: rm:*", bypass_immune: false, suggested_rules: [],
  engine: { behavior: "allow", message: "Permission granted for Bash (bypass mode)", decision_reason: "Mode: bypass", bypass_immune: false, suggested_rules: [] },
  rules_checked: [{ label: "deny Bash(rm:*)", matched: false, explanation: "…", shell_covers: ["sudo rm -rf x"] }],
  steps: ["Step 6: …", "nb_hitl's shell rules … A Session decides deny."], agrees: true,
  shell: { behavior: "deny", message: denied, decision_reason: "Rule: rm:*", bypass_immune: false, suggested_rules: [], changed: true, problems: [],
    commands: [{ program: "rm", args: ["-rf", "x"], redirections: [], assignments: [], text: "sudo rm -rf x", via: "", behavior: "deny", why: "Rule: rm:* matches `rm -rf x`", files: [] }] },
};

describe("Try a call", () => {
  test("the headline is the Session's decision; the engine alone, the commands and the rule's cover are drawn", () => {
    const fake = new FakeModel({ last_try: tried, tools: [] } as unknown as PermissionsModel);
    const rpc = new Rpc<PermissionsProtocol>(fake.model);
    const section = trySection({ model: fake.model, act: new Channel(rpc, document.createElement("span"), document.createElement("div")).act, rpc }, () => {});
    section.renderResult();
    const q = (id: string) => section.el.querySelector(`[data-testid=${id}]`)?.textContent || "";
    assert.equal(q("perm-try-behavior"), "deny");
    assert.equal(q("perm-try-message"), denied);
    assert.match(q("perm-try-engine"), /AgentScope's engine alone.* says allow: Permission granted for Bash \(bypass mode\).*make it deny/);
    assert.equal(q("nbh-shell-program"), "rm");
    assert.match(q("nbh-shell-behavior"), /denied by the rules: Rule: rm:\* matches `rm -rf x`/);
    assert.equal(q("perm-try-rule-covers"), "sudo rm -rf x");
    rpc.dispose();
  });

  test("the matrix names the line (as numbered in the box) and the mistake in plain words", () => {
    const ok = '{"tool_name": "Bash", "input": {"command": "ls"}}';
    assert.deepEqual(matrixCalls(`${ok}\n\n`).calls.length, 1);
    const bad = matrixCalls(`${ok}\n\nfoo bar`).problem || "";
    assert.match(bad, /^Line 3 is not a call: it is not JSON/);
    assert.doesNotMatch(bad, /SyntaxError|Unexpected token/);
    assert.match(matrixCalls("{'tool_name': 'Bash'}").problem || "", /single quotes/);
    assert.match(matrixCalls("[1]").problem || "", /Line 1 is JSON but not a call: it needs a "tool_name"/);
    assert.match(jsonProblem('{"a": 1,}'), /comma just before/);
    assert.match(jsonProblem('{"a": {"b": 1}'), /never closed/);
    assert.match(jsonProblem("{command: 1}"), /not in double quotes/);
  });
});
