"""A service agent's model reads who denied its call and why.

AgentScope's ``ConfirmResult`` has no field for a reason: a denied call's
result says only that the user denied it. The console puts what the model
should read in the answer event's ``metadata`` (:data:`NOTES_KEY`:
``{tool_call_id: text}``, :func:`notes_metadata`); :class:`ToldMiddleware`, an
``on_reply`` middleware of the service's agents (``build_app`` installs it
through ``create_app(extra_agent_middlewares=...)``), puts that text in place
of the denial's result before the next model call, as a local session does
(:func:`nb_hitl.session._promise.apply_note`), streams it instead of the
denial's own text (the service stores the reply it streams, so its
``/messages`` say what the model read), and marks the call's
``ToolResultEndEvent`` (:data:`TOLD_KEY`) so the console can say the model
read it. Only a call the same event denies is changed. On a service without
the middleware nothing is marked, and the console says the reason did not
reach the agent.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

from agentscope.event import ToolResultEndEvent, ToolResultTextDeltaEvent, UserConfirmResultEvent
from agentscope.middleware import MiddlewareBase

from .._agentscope import NOTES_CONTEXT_KEY, context_map
from ..decisions import Decision
from ..session._promise import apply_note

__all__ = ["NOTES_KEY", "TOLD_KEY", "UNTOLD", "ToldMiddleware", "as_carried", "notes_metadata", "denial_notes"]

NOTES_KEY = "nb_hitl.notes"
"""Key in an answer event's ``metadata``: ``{tool_call_id: what the model reads}``."""

TOLD_KEY = "nb_hitl.told"
"""Key in a ``ToolResultEndEvent``'s ``metadata``: the model reads the note sent for the call."""


def notes_metadata(decisions: list[Decision]) -> dict[str, Any]:
    """The ``metadata`` entry carrying the notes of denials (``{}`` when none has one)."""
    notes = {d.tool_call_id: d.note for d in decisions if d.action == "deny" and d.note}
    return {NOTES_KEY: notes} if notes else {}


def denial_notes(event: Any) -> dict[str, str]:
    """``{tool_call_id: text}`` of the calls ``event`` denies with a note
    (an ``UserConfirmResultEvent`` whose metadata names them); ``{}`` for any other input."""
    if not isinstance(event, UserConfirmResultEvent):
        return {}
    notes = (event.metadata or {}).get(NOTES_KEY)
    if not isinstance(notes, dict):
        return {}
    denied = {r.tool_call.id for r in event.confirm_results if not r.confirmed}
    return {str(k): v for k, v in notes.items() if k in denied and isinstance(v, str) and v.strip()}


class ToldMiddleware(MiddlewareBase):
    """``on_reply``: the note of a denial in the answer event replaces the
    call's result text, and the call's ``ToolResultEndEvent`` says so (see
    the module docstring)."""

    async def on_reply(
        self, agent: Any, input_kwargs: dict[str, Any], next_handler: Callable[..., AsyncGenerator]
    ) -> AsyncGenerator:
        notes = denial_notes(input_kwargs.get("inputs"))
        for tool_call_id, text in notes.items():
            context_map(agent, NOTES_CONTEXT_KEY)[tool_call_id] = {"text": text, "replace": True}
        async for item in next_handler(**input_kwargs):
            noted = getattr(item, "tool_call_id", None) in notes
            if noted and isinstance(item, ToolResultTextDeltaEvent):
                continue  # the denial's own text: the note is streamed instead (what the service stores)
            if noted and isinstance(item, ToolResultEndEvent) and apply_note(agent, item.tool_call_id) is not None:
                yield ToolResultTextDeltaEvent(
                    reply_id=item.reply_id, tool_call_id=item.tool_call_id, delta=notes[item.tool_call_id]
                )
                item.metadata = {**(item.metadata or {}), TOLD_KEY: True}
            yield item


UNTOLD = (
    "The agent was not told your reason: AgentScope's confirmation event has no field for it, so the model "
    "reads the service's own denial unless the service runs nb_hitl's ToldMiddleware, and this one did not "
    "say it did. The reason is kept in this console's audit record."
)
"""Said on a delivered denial with a reason (locally the reason is put in the call's result)."""


def as_carried(decision: Decision) -> dict[str, Any]:
    """The decision's summary as the service carries it: without ``note``
    (what a local session writes into the call's result: the reason of a
    denial, who edited a call), which no AgentScope answer event carries; a
    denial's note is put back once the service's ToldMiddleware said the
    model read it (:mod:`nb_hitl.service.told`)."""
    summary = decision.summary()
    summary.pop("note", None)
    return summary
