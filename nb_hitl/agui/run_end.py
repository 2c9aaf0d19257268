"""The closing events of one AG-UI run on the server (pure: reads the thread, changes nothing).

Every run the server answers ends the same way (:func:`closing_events`): the streams the
translator left open are ended, then ``MESSAGES_SNAPSHOT`` (the agent's history,
:func:`~nb_hitl.agui.events.messages_snapshot`), ``STATE_SNAPSHOT`` (the thread's status and
open interrupts under ``nb_hitl``) and exactly one terminal event: ``RUN_FINISHED`` with the
``interrupt`` outcome while interrupts are open, with ``success`` and the reply's text when it
finished, ``cancelled`` when it was interrupted or expired, else ``RUN_ERROR``
(``agent_error``). The order is described in ``docs/design.md`` ("AG-UI").
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    StateSnapshotEvent,
)

from .._agentscope import msg_text
from ..pauses import Pause
from .events import EventTranslator, last_reply_text, messages_snapshot, now_ms
from .mapping import META_KEY
from .threads import ThreadState

__all__ = ["closing_events"]


def closing_events(
    thread: ThreadState,
    inp: RunAgentInput,
    translator: EventTranslator,
    open_now: list[tuple[Interrupt, Pause]],
    *,
    note: dict[str, Any] | None = None,
) -> list[BaseEvent]:
    """The closing events of a run on ``thread`` (see the module docstring).

    Args:
        thread: the run's thread (its agent's history and its Session's current reply are read).
        inp: the run's ``RunAgentInput`` (its thread and run ids).
        translator: the run's translator; its open streams are ended first.
        open_now: the thread's open interrupts with their pauses, in pause order (the
            server's announcement of them, ids and expiry unchanged).
        note: what goes into ``RUN_FINISHED.metadata.nb_hitl`` (``None``: no metadata); a note
            on a thread without a reply since a restart reports the history's last reply text
            (:func:`~nb_hitl.agui.events.last_reply_text`) as the result.

    Returns:
        ``ag_ui.core`` events, the terminal one last.
    """
    out: list[BaseEvent] = list(translator.close())
    run = thread.session.current
    status = "paused" if open_now else (run.status if run is not None else "idle")
    out.append(MessagesSnapshotEvent(messages=messages_snapshot(thread.agent.state.context), timestamp=now_ms()))
    out.append(
        StateSnapshotEvent(
            snapshot={
                META_KEY: {
                    "agent": getattr(thread.agent, "name", ""),
                    "thread_id": thread.thread_id,
                    "reply_id": run.reply_id if run is not None else None,
                    "status": status,
                    "open_interrupts": [i.id for i, _ in open_now],
                }
            },
            timestamp=now_ms(),
        )
    )
    meta = {META_KEY: note} if note else None

    def finished(outcome: Any, result: str | None = None) -> RunFinishedEvent:
        return RunFinishedEvent(
            thread_id=inp.thread_id,
            run_id=inp.run_id,
            result=result,
            outcome=outcome,
            metadata=meta,
            timestamp=now_ms(),
        )

    if open_now:
        out.append(finished(RunFinishedInterruptOutcome(interrupts=[i for i, _ in open_now])))
    elif run is None or run.status == "finished":
        final = msg_text(run.final) if run is not None and run.final is not None else None
        if run is None and note:  # a restarted server catching up: the reply ended before the restart
            final = last_reply_text(thread.agent.state.context)
        out.append(finished(RunFinishedSuccessOutcome(), final))
    elif run.status in ("interrupted", "expired"):
        out.append(finished(RunFinishedCancelledOutcome()))
    else:
        reason = run.reason or f"The reply ended: {run.status}"
        out.append(RunErrorEvent(message=reason, code="agent_error", timestamp=now_ms()))
    return out
