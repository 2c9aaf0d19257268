"""Replay a recorded history against candidate permission rules.

:func:`replay` takes the calls an audit log recorded (each permission check,
``event: "checked"``, and the answer to it, linked by ``tool_call_id``) and
asks AgentScope's own ``PermissionEngine`` what a candidate rule set (and
mode) would have decided for each (:class:`~nb_hitl.audit.judge.Judge`):
which decisions change (``allow -> ask``, ``ask -> allow``...), which calls
a person denied that the candidate would allow, which rules never fire,
which are shadowed by others. Shell tools are judged as a Session judges
them (:func:`~nb_hitl.permissions.shell_check.judge_shell_call`) unless
``shell_rules=False``. Matching is bounded
(:class:`~nb_hitl.permissions.bounded.BoundedEngine`): a pathological rule is
reported on the calls it would have hung on, never matched. Each distinct
call (tool and input) is put to the engine once, its rules matched once
each, and every recorded call with it counted with that outcome. A long replay
gives the event loop a turn every :data:`~nb_hitl.audit.judge.YIELD_EVERY`
seconds (and reads the log in a thread), so a kernel stays responsive
while it runs and the task running it can be cancelled between two calls;
with ``in_worker=True`` (the explorer's replays) the log is read and the
calls matched in a worker process (:mod:`nb_hitl.audit.worker`) and the
kernel's interpreter stays free for clicks.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from agentscope.permission import PermissionBehavior, PermissionContext, PermissionMode, PermissionRule

from .._agentscope import enum_value, rule_label
from ..errors import DecisionError
from ..permissions.rules import MODES, parse_rule
from ..permissions.tools import tools_of
from ..store import AuditLog
from .calls import CALL_FIELDS, RecordedCalls, read_calls, recorded_calls
from .judge import TURN_ROUNDS, YIELD_EVERY, Judge, Outcome, Turns
from .worker import WORKER_TIMEOUT, Item, Worker, open_worker

__all__ = ["replay", "recorded_calls", "CALL_COLUMNS", "RULE_COLUMNS", "YIELD_EVERY", "TURN_ROUNDS"]

CALL_COLUMNS = [
    *CALL_FIELDS,
    "candidate",
    "candidate_reason",
    "candidate_rule",
    "change",
    "changed",
    "denied_now_allowed",
    "problem",
]
"""The columns of :func:`replay`'s frame (one row per recorded call)."""

RULE_COLUMNS = ["rule", "behavior", "matched", "fired", "never_fired", "shadowed_by", "pathological"]
"""The columns of ``replay(...).attrs["rules"]`` (one row per candidate rule)."""


_RULES_SHAPE = (
    "a list of rules (each a PermissionRule or a dict like "
    '{"tool_name": "Bash", "rule_content": "git:*", "behavior": "allow"}) or a PermissionContext'
)


def _rules_refused(rules: Any) -> DecisionError | None:
    """Why ``rules`` is not a candidate rule set (naming the shapes it may take), or ``None``."""
    if isinstance(rules, Mapping):
        keys = ", ".join(repr(k) for k in list(rules)[:5])
        extra = (
            ' Pass its list as rules and its mode as mode: replay(log, d["rules"], toolkit, mode=d.get("mode")).'
            if "rules" in rules
            else ""
        )
        return DecisionError(f"rules must be {_RULES_SHAPE}; got a dict with keys {keys}.{extra}", field="rules")
    if rules is None or isinstance(rules, (str, bytes)) or not isinstance(rules, Iterable):
        got = "None" if rules is None else "text" if isinstance(rules, (str, bytes)) else type(rules).__name__
        return DecisionError(f"rules must be {_RULES_SHAPE}; got {got}.", field="rules")
    return None


def _rules(rules: Any) -> tuple[list[PermissionRule], PermissionMode | None]:
    refused = None if isinstance(rules, PermissionContext) else _rules_refused(rules)
    if refused is not None:
        raise refused
    if isinstance(rules, PermissionContext):
        listed = [
            r for bucket in (rules.deny_rules, rules.ask_rules, rules.allow_rules) for rs in bucket.values() for r in rs
        ]
        return listed, rules.mode
    out = []
    for i, rule in enumerate(rules):
        if not isinstance(rule, (PermissionRule, Mapping)):
            raise DecisionError(
                f"rules[{i}] must be a PermissionRule or a rule dict like "
                f'{{"tool_name": "Bash", "rule_content": "git:*", "behavior": "allow"}}; got {type(rule).__name__} '
                f"{str(rule)[:60]!r}.",
                field=f"rules[{i}]",
            )
        out.append(
            rule
            if isinstance(rule, PermissionRule)
            else parse_rule(rule, default_source="replay", field_prefix=f"rules[{i}].")
        )
    return out, None


