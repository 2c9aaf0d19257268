// A unified diff computed by the kernel (nb_hitl.file_change), drawn as text:
// one text node per line in a span whose class says added / removed / hunk
// header / file header / context. Nothing is parsed as HTML, so a diff of a
// file holding `<script>` stays text.
import { h } from "./dom";

export type DiffLineKind = "add" | "del" | "hunk" | "meta" | "context";

/** The kind of each line of a unified diff ("" and a final newline give no line). */
export function diffLines(diff: string): { kind: DiffLineKind; text: string }[] {
  const lines = diff.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  let inHunk = false;
  return lines.map((text) => {
    let kind: DiffLineKind = "context";
    if (text.startsWith("@@")) {
      kind = "hunk";
      inHunk = true;
    } else if (!inHunk && (text.startsWith("--- ") || text.startsWith("+++ "))) kind = "meta";
    else if (text.startsWith("\\")) kind = "meta";
    else if (text.startsWith("+")) kind = "add";
    else if (text.startsWith("-")) kind = "del";
    return { kind, text };
  });
}

/** A labelled <pre> region holding the diff, one block span per line (copying keeps the lines);
 *  focusableScrollers makes it reachable by keyboard when it scrolls. */
export function diffView(diff: string, label: string, testid: string): HTMLElement {
  const pre = h("pre", { class: "nbh-pre nbh-diff", role: "region", "aria-label": label, "data-testid": testid });
  for (const line of diffLines(diff)) {
    pre.append(h("span", { class: `nbh-diff-${line.kind}`, "data-kind": line.kind }, line.text));
  }
  return pre;
}
