// reply/cards/shell.ts: a shell call's simple commands (the kernel's shell
// parser) drawn on the confirmation card as text: program, arguments,
// redirections, the files they open, where a command is nested, what the
// rules said; reply/view_check.ts keeps only the entries that fit.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { drawReply, pause } from "./page";
import { shellCommandsView } from "../reply/cards/shell";

const dom = installDom();
after(() => dom.window.close());

const XSS = "<img src=x onerror=alert(1)>";

const command = (over: Record<string, unknown> = {}) => ({
  program: "echo",
  args: [XSS],
  redirections: ["> out.txt", "2>&1"],
  assignments: [],
  text: `echo ${XSS} > out.txt 2>&1`,
  via: "",
  behavior: "",
  why: "",
  files: [{ access: "writes", path: "out.txt" }],
  ...over,
});

describe("the simple commands on a shell call's card", () => {
  test("each command's program, arguments, redirections and files, as text", async () => {
    const page = await drawReply([
      pause({
        input_text: '{"command": "echo ... > out.txt 2>&1; rm -rf $(cat < list)"}',
        shell_commands: [
          command({ behavior: "allow", why: "Rule: Bash(echo:*)" }),
          command({ program: "rm", args: ["-rf", "$(cat < list)"], redirections: [], files: [], behavior: "ask", why: "no allow rule matches it" }),
          command({ program: "cat", args: [], redirections: ["< list"], files: [{ access: "reads", path: "list" }], via: "$(...)", behavior: "ask" }),
        ],
      }),
    ]);
    const box = page.control<HTMLElement>("c1", "nbh-shell")!;
    assert.equal(box.getAttribute("role"), "group");
    assert.equal(box.getAttribute("aria-label"), "What the command line runs");
    assert.match(box.textContent!, /as the shell parser reads it \(3 commands\)/);
    const items = Array.from(box.querySelectorAll<HTMLElement>('[data-testid="nbh-shell-command"]'));
    assert.deepEqual(
      items.map((li) => [
        li.dataset.behavior,
        li.querySelector('[data-testid="nbh-shell-program"]')!.textContent,
        Array.from(li.querySelectorAll('[data-testid="nbh-shell-arg"]')).map((a) => a.textContent),
        Array.from(li.querySelectorAll('[data-testid="nbh-shell-redirection"]')).map((a) => a.textContent),
        Array.from(li.querySelectorAll('[data-testid="nbh-shell-file"]')).map((a) => a.textContent),
        li.querySelector('[data-testid="nbh-shell-behavior"]')?.textContent,
      ]),
      [
        ["allow", "echo", [XSS], ["> out.txt", "2>&1"], ["Writes (creates or empties) the file out.txt"], "allowed by the rules: Rule: Bash(echo:*)"],
        ["ask", "rm", ["-rf", "$(cat < list)"], [], [], "needs your approval: no allow rule matches it"],
        ["ask", "cat", [], ["< list"], ["Reads the file list"], "needs your approval"],
      ],
    );
    assert.match(items[2].textContent!, /Program: cat \(run by \$\(\.\.\.\)\)/);
    assert.equal(box.querySelector("img"), null, "an argument is text, never markup");
    page.close();
  });

  test("commands the rules did not judge say nothing of a behavior; problems are listed", () => {
    const box = shellCommandsView({ shell_commands: [command({ program: null, args: [], redirections: [], files: [], assignments: ["A=1"] })], shell_problems: [`the program name \`${XSS}\` cannot be read`] })!;
    assert.equal(box.querySelector('[data-testid="nbh-shell-behavior"]'), null);
    assert.match(box.textContent!, /\(no program: only variable assignments\)/);
    assert.equal(box.querySelector('[data-testid="nbh-shell-assignment"]')!.textContent, "A=1");
    const problems = box.querySelector('[data-testid="nbh-shell-problems"]')!;
    assert.deepEqual(Array.from(problems.querySelectorAll("li")).map((li) => li.textContent), [`the program name \`${XSS}\` cannot be read`]);
    assert.equal(box.querySelector("img"), null);
  });

  test("a call with no commands draws nothing", async () => {
    assert.equal(shellCommandsView({ shell_commands: [], shell_problems: [] }), null);
    const page = await drawReply([pause({ tool_name: "Write" })]);
    assert.equal(page.control("c1", "nbh-shell"), null);
    page.close();
  });

  test("a view's malformed entries: the files that fit are kept, the rest dropped", async () => {
    const page = await drawReply([
      pause({ shell_commands: [command({ files: [{ access: "writes", path: "ok" }, { access: 1, path: "x" }, "junk", null] }), "junk"] as never }),
    ]);
    const files = Array.from(page.card("c1").querySelectorAll('[data-testid="nbh-shell-file"]')).map((f) => f.textContent);
    assert.deepEqual(files, ["Writes (creates or empties) the file ok"]);
    assert.equal(page.card("c1").querySelectorAll('[data-testid="nbh-shell-command"]').length, 1);
    page.close();
  });
});
