"""The AG-UI server restarts twice after an approval link decided a call: the owner's client is told
of the link's answer once, by the first restarted server; the checkpoint is written when it is told,
so the second restarted server has nothing to catch up on and says so (``no_input``).

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
from tests.agui.test_agui_links import alice_then_bob_by_link, run_sync
from tests.agui_support import post_run
from tests.support import wait_until


def test_a_link_answer_is_told_once_across_two_restarts(tmp_path: Path) -> None:
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
            told = remote.current.runs[-1]
        finally:
            second.stop()
        third = serve_in_background(AguiServer(PaymentFactory(), auth=bearer, session_kwargs=kwargs), port=handle.port)
        try:  # the owner's client polls once more, with its history: nothing is left to tell
            again = await post_run(
                third.url, AguiClient.make_input(remote.thread_id, remote.messages), token="alice-token"
            )
        finally:
            third.stop()
        return done, status, await task, told, again

    done, status, final, told, again = run_sync(scenario())
    assert done.status_code == 200 and status == "finished"
    assert final == "The payment: success. paid 120.0 EUR to ACME GmbH"
    (finished,) = [e for e in told.events if e.type.value == "RUN_FINISHED"]
    (answer,) = finished.metadata[META_KEY]["answered_elsewhere"]
    assert (answer["by"], answer["action"]) == ("bob", "approve")
    assert again.status == 200 and again.types[0] == "RUN_STARTED"
    assert not any(
        (getattr(e, "metadata", None) or {}).get(META_KEY, {}).get("answered_elsewhere") for e in again.events
    )
    assert again.last().type.value == "RUN_ERROR" and again.last().code == "no_input"
