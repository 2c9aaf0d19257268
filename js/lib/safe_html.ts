// The model's Markdown, rendered and sanitised by the kernel (nb_hitl/markdown.py,
// markdown-it-py + nh3), put into the page. A second line of defence: the HTML
// is parsed in an inert document (DOMParser: no script runs, nothing loads)
// and copied node by node into new elements, keeping only the tags and
// attributes of the kernel's allowlist and links to http(s)/mailto. Anything
// else is dropped (script/style with their content; other tags keep their
// text). Nothing here assigns a string to innerHTML.

const TAGS = new Set([
  "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote",
  "strong", "em", "s", "del", "code", "pre", "ul", "ol", "li", "a",
  "table", "thead", "tbody", "tr", "th", "td",
]);
/** elements dropped with everything in them */
const DROP = new Set(["script", "style", "template", "iframe", "object", "embed", "svg", "math", "noscript", "textarea", "title"]);
const ALIGN = new Set(["left", "center", "right"]);
const SCHEMES = new Set(["http:", "https:", "mailto:"]);
export const LINK_REL = "noopener noreferrer nofollow";

/** `href` if it is an absolute http(s)/mailto URL, else null. */
export function safeHref(href: string): string | null {
  const value = href.trim();
  if (!/^[a-z][a-z0-9+.-]*:/i.test(value)) return null; // relative: it would point into the Jupyter server
  try {
    return SCHEMES.has(new URL(value).protocol) ? value : null;
  } catch {
    return null;
  }
}

function copyAttrs(src: Element, dst: HTMLElement, tag: string): void {
  if (tag === "a") {
    const href = safeHref(src.getAttribute("href") || "");
    if (href) dst.setAttribute("href", href);
    const title = src.getAttribute("title");
    if (title) dst.setAttribute("title", title);
    dst.setAttribute("rel", LINK_REL);
    dst.setAttribute("target", "_blank");
  } else if (tag === "ol") {
    const start = src.getAttribute("start") || "";
    if (/^\d{1,9}$/.test(start)) dst.setAttribute("start", start);
  } else if (tag === "th" || tag === "td") {
    const align = src.getAttribute("align") || "";
    if (ALIGN.has(align)) dst.setAttribute("align", align);
  }
}

function copyChildren(src: Node, dst: Node): void {
  for (const child of Array.from(src.childNodes)) {
    if (child.nodeType === Node.TEXT_NODE) {
      dst.appendChild(document.createTextNode(child.textContent || ""));
    } else if (child.nodeType === Node.ELEMENT_NODE) {
      const tag = (child as Element).localName.toLowerCase();
      if (DROP.has(tag)) continue;
      if (!TAGS.has(tag)) {
        copyChildren(child, dst); // an unknown tag: its text stays, as text
        continue;
      }
      const el = document.createElement(tag);
      copyAttrs(child as Element, el, tag);
      copyChildren(child, el);
      dst.appendChild(el);
    } // comments, processing instructions...: dropped
  }
}

/** The sanitised `html` as new DOM nodes of this document (see the header). */
export function safeFragment(html: string): DocumentFragment {
  const inert = new DOMParser().parseFromString(html, "text/html");
  const out = document.createDocumentFragment();
  copyChildren(inert.body, out);
  return out;
}

/** Show the kernel's Markdown line `text` in `el`, in place of what it showed: the kernel's rendering
 *  (`html`, sanitised by nb_hitl.markdown) walked again here ({@link safeFragment}), or `text` as plain
 *  text when the kernel sent none (it reads the same). */
export function showMarkdown(el: HTMLElement, text: string, html: string | null | undefined): void {
  el.classList.toggle("nbh-md", !!html);
  if (html) el.replaceChildren(safeFragment(html));
  else el.textContent = text;
}
