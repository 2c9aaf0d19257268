"""A new user message to a service session: sent only when the session can take it, and judged.

AgentScope's service runs one reply at a time per session, and a session
parked on a pause (``awaiting_permission``, ``awaiting_external_result``)
takes only the answer to that pause. ``POST /chat/`` accepts a new message
anyway (200 ``{"status": "started"}``): the run it starts ends at once with
``REPLY_END`` ``finished_reason: "error"`` (a ``setup`` error: "The session
could not be prepared — check the agent's model…", which is not what
happened), the message is stored in the history unanswered, and the session
stays parked. So the console sends a message only to an ``idle`` session,
says what the session waits for otherwise (:func:`not_idle`), and reads
the session's stream after sending (:func:`said`): a run that the service
ended at once is reported, never shown as sent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any

from ..errors import NbHitlError, PendingPauseError
from .http import ServiceError, ServiceHTTP

__all__ = ["MessageNotTakenError", "not_idle", "said"]

_WAITS_FOR = {
    "awaiting_permission": "a confirmation",
    "awaiting_external_result": "an answer",
}


class MessageNotTakenError(NbHitlError):
    """A new message was not sent, or the service did not take it; the text says why and what to do."""

    code = "message_not_taken"


def not_idle(status: str, open_tools: Iterable[str] = ()) -> NbHitlError:
    """The error to raise for a message to a session in ``status`` (not ``idle``):
    why it cannot go now, and what to do.

    Args:
        status: AgentScope's ``SessionStatus``.
        open_tools: the tool names of the session's open pauses (for a parked one).

    Returns:
        :class:`~nb_hitl.errors.PendingPauseError` for a parked session (answer
        the pause first), else :class:`MessageNotTakenError`; each says "Not sent: …".
    """
    waits = _WAITS_FOR.get(status)
    if waits is not None:
        tools = ", ".join(dict.fromkeys(t for t in open_tools if t)) or "its parked tool call"
        return PendingPauseError(
            f"Not sent: this session waits for {waits} on {tools}, and the service takes only that answer "
            "until it is given. Answer the open pause first (its card is below), then send your message."
        )
    if status == "running":
        return MessageNotTakenError(
            "Not sent: this session is running a reply now, and the service runs one at a time. "
            "Wait until it ends or parks, then send your message."
        )
    return MessageNotTakenError(
        f"Not sent: the service says this session is {status!r}; a message can go only to an idle session."
    )


def _error_text(frame: dict[str, Any]) -> str:
    err = frame.get("error")
    text = err.get("message") if isinstance(err, dict) else err
    return str(text or "no reason given")[:300]


async def said(http: ServiceHTTP, agent_id: str, session_id: str, cursor: str | None, *, within: float = 8.0) -> str:
    """Read the session's stream after a new message was posted: its verdict.

    Args:
        http: the user's :class:`~nb_hitl.service.http.ServiceHTTP`.
        agent_id, session_id: the session.
        cursor: the stream cursor read just before posting (``/messages``'s
            ``event_cursor``): the frames after it are the message's run.
        within: seconds to wait for the run to show itself.

    Returns:
        ``"started"`` (the run went past its start: a model call, a block,
        or a normal end) or ``"quiet"`` (no sign of the run within
        ``within`` s, or the stream could not be read: the service may be busy).

    Raises:
        PendingPauseError: the run ended at once because the session is
            parked on a pause (it parked between the check and the message).
        MessageNotTakenError: the run ended at once with another error.
    """
    ended: dict[str, Any] | None = None
    started = False

    async def read() -> str:
        nonlocal ended, started
        async with contextlib.aclosing(http.stream(agent_id, session_id, cursor)) as frames:
            async for frame in frames:
                kind = frame.get("type")
                if kind == "REPLY_START":
                    started = True
                elif kind == "REPLY_END" and started:
                    if frame.get("finished_reason") != "error":
                        return "started"
                    ended = frame
                    return "error"
                elif started:
                    return "started"
        return "quiet"

    try:
        verdict = await asyncio.wait_for(read(), within)
    except (TimeoutError, ServiceError):
        return "quiet"
    if verdict != "error" or ended is None:
        return verdict
    status = await http.status(agent_id, session_id)
    for _ in range(20):  # the ended run's lock goes a moment after its REPLY_END
        if status != "running":
            break
        await asyncio.sleep(0.25)
        status = await http.status(agent_id, session_id)
    if status in _WAITS_FOR:
        raise PendingPauseError(
            f"Not taken: this session was waiting for {_WAITS_FOR[status]} when your message arrived, and "
            "the service ended that run at once (the session still waits). Answer the open pause first, "
            "then send your message again."
        )
    raise MessageNotTakenError(f"Not taken: the service ended the run of your message at once: {_error_text(ended)}")
