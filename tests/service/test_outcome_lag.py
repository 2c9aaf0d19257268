"""The verdict of a console's answer when the service's stream lags behind its stored state.

A loaded service stores a call's result (``/messages`` shows it settled) before its
stream delivers the frames that say which answer produced it. The console waits for
those frames (``stream_grace``) instead of judging at once: at once, an answer the
stream had echoed but whose results had not arrived yet was reported "unknown"
("Approve selected" on 50 sessions, one row in about ten runs on a loaded machine).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
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


def test_an_answer_whose_results_come_late_on_the_stream_is_applied_not_unknown() -> None:
    body = confirm_body("reply-1", [ConfirmResult(confirmed=True, tool_call=ToolCallBlock.model_validate(CALL))])

    async def send() -> None:
        return None

    async def go() -> Any:
        http = LaggingService(body["id"], lag=1.5)
        return await await_outcome(
            http,  # type: ignore[arg-type]
            "a",
            "s",
            body,
            ["call_1"],
            after=None,
            send=send,
            timeout=10,
            poll=0.2,
        )

    out = run_async(go())
    assert (out.status, out.detail) == ("applied", "Applied by the service: the call started."), out
