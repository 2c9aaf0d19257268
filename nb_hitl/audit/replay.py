"""Replay a recorded history against candidate permission rules.

:func:`replay` takes the calls an audit log recorded (each permission check,
``event: "checked"``, and the answer to it, linked by ``tool_call_id``) and
asks AgentScope's own ``PermissionEngine`` what a candidate rule set (and
mode) would have decided for each: which decisions change (``allow -> ask``,
``ask -> allow``...), which calls a person denied that the candidate would
allow, which rules never fire, which are shadowed by others. Shell tools are
judged as a Session judges them (:func:`~nb_hitl.permissions.shell_check.judge_shell_call`)
unless ``shell_rules=False``. Matching is bounded
(:class:`~nb_hitl.permissions.bounded.BoundedEngine`): a pathological rule is
reported on the calls it would have hung on, never matched. A long replay
gives the event loop a turn every :data:`YIELD_EVERY` seconds (and reads
the log in a worker thread), so a kernel stays responsive while it runs and
the task running it can be cancelled between two calls.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
from agentscope.permission import (
    PermissionBehavior,
    PermissionContext,
    PermissionDecision,
    PermissionEngine,
    PermissionMode,
    PermissionRule,
)

from .._agentscope import enum_value, rule_label
from ..errors import DecisionError
from ..permissions.bounded import BoundedEngine, PathologicalRuleError
from ..permissions.rules import MODES, parse_rule
from ..permissions.shell_check import judge_shell_call, rule_covers
from ..permissions.tools import tools_of
from ..store import AuditLog
from .frame import read_records

__all__ = ["replay", "recorded_calls", "CALL_COLUMNS", "RULE_COLUMNS", "YIELD_EVERY"]

CALL_COLUMNS = [
    "tool_call_id",
    "reply_id",
    "agent",
    "tool_name",
    "input",
    "recorded",
    "recorded_how",
    "recorded_rule",
    "person",
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

YIELD_EVERY = 0.02
"""Seconds of matching :func:`replay` does before it lets the event loop run (``await asyncio.sleep(0)``)."""

_PRECEDENCE = {"deny": 0, "ask": 1, "allow": 2}  # the engine's order: deny rules, ask rules, ..., allow rules


def recorded_calls(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of a log, oldest first: ``{"tool_call_id", "reply_id",
    "agent", "tool_name", "input", "recorded", "recorded_how",
    "recorded_rule", "person"}``. ``recorded`` is the permission check's
    decision; a call with only an answer (a log written before checks were
    recorded) asked (``recorded="ask"``). ``person`` is the answer
    (``approve``, ``deny``, ``timeout``...), ``None`` when nobody answered.
    Records without a tool call (or with a ``discarded`` decision only) are left out.
    """
    calls: dict[tuple[Any, Any], dict[str, Any]] = {}
    for r in records:
        call_id = r.get("tool_call_id")
        if not call_id or not r.get("tool_name"):
            continue
        key = (r.get("agent"), call_id)
        event = r.get("event") or "answered"
        row = calls.get(key)
        if event == "checked":
            if row is not None and row["recorded_how"] is not None:
                continue  # the first check of the call (an id reused later reads as the same call)
            row = calls.setdefault(key, {"person": None})
            row.update(
                tool_call_id=call_id,
                reply_id=r.get("reply_id"),
                agent=r.get("agent"),
                tool_name=r.get("tool_name"),
                input=r.get("original_input") if isinstance(r.get("original_input"), dict) else {},
                recorded=r.get("decision"),
                recorded_how=r.get("decided_how"),
                recorded_rule=r.get("rule"),
            )
        elif r.get("decision") not in ("discarded", "id_reused", "input_changed"):
            if row is None:
                row = calls[key] = {
                    "tool_call_id": call_id,
                    "reply_id": r.get("reply_id"),
                    "agent": r.get("agent"),
                    "tool_name": r.get("tool_name"),
                    "input": r.get("original_input") if isinstance(r.get("original_input"), dict) else {},
                    "recorded": "ask",
                    "recorded_how": None,
                    "recorded_rule": None,
                }
            if row.get("person") is None:
                row["person"] = r.get("decision")
    return list(calls.values())


def _rules(rules: Any) -> tuple[list[PermissionRule], PermissionMode | None]:
    if isinstance(rules, PermissionContext):
        listed = [
            r for bucket in (rules.deny_rules, rules.ask_rules, rules.allow_rules) for rs in bucket.values() for r in rs
        ]
        return listed, rules.mode
    out = []
    for i, rule in enumerate(rules):
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


class _ReplayEngine(BoundedEngine):
    """A :class:`BoundedEngine` that remembers, for one call at a time, which
    rules matched it. Replay asks the engine for its decision first (its own
    ``check_permission``), then needs every rule of the tool matched against
    the call (to count what fired and what was shadowed): the rules the engine
    already matched are looked up, only the others are matched."""

    def __init__(self, context: PermissionContext) -> None:
        super().__init__(context)
        self.call: dict[str, Any] = {}
        self._seen: dict[int, bool] = {}

    def begin(self, tool_input: dict[str, Any]) -> dict[str, Any]:
        """Start remembering matches against a copy of ``tool_input``
        (forgetting the previous call's); returns the copy, the input to
        decide with (a shell rule's per-command checks pass other inputs,
        which are not remembered)."""
        self.call = dict(tool_input)
        self._seen = {}
        return self.call

    def seen(self, rule: PermissionRule) -> bool | None:
        """Whether ``rule`` matched the current call, ``None`` when not matched yet."""
        return self._seen.get(id(rule))

    async def _rule_matches(self, tool: Any, rule: PermissionRule, input_data: dict[str, Any]) -> bool:
        if input_data is not self.call:
            return await super()._rule_matches(tool, rule, input_data)
        seen = self._seen.get(id(rule))
        if seen is None:
            self.check_cost(tool, rule, input_data)  # BoundedEngine's check, one coroutine less
            seen = self._seen[id(rule)] = bool(await PermissionEngine._rule_matches(self, tool, rule, input_data))
        return seen


