"""What a tool call will really run with, and how to show it faithfully.

AgentScope does not run the model's argument text as sent: it reads it with
json_repair and the tool's schema (:func:`nb_hitl._agentscope.agentscope_tool_input`),
which repairs truncated JSON, coerces ``"5"`` to ``5`` and keeps the *last*
of several objects. :func:`read_input` computes that reading, compares it
with a plain JSON reading of the same text and says whether they differ
(shown on the card) and whether the text is ambiguous (several top-level
values, text around the JSON, a key given twice, keys dropped), in which
case Approve is refused and only Deny or Modify remain.

:func:`visible_json` / :func:`visible_text` escape invisible and control
characters (bidi overrides, zero-width characters) as ``\\uXXXX`` so the
person sees every character; the JSON shown still parses to the same value.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from .._agentscope import agentscope_tool_input
from ..errors import DecisionError

__all__ = [
    "InputReading",
    "read_input",
    "refuse_misread_edit",
    "canonical",
    "same_value",
    "same_by_value",
    "visible_json",
    "visible_text",
]

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _hidden(ch: str, keep: str) -> bool:
    if ch in keep or ch == " ":
        return False
    return unicodedata.category(ch) in _HIDDEN_CATEGORIES


def visible_text(text: str, keep: str = "\n") -> str:
    """``text`` with every invisible or control character (Unicode categories
    Cc, Cf, Zl, Zp, Zs other than the space, surrogates, private use,
    unassigned) written as a JSON-style ``\\uXXXX`` escape; characters in
    ``keep`` are left as they are."""
    return "".join(_escape(ch) if _hidden(ch, keep) else ch for ch in text)


def visible_json(value: Any, indent: int | None = 2) -> str:
    """``value`` as JSON text in which every character can be seen.

    ``json.dumps(ensure_ascii=False)`` then :func:`visible_text`: inside a
    JSON string an escape means the same character, so the text still
    parses to ``value``. Integers of any size are written exactly (the page
    receives this as text, never as a JSON number, so nothing beyond 2**53
    is rounded).
    """
    return visible_text(json.dumps(value, indent=indent, ensure_ascii=False), keep="\n" if indent is not None else "")


def canonical(value: Any) -> str:
    """A JSON text that tells values apart by type (``5``, ``5.0``, ``true``, ``"5"``), keys sorted."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=True)


