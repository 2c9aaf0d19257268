"""What AgentScope's real ``PermissionEngine`` decides, and why.

:func:`try_call` asks ``PermissionEngine.check_permission`` about one call
(executing nothing) and traces the engine's evaluation order with
AgentScope's own helpers (``PermissionEngine._rule_matches``,
``ToolBase.check_read_only``, ``ToolBase.check_permissions``):
1. deny rules, 2. ask rules, 3. read-only fast path, 4. the tool's own
check, 5. allow rules, 6. the mode's fallback; for a shell tool, then
nb_hitl's shell rules (:func:`~nb_hitl.permissions.shell_check.judge_shell_call`,
what a Session's :class:`~nb_hitl.shell_policy.ShellRulesMiddleware` calls).
:func:`mode_matrix` decides calls in each of the five modes on copies of
the context. The decision is always the one a Session takes (the engine's,
then the shell rules'); the trace only accounts for it (``agrees``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from agentscope.permission import (
    PermissionBehavior,
    PermissionContext,
    PermissionDecision,
    PermissionEngine,
    PermissionMode,
    PermissionRule,
)
from agentscope.tool import ToolBase

from .._agentscope import permission_engine
from ..errors import DecisionError
from .bounded import BoundedEngine, PathologicalRuleError
from .explain import explain_match
from .rules import _BUCKETS, MODES, rule_label, rule_to_dict
from .shell_check import ShellVerdict, decide_as_session, rule_covers
from .tools import get_tool, parse_input

__all__ = ["try_call", "mode_matrix", "MAX_UNMATCHED_LISTED"]

MAX_UNMATCHED_LISTED = 50
"""How many non-matching rules a :func:`try_call` trace lists (with their
explanation); every matching rule is always listed."""


def _decision_dict(d: PermissionDecision) -> dict[str, Any]:
    return {
        "behavior": d.behavior.value,
        "message": d.message,
        "decision_reason": d.decision_reason,
        "bypass_immune": bool(d.bypass_immune),
        "suggested_rules": [rule_to_dict(r) for r in (d.suggested_rules or [])],
    }


async def _rule_matches(engine: PermissionEngine, tool: ToolBase, rule: PermissionRule, tool_input: dict) -> bool:
    # The engine's own matcher: empty content -> True, else tool.match_rule.
    return bool(await engine._rule_matches(tool, rule, tool_input))


def _copy(ctx: PermissionContext, mode: PermissionMode) -> PermissionContext:
    """A new ``PermissionContext`` in ``mode`` that shares the rule and
    working-directory dicts of ``ctx`` (``model_copy(update=...)``, no deep
    copy: copying 20,000 rules took seconds per mode). The engine and the
    builtin tools' ``check_permissions`` only read them; the agent's own
    context object keeps its mode."""
    return ctx.model_copy(update={"mode": mode})


async def _trace(engine: PermissionEngine, tool: ToolBase, tool_input: dict, decision: PermissionDecision) -> dict:
    """Facts from AgentScope's own helpers, in the engine's evaluation order,
    then a sentence on which step produced the decision. The decision itself
    is the engine's; ``agrees`` says whether these facts account for it."""
    ctx = engine.context
    mode = ctx.mode
    rules_checked: list[dict[str, Any]] = []
    omitted = 0
    matched: dict[str, list[PermissionRule]] = {"deny": [], "ask": [], "allow": []}
    for behavior in ("deny", "ask", "allow"):
        for rule in getattr(ctx, _BUCKETS[behavior]).get(tool.name, []):
            ok = await _rule_matches(engine, tool, rule, tool_input)
            if ok:
                matched[behavior].append(rule)
            elif len(rules_checked) - sum(map(len, matched.values())) >= MAX_UNMATCHED_LISTED:
                omitted += 1
                continue
            rules_checked.append(
                {
                    "rule": rule_to_dict(rule),
                    "label": rule_label(rule),
                    "matched": ok,
                    "explanation": explain_match(rule, tool.name, tool_input, tool=tool, matched=ok),
                    "shell_covers": await rule_covers(tool, rule, tool_input, engine),
                }
            )
    read_only = bool(await tool.check_read_only(tool_input))
    own: PermissionDecision | None = None
    if mode != PermissionMode.EXPLORE and not matched["deny"] and not matched["ask"] and not read_only:
        own = await tool.check_permissions(tool_input, _copy(ctx, mode))
    steps: list[str] = []
    expected: str
    if matched["deny"]:
        expected, step = (
            "deny",
            f"Step 1: the deny rule {rule_label(matched['deny'][0])} matches; deny rules come first in every mode.",
        )
    elif matched["ask"]:
        if mode == PermissionMode.DONT_ASK:
            expected, step = (
                "deny",
                f"Step 2: the ask rule {rule_label(matched['ask'][0])} matches; dont_ask turns the ask into a deny (no user to ask).",
            )
        else:
            expected, step = (
                "ask",
                f"Step 2: the ask rule {rule_label(matched['ask'][0])} matches; ask rules come before allow rules and the read-only fast path.",
            )
    elif read_only:
        expected, step = (
            "allow",
            f"Step 3: {tool.name}.check_read_only says this call is read-only; read-only calls are allowed in every mode before allow rules are consulted.",
        )
    elif mode == PermissionMode.EXPLORE:
        expected, step = (
            "deny",
            "Step 6: explore mode denies every call that is not read-only; it consults neither the tool's own check nor allow rules.",
        )
    else:
        assert own is not None
        own_b = own.behavior.value
        said = own.message or own.decision_reason or ""
        steps.append(
            f"{tool.name}.check_permissions (step 4) says {own_b}"
            + (_safety_note(mode) if own.bypass_immune and own.behavior == PermissionBehavior.ASK else "")
            + (f": {said.rstrip('.')}" if said else "")
            + "."
        )
        if own.behavior in (PermissionBehavior.ALLOW, PermissionBehavior.DENY):
            expected, step = (
                own_b,
                f"Step 4: {tool.name}.check_permissions returned {own_b}, which the engine returns as is.",
            )
        elif (
            own.behavior == PermissionBehavior.ASK
            and own.bypass_immune
            and mode in (PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS)
        ):
            expected, step = (
                "ask",
                "Step 4: a bypass-immune safety ask from the tool; allow rules cannot silence it in this mode.",
            )
        elif own.behavior == PermissionBehavior.ASK and own.bypass_immune and mode == PermissionMode.DONT_ASK:
            expected, step = (
                "deny",
                "Step 4: a bypass-immune safety ask from the tool, turned into a deny in dont_ask mode.",
            )
        elif matched["allow"]:
            bypass_note = ", and bypass mode does not stop at the tool's safety ask" if own.bypass_immune else ""
            expected, step = "allow", f"Step 5: the allow rule {rule_label(matched['allow'][0])} matches{bypass_note}."
        elif mode == PermissionMode.BYPASS:
            expected, step = (
                "allow",
                "Step 6: no deny or ask rule matches, so bypass mode allows the call"
                + (", its tool's safety ask included." if own.bypass_immune else "."),
            )
        elif mode == PermissionMode.DONT_ASK:
            expected, step = (
                "deny",
                "Step 6: no allow rule matches and dont_ask mode denies what it would otherwise ask.",
            )
        else:
            expected, step = "ask", f"Step 6: no allow rule matches, so {mode.value} mode asks the user."
    steps.append(step)
    return {
        "read_only": read_only,
        "tool_check": None if own is None else _decision_dict(own),
        "rules_checked": rules_checked,
        "rules_omitted": omitted,
        "steps": steps,
        "why": " ".join(steps),
        "agrees": expected == decision.behavior.value,
    }