def _mode(mode: Any, fallback: PermissionMode | None) -> PermissionMode:
    if mode is None:
        return fallback or PermissionMode.DEFAULT
    try:
        return PermissionMode(mode)
    except ValueError:
        raise DecisionError(f"mode must be one of {', '.join(MODES)}; got {mode!r}.", field="mode") from None


FRAME_PIECE = 5_000
"""Values of a column pandas converts at a time when the replay's frame is built."""


async def _column(values: Sequence[Any] | np.ndarray, turn: Turns) -> pd.Series:
    """``pd.Series(values)``, converted :data:`FRAME_PIECE` values at a time
    with a turn of the event loop when one is due (``turn``).

    pandas holds the interpreter while it infers and converts a column
    (15-50 ms for 100,000 values): a click the kernel's loop (or a thread
    beside it) waits on would wait that long. A piece takes under a
    millisecond. When the pieces' dtypes differ (a piece all ``None``), the
    column is converted whole, so its dtype is always the one pandas infers
    for all of it."""
    pieces = []
    for start in range(0, len(values), FRAME_PIECE):
        pieces.append(pd.Series(values[start : start + FRAME_PIECE]))
        await turn()
    if len(pieces) <= 1 or len({str(p.dtype) for p in pieces}) > 1:
        return pd.Series(values)
    return pd.concat(pieces, ignore_index=True)


def _taken(table: list[Outcome], field: str, index: np.ndarray) -> np.ndarray:
    """``field`` of each call's outcome: one value per distinct outcome, taken per call."""
    values = np.empty(len(table), dtype=object)
    values[:] = [getattr(o, field) for o in table]
    return values.take(index)


def _changes(recorded: Sequence[Any], candidate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per call, whether the candidate changes the recorded decision (not when it
    cannot decide: ``unknown``) and the change's label (``"ask -> allow"``, empty
    when none). A label is made once per (recorded, candidate) pair there is."""
    rec_codes, rec_values = pd.factorize(np.asarray(recorded, dtype=object), use_na_sentinel=False)
    cand_codes, cand_values = pd.factorize(candidate, use_na_sentinel=False)
    pair = rec_codes * len(cand_values) + cand_codes
    labels = np.array(
        [f"{r} -> {c}" if c != "unknown" and c != r else "" for r in rec_values for c in cand_values],
        dtype=object,
    )
    label = labels.take(pair)
    return label != "", label


async def _per_call(
    cols: Mapping[str, Sequence[Any]], candidate: np.ndarray, turn: Turns
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per call: ``changed``, ``change`` (:func:`_changes`) and whether a
    person denied it and the candidate allows it, worked out
    :data:`FRAME_PIECE` calls at a time with a turn of the event loop when
    one is due (``turn``): at once, for 100,000 calls, the interpreter was
    held 50-100 ms (``pd.factorize`` of two object columns, a comparison of
    each) and a click waited that long. Each call's values depend on its own
    recorded, person and candidate values only, so the pieces give what one
    pass gives."""
    recorded, person = cols["recorded"], cols["person"]
    allow = PermissionBehavior.ALLOW.value
    changed = np.zeros(len(candidate), dtype=bool)
    change = np.empty(len(candidate), dtype=object)
    denied = np.zeros(len(candidate), dtype=bool)
    for start in range(0, len(candidate), FRAME_PIECE):
        part = slice(start, start + FRAME_PIECE)
        changed[part], change[part] = _changes(recorded[part], candidate[part])
        denied[part] = (np.asarray(person[part], dtype=object) == "deny") & (candidate[part] == allow)
        await turn()
    return changed, change, denied


async def _call_frame(calls: RecordedCalls, table: list[Outcome], index: np.ndarray, turn: Turns) -> pd.DataFrame:
    """The replay's frame (:data:`CALL_COLUMNS`): the recorded calls' columns
    and, per call, what the candidate decides (``table[index[i]]`` for call
    ``i``). Built on the event loop with turns between pieces (:func:`_per_call`,
    :func:`_column`); each outcome's fields are read once per distinct
    outcome, not per call."""
    cols = calls.columns
    taken = {}
    for name, field in (
        ("candidate", "candidate"),
        ("candidate_reason", "reason"),
        ("candidate_rule", "rule"),
        ("problem", "problem"),
    ):
        taken[name] = _taken(table, field, index)  # a few ms each for 100,000 calls
        await turn()
    changed, change, denied = await _per_call(cols, taken["candidate"], turn)
    data: dict[str, Any] = {**cols, **taken, "changed": changed, "change": change, "denied_now_allowed": denied}
    frame = {}
    for name in CALL_COLUMNS:
        frame[name] = await _column(data[name], turn)
    # copy=False: the columns stay as built (pandas would copy them into one block per dtype, 60-90 ms held)
    return pd.DataFrame(frame, columns=CALL_COLUMNS, copy=False)


