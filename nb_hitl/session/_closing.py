"""Closing the tool calls a stopped process left without a result, each with what is true of it.

A process can stop (a crash, a kernel restart) with calls in three states
that matter here, and what the model is told differs:

* ``allowed``: the tool was running: it may or may not have taken effect
  (:data:`RAN_NOTE`);
* ``pending``: AgentScope had not checked it yet (a later call of a
  sequential batch, or one de-duplicated in a concurrent batch): it did not
  run and nobody was asked (:data:`NOT_RUN_NOTE`); after a restore such a
  call is left for AgentScope's next reply run to check (:func:`unchecked_calls`);
* ``asking`` / ``submitted`` with a decision handed to the agent
  (``DELIVERED_CONTEXT_KEY``): an approval may have run the tool, so the call
  is closed (:data:`DELIVERED_NOTE`); a decision that runs nothing here (a
  denial, an AskUser answer, an external result) is asked again, its card
  saying why (:data:`ASK_AGAIN_NOTE`): handing it over again cannot run anything twice,
  but the person sees the question once more rather than an answer the agent
  never recorded.

A reply stopped on purpose while it runs (a deadline, ``on_deadline="interrupt"``)
leaves calls in the same two states; :func:`stop_notes` says what is true of
each with the cause of the stop, instead of AgentScope's "interrupted by the user".

Every call is closed the way AgentScope's own interrupt path closes one
(``Agent._close_unfinished_tool_calls``): state ``finished`` plus a
``ToolResultBlock(state=INTERRUPTED)`` with the note as its output.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from agentscope.message import ToolCallBlock, ToolCallState, ToolResultBlock, ToolResultState

from .._agentscope import context_map, enum_value, is_parked
from ._run import DELIVERED_CONTEXT_KEY

__all__ = [
    "ASK_AGAIN_NOTE",
    "DELIVERED_NOTE",
    "NOT_RUN_NOTE",
    "RAN_NOTE",
    "close_dangling_tool_calls",
    "close_delivered_tool_calls",
    "decision_runs",
    "delivered_marks",
    "open_calls",
    "stop_notes",
    "unchecked_calls",
]

RAN_NOTE = (
    "<system-reminder>This tool call was interrupted: the process running it stopped before it "
    "returned a result, so it may or may not have taken effect.</system-reminder>"
)
"""What the model reads for a call that was running (``allowed``) when the process stopped."""

NOT_RUN_NOTE = (
    "<system-reminder>This tool call did not run: the reply stopped before its permission was "
    "checked, and nobody was asked about it.</system-reminder>"
)
"""What the model reads for a call AgentScope had not checked yet (``pending``)."""

DELIVERED_NOTE = (
    "<system-reminder>An approval ({action}) of this tool call was handed to the agent, but the process "
    "stopped before its outcome was recorded, so it may or may not have taken effect.</system-reminder>"
)
"""What the model reads for an approved call that may have run before the process stopped."""

ASK_AGAIN_NOTE = (
    "Your earlier answer was handed to the agent, but the process stopped before the agent "
    "recorded it, so it never took effect. Please answer again."
)
"""What the card of a call asked again after a restore says (a person reads it)."""


def decision_runs(confirm_result: Any) -> bool:
    """Whether a decision handed to the agent may run the tool here: an
    approval (a ``ConfirmResult`` with ``confirmed``). A denial, an AskUser
    answer or an external result (``confirm_result`` ``None``) runs nothing."""
    return confirm_result is not None and bool(confirm_result.confirmed)


def delivered_marks(agent: Any) -> dict[str, Any]:
    """The agent's ``DELIVERED_CONTEXT_KEY`` entries (created empty when missing):
    ``{tool_call_id: {"action", "reply_id", "at", "runs"}}``."""
    return context_map(agent, DELIVERED_CONTEXT_KEY)


def open_calls(agent: Any) -> list[ToolCallBlock]:
    """The calls of the agent's last message (its own) that have no result yet."""
    return _open_calls(agent)[1]


def _open_calls(agent: Any) -> tuple[Any, list[ToolCallBlock]]:
    """The agent's last message (its own, with blocks) and its calls without a result."""
    context = agent.state.context
    if not context:
        return None, []
    last = context[-1]
    if last.role != "assistant" or last.name != agent.name or isinstance(last.content, str):
        return None, []
    answered = {b.id for b in last.content if getattr(b, "type", None) == "tool_result"}
    return last, [b for b in last.content if getattr(b, "type", None) == "tool_call" and b.id not in answered]