def same_value(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same JSON value, type included (``1 != True != 1.0``)."""
    return canonical(a) == canonical(b)


def _by_value(value: Any) -> Any:
    """``value`` with integral floats as ints (``1250.0`` -> ``1250``; ``True`` stays ``True``), nested."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _by_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_by_value(v) for v in value]
    return value


def same_by_value(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same JSON value for a tool: numbers by value
    (``1250 == 1250.0``), every other type strict (``1 != True``, ``"5" != 5``)."""
    return same_value(_by_value(a), _by_value(b))


class _Duplicate(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates)


@dataclass(frozen=True)
class InputReading:
    """A tool call's argument text, read as AgentScope will and as plain JSON.

    Attributes:
        sent: the model's argument text (``ToolCallBlock.input``).
        executed: what AgentScope passes to the tool, or ``None`` when it
            cannot read the text (``error`` says why).
        error: AgentScope's reason for refusing the text, or ``None``.
        strict: the plain JSON reading (``json.loads``, no key given twice),
            or ``None`` when the text is not exactly one JSON object.
        changes: how ``executed`` differs from what was sent, one line each.
        ambiguous: why the text can be read in more than one way (Approve
            is then refused), or ``None``.
    """

    sent: str
    executed: dict[str, Any] | None
    error: str | None = None
    strict: dict[str, Any] | None = None
    changes: tuple[str, ...] = field(default_factory=tuple)
    ambiguous: str | None = None

    @property
    def differs(self) -> bool:
        """True when what runs is not simply the JSON the model sent."""
        return bool(self.changes) or self.ambiguous is not None or self.error is not None

    @property
    def approvable(self) -> bool:
        """True when approving runs exactly the input shown."""
        return self.executed is not None and self.ambiguous is None

    @property
    def refusal(self) -> str | None:
        """Why Approve is refused (``None`` when it is not)."""
        if self.error is not None:
            return f"AgentScope cannot read this input ({self.error}); deny it or modify it."
        if self.ambiguous is not None:
            return (
                f"The model's arguments are ambiguous: {self.ambiguous}. Approve is refused because "
                "what you would approve is not clearly what runs; deny the call or modify its input."
            )
        return None

    def shown_text(self) -> str:
        """The input shown on the card: what runs, or the sent text when nothing can run."""
        if self.executed is not None:
            return visible_json(self.executed)
        return visible_text(self.sent)


def _strict_reading(raw: str) -> tuple[dict[str, Any] | None, Any, str | None]:
    """(the one JSON object, the first JSON value found, why the text is ambiguous)."""
    text = raw.strip()
    if not text:
        return {}, {}, None
    try:
        value = _DECODER.decode(text)
    except _Duplicate as dup:
        return None, None, f"the key {dup.key[:80]!r} is given more than once (AgentScope keeps the last value)"
    except json.JSONDecodeError as exc:
        try:
            first, end = _DECODER.raw_decode(text)
        except _Duplicate as dup:
            return None, None, f"the key {dup.key[:80]!r} is given more than once (AgentScope keeps the last value)"
        except json.JSONDecodeError:
            if not text.startswith("{"):
                return None, None, "there is text before the JSON object"
            # truncated or malformed but one object: AgentScope repairs it
            del exc
            return None, None, None
        rest = text[end:].strip()
        try:
            _DECODER.raw_decode(rest)
            several = True
        except (json.JSONDecodeError, _Duplicate):
            several = rest.startswith(("{", "["))
        if several:
            return None, first, "the text holds several JSON values one after another (AgentScope runs the last)"
        return None, first, "there is text after the JSON object"
    if not isinstance(value, dict):
        return None, value, None
    return value, value, None


def _duplicate_key(raw: str) -> str | None:
    """The first key the first JSON value in ``raw`` names twice, or ``None``."""
    try:
        _DECODER.raw_decode(raw.strip())
    except _Duplicate as dup:
        return dup.key
    except json.JSONDecodeError:
        pass
    return None


def _changes(sent: dict[str, Any] | None, executed: dict[str, Any], raw: str) -> tuple[str, ...]:
    if sent is None:
        key = _duplicate_key(raw)
        if key is not None:
            return (
                f'The arguments name the key "{visible_text(key[:80])}" twice; '
                "JSON readers disagree on which value counts, "
                "and AgentScope runs the last one (the input shown).",
            )
        return ("The arguments are not valid JSON; AgentScope repairs them into the input shown.",)
    out = []
    for key in sent:
        if key not in executed:
            out.append(f"{visible_text(key)!s}: sent, but dropped")
        elif not same_value(sent[key], executed[key]):
            out.append(
                f"{visible_text(key)}: the model sent {visible_json(sent[key], None)}, "
                f"the tool receives {visible_json(executed[key], None)}"
            )
    for key in executed:
        if key not in sent:
            out.append(
                f"{visible_text(key)}: not sent, the tool receives {visible_json(executed[key], None)} "
                "(filled in from the tool's schema)"
            )
    return tuple(out)


def read_input(raw: str, schema: dict[str, Any] | None) -> InputReading:
    """Read the model's argument text ``raw`` as AgentScope will run it.

    Args:
        raw: ``ToolCallBlock.input``.
        schema: the tool's ``input_schema`` (AgentScope repairs with it).

    Returns:
        an :class:`InputReading`; ``executed`` is exactly what
        ``Toolkit.call_tool`` would pass to the tool.
    """
    raw = raw or ""
    try:
        executed: dict[str, Any] | None = agentscope_tool_input(raw, schema)
        error = None
    except ValueError as exc:
        executed, error = None, str(exc) or "not a JSON object"
    strict, first, ambiguous = _strict_reading(raw)
    if executed is None:
        return InputReading(sent=raw, executed=None, error=error, strict=strict, ambiguous=ambiguous)
    if ambiguous is None and isinstance(first, dict) and first.keys() - executed.keys():
        ambiguous = "AgentScope's reading drops keys the model sent"
    base = strict if strict is not None else (first if isinstance(first, dict) else None)
    changes = _changes(base, executed, raw)
    return InputReading(sent=raw, executed=executed, strict=strict, changes=changes, ambiguous=ambiguous)


def refuse_misread_edit(edited: dict[str, Any], schema: dict[str, Any] | None) -> str:
    """The edited input as the call will carry it (``ToolCallBlock.input``), once AgentScope's
    own reading of it is what the person typed; one check for the Modify preview and for
    "Approve modified input", so both refuse the same edits.

    Args:
        edited: the input read by :func:`nb_hitl.messages.parse_edited_input`.
        schema: the tool's ``input_schema``.

    Returns:
        the JSON text of ``edited``.

    Raises:
        DecisionError: ``field="input"`` when AgentScope cannot read the edit or would run
            other values (json_repair coerces them to the schema's types).
    """
    text = json.dumps(edited, ensure_ascii=False)
    runs = read_input(text, schema)
    if runs.executed is None:
        raise DecisionError(f"AgentScope cannot read this edit: {runs.error}", field="input")
    if not same_value(runs.executed, edited):
        raise DecisionError(
            f"AgentScope would run this edit as {visible_json(runs.executed, None)}, not as typed; write the "
            "values with the types the tool's schema gives.",
            field="input",
        )
    return text