def _tally(listed: list[PermissionRule], outcomes: Counter[Outcome]) -> dict[int, dict[str, Any]]:
    """Per rule (by ``id``): on how many calls it ``matched``, ``fired`` (the
    first match), was shadowed ``by`` (label -> calls) and was ``pathological``;
    ``outcomes`` counts the calls each outcome was given to."""
    stats: dict[int, dict[str, Any]] = {id(r): {"matched": 0, "fired": 0, "pathological": 0, "by": {}} for r in listed}
    for outcome, n in outcomes.items():
        for rule in outcome.pathological:
            stats[id(rule)]["pathological"] += n
        for rule in outcome.matching:
            stats[id(rule)]["matched"] += n
        if outcome.matching:
            first = outcome.matching[0]
            stats[id(first)]["fired"] += n
            label = rule_label(first)
            for other in outcome.matching[1:]:
                by = stats[id(other)]["by"]
                by[label] = by.get(label, 0) + n
    return stats


async def replay(
    log: AuditLog | str | os.PathLike[str] | Iterable[dict[str, Any]] | RecordedCalls,
    rules: Iterable[PermissionRule | Mapping[str, Any]] | PermissionContext,
    toolkit: Any,
    *,
    mode: str | PermissionMode | None = None,
    shell_rules: bool = True,
    in_worker: bool = False,
    timeout: float = WORKER_TIMEOUT,
    on_read: Callable[[RecordedCalls], None] | None = None,
) -> pd.DataFrame:
    """What a candidate rule set would have decided for every recorded call.

    Each distinct call (its tool and its input, compared as canonical JSON)
    is put to the engine once and every recorded call with it gets that
    outcome: the engine's decision is a function of the tool, the input and
    the candidate context, which one replay holds fixed.

    Args:
        log: the audit log (:class:`~nb_hitl.store.AuditLog`, its path, or
            its records), or its calls already read
            (:func:`~nb_hitl.audit.calls.read_calls`, as the explorer keeps them).
        rules: the candidate rules (``PermissionRule`` or rule dicts,
            :func:`~nb_hitl.permissions.rules.parse_rule`), or a
            ``PermissionContext`` (its rules, and its mode unless ``mode`` is given).
        toolkit: the tools the calls were made with (an ``Agent``'s
            ``toolkit``, a ``Toolkit``, a list or dict of tools).
        mode: the candidate permission mode (default ``default``).
        shell_rules: judge shell commands one simple command at a time, as a
            Session does by default (:mod:`nb_hitl.shell_policy`).
        in_worker: judge the calls in a worker process
            (:class:`~nb_hitl.audit.worker.Worker`), leaving the
            kernel's interpreter free (the explorer's replays): the calls of
            a tool that cannot be sent there (:func:`~nb_hitl.audit.worker.ship_tools`)
            and inputs that are not JSON are judged here, as without it; a
            log file is read there too (:meth:`~nb_hitl.audit.worker.Worker.read`).
        timeout: with ``in_worker``, the seconds the worker may take.
        on_read: called with the calls when ``log`` is a log file, once read
            (the explorer keeps them for its next replay).

    Returns:
        a ``DataFrame`` with :data:`CALL_COLUMNS`, one row per recorded
        call: ``recorded`` (what the check decided then), ``person`` (the
        answer), ``candidate`` (``allow`` | ``deny`` | ``ask``, or
        ``unknown`` when it cannot be decided: unknown tool, pathological
        rule; ``problem`` says why), ``change`` (``"ask -> allow"``, empty
        when the same), ``denied_now_allowed`` (a person denied it, the
        candidate allows it). ``frame.attrs["rules"]`` is a ``DataFrame``
        with :data:`RULE_COLUMNS`: per candidate rule, on how many calls it
        ``matched`` and ``fired`` (matched, with no rule before it in the
        engine's order, deny then ask then allow, matching), ``never_fired``,
        ``shadowed_by`` (it matched calls but another rule fired on every
        one: that rule's label) and ``pathological`` (calls it could not be
        matched against in the bound).

    Raises:
        DecisionError: ``rules`` not of the shapes above (``field="rules"``:
            ``None``, text, a dict such as a rules file's ``{"mode", "rules"}``),
            a bad rule (``field="rules[i]...."``) or mode; with ``in_worker``,
            the worker failed or ran past ``timeout`` (``field="replay"``; the
            worker is stopped).
    """
    listed, context_mode = _rules(rules)
    candidate_mode = _mode(mode, context_mode)
    tools = tools_of(getattr(toolkit, "toolkit", None) or toolkit)
    turn = Turns()
    async with open_worker(timeout) if in_worker else contextlib.nullcontext() as worker:
        calls = await _calls(log, worker)
        if on_read is not None and calls is not log:
            on_read(calls)
        items, per_call, unknown = await _distinct(calls, tools, turn)
        decided: list[Outcome | None] = [None] * len(items)
        if worker is not None:
            await worker.judge(items, listed, candidate_mode, shell_rules, decided)
    judge = Judge(listed, candidate_mode, shell_rules)
    for k, (tool, tool_input, _) in enumerate(items):
        if decided[k] is None:
            decided[k] = await judge.judge(tool, tool_input)
    # every distinct outcome once (the judged calls', then the unknown tools'); per call, its place there
    table: list[Outcome] = [*decided, *unknown]  # type: ignore[list-item]
    index = np.frombuffer(per_call, dtype=np.int64).copy()
    index[index < 0] = len(decided) - 1 - index[index < 0]
    given: Counter[Outcome] = Counter()
    for k, n in enumerate(np.bincount(index, minlength=len(table)).tolist()):
        if n:
            given[table[k]] += n
    frame = await _call_frame(calls, table, index, turn)
    frame.attrs["rules"] = _rule_frame(listed, _tally(listed, given))
    frame.attrs["mode"] = candidate_mode.value
    return frame


