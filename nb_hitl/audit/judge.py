"""AgentScope's permission engine deciding recorded calls against candidate rules.

:class:`Judge` holds one candidate (rules and mode) and decides one
recorded call (tool and input) at a time with AgentScope's own
``PermissionEngine`` (bounded, :class:`~nb_hitl.permissions.bounded.BoundedEngine`:
a pathological rule is reported on the calls it would have hung on, never
matched), matching every rule of the call's tool once, to count what fired
and what was shadowed (:class:`Outcome`). Shell tools are judged as a
Session judges them (:func:`~nb_hitl.permissions.shell_check.judge_shell_call`)
unless told otherwise. :func:`nb_hitl.audit.replay` uses it in the kernel
and in its worker process (:mod:`nb_hitl.audit.worker`), so both decide
alike. Between calls, and within a call's shell matching, it gives the
event loop a turn every :data:`YIELD_EVERY` seconds (:class:`Turns`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from agentscope.permission import (
    PermissionContext,
    PermissionDecision,
    PermissionEngine,
    PermissionMode,
    PermissionRule,
)

from .._agentscope import enum_value, rule_label
from ..permissions.bounded import BoundedEngine, PathologicalRuleError, may_backtrack
from ..permissions.shell_check import decide_as_session, rule_covers, shell_field, shell_forms

__all__ = ["Judge", "Outcome", "Turns", "YIELD_EVERY", "TURN_ROUNDS"]

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


class Turns:
    """Lets the event loop run (:data:`TURN_ROUNDS` iterations) when
    :data:`YIELD_EVERY` seconds have passed since it last did: a click is
    answered, a cancel lands there. Await the instance between two pieces of work."""

    def __init__(self) -> None:
        self._next = time.perf_counter() + YIELD_EVERY

    async def __call__(self) -> None:
        if time.perf_counter() >= self._next:
            for _ in range(TURN_ROUNDS):
                await asyncio.sleep(0)
            self._next = time.perf_counter() + YIELD_EVERY


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
        self.turn = Turns()
        """Asked before each match of a shell rule's simple commands (a call
        judged with the shell rules matches each rule against each of its
        simple commands too) and, by :class:`Judge`'s callers, between calls."""

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
    decision, verdict = await decide_as_session(engine, tool, tool_input, shell_rules=shell)
    return verdict.decision if verdict is not None else decision


@dataclass(frozen=True, eq=False)
class Outcome:
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
) -> Outcome:
    """The engine's decision on one call, and every rule of ``rules`` (the
    tool's, in the engine's order) that matches it."""
    given, matching, pathological, problem = await engine.match_all(tool, tool_input, rules, shell)
    decision: PermissionDecision | None = None
    try:
        decision = await _decide(engine, tool, given, shell)
    except PathologicalRuleError as exc:
        problem = problem or str(exc)
    if problem is not None or decision is None:
        return Outcome("unknown", None, None, problem, tuple(matching), tuple(pathological))
    candidate = enum_value(decision.behavior)
    fired = next((r for r in matching if enum_value(r.behavior) == candidate), None)
    return Outcome(
        candidate,
        decision.decision_reason or decision.message,
        rule_label(fired) if fired is not None else None,
        None,
        tuple(matching),
        tuple(pathological),
    )


class Judge:
    """One candidate (rules and mode) put to AgentScope's engine, one call at a time.

    Args:
        listed: the candidate rules, in the order the replay reports them.
        mode: the candidate mode.
        shell_rules: judge shell commands one simple command at a time, as
            a Session does by default.

    Must be made with an event loop running (the engine's known answers are
    futures of it).
    """

    def __init__(self, listed: list[PermissionRule], mode: PermissionMode, shell_rules: bool) -> None:
        loop = asyncio.get_running_loop()
        answers = (loop.create_future(), loop.create_future())
        answers[0].set_result(False)
        answers[1].set_result(True)
        self.engine = engine = _ReplayEngine(PermissionContext(mode=mode), answers)
        for rule in listed:
            engine.add_rule(rule)
        self._by_tool: dict[str, list[PermissionRule]] = {}
        for rule in sorted(listed, key=lambda r: _PRECEDENCE[enum_value(r.behavior)]):  # stable within a bucket
            self._by_tool.setdefault(rule.tool_name, []).append(rule)
        self._shell = shell_rules

    async def judge(self, tool: Any, tool_input: dict[str, Any]) -> Outcome:
        """The candidate's :class:`Outcome` for one call of ``tool``
        (after the event loop's turn, if due)."""
        await self.engine.turn()
        return await _judge(self.engine, tool, tool_input, self._by_tool.get(tool.name, []), self._shell)
