"""The verdict of a console's answer when the service's stream lags behind its stored state.

A loaded service stores a call's result (``/messages`` shows it settled) before its
stream delivers the frames that say which answer produced it. The console waits for
those frames (``stream_grace``) instead of judging at once: at once, an answer the
stream had echoed but whose results had not arrived yet was reported "unknown"
("Approve selected" on 50 sessions, one row in about ten runs on a loaded machine).

A slow subscription is the other side of it: AgentScope trims a session's replay
log to the run's last event when it stores the run, so a stream that comes up
after a fast run was stored never sees the run's frames. The answer is sent only
once the stream is live (its first frame, the pause event the log keeps).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from agentscope.event import ConfirmResult
from agentscope.message import ToolCallBlock

from nb_hitl.service.http import confirm_body
from nb_hitl.service.outcome import await_outcome
from tests.service.test_pieces import CALL
from tests.support import run_async


class LaggingService:
    """What the console reads of one session: the call already settled in the stored
    state (``/status`` idle, nothing parked in ``/messages``), and a stream that echoes
    the answer at once but brings the call's result only ``lag`` seconds later."""

    def __init__(self, event_id: str, lag: float) -> None:
        self.event_id, self.lag = event_id, lag

    async def status(self, agent_id: str, session_id: str) -> str:
        return "idle"

    async def messages(self, agent_id: str, session_id: str, limit: int = 50) -> dict[str, Any]:
        return {"messages": [], "event_cursor": "c1"}

    async def stream(self, agent_id: str, session_id: str, after: str | None = None) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "USER_CONFIRM_RESULT", "id": self.event_id}
        yield {"type": "REPLY_START"}
        await asyncio.sleep(self.lag)
        yield {"type": "TOOL_RESULT_START", "tool_call_id": "call_1"}
        await asyncio.sleep(60)


BODY = confirm_body("reply-1", [ConfirmResult(confirmed=True, tool_call=ToolCallBlock.model_validate(CALL))])


def judged(http: Any, send: Callable[[], Awaitable[Any]], **options: Any) -> Any:
    """The verdict on ``BODY`` answering ``call_1`` of session ``s`` of service ``http``."""
    return run_async(await_outcome(http, "a", "s", BODY, ["call_1"], send=send, timeout=10, poll=0.2, **options))


async def _nothing() -> None:
    return None


def test_an_answer_whose_results_come_late_on_the_stream_is_applied_not_unknown() -> None:
    out = judged(LaggingService(BODY["id"], lag=1.5), _nothing)
    assert (out.status, out.detail) == ("applied", "Applied by the service: the call started."), out


class TrimmingService:
    """A session's replay log as AgentScope keeps it: the parked run's last event
    (its pause) stays; an answer's run is appended and published live, then the
    log is trimmed to that run's last event. A stream subscribes only after
    ``subscribe`` seconds, then replays the log and goes live."""

    def __init__(self, subscribe: float) -> None:
        self.subscribe = subscribe
        self.log: list[dict[str, Any]] = [{"type": "REQUIRE_USER_CONFIRM", "tool_calls": [CALL]}]
        self.live: list[asyncio.Queue[dict[str, Any]]] = []
        self.parked = True
        self.sent_while_subscribed: list[bool] = []

    async def status(self, agent_id: str, session_id: str) -> str:
        return "awaiting_permission" if self.parked else "idle"

    async def messages(self, agent_id: str, session_id: str, limit: int = 50) -> dict[str, Any]:
        return {"messages": [], "event_cursor": "c2"}

    async def stream(self, agent_id: str, session_id: str, after: str | None = None) -> AsyncIterator[dict[str, Any]]:
        await asyncio.sleep(self.subscribe)
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.live.append(queue)
        for frame in list(self.log):
            yield frame
        while True:
            yield await queue.get()

    async def chat(self, body: dict[str, Any]) -> None:
        """A worker takes the answer and runs it at once: the call's result, the reply's end."""
        self.sent_while_subscribed.append(bool(self.live))
        run = [
            {"type": "USER_CONFIRM_RESULT", "id": body["id"]},
            {"type": "REPLY_START"},
            {"type": "TOOL_RESULT_START", "tool_call_id": "call_1"},
            {"type": "TOOL_RESULT_END", "tool_call_id": "call_1", "state": "success"},
            {"type": "REPLY_END"},
        ]
        for frame in run:
            self.log.append(frame)
            for queue in self.live:
                queue.put_nowait(frame)
        self.log, self.parked = self.log[-1:], False


def test_an_answer_is_sent_once_the_stream_is_live_so_a_fast_run_is_seen() -> None:
    http = TrimmingService(subscribe=1.0)
    out = judged(http, lambda: http.chat(BODY), stream_grace=1.0)
    assert http.sent_while_subscribed == [True]
    assert (out.status, out.detail) == ("applied", "Applied by the service: the call started."), out
