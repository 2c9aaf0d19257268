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
reported on the calls it would have hung on, never matched. Each distinct
call (tool and input) is put to the engine once, its rules matched once
each, and every recorded call with it counted with that outcome. A long replay
gives the event loop a turn every :data:`YIELD_EVERY` seconds (and reads
the log in a worker thread), so a kernel stays responsive while it runs and
the task running it can be cancelled between two calls.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass
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
from ..permissions.bounded import BoundedEngine, PathologicalRuleError, may_backtrack
from ..permissions.rules import MODES, parse_rule
from ..permissions.shell_check import judge_shell_call, rule_covers, shell_field, shell_forms
from ..permissions.tools import tools_of
from ..store import AuditLog
from .calls import CALL_FIELDS, RecordedCalls, read_calls, recorded_calls

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

YIELD_EVERY = 0.02
"""Seconds of matching :func:`replay` does before it lets the event loop run (:data:`TURN_ROUNDS` rounds)."""

TURN_ROUNDS = 4
"""Event-loop iterations (``await asyncio.sleep(0)``) a turn of :func:`replay` gives.
A message reaching a kernel goes from its socket's callback through a queue
and a task or two to the comm handler, one loop iteration a step: with one
iteration a turn, each step waited for the next turn (a click waited 40-60 ms
for three turns of 20 ms); an iteration with nothing to run costs a few µs."""

_ABSENT = object()
_PRECEDENCE = {"deny": 0, "ask": 1, "allow": 2}  # the engine's order: deny rules, ask rules, ..., allow rules


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


