"""The AG-UI server restarts after an approval link decided a call, before the owner's client
caught up: what the owner's client missed is kept with the thread's checkpoint, so its card
still says who answered instead of calling the call expired.

Real uvicorn servers in this process on one loopback port (one stopped, the next started on the
same checkpoint folder), a real AgentScope ``Agent`` whose ``send_payment`` needs two approvals
(:class:`~nb_hitl.agui.payments_demo.PaymentFactory`), the owner's :class:`~nb_hitl.agui.RemoteSession`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
from nb_hitl.agui.payments_demo import PaymentFactory
from tests.agui.test_agui_four_eyes import bearer
from tests.agui.test_agui_links import ANY_TIME, alice_then_bob_by_link, run_sync
from tests.support import wait_until


def test_the_owners_client_catches_up_with_a_link_after_the_server_restarted(tmp_path: Path) -> None:
    kwargs = {"checkpoints": str(tmp_path / "checkpoints"), "audit_log": str(tmp_path / "audit.jsonl")}
    first = PaymentFactory()
    server = AguiServer(first, auth=bearer, session_kwargs=kwargs)
    handle = serve_in_background(server, announce=False)

    async def scenario() -> tuple[Any, ...]:
        remote = RemoteSession(handle.url, token="alice-token", display=False)
        task, _, _, done = await alice_then_bob_by_link(remote, server, handle.url, "Pay the invoice.")
        thread = server.threads[remote.thread_id]
        await wait_until(lambda: not thread.session.current.live, "the reply ended on the first server")
        handle.stop()
        again = serve_in_background(AguiServer(PaymentFactory(), auth=bearer, session_kwargs=kwargs), port=handle.port)
        try:
            status = await remote.follow(every=0.2, timeout=30)
            return done, status, await task, remote.current
        finally:
            again.stop()

    done, status, final, turn = run_sync(scenario())
    assert done.status_code == 200 and [r[1:] for r in first.runs] == [("ACME GmbH", 120.0)]
    assert status == "finished"
    assert final == "The payment: success. paid 120.0 EUR to ACME GmbH"
    (view,) = turn.pauses.values()
    assert view["status"] == "delivered" and view["decision"] == {"action": "approve", "by": "bob", "at": ANY_TIME}
    assert view["reason"] == "Answered elsewhere: bob (approve)."
