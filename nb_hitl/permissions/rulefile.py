"""Rules files: export and import AgentScope ``PermissionRule`` lists as JSON.

:func:`export_rules` writes the rules of a live context as a JSON list,
one rule per line; :func:`import_rules` reads such a file all or nothing:
a malformed file (bad JSON, a rule :func:`nb_hitl.permissions.parse_rule`
refuses, an unknown tool) changes nothing and raises :class:`RuleFileError`
with the 1-based line and the field at fault, for the page to show.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from agentscope.permission import PermissionRule

from .._agentscope import permission_context, permission_engine
from ..errors import DecisionError
from .rules import _BUCKETS, _all_rules, _check_known_tool, parse_rule, rule_to_dict

__all__ = ["RuleFileError", "export_rules", "import_rules", "rules_text"]


class RuleFileError(DecisionError):
    """A rules file (see :func:`import_rules`) that cannot be applied.

    Attributes:
        line: 1-based line of the text at fault (``None`` if unknown).
        field: the field at fault, e.g. ``"rules[2].behavior"``.
    """

    def __init__(self, message: str, *, line: int | None, field: str | None) -> None:
        super().__init__(message, field=field)
        self.line = line


def export_rules(target: Any) -> str:
    """All rules of the context as JSON text: a list of AgentScope
    ``PermissionRule`` objects (``{"tool_name", "rule_content",
    "behavior", "source"}``), one per line, deny then ask then allow.
    :func:`import_rules` reads it back."""
    return rules_text(_all_rules(permission_context(target)))


def rules_text(rules: Iterable[PermissionRule]) -> str:
    """``rules`` as a rules file (the text :func:`export_rules` writes and
    :func:`import_rules` reads): a JSON list, one rule per line, in the order given."""
    lines = [json.dumps(rule_to_dict(r), ensure_ascii=False) for r in rules]
    if not lines:
        return "[]\n"
    return "[\n  " + ",\n  ".join(lines) + "\n]\n"


_WS = re.compile(r"\s*")


def _skip_ws(text: str, pos: int) -> int:
    m = _WS.match(text, pos)
    return m.end() if m else pos


def _element_spans(text: str) -> list[tuple[int, int]]:
    """Start and end offsets of each element of the top-level JSON array in
    ``text`` (already known to parse), found with ``json.JSONDecoder.raw_decode``."""
    decoder = json.JSONDecoder()
    pos = _skip_ws(text, 0) + 1  # past "["
    spans: list[tuple[int, int]] = []
    while True:
        pos = _skip_ws(text, pos)
        if text[pos] == "]":
            return spans
        _, end = decoder.raw_decode(text, pos)
        spans.append((pos, end))
        pos = _skip_ws(text, end)
        if text[pos] == ",":
            pos += 1


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def import_rules(
    text: str,
    into: Any = None,
    *,
    replace: bool = False,
    known_tools: Iterable[str] | None = None,
) -> list[PermissionRule]:
    """Read a rules file (JSON list of ``PermissionRule`` objects, as written
    by :func:`export_rules`), all or nothing.

    Args:
        text: the file's text.
        into: an agent, engine or context to apply the rules to; ``None``
            only parses. Applied only if *every* rule is valid: a malformed
            file changes nothing. Rules already present (same tool, content,
            behavior) are not added twice.
        replace: remove every existing rule first (still all or nothing).
        known_tools: refuse rules for tools not in this list.

    Returns:
        list[PermissionRule]: the rules read (all of them, including those
        already present).

    Raises:
        RuleFileError: with ``line`` (1-based) and ``field``
            (``"rules[i].behavior"`` ...) for bad JSON, a top level that is
            not a list, a rule that :func:`parse_rule` refuses, or an
            unknown tool. The message starts with ``line N``.
    """
    if not isinstance(text, str):
        raise RuleFileError("A rules file must be text.", line=None, field=None)
    data = _load(text)
    known = dict.fromkeys(known_tools) if known_tools is not None else None
    rules: list[PermissionRule] = []
    for i, item in enumerate(data):
        try:
            rule = parse_rule(item, field_prefix=f"rules[{i}].", known_tools=known)
            _check_known_tool(rule, known, field=f"rules[{i}].tool_name")
        except DecisionError as exc:
            raise _rule_error(text, i, item, exc) from None
        rules.append(rule)
    if into is not None:
        engine = permission_engine(into)
        ctx = engine.context
        if replace:
            for attr in _BUCKETS.values():
                getattr(ctx, attr).clear()
        present = {_effect(p) for p in _all_rules(ctx)}
        for rule in rules:
            key = _effect(rule)
            if key in present:
                continue
            engine.add_rule(rule)
            present.add(key)
    return rules


def _effect(rule: PermissionRule) -> tuple[str, str | None, str]:
    """What makes two rules the same for the engine (the source does not)."""
    return (rule.tool_name, rule.rule_content, rule.behavior.value)


def _load(text: str) -> list[Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RuleFileError(
            f"line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg}).", line=exc.lineno, field=None
        ) from None
    except RecursionError:
        line = _too_deep_line(text)
        raise RuleFileError(
            f"line {line}: the JSON nests [ or {{ inside each other too deeply to be read (depth {MAX_DEPTH} is "
            "passed on this line); a rules file is a list of flat rule objects.",
            line=line,
            field=None,
        ) from None
    if not isinstance(data, list):
        raise RuleFileError(
            "line 1: a rules file is a JSON list of PermissionRule objects "
            '([{"tool_name": ..., "rule_content": ..., "behavior": ..., "source": ...}]).',
            line=1,
            field=None,
        )
    return data


def _rule_error(text: str, i: int, item: Any, exc: DecisionError) -> RuleFileError:
    """The error for rule ``i``, with the line of the field at fault (the
    offsets are only computed here, when a file is refused)."""
    field = exc.field or f"rules[{i}]"
    start, end = _element_spans(text)[i]
    line = _line_at(text, start)
    key = field.rsplit(".", 1)[-1]
    if isinstance(item, dict) and key in item:  # the line of the field itself
        m = re.compile(r'"' + re.escape(key) + r'"\s*:').search(text, start, end)
        if m:
            line = _line_at(text, m.start())
    return RuleFileError(f"line {line}, rule {i + 1}, field {key!r}: {exc}", line=line, field=field)


MAX_DEPTH = 64
"""When Python's JSON reader gives up on a file nested too deeply
(``RecursionError``), the error names the line where this depth of ``[`` /
``{`` is first passed (a rules file needs a depth of 2)."""

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _too_deep_line(text: str, limit: int = MAX_DEPTH) -> int | None:
    """1-based line where the nesting first goes deeper than ``limit``
    (strings skipped), or ``None``."""
    depth = 0
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok in "[{":
            depth += 1
            if depth > limit:
                return _line_at(text, m.start())
        elif tok in "]}":
            depth -= 1
    return None
