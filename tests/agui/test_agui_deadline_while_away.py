"""A Session deadline on the served agent applies its default while the owner's notebook client
is away (no run streaming): the client catches up with :meth:`nb_hitl.agui.RemoteSession.follow`.

A real uvicorn server with ``session_kwargs={"deadline": ..., "on_deadline": ...}``, a real
AgentScope ``Agent`` on the scripted model whose ``send_payment`` asks (``PaymentFactory``,
one approval). Nobody answers; the deadline denies the call (or interrupts the reply) and the
reply ends on the server. The owner's client must learn it: its card says the deadline passed
and what was applied, and the turn ends with what the model said; it never waits for ever on an
interrupt it may only cancel and the server refuses.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
from nb_hitl.agui.payments_demo import PaymentFactory
from tests.agui.test_agui_four_eyes import bearer
from tests.agui.test_agui_links import run_sync
from tests.support import wait_until


@pytest.mark.parametrize(
    ("on_deadline", "applied", "status"),
    [("deny", "denied", "finished"), ("interrupt", "reply interrupted", "interrupted")],
)
def test_the_owners_client_catches_up_with_a_deadline_that_applied_while_it_was_away(
    on_deadline: str, applied: str, status: str
) -> None:
    factory = PaymentFactory(approvals=1)
    server = AguiServer(factory, auth=bearer, session_kwargs={"deadline": 0.5, "on_deadline": on_deadline})
    with serve_in_background(server, announce=False) as handle:

        async def scenario() -> tuple[Any, ...]:
            remote = RemoteSession(handle.url, token="alice-token", display=False)
            task = remote.start("Pay the invoice.")
            (card,) = await remote.until_paused()
            thread = server.threads[remote.thread_id]
            await wait_until(lambda: not thread.session.current.live, "the deadline's default ended the reply")
            got = await remote.follow(every=0.1, timeout=10)
            final = await asyncio.wait_for(task, 10) if status == "finished" else None
            return got, final, remote.current.pauses[card["tool_call_id"]], remote.current

        got, final, view, turn = run_sync(scenario())
    assert factory.runs == []
    assert got == status
    assert view["status"] == "delivered"
    assert view["decision"] == {"action": "timeout", "applied": applied}
    assert view["reason"] == f"The deadline passed on the server: {applied}."
    if status == "finished":
        assert final.startswith("The payment: denied.") and "before the deadline" in final, final
    else:
        assert turn.status == "interrupted"