class _ReplayEngine(BoundedEngine):
    """A :class:`BoundedEngine` that knows, for one call at a time, which
    rules match it. Replay matches every rule of the call's tool first
    (:meth:`match_all`, to count what fired and what was shadowed), then asks the
    engine for its decision (its own ``check_permission``), whose rule
    matches against that call are then answered from what is known: each rule
    is matched once per call.

    Args:
        context: the candidate ``PermissionContext``.
        answers: two done futures, holding ``False`` and ``True``, that the
            engine's ``await self._rule_matches(...)`` gets for a known match
            (no coroutine made per lookup).
    """

    def __init__(self, context: PermissionContext, answers: tuple[asyncio.Future[bool], asyncio.Future[bool]]) -> None:
        super().__init__(context)
        self.call: dict[str, Any] = {}
        self._answers = answers
        self._known: dict[int, asyncio.Future[bool]] = {}
        self._field: str | None = None
        self._forms: dict[tuple[int, Any], asyncio.Future[bool]] = {}
        self._last: tuple[Any, bool] = (None, False)
        self._costly: set[int] = set()
        self._next_turn = time.perf_counter() + YIELD_EVERY

    async def turn(self) -> None:
        """Let the event loop run (:data:`TURN_ROUNDS` iterations) when
        :data:`YIELD_EVERY` seconds have passed since it last did: a click is
        answered, a cancel lands here. Asked between calls and before each
        match of a shell rule's simple commands (a call judged with the shell
        rules matches each rule against each of its simple commands too)."""
        if time.perf_counter() >= self._next_turn:
            for _ in range(TURN_ROUNDS):
                await asyncio.sleep(0)
            self._next_turn = time.perf_counter() + YIELD_EVERY

    def add_rule(self, rule: PermissionRule) -> None:
        """AgentScope's ``add_rule``; notes whether matching ``rule`` may cost
        anything (:func:`~nb_hitl.permissions.bounded.may_backtrack`)."""
        super().add_rule(rule)
        if may_backtrack(rule):
            self._costly.add(id(rule))

    async def match_all(
        self, tool: Any, tool_input: dict[str, Any], rules: list[PermissionRule], shell: bool
    ) -> tuple[dict[str, Any], list[PermissionRule], list[PermissionRule], str | None]:
        """Start a call and match every rule of ``rules`` against it (AgentScope's
        ``PermissionEngine._rule_matches``, bounded; with ``shell``, a rule
        that covers one of its simple commands matches too); what matched the
        input itself is remembered for the engine's check of that input.

        Returns:
            ``(input, matching, pathological, problem)``: a copy of
            ``tool_input`` (the input to decide with; the row keeps the
            recorded one), the matching rules in ``rules``' order, the rules
            too costly to match, and the last of their errors' messages.
        """
        self.call = given = dict(tool_input)
        self._known = known = {}
        self._field, self._forms, self._last = shell_field(tool) if shell else None, {}, (None, False)
        parts = shell_forms(tool, given) if shell else None
        command = given.get(self._field) if self._field is not None else None
        # a rule covers a simple command only by matching one of its forms: when each is the whole line, only by matching it
        covers = parts is not None and any(f != command for text, forms in parts for f in (text, *forms))
        costly, answers, matches = self._costly, self._answers, PermissionEngine._rule_matches
        matching: list[PermissionRule] = []
        pathological: list[PermissionRule] = []
        problem: str | None = None
        for rule in rules:
            key = id(rule)
            try:
                if key in costly:
                    self.check_cost(tool, rule, given)
                matched = bool(await matches(self, tool, rule, given))
                known[key] = answers[matched]
                if matched or covers and await rule_covers(tool, rule, given, self, parts):
                    matching.append(rule)
            except PathologicalRuleError as exc:
                pathological.append(rule)
                problem = str(exc)
        return given, matching, pathological, problem

    def _rule_matches(  # type: ignore[override]
        self, tool: Any, rule: PermissionRule, input_data: dict[str, Any]
    ) -> Awaitable[bool]:
        call, field = self.call, self._field
        if input_data is call:
            known = self._known.get(id(rule))
            if known is not None:
                return known
        elif field is not None and self._one_command(input_data, field):
            form = input_data.get(field)
            known = self._known.get(id(rule)) if form == call.get(field) else self._forms.get((id(rule), form))
            if known is not None:
                return known
            return self._other(tool, rule, input_data, (id(rule), form))
        return self._other(tool, rule, input_data)

    def _one_command(self, input_data: dict[str, Any], field: str) -> bool:
        """Whether ``input_data`` is the call's input with only its command
        line (``field``) changed: one of the forms of its simple commands,
        whose match against a rule is the same wherever it is asked. The
        last input asked about is remembered (the engine asks every rule of
        a bucket about one input)."""
        last = self._last
        if last[0] is input_data:
            return last[1]
        call = self.call
        same = len(input_data) == len(call) and all(
            k == field or input_data.get(k, _ABSENT) is v for k, v in call.items()
        )
        self._last = (input_data, same)  # holds the input: its id is not reused while remembered
        return same

    async def _other(
        self, tool: Any, rule: PermissionRule, input_data: dict[str, Any], form: tuple[int, Any] | None = None
    ) -> bool:
        """A match against another input (a shell rule's simple commands):
        bounded, after the loop's turn if due; remembered for the call under
        ``form`` (the rule and the command) when given."""
        await self.turn()
        matched = bool(await super()._rule_matches(tool, rule, input_data))
        if form is not None:
            self._forms[form] = self._answers[matched]
        return matched


async def _decide(engine: BoundedEngine, tool: Any, tool_input: dict[str, Any], shell: bool) -> PermissionDecision:
    decision = await engine.check_permission(tool, tool_input)
    if shell:
        verdict = await judge_shell_call(engine, tool, dict(tool_input), decision)
        if verdict is not None:
            return verdict.decision
    return decision


@dataclass(frozen=True, eq=False)
class _Outcome:
    """What the candidate decides for one distinct (tool, input): the
    decision's fields for the row, and the rules that matched (in the
    engine's order) or could not be matched (pathological)."""

    candidate: str
    reason: str | None
    rule: str | None
    problem: str | None
    matching: tuple[PermissionRule, ...]
    pathological: tuple[PermissionRule, ...]


