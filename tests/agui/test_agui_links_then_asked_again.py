"""An approval link decides a call, and the reply goes on to ask about another call before the
owner's notebook client catches up (:meth:`nb_hitl.agui.RemoteSession.follow`).

A real uvicorn server, a real AgentScope ``Agent`` on the scripted model that pays twice
(each payment asks, ``Policy(approvals=2)``); alice owns the thread and gives the first
approval in her notebook, bob gives the last one through a one-time link. The first payment
runs; the model then asks about the second. alice's card of the first payment must say who
answered it and that it was answered, never that the server "no longer waits" for it.
"""

from __future__ import annotations

import copy
from typing import Any

from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
from nb_hitl.models import Turn, tool_call
from tests.agui.test_agui_four_eyes import Payments, bearer
from tests.agui.test_agui_links import alice_then_bob_by_link, run_sync
from tests.support import wait_until


def two_payments() -> Payments:
    """An agent factory whose model pays ACME, then Globex; each payment needs two approvals."""
    return Payments(
        [
            Turn("Paying ACME.", [tool_call("send_payment", to="ACME", amount=120.0)]),
            Turn("Paying Globex.", [tool_call("send_payment", to="Globex", amount=80.0)]),
        ]
    )


def test_a_card_decided_through_a_link_says_so_when_the_reply_asks_again_before_the_client_follows(tmp_path):
    factory = two_payments()
    server = AguiServer(factory, auth=bearer)
    with serve_in_background(server, announce=False) as handle:

        async def scenario() -> tuple[Any, ...]:
            remote = RemoteSession(handle.url, token="alice-token", display=False)
            task, card, _, done = await alice_then_bob_by_link(remote, server, handle.url, "Pay both invoices.")
            thread = server.threads[remote.thread_id]

            def second_asks() -> bool:
                run = thread.session.current
                return any(p.tool_call_id != card["tool_call_id"] and p.status == "open" for p in run.pauses.values())

            await wait_until(second_asks, "the second payment's confirmation", timeout=20)
            status = await remote.follow(every=0.2, timeout=30)
            views = copy.deepcopy(remote.current.pauses)  # before the cancel below expires the open card
            task.cancel()
            return done, status, card["tool_call_id"], views

        done, status, first_id, views = run_sync(scenario())
    assert done.status_code == 200
    assert factory.runs == [("ACME", 120.0)]
    assert status == "paused"
    first = views[first_id]
    second = next(v for k, v in views.items() if k != first_id)
    assert second["status"] == "open" and second["tool_name"] == "send_payment"
    assert first["status"] == "delivered", first
    assert first["reason"] == "Answered elsewhere: bob (approve)."
    assert first["decision"]["by"] == "bob"
