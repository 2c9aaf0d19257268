"""The AG-UI server restarts after an approval link decided a call, before the owner's client
caught up: what the owner's client missed is kept with the thread's checkpoint, so its card
still says who answered instead of calling the call expired. It is told once: the checkpoint is
written when it is told, so a server restarted a second time has nothing to catch up on and says
so (``no_input``).

Real uvicorn servers in this process on one loopback port (each stopped, the next started on the
same checkpoint folder), a real AgentScope ``Agent`` whose ``send_payment`` needs two approvals
(:class:`~nb_hitl.agui.payments_demo.PaymentFactory`), the owner's :class:`~nb_hitl.agui.RemoteSession`,
then the owner's client history sent again over HTTP as one more run without input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nb_hitl.agui import AguiClient, AguiServer, RemoteSession, serve_in_background
from nb_hitl.agui.mapping import META_KEY
from nb_hitl.agui.payments_demo import PaymentFactory
from tests.agui.test_agui_four_eyes import bearer
from tests.agui.test_agui_links import ANY_TIME, alice_then_bob_by_link, run_sync
from tests.agui_support import post_run
from tests.support import wait_until


def test_the_owners_client_catches_up_with_a_link_after_the_server_restarted_once_and_twice(tmp_path: Path) -> None:
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
        second = serve_in_background(AguiServer(PaymentFactory(), auth=bearer, session_kwargs=kwargs), port=handle.port)
        try:
            status = await remote.follow(every=0.2, timeout=30)
            turn, told = remote.current, remote.current.runs[-1]
        finally:
            second.stop()
        third = serve_in_background(AguiServer(PaymentFactory(), auth=bearer, session_kwargs=kwargs), port=handle.port)
        try:  # the owner's client polls once more, with its history: nothing is left to tell
            again = await post_run(
                third.url, AguiClient.make_input(remote.thread_id, remote.messages), token="alice-token"
            )
        finally:
            third.stop()
        return done, status, await task, turn, told, again

    done, status, final, turn, told, again = run_sync(scenario())
    assert done.status_code == 200 and [r[1:] for r in first.runs] == [("ACME GmbH", 120.0)]
    assert status == "finished"
    assert final == "The payment: success. paid 120.0 EUR to ACME GmbH"
    (view,) = turn.pauses.values()
    assert view["status"] == "delivered" and view["decision"] == {"action": "approve", "by": "bob", "at": ANY_TIME}
    assert view["reason"] == "Answered elsewhere: bob (approve)."
    (finished,) = [e for e in told.events if e.type.value == "RUN_FINISHED"]
    (answer,) = finished.metadata[META_KEY]["answered_elsewhere"]
    assert (answer["by"], answer["action"]) == ("bob", "approve")
    assert again.status == 200 and again.types[0] == "RUN_STARTED"
    assert not any(
        (getattr(e, "metadata", None) or {}).get(META_KEY, {}).get("answered_elsewhere") for e in again.events
    )
    assert again.last().type.value == "RUN_ERROR" and again.last().code == "no_input"