def _safety_note(mode: PermissionMode) -> str:
    """How the tool's safety ask (``bypass_immune=True``) counts in ``mode``
    (AgentScope's ``PermissionEngine._is_safety_ask`` is honoured in every mode
    but bypass, whose ``_check_bypass`` lets any ask through by design)."""
    if mode == PermissionMode.BYPASS:
        return " (a safety ask, which bypass mode does not honour)"
    if mode == PermissionMode.DONT_ASK:
        return " (a safety ask, which dont_ask mode turns into a deny)"
    return " (a safety ask: no allow rule can silence it)"


def _resolve(target: Any, toolkit: Any) -> tuple[PermissionEngine, Any]:
    if isinstance(target, (PermissionEngine, PermissionContext)):
        return permission_engine(target), toolkit
    return permission_engine(target), toolkit if toolkit is not None else getattr(target, "toolkit", None)


async def try_call(
    agent_or_context: Any,
    toolkit: Any,
    tool_name: str,
    input: Mapping[str, Any] | str,
    *,
    mode: str | PermissionMode | None = None,
    shell_rules: bool = True,
) -> dict[str, Any]:
    """What a Session decides for one call; execute nothing.

    The decision is AgentScope's ``PermissionEngine.check_permission``, then,
    for a shell tool, nb_hitl's shell rules on it
    (:func:`~nb_hitl.permissions.shell_check.judge_shell_call`, the function
    the Session's :class:`~nb_hitl.shell_policy.ShellRulesMiddleware` calls),
    as every Session does unless ``Session(..., shell_rules=False)``.

    Args:
        agent_or_context: an ``Agent`` (its own engine,
            ``agent._engine``), a ``PermissionEngine`` or a
            ``PermissionContext``.
        toolkit: ``Toolkit`` / list / dict of tools; ``None`` with an agent
            means ``agent.toolkit``.
        tool_name: the tool to try.
        input: the tool input (dict or JSON text), validated against the
            tool's ``input_schema`` with ``jsonschema`` first.
        mode: decide in this mode instead of the live one, on a copy of
            the context in that mode (the agent's context is untouched).
        shell_rules: judge a shell tool's call with nb_hitl's shell rules,
            as a Session does by default (``False``: as
            ``Session(..., shell_rules=False)``, the engine alone).

    Returns:
        ``{"tool_name", "input": dict, "mode": str, "behavior":
        "allow"|"deny"|"ask"|"passthrough", "message": str,
        "decision_reason": str | None, "bypass_immune": bool,
        "suggested_rules": [rule dict], "engine": decision dict,
        "read_only": bool, "tool_check": decision dict | None,
        "rules_checked": [{"rule", "label", "matched", "explanation",
        "shell_covers"}], "rules_omitted": int, "steps": [str], "why": str,
        "agrees": bool, "shell": dict | None}``. The top-level decision
        fields are the Session's decision; ``engine`` is AgentScope's engine
        alone (they differ only for a shell tool). ``shell`` is what the
        shell rules found for a shell tool: the decision dict plus
        ``commands`` (each simple command with ``behavior`` and ``why``),
        ``problems`` and ``changed`` (whether it is not the engine's
        decision); ``None`` for other tools or with ``shell_rules=False``.
        ``steps`` end with the shell rules' step. ``agrees`` says whether
        the engine's steps account for the engine's decision.
        Each ``rules_checked`` entry has ``shell_covers``:
        the simple commands the rule covers read that way (``None`` for
        other tools). ``rules_checked``
        lists every rule of the tool that matches, and the first
        :data:`MAX_UNMATCHED_LISTED` that do not (``rules_omitted`` counts
        the others, so that thousands of rules do not make a huge answer). ``engine`` comes from
        ``PermissionEngine.check_permission``; ``rules_checked``,
        ``tool_check``, ``read_only`` from ``PermissionEngine._rule_matches``,
        ``ToolBase.check_permissions`` and ``ToolBase.check_read_only``;
        ``steps``/``why`` put them in the engine's order.

    Raises:
        DecisionError: unknown tool (``field="tool_name"``), bad input
            (``field="input"``), bad mode (``field="mode"``), a rule too
            wildcard-heavy to match against this input in the bound
            (``field="rules"``, :mod:`nb_hitl.permissions.bounded`).
    """
    engine, toolkit = _resolve(agent_or_context, toolkit)
    tool = await get_tool(toolkit, tool_name)
    tool_input = parse_input(tool, input)
    context = engine.context
    if mode is not None:
        try:
            mode_value = PermissionMode(mode)
        except ValueError:
            raise DecisionError(f"mode must be one of {', '.join(MODES)}; got {mode!r}.", field="mode") from None
        context = _copy(engine.context, mode_value)
    engine = BoundedEngine(context)  # the same rules; a pathological rule is refused, not hung on
    try:
        decision, verdict = await decide_as_session(engine, tool, tool_input, shell_rules=shell_rules)
        trace = await _trace(engine, tool, dict(tool_input), decision)
    except PathologicalRuleError as exc:
        raise DecisionError(str(exc), field="rules") from None
    final, shell = decision, None
    if verdict is not None:
        final = verdict.decision
        shell = {
            **_decision_dict(verdict.decision),
            "commands": verdict.parts,
            "problems": list(verdict.parse.problems),
            "changed": verdict.changed,
        }
        trace["steps"].insert(0, _SHELL_INTRO)
        trace["steps"].append(_shell_step(decision, verdict))
        trace["why"] = " ".join(trace["steps"])
    return {
        "tool_name": tool.name,
        "input": tool_input,
        "mode": engine.context.mode.value,
        **_decision_dict(final),
        "engine": _decision_dict(decision),
        **trace,
        "shell": shell,
    }


