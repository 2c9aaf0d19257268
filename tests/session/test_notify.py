"""Notifications: ``Session(notify=Notify(hook, to=...))`` is told once when a
pause opens that the people it names may answer.

Real AgentScope ``Agent`` s on the scripted model under the four-eyes policy;
the hook is a real HTTP server on 127.0.0.1 receiving the POST (httpx), or a
Python callable. Checked: the payload; once per pause, also when the card is
redrawn, the reply adopted by a new Session or restored from the checkpoint,
and when an approval short of N reopens it; again (for the others) after a
Modify changed the input; a hook that fails (HTTP error, exception, timeout)
never holds up the pause and is reported in the log, the transcript and
``Notify.deliveries``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nb_hitl import Notify, Session
from nb_hitl.models import Turn, tool_call
from nb_hitl.notify import NOTIFIED_KEY
from nb_hitl.policy import policy_middleware
from tests.notify_support import HookInbox
from tests.session.test_four_eyes import FOUR_EYES, payer
from tests.session.test_policy import Mail, agent_for, report, settle
from tests.support import run_async


def test_a_url_hook_gets_one_post_per_person_with_the_documented_payload() -> None:
    mail = Mail()
    with HookInbox() as inbox:
        notify = Notify(inbox.url, to=["bob", "carol"], headers={"x-hook-key": "k1"})

        async def scenario() -> Any:
            session = Session(payer(mail), display=False, decided_by="alice", notify=notify, deadline=600)
            task = session.start("pay ACME")
            pause = await settle(session, task)
            assert session.notices is not None
            await session.notices.drain(10)
            await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})  # 1 of 2: same input
            session._push(session.current)  # a redraw
            await session.notices.drain(10)
            assert len(inbox.bodies) == 2
            await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="bob")
            await asyncio.wait_for(task, 10)
            return session, pause

        session, pause = run_async(scenario())
    assert mail.sent == [("ACME", 120.0)]
    bob, carol = sorted(inbox.bodies, key=lambda b: b["to"])
    assert (bob["to"], carol["to"]) == ("bob", "carol")
    assert inbox.headers[0]["x-hook-key"] == "k1"
    assert set(bob) == {
        "v", "event", "to", "session_id", "thread_id", "reply_id", "tool_call_id", "tool_name", "kind",
        "agent", "policy", "input_summary", "approvals", "link", "opened_at", "expires_at",
    }  # fmt: skip
    assert bob["v"] == 1 and bob["event"] == "pause_opened"
    assert (bob["tool_call_id"], bob["reply_id"], bob["tool_name"]) == (
        pause.tool_call_id,
        pause.reply_id,
        "send_payment",
    )
    assert (bob["session_id"], bob["thread_id"], bob["link"]) == (session.session_id, None, None)
    assert bob["kind"] == "confirm" and bob["agent"] == "payer" and bob["policy"] == "four eyes"
    assert json.loads(bob["input_summary"]) == {"to": "ACME", "amount": 120.0}
    assert bob["approvals"] == {"needed": 2, "by": []}
    assert bob["opened_at"].endswith("Z") and bob["expires_at"].endswith("Z")
    assert [(d.to, d.ok, d.detail, d.link) for d in sorted(notify.deliveries, key=lambda d: d.to)] == [
        ("bob", True, "HTTP 204", False),
        ("carol", True, "HTTP 204", False),
    ]


def test_a_callable_is_told_once_and_again_for_the_others_after_a_modify() -> None:
    told: list[dict[str, Any]] = []
    mail = Mail()

    async def scenario() -> None:
        session = Session(payer(mail), display=False, notify=Notify(told.append, to=["alice", "bob", "carol"]))
        task = session.start("pay ACME")
        pause = await settle(session, task)
        await session.notices.drain(10)
        assert sorted(t["to"] for t in told) == ["alice", "bob", "carol"]
        edited = json.dumps({"to": "ACME", "amount": 99.0})
        await session.act({"action": "modify", "tool_call_id": pause.tool_call_id, "input": edited}, decided_by="bob")
        await session.notices.drain(10)
        again = told[3:]
        assert sorted(t["to"] for t in again) == ["alice", "carol"]  # bob's modify is his approval
        assert all(json.loads(t["input_summary"])["amount"] == 99.0 for t in again)
        assert all(t["approvals"] == {"needed": 2, "by": ["bob"]} for t in again)
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="carol")
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert len(told) == 5 and mail.sent == [("ACME", 99.0)]


def test_once_across_a_new_session_for_the_agent_and_a_restore_from_the_checkpoint(tmp_path: Path) -> None:
    told: list[str] = []
    mail = Mail()
    ckpt = tmp_path / "ckpt"

    async def hook(payload: dict[str, Any]) -> None:  # a coroutine function: awaited on the loop
        told.append(payload["tool_call_id"])

    def build(state: Any = None) -> Any:
        first = [] if state is not None else [Turn("Paying.", [tool_call("send_payment", to="ACME", amount=120.0)])]
        return agent_for(mail, [*first, report], state=state, middlewares=[policy_middleware(FOUR_EYES)])

    async def first() -> str:
        agent = build()
        session = Session(agent, display=False, checkpoints=str(ckpt), notify=Notify(hook, to="bob"))
        task = session.start("pay ACME")
        await settle(session, task)
        await session.notices.drain(10)
        again = Session(agent, display=False, checkpoints=str(ckpt), notify=Notify(hook, to="bob"))  # adopts it
        resumed = again.start_resume()
        await settle(again, resumed)
        await again.notices.drain(10)
        assert isinstance(agent.state.middle_context[NOTIFIED_KEY], dict)
        resumed.cancel()  # the kernel "dies" here
        sid = again.session_id
        again.close()
        return sid

    sid = run_async(first())
    assert len(told) == 1

    async def second() -> None:
        session = Session.restore(build, str(ckpt), sid, display=False, notify=Notify(hook, to="bob"))
        task = session.start_resume()
        pause = await settle(session, task)
        await session.notices.drain(10)
        assert pause.tool_call_id == told[0]
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="alice")
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="bob")
        await asyncio.wait_for(task, 10)

    run_async(second())
    assert len(told) == 1 and mail.sent == [("ACME", 120.0)]


@pytest.mark.parametrize("failure", ["http_500", "exception", "timeout_url", "timeout_callable"])
def test_a_failing_hook_never_holds_up_the_pause_and_is_reported(failure: str, caplog: Any) -> None:
    mail = Mail()
    inbox = HookInbox(status=500 if failure == "http_500" else 204, delay=3.0 if failure == "timeout_url" else 0.0)
    release = threading.Event()

    def hook(payload: dict[str, Any]) -> None:
        if failure == "exception":
            raise ValueError("the chat service refused the message")
        release.wait(5)  # a plain function that hangs: it runs in a worker thread

    target: Any = inbox.url if failure in ("http_500", "timeout_url") else hook
    notify = Notify(target, to="bob", timeout=0.5)

    async def scenario() -> Any:
        session = Session(payer(mail), display=False, notify=notify)
        task = session.start("pay ACME")
        pause = await settle(session, task)
        started = time.monotonic()
        # the loop is free while the hook is under way: both approvals go through at once
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="alice")
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="bob")
        await asyncio.wait_for(task, 10)
        quick = time.monotonic() - started
        await session.notices.drain(10)
        return session, quick

    with caplog.at_level(logging.WARNING, logger="nb_hitl.notify"):
        try:
            session, quick = run_async(scenario())
        finally:
            release.set()
            inbox.close()
    assert mail.sent == [("ACME", 120.0)]
    (delivery,) = notify.deliveries
    assert delivery.ok is False and delivery.to == "bob"
    host = inbox.url.split("/hooks")[0]
    expected = {
        "http_500": f"RuntimeError: HTTP 500 from POST {host}",
        "exception": "ValueError: the chat service refused the message",
        "timeout_url": f"POST {host} did not answer within 0.5 s",
        "timeout_callable": "test_a_failing_hook_never_holds_up_the_pause_and_is_reported.<locals>.hook did not answer within 0.5 s",
    }[failure]
    assert delivery.detail == expected
    if failure != "exception":
        assert quick < 0.5  # nobody waited for the hook
    line = f'Could not notify bob that send_payment (to="ACME", amount=120.0) waits: {expected}.'
    assert delivery.tool_call_id not in line  # the call by its tool and input, never its id
    assert line in caplog.text
    assert "s3cret" not in caplog.text and "secret-path" not in caplog.text  # the URL's path and query stay out
    notes = [e["text"] for e in session.current.transcript if e["kind"] == "note"]
    assert line in notes


def test_who_to_tell_and_the_hook_are_checked() -> None:
    with pytest.raises(ValueError, match="http"):
        Notify("file:///etc/passwd", to="bob")
    with pytest.raises(TypeError):
        Notify(42, to="bob")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="names the people"):
        Notify(print, to=[])
    with pytest.raises(ValueError, match="timeout"):
        Notify(print, to="bob", timeout=0)
    assert Notify(print, to=["bob", " bob ", "carol"]).to == ("bob", "carol")
