"""The tool calls of a recorded log, read into columns.

:func:`read_calls` reads an audit log's records one at a time (never the
whole list of records) into :class:`RecordedCalls`: one list per field and
one row per tool call, equal inputs held once (keyed by their canonical
JSON). A long log so leaves a few lists and its distinct inputs behind,
where a list of records left a dict per line: the garbage collector's full
collections, which walk every container alive and hold the interpreter lock
while they do, found 150,000 more of them in a 100,000-call log and held a
kernel for up to a second each (:mod:`nb_hitl.audit.rule_replay` reads its calls
here, in a worker thread, or in its worker process). :func:`recorded_calls` gives the same calls as
one dict per call.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..answers.record import NOT_ANSWERS
from ..store import AuditLog

__all__ = ["RecordedCalls", "read_calls", "recorded_calls", "held_checks", "input_key", "CALL_FIELDS"]

CALL_FIELDS = [
    "tool_call_id",
    "reply_id",
    "agent",
    "tool_name",
    "input",
    "recorded",
    "recorded_how",
    "recorded_rule",
    "person",
    "ts",
]
"""The fields of a recorded call, in :class:`RecordedCalls`'s column order."""


def input_key(tool_input: Any) -> str | None:
    """The canonical JSON of a call's input (sorted keys, no spaces): two
    inputs with equal keys are equal; ``None`` when it is not JSON."""
    try:
        return json.dumps(tool_input, sort_keys=True, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError):
        return None


@dataclass
class RecordedCalls:
    """The tool calls of a log, oldest first, as columns.

    Attributes:
        columns: per field of :data:`CALL_FIELDS`, one value per call (the
            same row index in every list). ``input`` holds one dict per
            distinct input, shared by the calls that made it.
        keys: per call, :func:`input_key` of its input (``None``: not JSON).
    """

    columns: dict[str, list[Any]] = field(default_factory=lambda: {name: [] for name in CALL_FIELDS})
    keys: list[str | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.keys)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per call (:data:`CALL_FIELDS`), oldest first."""
        names = list(self.columns)
        return [dict(zip(names, values, strict=True)) for values in zip(*self.columns.values(), strict=True)]


def _records(log: AuditLog | str | os.PathLike[str] | Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    if isinstance(log, AuditLog):
        return log.iter_records()
    if isinstance(log, (str, os.PathLike)):
        return AuditLog(log).iter_records()
    return iter(log)


def read_calls(log: AuditLog | str | os.PathLike[str] | Iterable[dict[str, Any]]) -> RecordedCalls:
    """The tool calls of a log (see :class:`RecordedCalls`), oldest first.

    Args:
        log: an :class:`~nb_hitl.store.AuditLog`, its path, or its records.

    A call is one ``(agent, tool_call_id)``. ``recorded`` is the decision of
    its last permission check before its first answer (``event: "checked"``:
    a check AgentScope made again, :func:`held_checks`, replaces the one it
    held; a check after the answer is not the call's), ``recorded_how`` and
    ``recorded_rule`` what decided it; a call with only an answer (a log
    written before checks were recorded) asked (``recorded="ask"``).
    ``person`` is its first answer (``approve``, ``deny``, ``timeout``...),
    ``None`` when nobody answered. ``ts`` is when the call was decided (its
    first answer's ``ts``, else its check's; seconds since the epoch).
    Records without a tool call, and nb_hitl's own lines about a call that
    are nobody's answer (:data:`~nb_hitl.answers.record.NOT_ANSWERS`), are left out.

    Raises:
        ValueError: the log is a symlink.
    """
    calls = RecordedCalls()
    cols, keys = calls.columns, calls.keys
    index: dict[Any, dict[Any, int]] = {}  # agent -> tool_call_id -> row (str keys, int values: no container to walk)
    inputs: dict[str, dict[str, Any]] = {}
    for r in _records(log):
        call_id = r.get("tool_call_id")
        if not call_id or not r.get("tool_name"):
            continue
        checked = (r.get("event") or "answered") == "checked"
        if not checked and r.get("decision") in NOT_ANSWERS:
            continue
        rows = index.setdefault(r.get("agent"), {})
        row = rows.get(call_id)
        if row is None:
            row = rows[call_id] = len(keys)
            for values in cols.values():
                values.append(None)
            keys.append(None)
        elif checked and cols["person"][row] is not None:
            continue  # a check after the call's answer is not its own (an id the model reused later)
        if checked:  # a later check before any answer replaces the earlier one (held_checks)
            _fill(cols, keys, inputs, row, r, r.get("decision"), r.get("decided_how"), r.get("rule"))
            cols["ts"][row] = r.get("ts")
        else:
            if cols["tool_call_id"][row] is None:  # an answer with no check before it: the call asked
                _fill(cols, keys, inputs, row, r, "ask", None, None)
            if cols["person"][row] is None:
                cols["person"][row] = r.get("decision")
                cols["ts"][row] = r.get("ts")
    return calls


def held_checks(records: list[dict[str, Any]]) -> set[int]:
    """The indexes of the checks in ``records`` that :func:`read_calls` does not keep as their
    call's decision: the same call (``agent``, ``tool_call_id``) is checked again before any
    answer. AgentScope does this in a batch of concurrent calls: a call that an earlier call's
    ``suggested_rules`` would cover is not asked and stays pending, and the next reply run checks it
    again once the earlier call is answered (``Agent._acting``). The held check asked nobody."""
    held: set[int] = set()
    unanswered: dict[tuple[Any, Any], int] = {}  # call -> its last check with no answer after it
    for i, r in enumerate(records):
        key = (r.get("agent"), r.get("tool_call_id"))
        if not key[1] or not r.get("tool_name"):
            continue
        if (r.get("event") or "answered") == "checked":
            if key in unanswered:
                held.add(unanswered[key])
            unanswered[key] = i
        elif r.get("decision") not in NOT_ANSWERS:
            unanswered.pop(key, None)
    return held


def _fill(
    cols: dict[str, list[Any]],
    keys: list[str | None],
    inputs: dict[str, dict[str, Any]],
    row: int,
    r: dict[str, Any],
    recorded: Any,
    how: Any,
    rule: Any,
) -> None:
    """Write a call's fields from its record ``r`` into row ``row`` (its input held once per distinct input)."""
    given = r.get("original_input")
    tool_input = given if isinstance(given, dict) else {}
    key = input_key(tool_input)
    if key is not None:
        tool_input = inputs.setdefault(key, tool_input)
    keys[row] = key
    values = {
        "tool_call_id": r.get("tool_call_id"),
        "reply_id": r.get("reply_id"),
        "agent": r.get("agent"),
        "tool_name": r.get("tool_name"),
        "input": tool_input,
        "recorded": recorded,
        "recorded_how": how,
        "recorded_rule": rule,
    }
    for name, value in values.items():
        cols[name][row] = value


def recorded_calls(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of a log's records, oldest first, one dict each:
    ``{"tool_call_id", "reply_id", "agent", "tool_name", "input",
    "recorded", "recorded_how", "recorded_rule", "person", "ts"}``
    (:func:`read_calls`, whose docstring says what each field holds)."""
    return read_calls(records).rows()
