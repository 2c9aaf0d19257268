// A shell call's command line as the kernel's shell parser read it
// (nb_hitl.permissions.shell, the parser the shell rules judge with): each
// simple command's program, arguments, redirections and the files those
// open, where it is nested, and what the permission rules said of it. Every
// value is drawn as text.
import { h } from "../../lib/dom";
import type { PauseView, ShellCommandView } from "../../types";

const BEHAVIOR_WORDS: Record<string, string> = {
  allow: "allowed by the rules",
  ask: "needs your approval",
  deny: "denied by the rules",
};

// what a redirection does to the file it names (nb_hitl.permissions.shell: reads, writes, appends)
const FILE_WORDS: Record<string, string> = { reads: "Reads", writes: "Writes (creates or empties)", appends: "Appends to" };

function words(label: string, testid: string, items: string[]): HTMLElement | null {
  if (!items.length) return null;
  const list: (HTMLElement | string)[] = [];
  items.forEach((item, i) => {
    if (i) list.push(" ");
    list.push(h("code", { "data-testid": testid }, item));
  });
  return h("div", {}, `${label}: `, ...list);
}

/** One simple command, as a list item. */
export function shellCommandItem(c: ShellCommandView): HTMLElement {
  const program = c.program === null ? "(no program: only variable assignments)" : c.program;
  const where = c.via ? ` (run by ${c.via})` : "";
  const item = h(
    "li",
    { "data-testid": "nbh-shell-command", "data-behavior": c.behavior || "" },
    h("div", {}, "Program: ", h("code", { "data-testid": "nbh-shell-program" }, program), where),
    words("Arguments", "nbh-shell-arg", c.args),
    words("Variables set", "nbh-shell-assignment", c.assignments),
    words("Redirections", "nbh-shell-redirection", c.redirections),
  );
  for (const f of c.files || []) {
    const verb = FILE_WORDS[f.access] ?? `Opens (${f.access})`;
    item.append(h("div", { "data-testid": "nbh-shell-file" }, `${verb} the file `, h("code", {}, f.path)));
  }
  if (c.behavior) {
    const said = BEHAVIOR_WORDS[c.behavior] ?? c.behavior;
    item.append(h("div", { class: "nbh-muted", "data-testid": "nbh-shell-behavior" }, c.why ? `${said}: ${c.why}` : said));
  }
  return item;
}

/** The command line's simple commands and parse problems, or null for a call with none. */
export function shellCommandsView(p: Pick<PauseView, "shell_commands" | "shell_problems">): HTMLElement | null {
  const commands = p.shell_commands || [];
  const problems = p.shell_problems || [];
  if (!commands.length && !problems.length) return null;
  const count = commands.length === 1 ? "1 command" : `${commands.length} commands`;
  const box = h(
    "div",
    { class: "nbh-shell", role: "group", "aria-label": "What the command line runs", "data-testid": "nbh-shell" },
    h("div", { class: "nbh-muted" }, `What the command line runs, as the shell parser reads it (${count}):`),
  );
  if (commands.length) box.append(h("ol", {}, commands.map(shellCommandItem)));
  if (problems.length)
    box.append(
      h(
        "div",
        { class: "nbh-warn", "data-testid": "nbh-shell-problems" },
        "Not every part of it can be read before it runs:",
        h("ul", {}, problems.map((t) => h("li", {}, t))),
      ),
    );
  return box;
}