async def _matches(engine: _ReplayEngine, tool: Any, rule: PermissionRule, shell: bool) -> bool:
    """Whether ``rule`` matches the call :meth:`_ReplayEngine.begin` started,
    or (shell rules) one of its simple commands.

    Raises:
        PathologicalRuleError: matching would backtrack too long.
    """
    if await engine._rule_matches(tool, rule, engine.call):
        return True
    return bool(await rule_covers(tool, rule, engine.call, engine)) if shell else False


async def _decide(engine: BoundedEngine, tool: Any, tool_input: dict[str, Any], shell: bool) -> PermissionDecision:
    decision = await engine.check_permission(tool, tool_input)
    if shell:
        verdict = await judge_shell_call(engine, tool, dict(tool_input), decision)
        if verdict is not None:
            return verdict.decision
    return decision


async def replay(
    log: AuditLog | str | os.PathLike[str] | Iterable[dict[str, Any]],
    rules: Iterable[PermissionRule | Mapping[str, Any]] | PermissionContext,
    toolkit: Any,
    *,
    mode: str | PermissionMode | None = None,
    shell_rules: bool = True,
) -> pd.DataFrame:
    """What a candidate rule set would have decided for every recorded call.

    Args:
        log: the audit log (:class:`~nb_hitl.store.AuditLog`, its path, or its records).
        rules: the candidate rules (``PermissionRule`` or rule dicts,
            :func:`~nb_hitl.permissions.rules.parse_rule`), or a
            ``PermissionContext`` (its rules, and its mode unless ``mode`` is given).
        toolkit: the tools the calls were made with (an ``Agent``'s
            ``toolkit``, a ``Toolkit``, a list or dict of tools).
        mode: the candidate permission mode (default ``default``).
        shell_rules: judge shell commands one simple command at a time, as a
            Session does by default (:mod:`nb_hitl.shell_policy`).

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
        DecisionError: a bad rule (``field="rules[i]...."``) or mode.
    """
    listed, context_mode = _rules(rules)
    candidate_mode = _mode(mode, context_mode)
    engine = _ReplayEngine(PermissionContext(mode=candidate_mode))
    for rule in listed:
        engine.add_rule(rule)
    by_tool: dict[str, list[PermissionRule]] = {}
    for rule in sorted(listed, key=lambda r: _PRECEDENCE[enum_value(r.behavior)]):  # stable within a bucket
        by_tool.setdefault(rule.tool_name, []).append(rule)
    tools = tools_of(getattr(toolkit, "toolkit", None) or toolkit)
    stats: dict[int, dict[str, Any]] = {id(r): {"matched": 0, "fired": 0, "pathological": 0, "by": {}} for r in listed}
    rows = []
    calls = await asyncio.to_thread(
        lambda: recorded_calls(read_records(log))
    )  # off the loop: 100,000 lines take a second
    turn = time.perf_counter()
    for call in calls:
        if time.perf_counter() - turn >= YIELD_EVERY:  # the loop's turn: clicks answered, a cancel lands here
            await asyncio.sleep(0)
            turn = time.perf_counter()
        row = {**call, "candidate": "unknown", "candidate_reason": None, "candidate_rule": None, "problem": None}
        tool = tools.get(str(call["tool_name"]))
        if tool is None:
            row["problem"] = f"no tool {call['tool_name']!r} in the toolkit"
            rows.append(row)
            continue
        shell = shell_rules
        given = engine.begin(call["input"])  # a copy: the row keeps the recorded input
        decision: PermissionDecision | None = None
        try:  # first: the engine's matches are remembered for the count below
            decision = await _decide(engine, tool, given, shell)
        except PathologicalRuleError as exc:
            row["problem"] = str(exc)
        matching = []
        for rule in by_tool.get(tool.name, []):
            try:
                seen = engine.seen(rule)  # most were matched by the engine's own check
                if seen or (seen is None or shell) and await _matches(engine, tool, rule, shell):
                    matching.append(rule)
            except PathologicalRuleError as exc:
                stats[id(rule)]["pathological"] += 1
                row["problem"] = str(exc)
        for rule in matching:
            stats[id(rule)]["matched"] += 1
        if matching:
            first = matching[0]
            stats[id(first)]["fired"] += 1
            for other in matching[1:]:
                stats[id(other)]["by"][rule_label(first)] = stats[id(other)]["by"].get(rule_label(first), 0) + 1
        if row["problem"] is None and decision is not None:
            row["candidate"] = enum_value(decision.behavior)
            row["candidate_reason"] = decision.decision_reason or decision.message
            fired = [r for r in matching if enum_value(r.behavior) == row["candidate"]]
            row["candidate_rule"] = rule_label(fired[0]) if fired else None
        rows.append(row)
    for row in rows:
        known = row["candidate"] != "unknown"
        row["changed"] = known and row["candidate"] != row["recorded"]
        row["change"] = f"{row['recorded']} -> {row['candidate']}" if row["changed"] else ""
        row["denied_now_allowed"] = row.get("person") == "deny" and row["candidate"] == PermissionBehavior.ALLOW.value
    frame = await asyncio.to_thread(pd.DataFrame, rows, columns=CALL_COLUMNS)
    frame.attrs["rules"] = _rule_frame(listed, stats)
    frame.attrs["mode"] = candidate_mode.value
    return frame


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
