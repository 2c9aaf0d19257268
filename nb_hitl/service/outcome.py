"""Judge an answer by what follows it on the session's stream, not by the HTTP code.

AgentScope's ``POST /chat/`` answers 200 to anything that parses; the answer
is queued, a worker picks it up and publishes it on the session's stream
(the same event ``id`` the console sent), then a ``REPLY_START``. What comes
next tells the outcome:

* ``TOOL_RESULT_START`` / ``TOOL_RESULT_END`` for an answered call: applied
  (the confirmed tool runs, or the external result entered the history);
* ``REPLY_END`` with an ``error``, or the same call asked for again: refused;
* the run ends (status no longer ``running``) with the call still parked in
  ``/messages``: refused without a reason on the stream (a bad AskUser
  metadata, a tool call id that is not parked, ...).

:class:`OutcomeJudge` is the pure part (feed it frames); :func:`await_outcome`
opens the stream, sends, and also polls ``/status`` + ``/messages`` so a
quiet stream still ends in a verdict within ``timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from ..answers.outcome import Outcome
from .http import ServiceError, ServiceHTTP
from .inbox import parked_calls

__all__ = ["Outcome", "OutcomeJudge", "await_outcome"]

_ASK_EVENTS = ("REQUIRE_USER_CONFIRM", "REQUIRE_EXTERNAL_EXECUTION")


class OutcomeJudge:
    """The stream-reading state machine for one answer.

    Args:
        event_id: the ``id`` of the event the console sent (echoed on the stream).
        tool_call_ids: the calls the answer resolves.
    """

    def __init__(self, event_id: str, tool_call_ids: Iterable[str]) -> None:
        self.event_id = event_id
        self.ids = set(tool_call_ids)
        self.echoed = False
        self.started = False
        self.states: dict[str, str] = {}

    def feed(self, frame: dict[str, Any]) -> Outcome | None:
        """One stream frame; an :class:`Outcome` once the frames decide it."""
        kind = frame.get("type")
        if not self.echoed:
            if frame.get("id") == self.event_id:
                self.echoed = True
            return None
        if kind == "REPLY_START":
            self.started = True
        elif kind in ("TOOL_RESULT_START", "TOOL_RESULT_END") and frame.get("tool_call_id") in self.ids:
            self.states[str(frame["tool_call_id"])] = str(frame.get("state") or "running")
            if self.ids <= set(self.states):
                names = ", ".join(f"{k}: {v}" for k, v in sorted(self.states.items()))
                return Outcome("applied", f"Applied by the service ({names}).", dict(self.states))
        elif kind == "REPLY_END" and (frame.get("error") or frame.get("finished_reason") == "error"):
            err = frame.get("error")
            text = err.get("message") if isinstance(err, dict) else err
            return Outcome("not_applied", f"The service's run failed: {text or 'no reason given'}.")
        elif kind in _ASK_EVENTS:
            asked = {str(tc.get("id")) for tc in frame.get("tool_calls") or [] if isinstance(tc, dict)}
            if asked & (self.ids - set(self.states)):
                return Outcome("not_applied", "The service asked for this call again; the answer was not applied.")
        return None


async def _call_open(http: ServiceHTTP, agent_id: str, session_id: str, ids: set[str]) -> tuple[str, bool]:
    status = await http.status(agent_id, session_id)
    if status == "running":
        return status, True
    body = await http.messages(agent_id, session_id, limit=5)
    _reply, calls, _msg = parked_calls(body.get("messages") or [])
    return status, bool(ids & {str(c.get("id")) for c in calls})


async def await_outcome(
    http: ServiceHTTP,
    agent_id: str,
    session_id: str,
    body: dict[str, Any],
    tool_call_ids: Iterable[str],
    *,
    after: str | None,
    send: Callable[[], Awaitable[Any]],
    timeout: float = 10.0,
    poll: float = 0.5,
) -> Outcome:
    """Send an answer and wait (at most ``timeout`` s) for its verdict.

    Args:
        body: the event JSON being sent (its ``id`` is looked for on the stream).
        after: the stream cursor to replay from (``/messages``'s
            ``event_cursor``), so nothing published before the stream
            opened is missed.
        send: the coroutine function that posts ``body``.
        poll: seconds between ``/status`` checks.

    Returns:
        Outcome: ``applied`` / ``not_applied`` / ``unknown`` (:class:`~nb_hitl.answers.outcome.Outcome`).

    Raises:
        ServiceError: the POST itself failed (nothing was queued).
    """
    judge = OutcomeJudge(str(body.get("id")), tool_call_ids)
    verdict: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
    t0 = time.monotonic()

    async def read_stream() -> None:
        with contextlib.suppress(ServiceError):
            async for frame in http.stream(agent_id, session_id, after=after):
                out = judge.feed(frame)
                if out is not None and not verdict.done():
                    verdict.set_result(out)
                    return

    reader = asyncio.create_task(read_stream())
    try:
        await send()
        deadline = t0 + timeout
        while not verdict.done() and time.monotonic() < deadline:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(verdict), timeout=poll)
                break
            # a quiet stream: the stored state decides once the run is over
            if not (judge.started or time.monotonic() - t0 > 2.0):
                continue
            try:
                status, still_open = await _call_open(http, agent_id, session_id, judge.ids - set(judge.states))
            except ServiceError:
                continue
            if status == "running" or verdict.done():
                continue
            if not still_open:
                verdict.set_result(
                    Outcome("applied", f"Applied by the service (session now {status}).", dict(judge.states))
                )
            elif judge.started:
                verdict.set_result(
                    Outcome(
                        "not_applied",
                        "The service did not apply this answer: its run ended with the call still waiting "
                        "(it gives no reason on the stream; its log may). The call can be answered again.",
                    )
                )
        out = (
            verdict.result()
            if verdict.done()
            else Outcome(
                "unknown",
                f"No verdict from the service within {timeout:g} s: the answer is queued and may still be applied. "
                "It is recorded; a second approval of this call will be asked for explicitly.",
            )
        )
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader
    out.seconds = time.monotonic() - t0
    return out
