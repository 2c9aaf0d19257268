"""Tool names and rule text a person can trust at a glance.

AgentScope looks rules up by the exact tool name
(``context.allow_rules.get(tool.name)``), so a rule for ``delete_fіle``
with a Cyrillic ``і`` looks like a rule for ``delete_file`` but never
applies, and a zero-width or bidi control character hides what a rule
says. :func:`check_tool_name` refuses a tool name that is not plain
ASCII (letters, digits, ``_ - . : / @``) unless it is exactly the name of
a known tool, naming the code point at fault (``unicodedata``) and what
it looks like (the Unicode confusables table, via ``confusable_homoglyphs``).
:func:`check_rule_text` refuses invisible and control characters in a
rule's content.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from confusable_homoglyphs import confusables

from ..errors import DecisionError

__all__ = ["check_tool_name", "check_rule_text", "describe_char"]

_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/@-]*")


def describe_char(ch: str) -> str:
    """``U+0430 CYRILLIC SMALL LETTER A`` (the code point and its Unicode name)."""
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed character')}"


def _kind_of(ch: str) -> str:
    cat = unicodedata.category(ch)
    if unicodedata.bidirectional(ch) in ("LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI") or ch in (
        "\u200e",
        "\u200f",
        "\u061c",
    ):
        return "a bidi control, which reorders how the text around it is shown"
    if cat == "Cf":
        return "an invisible format character"
    if cat.startswith("C"):
        return "a control character"
    if cat.startswith("Z"):
        return "a space"
    return ""


def _lookalike(ch: str) -> str | None:
    found = confusables.is_confusable(ch, preferred_aliases=["latin", "common"], greedy=False)
    if not found:
        return None
    glyphs = found[0].get("homoglyphs") or []
    ascii_glyphs = [g["c"] for g in glyphs if g["c"].isascii()]
    return ascii_glyphs[0] if ascii_glyphs else None


def check_tool_name(name: str, known_tools: Iterable[str] | None = None, *, field: str = "tool_name") -> None:
    """Refuse a tool name a person could misread.

    Accepted: a name exactly in ``known_tools``, or plain ASCII
    ``[A-Za-z0-9_][A-Za-z0-9_.:/@-]*`` (``Bash``, ``delete_file``,
    ``mcp__fs__read``).

    Args:
        name: the rule's ``tool_name``.
        known_tools: the agent's tool names, if known.
        field: the ``field`` of the error.

    Raises:
        DecisionError: naming the first character at fault with its code
            point and Unicode name, what kind of character it is (bidi
            control, invisible, control, space, or a look-alike of an ASCII
            letter from another script), and the known tool it imitates.
    """
    if _PLAIN_NAME.fullmatch(name):
        return
    known = set(known_tools) if known_tools is not None else set()
    if name in known:
        return
    for i, ch in enumerate(name):
        if _PLAIN_NAME.fullmatch(ch) or (i and ch in "_.:/@-"):
            continue
        what = _kind_of(ch)
        looks = _lookalike(ch) if not what else None
        if looks:
            what = f"it looks like the ASCII {looks!r} but is another letter"
        elif not what:
            what = "not a plain ASCII letter, digit or _ - . : / @"
        skeleton = "".join((_lookalike(c) or "") if not c.isascii() else c for c in name)
        hint = ""
        if skeleton != name and skeleton in known:
            hint = f" Did you mean the tool {skeleton!r}?"
        raise DecisionError(
            f"tool_name {name!r} contains {describe_char(ch)} at position {i}: {what}. The engine looks rules up "
            f"by the exact tool name, so such a rule could look like it covers a tool it never applies to.{hint}",
            field=field,
        )
    raise DecisionError(f"tool_name {name!r} is not a plain tool name.", field=field)  # pragma: no cover


def check_rule_text(text: str, *, field: str = "rule_content") -> None:
    """Refuse invisible or control characters in a rule's content (zero-width
    spaces, bidi controls, NUL...): the rule would not say what it shows.
    Tabs and ordinary spaces are fine.

    Raises:
        DecisionError: naming the first such character's code point.
    """
    if text.isascii() and text.isprintable():
        return
    for i, ch in enumerate(text):
        if ch == "\t" or ch == " ":
            continue
        cat = unicodedata.category(ch)
        if cat.startswith("C") or cat in ("Zl", "Zp"):
            raise DecisionError(
                f"rule_content contains {describe_char(ch)} at position {i}: {_kind_of(ch) or 'an invisible character'}, "
                "so the rule would not say what it shows.",
                field=field,
            )