async def _calls(log: Any, worker: Worker | None) -> RecordedCalls:
    """``log``'s calls: as given, read by the ``worker`` (a log file), or in
    a thread (100,000 lines take a second: off the loop)."""
    if isinstance(log, RecordedCalls):
        return log
    if worker is not None and isinstance(log, (AuditLog, str, os.PathLike)):
        return await worker.read(log.path if isinstance(log, AuditLog) else log)
    return await asyncio.to_thread(read_calls, log)


async def _distinct(
    calls: RecordedCalls, tools: Mapping[str, Any], turn: Turns
) -> tuple[list[Item], array[int], list[Outcome]]:
    """The distinct calls to judge, in the order they first appear: ``(tool,
    input, key)``, one per tool and input (``key``: the input's canonical
    JSON; ``None``: not JSON, judged on its own); per recorded call, the
    index of its item, or ``-1 - j`` when its tool is not in ``tools``
    (``j``: its outcome's place in the third list, one per missing tool)."""
    names, inputs, keys = calls.columns["tool_name"], calls.columns["input"], calls.keys
    items: list[Item] = []
    seen: dict[tuple[str, str], int] = {}
    missing: dict[str, int] = {}
    unknown: list[Outcome] = []
    per_call: array[int] = array("q")
    for i in range(len(calls)):
        await turn()
        name = str(names[i])
        tool = tools.get(name)
        if tool is None:
            j = missing.get(name)
            if j is None:
                j = missing[name] = len(unknown)
                unknown.append(Outcome("unknown", None, None, f"no tool {names[i]!r} in the toolkit", (), ()))
            per_call.append(-1 - j)
            continue
        input_key = keys[i]
        key = (tool.name, input_key) if input_key is not None else None
        index = seen.get(key) if key is not None else None
        if index is None:
            index = len(items)
            items.append((tool, inputs[i], input_key))
            if key is not None:
                seen[key] = index
        per_call.append(index)
    return items, per_call, unknown


def _rule_frame(listed: list[PermissionRule], stats: dict[int, dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for rule in listed:
        s = stats[id(rule)]
        shadowed = s["matched"] > 0 and s["fired"] == 0
        rows.append(
            {
                "rule": rule_label(rule),
                "behavior": enum_value(rule.behavior),
                "matched": s["matched"],
                "fired": s["fired"],
                "never_fired": s["fired"] == 0,
                "shadowed_by": max(s["by"], key=s["by"].get) if shadowed and s["by"] else None,
                "pathological": s["pathological"],
            }
        )
    return pd.DataFrame(rows, columns=RULE_COLUMNS)
