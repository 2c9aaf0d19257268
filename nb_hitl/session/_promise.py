"""What runs is what was approved, and the model hears what a person did.

* :class:`ApprovalGuard`, an ``on_acting`` middleware the Session installs
  *innermost* (:func:`nb_hitl._agentscope.install_innermost_acting`), so it
  sees the ``tool_call`` right before ``Toolkit.call_tool`` runs it, after
  every other middleware could rewrite it. A call a person approved runs
  only when AgentScope's reading of its input is the approved input;
  otherwise the tool does not run and the model gets a DENIED result
  saying why.
* :func:`record_decision` writes the approved input and the note for the
  model into ``AgentState.middle_context`` when a confirmation is handed
  to the agent (so both survive a checkpoint).
* :func:`apply_note` puts a note instead of the call's saved tool result
  text (a deadline or a cancelled pause is not reported as the user's
  denial; a denial with a reason says who denied the call and why);
  :func:`flush_hints` (the guard's ``on_reasoning``) adds the other notes
  as a ``HintBlock`` before the next model call: after Modify the model
  reads that a person changed the call and from what to what.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from typing import Any

from agentscope.message import HintBlock, TextBlock, ToolResultState
from agentscope.middleware import MiddlewareBase
from agentscope.tool import ToolChunk, ToolResponse

from .._agentscope import (
    APPROVAL_CONTEXT_KEY,
    NOTES_CONTEXT_KEY,
    RUNNING_CALL,
    agentscope_tool_input,
    blocks_text,
    find_tool_result,
    install_innermost_acting,
    install_reasoning,
    permission_engine,
    strip_system_reminders,
)
from ..kinds import Decision
from ..kinds._reading import canonical, visible_json
from ..kinds.confirm import allowed_decisions

__all__ = [
    "ApprovalGuard",
    "install_guard",
    "record_decision",
    "apply_note",
    "flush_hints",
    "allowed_decisions",
    "REFUSED_KEY",
]

REFUSED_KEY = "nb_hitl.refused"
"""``ToolResultEndEvent.metadata`` key set when the guard refused to run a call."""


def _entries(agent: Any, key: str) -> dict[str, Any]:
    ctx = agent.state.middle_context
    entries = ctx.get(key)
    if not isinstance(entries, dict):
        entries = {}
        ctx[key] = entries
    return entries


def install_guard(agent: Any) -> None:
    """Install :class:`ApprovalGuard` as ``agent``'s innermost ``on_acting`` middleware and as an
    ``on_reasoning`` middleware (idempotent)."""
    guard = ApprovalGuard()
    install_innermost_acting(agent, guard)
    install_reasoning(agent, guard)


def record_decision(agent: Any, decision: Decision, tool_name: str) -> None:
    """Remember what ``decision`` approved and what the model should read about it.

    Called when the decision is handed to the agent. Writes
    ``middle_context["nb_hitl.approved"][id] = {"tool", "input"}`` (canonical
    JSON) for an approval and ``middle_context["nb_hitl.notes"][id]`` for a note;
    adds "Always deny" rules through the agent's permission engine
    (``PermissionEngine.add_rule``).
    """
    if decision.approved_input is not None:
        _entries(agent, APPROVAL_CONTEXT_KEY)[decision.tool_call_id] = {
            "tool": tool_name,
            "input": canonical(decision.approved_input),
        }
    for rule in decision.deny_rules:  # "Always deny": AgentScope ignores rules sent with a denial
        permission_engine(agent).add_rule(rule.model_copy(deep=True))
    if decision.note:
        _entries(agent, NOTES_CONTEXT_KEY)[decision.tool_call_id] = {
            "text": decision.note,
            "replace": decision.note_replaces,
        }


def apply_note(agent: Any, tool_call_id: str) -> str | None:
    """Handle the note recorded for ``tool_call_id`` once its result is saved.

    Call it on the call's ``ToolResultEndEvent`` (AgentScope saved the
    result just before; the next model call has not happened yet). A
    ``replace`` note becomes the result's text (what the model reads instead
    of AgentScope's "denied by user!"); any other note stays recorded until
    :meth:`ApprovalGuard.on_reasoning` adds it as a ``HintBlock`` before the
    next model call (after every result of the round, where AgentScope puts
    its own hints).

    Returns:
        the result's text as the model will read it, note included
        (``<system-reminder>`` tags removed), for the transcript; ``None``
        when there is no note (or no saved result).
    """
    notes = _entries(agent, NOTES_CONTEXT_KEY)
    entry = notes.get(tool_call_id)
    if not isinstance(entry, dict):
        return None  # most results: no search of the context
    block = find_tool_result(agent, tool_call_id)
    if block is None:
        return None
    text = str(entry.get("text", ""))
    if entry.get("replace"):
        notes.pop(tool_call_id, None)
        block.output = text
        return strip_system_reminders(blocks_text(block.output))
    shown = strip_system_reminders(blocks_text(block.output))
    return f"{shown}\n\n{text}" if shown else text


def flush_hints(agent: Any) -> list[str]:
    """Add every recorded note whose call has a saved result to the context as a ``HintBlock``.

    AgentScope sends a ``HintBlock`` to the model as a user message
    (``agentscope.message.HintBlock``); it stays in the history.

    Returns:
        the texts added.
    """
    notes = _entries(agent, NOTES_CONTEXT_KEY)
    added = []
    for tool_call_id, entry in list(notes.items()):
        if not isinstance(entry, dict) or entry.get("replace") or find_tool_result(agent, tool_call_id) is None:
            continue
        notes.pop(tool_call_id, None)
        text = str(entry.get("text", ""))
        agent.state.append_context(agent.name, [HintBlock(hint=text, source="nb_hitl")])
        added.append(text)
    return added


def _refusal(tool_name: str, approved: str, runs: str) -> str:
    return (
        f"nb_hitl did not run {tool_name}: its input was changed after the person approved it, "
        f"and an approval covers only the input shown. Approved: {approved}; it would have run with: {runs}. "
        "Nothing ran."
    )


class ApprovalGuard(MiddlewareBase):
    """``on_acting``: run an approved call only with the input that was approved.

    It must be the innermost ``on_acting`` middleware (:func:`install_guard`).
    Calls nobody approved (allowed by a rule, or by the mode) pass through.
    While a call runs, :data:`~nb_hitl._agentscope.RUNNING_CALL` names it
    (``(agent, tool_call)``) for code the tool calls back into: an MCP
    server asking the person (:mod:`nb_hitl.mcp`).
    """

    async def on_reasoning(
        self,
        agent: Any,
        input_kwargs: dict,
        next_handler: Callable[..., AsyncGenerator],
    ) -> AsyncGenerator:
        flush_hints(agent)  # what a person did, read before the next model call
        async for item in next_handler():
            yield item

    async def on_acting(
        self,
        agent: Any,
        input_kwargs: dict,
        next_handler: Callable[..., AsyncGenerator],
    ) -> AsyncGenerator:
        tool_call = input_kwargs["tool_call"]
        entry = _entries(agent, APPROVAL_CONTEXT_KEY).pop(tool_call.id, None)
        problem = None
        if isinstance(entry, dict):
            problem = await _check(agent, tool_call, entry)
        if problem is None:
            before = RUNNING_CALL.get()
            RUNNING_CALL.set((agent, tool_call))  # the tool may call back (an MCP server asking the person)
            try:
                async for item in next_handler():
                    yield item
            finally:
                RUNNING_CALL.set(before)
            return
        meta = {REFUSED_KEY: "input_changed"}
        yield ToolChunk(content=[TextBlock(text=problem)], state=ToolResultState.DENIED, metadata=meta)
        yield ToolResponse(content=[TextBlock(text=problem)], state=ToolResultState.DENIED, metadata=meta)


async def _check(agent: Any, tool_call: Any, entry: dict[str, Any]) -> str | None:
    approved_text = str(entry.get("input"))
    approved = visible_json(json.loads(approved_text), None)
    if tool_call.name != entry.get("tool"):
        return _refusal(str(entry.get("tool")), approved, f"another tool, {tool_call.name}")
    tool = await agent.toolkit.get_tool(tool_call.name)
    try:
        runs = agentscope_tool_input(tool_call.input, getattr(tool, "input_schema", None))
    except ValueError as exc:
        return _refusal(tool_call.name, approved, f"unreadable arguments ({exc})")
    if canonical(runs) != approved_text:
        return _refusal(tool_call.name, approved, visible_json(runs, None))
    return None
