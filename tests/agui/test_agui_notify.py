"""Notifications and approval links of a served agent, over real HTTP.

A real uvicorn AG-UI server on 127.0.0.1 serving the payment agent that
needs two approvals (``nb_hitl.agui.payments_demo``), a real HTTP receiver
for the hook (``tests.notify_support``). alice owns the thread; bob is told
by the hook, with his one-time link, and approves from it. A used link is
remembered in the thread's checkpoint: after the server object is replaced
by a new one on the same folders, the link is refused as used.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from nb_hitl import Notify
from nb_hitl.agui import AguiServer, serve_in_background
from nb_hitl.agui.client import AguiClient
from nb_hitl.agui.links import USED_KEY
from nb_hitl.agui.payments_demo import PaymentFactory
from nb_hitl.store import AuditLog
from tests.agui.test_agui_four_eyes import bearer
from tests.agui.test_agui_links import refused, run_sync
from tests.agui_support import post_run, user
from tests.notify_support import HookInbox

TTL = 600.0


def test_the_hook_gets_bobs_link_once_and_the_link_approves(tmp_path: Any) -> None:
    factory = PaymentFactory()
    audit = tmp_path / "audit.jsonl"
    with HookInbox() as inbox:
        notify = Notify(inbox.url, to=["bob"])
        server = AguiServer(
            factory, auth=bearer, interrupt_ttl=TTL, session_kwargs={"audit_log": str(audit), "notify": notify}
        )
        with serve_in_background(server, announce=False) as handle:
            first = run_sync(
                post_run(handle.url, AguiClient.make_input("t1", [user("Pay.", "u1")]), token="alice-token")
            )
            (interrupt,) = first.last().outcome.interrupts
            (told,) = inbox.wait(1)
            # alice's client asks again (a redraw of the same interrupt): nobody is told twice
            again = run_sync(post_run(handle.url, AguiClient.make_input("t1", []), token="alice-token"))
            assert again.last().outcome.type == "interrupt"
            assert told["thread_id"] == "t1" and told["to"] == "bob"
            assert told["tool_call_id"] == interrupt.tool_call_id
            assert told["link"].startswith(handle.url.rstrip("/") + "/links/")
            assert told["expires_at"] is not None and interrupt.expires_at is not None
            page = httpx.get(told["link"])
            assert page.status_code == 200 and 'data-testid="nbh-link-approver">bob<' in page.text
            nonce = server.links.read(told["link"].rsplit("/", 1)[1]).nonce
            done = httpx.post(told["link"], data={"action": "approve"})
            assert done.status_code == 200 and "1 of 2 approvals: bob (" in done.text
            time.sleep(0.3)
    assert len(inbox.bodies) == 1
    assert [(d.to, d.ok, d.link) for d in notify.deliveries] == [("bob", True, True)]
    (line,) = AuditLog(audit).records("answered")
    assert (line["decided_by"], line["origin"]["link"]) == ("bob", nonce)


def test_a_used_link_is_refused_after_the_server_restarts(tmp_path: Any) -> None:
    ckpt, audit = tmp_path / "checkpoints", tmp_path / "audit.jsonl"
    # approvals need not come from distinct people: only the record of the link stops its second use
    told: list[dict[str, Any]] = []
    kwargs = {"checkpoints": str(ckpt), "audit_log": str(audit), "notify": Notify(told.append, to="carol")}
    first_server = AguiServer(PaymentFactory(distinct=False), auth=bearer, session_kwargs=kwargs)
    with serve_in_background(first_server, announce=False) as handle:
        run_sync(post_run(handle.url, AguiClient.make_input("t1", [user("Pay.", "u1")]), token="alice-token"))
        (interrupt,) = first_server.threads["t1"].session.pending
        url = first_server.links.issue("t1", interrupt.tool_call_id, "bob")
        assert httpx.post(url, data={"action": "approve"}).status_code == 200
        assert refused(httpx.post(url, data={"action": "approve"})) == "used"
    path = url.split("/links/", 1)[1]

    factory = PaymentFactory(distinct=False)
    second_server = AguiServer(factory, auth=bearer, session_kwargs=kwargs)  # nothing in memory
    assert second_server.links.used == {}
    with serve_in_background(second_server, announce=False) as handle:
        early = httpx.post(handle.url.rstrip("/") + "/links/" + path, data={"action": "approve"})
        assert early.status_code == 410 and refused(early) == "closed"
        assert "not loaded on this server since it restarted" in early.text
        # alice's client comes back: the thread is restored from its checkpoint, the call still waits
        back = run_sync(post_run(handle.url, AguiClient.make_input("t1", []), token="alice-token"))
        assert back.last().outcome.type == "interrupt"
        (pause,) = second_server.threads["t1"].session.pending
        assert [a["by"] for a in pause.approvals] == ["bob"]
        kept = second_server.threads["t1"].agent.state.middle_context[USED_KEY]
        assert [m["by"] for m in kept.values()] == ["bob"]
        again = httpx.post(handle.url.rstrip("/") + "/links/" + path, data={"action": "approve"})
        assert again.status_code == 410 and refused(again) == "used"
        assert "This link was already used: bob answered approve at " in again.text
        time.sleep(0.3)
    assert factory.runs == []  # the payment did not run on one person's link used twice
    assert [t["to"] for t in told] == ["carol"]  # told when the pause opened, not again after the restart
    assert [r["decided_by"] for r in AuditLog(audit).records("answered")] == ["bob"]
