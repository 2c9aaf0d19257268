"""Answers given on a remote card after the server repeated its interrupt.

A real uvicorn server on 127.0.0.1, real AgentScope agents on the scripted
model. The server repeats an open interrupt on every run (alice's first
approval of a four-eyes payment, each poll of ``follow``): the card keeps
the reply that raised it, so the ``reply_id`` the page holds stays right.
alice's second Approve is refused by the server with its reason, her Deny
vetoes the call. A refusal about another card is not raised on the card
that was clicked.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest

from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
from nb_hitl.agui.demo import two_pause_factory
from nb_hitl.agui.payments_demo import PaymentFactory
from nb_hitl.errors import DecisionError
from nb_hitl.store import AuditLog
from tests.agui.test_agui_four_eyes import bearer
from tests.agui.test_agui_links import run_sync


def test_alice_answers_again_on_her_card_after_polls_refused_then_vetoed(tmp_path):
    factory = PaymentFactory()
    audit = tmp_path / "audit.jsonl"
    server = AguiServer(factory, auth=bearer, session_kwargs={"audit_log": str(audit)})
    with serve_in_background(server, announce=False) as handle:

        async def scenario() -> tuple[Any, ...]:
            remote = RemoteSession(handle.url, token="alice-token", display=False)
            task = remote.start("Pay the invoice.")
            (card,) = await remote.until_paused()
            page = {"tool_call_id": card["tool_call_id"], "reply_id": card["reply_id"]}  # what the page sends
            await remote.act({"action": "approve", **page})
            await remote.until_paused()  # the same interrupt again, 1 of 2
            while len(remote.current.runs) < 4:  # at least two polls, however slow a run is on a loaded machine
                with pytest.raises(TimeoutError):  # polls: runs without input, the interrupt repeated each time
                    await remote.follow(every=0.05, timeout=0.3)
            with pytest.raises(DecisionError) as again:
                await remote.act({"action": "approve", **page})
            shown = dict(remote.current.pauses[card["tool_call_id"]])
            denied = await remote.act({"action": "deny", **page})
            return again.value, shown, denied, await task, remote.current

        again, shown, denied, final, turn = run_sync(scenario())
    assert "alice already approved this call; it needs 2 approvals from distinct people" in str(again)
    assert "names reply" not in str(again) and "other answers" not in str(again)
    assert shown["status"] == "open" and shown["reply_id"] == turn.runs[0].run_id
    assert denied["sent"] is True
    assert factory.runs == []  # one denial vetoes the call
    (view,) = turn.pauses.values()
    assert view["status"] == "delivered" and view["refused"] is None
    assert "did not run" in final or "denied" in final.lower()
    assert [(r["decision"], r["decided_by"]) for r in AuditLog(audit).records("answered")] == [
        ("approve", "alice"),
        ("deny", "alice"),
    ]


def test_a_refusal_about_another_card_is_not_raised_on_the_card_answered_last(tmp_path):
    server = AguiServer(two_pause_factory(tmp_path))
    with serve_in_background(server, announce=False) as handle:

        async def go() -> tuple[Any, ...]:
            remote = RemoteSession(handle.url, token=handle.token, display=False)
            task = remote.start("Please tidy up.")
            pending = await remote.until_paused()
            ask = next(p for p in pending if p["kind"] == "ask_user")
            confirm = next(p for p in pending if p["kind"] == "confirm")
            modify = {"action": "modify", "tool_call_id": confirm["tool_call_id"]}
            held = await remote.act({**modify, "input": '{"path": "old_log.txt"}'})  # changes nothing: refused
            answer = [{"question": "Which file should I archive?", "selected": ["draft.md"]}]
            last = await remote.act({"action": "answer", "tool_call_id": ask["tool_call_id"], "answers": answer})
            views = {v["kind"]: dict(v) for v in remote.current.pauses.values()}
            fixed = await remote.act({"action": "approve", "tool_call_id": confirm["tool_call_id"]})
            return held, last, views, fixed, await task

        held, last, views, fixed, final = asyncio.run(go())
    assert held["sent"] is False
    assert last["sent"] is False and last["decision"]["action"] == "answer"  # kept, not refused
    assert views["ask_user"]["status"] == "decided" and not views["ask_user"]["refused"]
    assert views["confirm"]["status"] == "open" and "Your edit changes nothing" in views["confirm"]["refused"]
    assert fixed["sent"] is True
    assert final == "You chose to archive draft.md. Deleted old_log.txt."


def test_follow_waits_for_an_answer_of_this_notebook_then_catches_up_with_the_link(tmp_path):
    """alice answers again on her card while ``follow`` polls; her resume run is slow (the server's auth
    hook takes 0.4 s), so ``follow`` wakes while it runs. It must wait for that run (refused: the same
    interrupt) and keep polling, not return "running" and leave the notebook's ``await task`` hanging;
    bob's link then ends the turn and ``follow`` sees it."""
    factory = PaymentFactory()
    slow = threading.Event()

    async def auth(request: Any) -> str | None:
        if slow.is_set():
            await asyncio.sleep(0.4)
        return bearer(request)

    server = AguiServer(factory, auth=auth)
    with serve_in_background(server, announce=False) as handle:

        async def scenario() -> tuple[Any, ...]:
            remote = RemoteSession(handle.url, token="alice-token", display=False)
            task = remote.start("Pay the invoice.")
            (card,) = await remote.until_paused()
            await remote.act({"action": "approve", "tool_call_id": card["tool_call_id"]})
            await remote.until_paused()  # 1 of 2
            url = server.links.issue(remote.thread_id, card["tool_call_id"], "bob", base_url=handle.url)
            following = asyncio.ensure_future(remote.follow(every=0.05, timeout=30))
            await asyncio.sleep(0.2)  # a few polls
            slow.set()
            with pytest.raises(DecisionError) as again:
                await remote.act({"action": "approve", "tool_call_id": card["tool_call_id"]})
            still = following.done()  # the refused run left the same interrupt: follow polls on
            async with httpx.AsyncClient(timeout=30) as http:
                done = await http.post(url, data={"action": "approve"})
            status = await asyncio.wait_for(following, 30)
            return again.value, still, done, status, await asyncio.wait_for(task, 30), remote.current

        again, still, done, status, final, turn = run_sync(scenario())
    assert "alice already approved this call" in str(again)
    assert still is False and done.status_code == 200
    assert status == "finished"
    assert final == "The payment: success. paid 120.0 EUR to ACME GmbH"
    assert turn.pauses[next(iter(turn.pauses))]["decision"]["by"] == "bob"
    assert [r[1:] for r in factory.runs] == [("ACME GmbH", 120.0)]
