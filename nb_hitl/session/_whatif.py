"""The page's "Replay" and "What if…" on a finished reply.

A click is not a cell, so the result cannot go into a new cell's output: it
is drawn below the reply it came from. The finished reply's widget sends a
typed request over its comm (:mod:`nb_hitl.messages`: ``replay``,
``what_if_list``, ``what_if``); the kernel answers it at once and plays the
replay or the fork in a background task on its loop (nothing blocks the
kernel), as a new :class:`~nb_hitl.session.Session` whose reply widgets are
nested in the finished reply's ``nested`` trait, each with a heading.

* **Replay** plays the session's record up to this reply
  (:meth:`~nb_hitl.session._replay.Replaying.record_of`, cut with
  :meth:`~nb_hitl.session._recording.Recording.upto`): the recorded turns,
  each tool giving back what it returned then, each pause given its
  recorded answer again through ``session.act`` (the front door of a click).
* **What if…** lists this reply's past pauses that have a recorded answer
  (the tool's name and a summary of its input, with what was answered then);
  the person picks one and the fork plays up to it and leaves its card open
  in the nested view, to be answered there like any card. The tools stay
  recorded unless the person turns them live (``fork(..., live=True)``).

:func:`offer` says, when a reply ends, whether the buttons are shown: not at
all for a session that keeps no record (no audit log), disabled with the
reason for a what-if continuation (not recorded) or a team, enabled otherwise.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentscope.tool import ToolBase

from ..errors import NbHitlError
from ..messages import ReplayRequest, WhatIfListRequest, parse_request
from ._recording import Recording, answer_note
from ._replay_tools import RecordedTool
from ._run import ReplyRun

if TYPE_CHECKING:
    from . import Session

__all__ = ["REQUESTS", "offer", "handle"]

log = logging.getLogger("nb_hitl.session")

REQUESTS = frozenset({"replay", "what_if_list", "what_if"})
"""The page actions this module answers."""

NOT_RECORDED = "A what-if continuation is not recorded, so it has no Replay or What if… of its own."
TEAM = "A team's session is not replayed: a replay plays one agent's session."
NO_REAL_TOOLS = (
    "The real tools are not known here (this replay was made without tools=[...]), "
    "so the what-if can only give the recorded results."
)


def _why_not(session: Session) -> str | None:
    """Why this session's replies offer no Replay ("" : no record at all), or ``None`` when they do."""
    plan = session.replay_plan
    if plan is not None and plan.fork_at is not None:
        return NOT_RECORDED
    if plan is None and session.audit_log is None:
        return ""
    if session.team.is_pipeline:
        return TEAM
    if plan is None and session.agent.state.summary:
        return (
            "This session's context was compressed (AgentScope summarised its earlier turns), "
            "so it cannot be replayed: the record no longer holds every turn."
        )
    return None


def offer(session: Session, run: ReplyRun) -> dict[str, Any]:
    """What a finished reply's widget offers (its ``replay`` trait), noting
    how far into the session the reply reaches (``run.upto``).

    Returns:
        ``{}`` (no buttons: the session keeps no record), ``{"ready": True}``,
        or ``{"reason": str}`` (the buttons disabled, saying why).
    """
    run.upto = sum(1 for m in session.agent.state.context if m.role == "user")
    why = _why_not(session)
    if why is None:
        return {"ready": True}
    return {"reason": why} if why else {}