_SHELL_INTRO = (
    "AgentScope's engine matches each rule against the whole command line (the steps below); then nb_hitl's "
    "shell rules judge it command by command (the last step)."
)


def _shell_step(whole: PermissionDecision, verdict: ShellVerdict) -> str:
    """The trace's last step for a shell tool: what nb_hitl's shell rules,
    which judge every call of it in a Session, make of the engine's decision."""
    count = len(verdict.parse.commands)
    read = f"{count} simple command" + ("" if count == 1 else "s")
    if not verdict.changed:
        return (
            f"nb_hitl's shell rules (on in a Session) read the line as {read} and keep the engine's decision: "
            f"{whole.behavior.value}."
        )
    final = verdict.decision
    said = (final.message or final.decision_reason or "").rstrip(".")
    return (
        f"nb_hitl's shell rules (on in a Session) read the line as {read} and change the engine's "
        f"{whole.behavior.value} to {final.behavior.value}: {said}. A Session decides {final.behavior.value}."
    )


def _call_spec(call: Any, i: int) -> tuple[str, Any]:
    if isinstance(call, Mapping):
        if "tool_name" not in call:
            raise DecisionError("Each call needs a tool_name.", field=f"calls[{i}].tool_name")
        return call["tool_name"], call.get("input", {})
    if isinstance(call, (tuple, list)) and len(call) == 2:
        return call[0], call[1]
    raise DecisionError("A call is {'tool_name': str, 'input': dict | JSON text}.", field=f"calls[{i}]")


