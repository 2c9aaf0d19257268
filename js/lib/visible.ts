// Untrusted text (a person's reason, what a model or a peer wrote) shown so
// that every character can be seen: invisible and control characters
// (bidi overrides such as U+202E, zero-width characters, unassigned code
// points) are written as \uXXXX, as the kernel's visible_text does for the
// inputs and diffs it sends. A bidi override drawn raw reverses the text
// after it, so a card would not say what was sent.

// Unicode categories Cc, Cf, Cs, Co, Cn, Zl, Zp, Zs (the plain space and a
// newline are kept).
const HIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/gu;

function escape(ch: string): string {
  let out = "";
  for (let i = 0; i < ch.length; i++) out += "\\u" + ch.charCodeAt(i).toString(16).padStart(4, "0");
  return out;
}

/** `text` with every invisible or control character but " " and "\n" written as `\uXXXX` (UTF-16 units). */
export function visibleText(text: string): string {
  return text.replace(HIDDEN, (ch) => (ch === " " || ch === "\n" ? ch : escape(ch)));
}