async def _judge(
    engine: _ReplayEngine, tool: Any, tool_input: dict[str, Any], rules: list[PermissionRule], shell: bool
) -> _Outcome:
    """The engine's decision on one call, and every rule of ``rules`` (the
    tool's, in the engine's order) that matches it."""
    given, matching, pathological, problem = await engine.match_all(tool, tool_input, rules, shell)
    decision: PermissionDecision | None = None
    try:
        decision = await _decide(engine, tool, given, shell)
    except PathologicalRuleError as exc:
        problem = problem or str(exc)
    if problem is not None or decision is None:
        return _Outcome("unknown", None, None, problem, tuple(matching), tuple(pathological))
    candidate = enum_value(decision.behavior)
    fired = next((r for r in matching if enum_value(r.behavior) == candidate), None)
    return _Outcome(
        candidate,
        decision.decision_reason or decision.message,
        rule_label(fired) if fired is not None else None,
        None,
        tuple(matching),
        tuple(pathological),
    )


def _call_frame(calls: RecordedCalls, outcomes: list[_Outcome]) -> pd.DataFrame:
    """The replay's frame (:data:`CALL_COLUMNS`): the recorded calls' columns
    and, per call, what the candidate decides (``outcomes``, one per call)."""
    cols = calls.columns
    candidate = [o.candidate for o in outcomes]
    changed = [c != "unknown" and c != r for c, r in zip(candidate, cols["recorded"], strict=True)]
    allow = PermissionBehavior.ALLOW.value
    data = {
        **cols,
        "candidate": candidate,
        "candidate_reason": [o.reason for o in outcomes],
        "candidate_rule": [o.rule for o in outcomes],
        "problem": [o.problem for o in outcomes],
        "changed": changed,
        "change": [f"{r} -> {c}" if ch else "" for r, c, ch in zip(cols["recorded"], candidate, changed, strict=True)],
        "denied_now_allowed": [p == "deny" and c == allow for p, c in zip(cols["person"], candidate, strict=True)],
    }
    return pd.DataFrame(data, columns=CALL_COLUMNS)


def _tally(listed: list[PermissionRule], outcomes: Counter[_Outcome]) -> dict[int, dict[str, Any]]:
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
            a bad rule (``field="rules[i]...."``) or mode.
    """
    listed, context_mode = _rules(rules)
    candidate_mode = _mode(mode, context_mode)
    answers = (asyncio.get_running_loop().create_future(), asyncio.get_running_loop().create_future())
    answers[0].set_result(False)
    answers[1].set_result(True)
    engine = _ReplayEngine(PermissionContext(mode=candidate_mode), answers)
    for rule in listed:
        engine.add_rule(rule)
    by_tool: dict[str, list[PermissionRule]] = {}
    for rule in sorted(listed, key=lambda r: _PRECEDENCE[enum_value(r.behavior)]):  # stable within a bucket
        by_tool.setdefault(rule.tool_name, []).append(rule)
    tools = tools_of(getattr(toolkit, "toolkit", None) or toolkit)
    decided: dict[tuple[str, str], _Outcome] = {}
    missing: dict[str, _Outcome] = {}
    given: Counter[_Outcome] = Counter()
    # off the loop: 100,000 lines take a second
    calls = log if isinstance(log, RecordedCalls) else await asyncio.to_thread(read_calls, log)
    names, inputs, keys = calls.columns["tool_name"], calls.columns["input"], calls.keys
    outcomes: list[_Outcome] = []
    for i in range(len(calls)):
        await engine.turn()
        tool = tools.get(str(names[i]))
        if tool is None:
            unknown = missing.get(str(names[i]))
            if unknown is None:
                unknown = missing[str(names[i])] = _Outcome(
                    "unknown", None, None, f"no tool {names[i]!r} in the toolkit", (), ()
                )
            outcomes.append(unknown)
            continue
        input_key = keys[i]
        key = (tool.name, input_key) if input_key is not None else None
        outcome = decided.get(key) if key is not None else None
        if outcome is None:
            outcome = await _judge(engine, tool, inputs[i], by_tool.get(tool.name, []), shell_rules)
            if key is not None:
                decided[key] = outcome
        given[outcome] += 1
        outcomes.append(outcome)
    frame = await asyncio.to_thread(_call_frame, calls, outcomes)
    frame.attrs["rules"] = _rule_frame(listed, _tally(listed, given))
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