def handle(session: Session, run: ReplyRun, message: dict[str, Any]) -> Any:
    """Answer a ``replay`` / ``what_if_list`` / ``what_if`` request of ``run``'s page.

    Returns:
        for ``what_if_list`` (at once): ``{"pauses": [{"tool_call_id",
        "tool_name", "summary", "answered"}], "live": ""}`` (``live``: why
        the tools cannot be turned live, "" when they can); for ``replay``
        and ``what_if`` a coroutine (run as a task by the widget) that starts
        the replay and answers ``{"started": title}`` once its first reply
        is being drawn.

    Raises:
        NbHitlError: a bad request, a reply that is not finished, a session
            that keeps no record, a pause with no recorded answer.
    """
    request = parse_request(message)
    if run.status != "finished":
        raise NbHitlError(f"Replay and What if… are offered on a finished reply; this one is {run.status}.")
    why = _why_not(session)
    if why is not None:
        raise NbHitlError(why or "This session keeps no record to replay: make it with Session(..., audit_log=...).")
    recording, known = session.record_of()
    recording = recording.upto(run.upto)
    if not recording.prompts:
        raise NbHitlError("The record holds no message up to this reply, so there is nothing to play again.")
    shown = run.widget is not None  # the replay's replies are drawn below this one's
    if isinstance(request, WhatIfListRequest):
        return {"pauses": _choices(run, recording), "live": "" if _real(known) else NO_REAL_TOOLS}
    if isinstance(request, ReplayRequest):
        child = type(session)._open_replay(
            recording, known, answers="recorded", display=shown, decided_by=session.decided_by
        )
        return _play(run, child, _replay_title)
    pause = run.pauses.get(request.tool_call_id)
    if pause is None or request.tool_call_id not in recording.answers:
        raise NbHitlError("This pause of the reply has no recorded answer to go back to.", field="tool_call_id")
    if request.live and not _real(known):
        raise NbHitlError(NO_REAL_TOOLS, field="live")
    child = session.fork_from(
        recording, known, request.tool_call_id, live=request.live, display=shown, decided_by=session.decided_by
    )
    tools = "the tools run for real from there on" if request.live else "the tools give their recorded results"
    heading = f"What if: {_label(pause.tool_name, pause.input)} answered differently ({tools})"
    return _play(run, child, lambda i, n: heading if i == n else _replay_title(i, n))


def _real(tools: list[ToolBase]) -> list[ToolBase]:
    """The tools that would really run (not a replay's recorded stand-ins, not external)."""
    return [t for t in tools if not t.is_external_tool and not isinstance(t, RecordedTool)]


def _label(tool_name: str, tool_input: Any) -> str:
    """A past call as a person reads it: the tool's name and a summary of its input."""
    from ..labels import call_label

    return call_label(tool_name, tool_input)


def _choices(run: ReplyRun, recording: Recording) -> list[dict[str, str]]:
    """This reply's pauses that have a recorded answer, oldest first."""
    return [
        {
            "tool_call_id": p.tool_call_id,
            "tool_name": p.tool_name,
            "summary": _label(p.tool_name, p.input),
            "answered": answer_note(line),
        }
        for p in run.pauses.values()
        if (line := recording.answer_for(p.tool_call_id, p.kind)) is not None
    ]


def _replay_title(index: int, count: int) -> str:
    if count == 1:
        return "Replay of this reply, from the record (the tools give their recorded results: nothing runs)"
    if index == count:
        return f"Replay of this reply (message {index} of {count}), from the record: nothing runs"
    return f"Replay of an earlier message of this session ({index} of {count}), from the record: nothing runs"


async def _play(run: ReplyRun, child: Session, title: Callable[[int, int], str]) -> dict[str, Any]:
    """Start ``child`` playing, its reply widgets nested below ``run``'s; hold it on ``run``."""
    count = len(child.replay_plan.recording.prompts) if child.replay_plan is not None else 1
    shown: list[str] = []

    def show(widget: Any) -> None:
        heading = title(len(shown) + 1, count)
        shown.append(heading)
        if run.widget is not None:
            run.widget.nest(widget, heading)

    child.show = show
    task = child.start_play()
    run.nested.append((child, task))
    task.add_done_callback(_quiet)
    await asyncio.sleep(0)
    return {"started": shown[0] if shown else title(1, count)}


def _quiet(task: asyncio.Task[Any]) -> None:
    """A replay's failure is shown on its own card; here it is only logged."""
    if not task.cancelled() and task.exception() is not None:
        log.info("a replay started from the page ended with an error", exc_info=task.exception())