async def mode_matrix(calls: Iterable[Any], toolkit: Any, context: Any, *, shell_rules: bool = True) -> dict[str, Any]:
    """Each call decided as a Session decides it (the real engine, then the
    shell rules for a shell tool, as :func:`try_call`) in each of the five modes.

    Every cell uses a ``PermissionEngine`` over a copy of the context with
    the mode changed (see :func:`_copy`), so the agent's live context is
    never touched.

    Args:
        calls: ``[{"tool_name": str, "input": dict | JSON text}]`` or
            ``[(tool_name, input)]``.
        toolkit: ``Toolkit`` / list / dict of tools (``None`` with an agent:
            ``agent.toolkit``).
        context: agent, engine or context whose rules are used.
        shell_rules: as in :func:`try_call`.

    Returns:
        ``{"modes": [5 str], "live_mode": str, "rows": [{"tool_name",
        "input": dict, "cells": {mode: {"behavior", "message",
        "decision_reason", "bypass_immune", "suggested_rules"}}}]}``.

    Raises:
        DecisionError: ``field="calls[i].tool_name"`` / ``"calls[i].input"``
            for an unknown tool or an input that breaks the schema; nothing
            is decided then. ``field="rules"``: a rule too wildcard-heavy to
            match against a call's input in the bound (:mod:`nb_hitl.permissions.bounded`).

    Each call's five decisions are a few ms of work on the caller's loop; the
    loop gets a turn after each call, so a long matrix never holds it (a click
    on a card is answered meanwhile). The explorer's page asks for at most
    :data:`nb_hitl.widgets.permissions.MAX_MATRIX_CALLS` calls.
    """
    engine, toolkit = _resolve(context, toolkit)
    base = engine.context
    prepared = []
    for i, call in enumerate(calls):
        name, raw = _call_spec(call, i)
        try:
            tool = await get_tool(toolkit, name)
        except DecisionError as exc:
            raise DecisionError(f"Call {i + 1}: {exc}", field=f"calls[{i}].tool_name") from None
        prepared.append((tool, parse_input(tool, raw, field=f"calls[{i}].input")))
    rows = []
    for tool, tool_input in prepared:
        cells = {}
        for mode in PermissionMode:
            try:  # bounded, like try_call: a pathological rule is refused, not hung on
                cell_engine = BoundedEngine(_copy(base, mode))
                decision, verdict = await decide_as_session(cell_engine, tool, tool_input, shell_rules=shell_rules)
            except PathologicalRuleError as exc:
                raise DecisionError(str(exc), field="rules") from None
            cells[mode.value] = _decision_dict(verdict.decision if verdict is not None else decision)
        rows.append({"tool_name": tool.name, "input": tool_input, "cells": cells})
        await asyncio.sleep(0)  # a turn of the loop between calls (see above)
    return {"modes": list(MODES), "live_mode": base.mode.value, "rows": rows}
