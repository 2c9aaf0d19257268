// What is wrong with a piece of JSON text a person typed, in plain words
// (the browser's JSON.parse message, e.g. "Unexpected token 'o'", names a
// parser's token, not the mistake).

/** `text` parsed, or the mistake in plain words (no parser jargon). */
export function parseJson(text: string): { value: unknown } | { problem: string } {
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    return { problem: jsonProblem(text, String(err)) };
  }
}

function where(text: string, said: string): string {
  const at = /position (\d+)/.exec(said);
  if (!at) return "";
  const i = Number(at[1]);
  const shown = text.slice(Math.max(0, i - 10), i + 10);
  return ` (near character ${i + 1}: \`${shown}\`)`;
}

/** The likeliest mistake in `text`, which JSON.parse refused with `said`. */
export function jsonProblem(text: string, said = ""): string {
  const t = text.trim();
  if (!t) return "it is empty";
  if (!/^([{["\d-]|true\b|false\b|null\b)/.test(t)) return `it is not JSON: JSON text starts with \`{\` (an object), here it starts with \`${t.slice(0, 12)}\``;
  if (/'/.test(t) && !/"/.test(t)) return "it uses single quotes: JSON needs double quotes around names and text";
  if (/,\s*[}\]]/.test(t)) return "it has a comma just before a closing `}` or `]`: remove that comma";
  if (/[{,]\s*[A-Za-z_]\w*\s*:/.test(t)) return "a name is not in double quotes (write `\"command\": …`, not `command: …`)";
  const opened = (t.match(/[{[]/g) || []).length;
  const closed = (t.match(/[}\]]/g) || []).length;
  if (opened > closed) return "it is cut short: a `{` or `[` is never closed";
  if (closed > opened) return "it has a `}` or `]` that closes nothing";
  return `it is not valid JSON: check its quotes, commas and brackets${where(text, said)}`;
}