def stop_notes(agent: Any, cause: str, *, skip: Container[str] = ()) -> dict[str, str]:
    """What the model reads of each call of the agent's last message left
    without a result when the reply is stopped on purpose, by state: a
    running call (``allowed``) may or may not have taken effect, a call
    AgentScope had not checked (``pending``) did not run and nobody was asked.
    Parked calls (``asking``, ``submitted``) are their pauses' to tell.

    Args:
        agent: the ``Agent``.
        cause: why the reply was stopped, a sentence (e.g. "Nobody answered
            the confirmation about delete_file before the deadline.").
        skip: ids of calls told otherwise (their own pause's note).

    Returns:
        ``{tool_call_id: text}``.
    """
    texts = {
        ToolCallState.ALLOWED.value: "The call to {name} was running when the reply was stopped, so it may or may "
        "not have taken effect. {cause}",
        ToolCallState.PENDING.value: "The call to {name} did not run: the reply was stopped before it was checked, "
        "and nobody was asked about it. {cause}",
    }
    out = {}
    for call in open_calls(agent):
        text = texts.get(enum_value(call.state))
        if text is not None and call.id not in skip:
            out[call.id] = text.format(name=call.name, cause=cause)
    return out


def _close(last: Any, block: ToolCallBlock, note: str) -> None:
    block.state = ToolCallState.FINISHED
    last.content.append(ToolResultBlock(id=block.id, name=block.name, output=note, state=ToolResultState.INTERRUPTED))


def unchecked_calls(agent: Any) -> list[ToolCallBlock]:
    """The ``pending`` calls of the agent's last message while nothing else waits.

    AgentScope 2.0.11 checks them on its next reply run (``Agent._next_action``:
    with no awaiting call, a ``pending`` call goes through the permission
    engine, which may ask a person). A restore leaves them so, and
    :meth:`Session.resume <nb_hitl.session.Session.resume>` continues the
    reply (``reply_stream(None)``) to have them checked.
    """
    if is_parked(agent):
        return []
    _, calls = _open_calls(agent)
    return [b for b in calls if enum_value(b.state) == ToolCallState.PENDING.value]


def close_dangling_tool_calls(agent: Any, *, keep_unchecked: bool = False) -> list[str]:
    """Give an ``interrupted`` result to tool calls left without one.

    A state restored after a crash mid-tool has a call in state ``allowed``
    (or ``pending``) and no result; AgentScope 2.0.11 then accepts a new
    message and sends the model a call without a result. An ``allowed`` call
    is closed as may have run (:data:`RAN_NOTE`), a ``pending`` one as not
    run (:data:`NOT_RUN_NOTE`). Calls that are parked on purpose (``asking``,
    ``submitted``) are left alone, and so are ``pending`` calls while the
    reply is parked: AgentScope leaves a call ``pending`` on purpose when it
    was de-duplicated in a concurrent batch or not reached yet in a
    sequential one, and re-checks it once the parked calls are answered.

    Args:
        agent: the ``Agent``.
        keep_unchecked: leave ``pending`` calls open (a restore: the resumed
            reply checks them, see :func:`unchecked_calls`).

    Returns:
        the ids of the calls closed.
    """
    last, calls = _open_calls(agent)
    notes = {ToolCallState.ALLOWED.value: RAN_NOTE}
    if not keep_unchecked and not is_parked(agent):
        notes[ToolCallState.PENDING.value] = NOT_RUN_NOTE
    closed = []
    for block in calls:
        note = notes.get(enum_value(block.state))
        if note is not None:
            _close(last, block, note)
            closed.append(block.id)
    return closed


def close_delivered_tool_calls(agent: Any) -> list[str]:
    """After a restore: settle the parked calls whose decision had been
    handed to the agent (``DELIVERED_CONTEXT_KEY``) with no outcome in the state.

    The process stopped between the resume and the next checkpoint. An
    approval may have run the tool: asking again could run it twice, so the
    call is closed (:data:`DELIVERED_NOTE`). A decision that runs nothing
    here (mark ``"runs": False``) left no trace the agent could act on: the
    call stays open and its mark becomes ``{"ask_again": True, "action"}``,
    so the card that asks again says why (:data:`ASK_AGAIN_NOTE`). A mark
    written before ``"runs"`` existed counts as an approval when its call
    waits for a confirmation (``asking``) and was not denied; an external
    call's (``submitted``: an AskUser answer, an external result) ran nothing here.

    Returns:
        the ids of the calls closed.
    """
    marks = delivered_marks(agent)
    last, calls = _open_calls(agent)
    closed: list[str] = []
    again: dict[str, Any] = {}
    for block in calls:
        mark = marks.get(block.id)
        if not isinstance(mark, dict):
            continue
        if enum_value(block.state) not in (ToolCallState.ASKING.value, ToolCallState.SUBMITTED.value):
            continue
        action = str(mark.get("action", "?"))
        runs = mark.get("runs")
        if runs is None:  # a mark written before "runs": only a confirmation's non-denial may have run
            runs = enum_value(block.state) == ToolCallState.ASKING.value and action != "deny"
        if runs:
            _close(last, block, DELIVERED_NOTE.format(action=action))
            closed.append(block.id)
        else:
            again[block.id] = {"ask_again": True, "action": action}
    marks.clear()
    marks.update(again)
    return closed
