"""Who settled calls a console found closed before it sent its answer.

A stale console (its rows older than the service's state) sends nothing for
calls that no longer wait; :func:`settled_by` reads the session's stream
replay for the answer that settled them (:class:`~nb_hitl.service.outcome.OutcomeJudge`)
and, once the service has trimmed that run from its replay log, the time the
results entered the history (``/messages``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from ..answers.outcome import Outcome, answered_elsewhere_text
from .http import ServiceError, ServiceHTTP
from .outcome import OutcomeJudge

__all__ = ["result_time", "settled_by"]


def result_time(messages: Iterable[dict[str, Any]], ids: set[str]) -> str | None:
    """When the calls' results entered the history (``/messages``): the
    ``finished_at`` (else ``created_at``) of the first ``tool_result`` block
    of one of ``ids``, or ``None``."""
    for msg in messages:
        for block in msg.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("id") in ids:
                stamp = block.get("finished_at") or block.get("created_at")
                if isinstance(stamp, str):
                    return stamp
    return None


async def settled_by(
    http: ServiceHTTP,
    agent_id: str,
    session_id: str,
    tool_call_ids: Iterable[str],
    *,
    after: str | None,
    ours: Callable[[str], bool] | None = None,
    read_for: float = 1.5,
) -> Outcome:
    """The ``answered_elsewhere`` :class:`Outcome` of calls that no longer wait
    (nothing was sent): which answer settled them, from the stream's replay
    after ``after`` (read for at most ``read_for`` s). The service keeps the
    events of a run only until it ends; after that only the time the results
    entered the history is known (``/messages``)."""
    judge = OutcomeJudge("", tool_call_ids)

    async def read() -> None:
        # closed in this task when wait_for cancels it (not later, by the garbage collector)
        async with contextlib.aclosing(http.stream(agent_id, session_id, after=after)) as frames:
            async for frame in frames:
                judge.feed(frame)
                if judge.ids <= set(judge.others):
                    return

    with contextlib.suppress(ServiceError, asyncio.TimeoutError):
        await asyncio.wait_for(read(), timeout=read_for)
    if judge.others:
        return judge.closed(ours=ours, sent=False)
    at = None
    with contextlib.suppress(ServiceError):
        body = await http.messages(agent_id, session_id, limit=50)
        at = result_time(body.get("messages") or [], judge.ids)
    return Outcome(
        "answered_elsewhere",
        answered_elsewhere_text(
            "the call was settled by another answer"
            + (f"; its result entered the history at {at}" if at else "")
            + f". It was sent as user {http.user_id} from another console or client; the service keeps no record of "
            "which once that run ended. This answer was not sent."
        ),
        at=at,
    )
