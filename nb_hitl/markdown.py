"""The model's Markdown as HTML that is safe to show in a notebook page.

:func:`to_safe_html` is the one place where text from a model becomes HTML
(:func:`markdown_html`: the same, or ``None`` for text that is one plain
paragraph and reads the same without HTML).
It parses CommonMark with markdown-it-py (raw HTML off: ``<script>`` in the
text stays text) plus tables and strikethrough, then passes the result
through nh3 (the Ammonia sanitizer) with a strict allowlist
(:data:`ALLOWED_TAGS`, :data:`ALLOWED_ATTRIBUTES`, :data:`URL_SCHEMES`).
The page walks the HTML once more against the same allowlist
(``js/lib/safe_html.ts``) before it shows it: two independent layers, so a
bug in one is not an injection. The function is pure: same text, same HTML.
Why each choice is made is written next to the allowlists below.
"""

from __future__ import annotations

from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

__all__ = ["ALLOWED_ATTRIBUTES", "ALLOWED_TAGS", "LINK_REL", "URL_SCHEMES", "markdown_html", "to_safe_html"]

ALLOWED_TAGS: frozenset[str] = frozenset(
    {
        # structure and emphasis: what CommonMark, tables and ~~strike~~ produce
        *("p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote"),
        *("strong", "em", "s", "del", "code", "pre", "ul", "ol", "li", "a"),
        *("table", "thead", "tbody", "tr", "th", "td"),
    }
)
"""Tags kept. No ``img``: an image loads by itself, so a model (or a prompt
injection in a tool result) could send what it read to any server in the
image's URL the moment the text is shown; a Markdown image is shown as a
link to click instead. No ``style``, ``svg``, ``math``, forms or frames."""

ALLOWED_ATTRIBUTES: dict[str, frozenset[str]] = {
    "a": frozenset({"href", "title"}),
    "ol": frozenset({"start"}),
}
"""Attributes kept, per tag (plus ``align`` on table cells, one of
left/center/right, and the link attributes nh3 sets). No ``style``, no
``class``, no ``id`` (a page's ids are not the model's to claim), no event
handlers."""

URL_SCHEMES: frozenset[str] = frozenset({"http", "https", "mailto"})
"""The only link targets kept. ``javascript:``, ``data:``, ``vbscript:`` and
``file:`` are dropped, and so are relative links: relative to a notebook
page they point into the Jupyter server."""

LINK_REL = "noopener noreferrer nofollow"
"""``rel`` of every link (the opened page gets no handle on this one, no
referrer, no ranking); links also open in a new tab (``target="_blank"``)."""

_CELL_ALIGN = {"left", "center", "right"}


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])

    def image(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        # an image as a link with its alt text: shown only when clicked
        token = tokens[idx]
        src = str(token.attrGet("src") or "")
        alt = renderer.renderInlineAsText(token.children or [], options, env) or src
        return f'<a href="{escapeHtml(src)}">{escapeHtml(alt)}</a>'

    md.add_render_rule("image", image)
    return md


def _aligned_cells(md: MarkdownIt, text: str) -> Any:
    """Tokens of ``text``; a table cell's ``style="text-align:x"`` becomes
    ``align="x"`` (the allowlist has no ``style``)."""
    tokens = md.parse(text)
    for token in tokens:
        if token.type in ("th_open", "td_open"):
            style = str(token.attrGet("style") or "")
            token.attrs.pop("style", None)
            align = style.removeprefix("text-align:")
            if align in _CELL_ALIGN:
                token.attrSet("align", align)
    return tokens


def _href_filter(tag: str, attr: str, value: str) -> str | None:
    if tag == "a" and attr == "href":
        scheme, sep, _ = value.partition(":")
        if not sep or scheme.strip().lower() not in URL_SCHEMES:
            return None  # relative, or a scheme nh3 would keep that we do not
    return value


_MD = _markdown()
_CLEANER = nh3.Cleaner(
    tags=set(ALLOWED_TAGS),
    clean_content_tags={"script", "style"},
    attributes={tag: set(attrs) for tag, attrs in ALLOWED_ATTRIBUTES.items()},
    tag_attribute_values={"th": {"align": _CELL_ALIGN}, "td": {"align": _CELL_ALIGN}},
    set_tag_attribute_values={"a": {"target": "_blank"}},
    attribute_filter=_href_filter,
    url_schemes=set(URL_SCHEMES),
    link_rel=LINK_REL,
    strip_comments=True,
)


def _is_plain(tokens: Any, text: str) -> bool:
    """Whether ``tokens`` are one paragraph of plain text that reads exactly as
    ``text`` (no emphasis, code, link, line break, escape or entity)."""
    if [t.type for t in tokens] != ["paragraph_open", "inline", "paragraph_close"]:
        return False
    children = tokens[1].children or []
    return all(c.type == "text" for c in children) and "".join(c.content for c in children) == text.strip()


def to_safe_html(text: str) -> str:
    """Render the model's Markdown ``text`` as sanitised HTML.

    Args:
        text: Markdown (CommonMark, GitHub-style tables and ``~~strike~~``).
            Raw HTML in it is shown as text, never as markup.

    Returns:
        An HTML fragment using only :data:`ALLOWED_TAGS` and
        :data:`ALLOWED_ATTRIBUTES`; links only to :data:`URL_SCHEMES`, with
        ``rel`` :data:`LINK_REL` and ``target="_blank"``. ``""`` for blank text.

    Never raises on any ``str``; the same text always gives the same HTML.
    """
    if not text.strip():
        return ""
    return _render(_aligned_cells(_MD, text))


def markdown_html(text: str) -> str | None:
    """:func:`to_safe_html` of ``text``, or ``None`` when the Markdown would
    show just ``text`` (one plain paragraph, or blank): then the plain text is
    shown as it streamed, and no HTML needs to travel to the page.

    Returns:
        the sanitised HTML fragment, or ``None``.
    """
    tokens = _aligned_cells(_MD, text)
    if not text.strip() or _is_plain(tokens, text):
        return None
    return _render(tokens)


def _render(tokens: Any) -> str:
    return _CLEANER.clean(_MD.renderer.render(tokens, _MD.options, {})).strip()
