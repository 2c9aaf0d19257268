"""Answers the owner's AG-UI client did not send: the served thread's Session deadline, an
operator's ``session.act`` / ``session.interrupt`` in the server's process, an answer still
being checked when a run arrives.

A real uvicorn server (or the server in process), a real AgentScope ``Agent`` on the scripted
model whose ``send_payment`` asks (``PaymentFactory``). The owner's client catches up with
:meth:`nb_hitl.agui.RemoteSession.follow`: its card says what closed the call (the deadline and
what it applied, an answer given elsewhere, the stop) and the turn ends with what the model said;
it never waits for ever on an interrupt it may only cancel and the server refuses. A run that
arrives while an answer is being checked waits for it, instead of refusing or calling the call
"no longer open" when it is open again for the next person.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
from nb_hitl.agui.payments_demo import PaymentFactory
from tests.agui.test_agui_four_eyes import bearer
from tests.agui.test_agui_links import run_sync
from tests.support import run_async, wait_until


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


@pytest.mark.parametrize("how", ["act", "interrupt"])
def test_the_owners_client_catches_up_with_an_answer_or_a_stop_given_in_the_servers_process(how: str) -> None:
    """``session.act`` (an operator's answer from code) or ``session.interrupt`` on the served
    thread's Session, while the owner's client is away: its follow() ends with what happened."""
    factory = PaymentFactory(approvals=1)
    server = AguiServer(factory, auth=bearer)
    with serve_in_background(server, announce=False) as handle:

        async def scenario() -> tuple[Any, ...]:
            remote = RemoteSession(handle.url, token="alice-token", display=False)
            task = remote.start("Pay the invoice.")
            (card,) = await remote.until_paused()
            thread = server.threads[remote.thread_id]

            async def operator() -> None:
                if how == "act":
                    await thread.session.act({"action": "approve", "tool_call_id": card["tool_call_id"]})
                else:
                    await thread.session.interrupt("Stopped by the operator.")

            assert thread.loop is not None
            asyncio.run_coroutine_threadsafe(operator(), thread.loop).result(10)
            await wait_until(lambda: not thread.session.current.live, "the reply ended on the server")
            got = await remote.follow(every=0.1, timeout=10)
            final = await asyncio.wait_for(task, 10) if how == "act" else None
            return got, final, remote.current.pauses[card["tool_call_id"]]

        got, final, view = run_sync(scenario())
    if how == "act":
        assert got == "finished" and factory.runs == [(factory.runs[0][0], "ACME GmbH", 120.0)]
        assert final == "The payment: success. paid 120.0 EUR to ACME GmbH"
        assert view["status"] == "delivered" and view["decision"]["action"] == "approve"
        assert view["reason"] == "Answered elsewhere: approve."
    else:
        assert got == "interrupted" and factory.runs == []
        assert view["status"] == "expired" and "Stopped by the operator." in view["reason"]


def test_a_poll_while_an_answer_is_being_checked_waits_for_it_instead_of_refusing() -> None:
    """A run of follow() arrives while an answer given without a run is being checked (its pause
    ``deciding``: the checks of an agent with MCP tools list them over the wire). The run waits
    for it and catches up; it is not refused with ``no_input`` (the client said "The server
    refused the answers", of answers it never sent)."""
    from nb_hitl.answers.record import origin

    factory = PaymentFactory(approvals=1)
    server = AguiServer(factory, auth=bearer)
    with serve_in_background(server, announce=False) as handle:

        async def scenario() -> tuple[Any, ...]:
            remote = RemoteSession(handle.url, token="alice-token", display=False)
            task = remote.start("Pay the invoice.")
            (card,) = await remote.until_paused()
            thread = server.threads[remote.thread_id]
            run = thread.session.current
            message = {"action": "approve", "tool_call_id": card["tool_call_id"]}

            async def slow_answer() -> None:  # the Desk's two steps, its checks taking 0.5 s
                pause, decision = thread.session.desk.begin_decision(run, message)
                await asyncio.sleep(0.5)
                await thread.session.desk.finish_decision(run, pause, decision, "ops", origin("kernel"))

            assert thread.loop is not None
            answering = asyncio.run_coroutine_threadsafe(slow_answer(), thread.loop)
            await asyncio.sleep(0.1)
            got = await remote.follow(every=0.1, timeout=10)
            answering.result(10)
            return got, await asyncio.wait_for(task, 10), [r.error_code for r in remote.current.runs]

        got, final, codes = run_sync(scenario())
    assert got == "finished" and final == "The payment: success. paid 120.0 EUR to ACME GmbH"
    assert "no_input" not in codes and len(factory.runs) == 1


def test_a_resume_while_another_approval_is_being_checked_counts_after_it() -> None:
    """Two approvals are needed. bob's approval, given without a run, is being checked when
    alice's resume arrives: the resume waits for it (it is not refused as "no longer open: it is
    deciding", false once bob's approval leaves the call open for the next person) and the
    call runs once, after both."""
    from ag_ui.core import ResumeEntry

    from nb_hitl.agui.client import AguiClient
    from nb_hitl.answers.record import origin
    from tests.agui_support import collect, user

    factory = PaymentFactory(approvals=2)
    server = AguiServer(factory, token=False)

    async def scenario() -> tuple[Any, ...]:
        first = await collect(server, AguiClient.make_input("t", [user("Pay.", "u1")]))
        (interrupt,) = first[-1].outcome.interrupts
        thread = server.threads["t"]
        run = thread.session.current
        message = {"action": "approve", "tool_call_id": interrupt.tool_call_id}

        async def bobs_answer() -> Any:  # the Desk's two steps, its checks taking 0.3 s
            pause, decision = thread.session.desk.begin_decision(run, message)
            await asyncio.sleep(0.3)
            return await thread.session.desk.finish_decision(run, pause, decision, "bob", origin("kernel"))

        bob = asyncio.ensure_future(bobs_answer())
        await asyncio.sleep(0.05)
        entry = ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"approved": True})
        events = await collect(server, AguiClient.make_input("t", [], [entry]))
        return (await bob)["status"], events[-1]

    bob, last = run_async(scenario())
    assert bob == "approval_recorded"
    assert last.type.value == "RUN_FINISHED", last
    assert last.result == "The payment: success. paid 120.0 EUR to ACME GmbH"
    assert len(factory.runs) == 1


def test_a_poll_refused_while_another_run_holds_the_thread_does_not_say_answers_were_refused() -> None:
    """A run of follow() (it carries no answer) arrives while another run holds the thread: its
    refusal (``thread_busy``) is not read as "The server refused the answers"; follow() goes on
    and catches up once the thread is free."""
    factory = PaymentFactory(approvals=1)
    server = AguiServer(factory, auth=bearer)
    with serve_in_background(server, announce=False) as handle:

        async def scenario() -> tuple[Any, ...]:
            remote = RemoteSession(handle.url, token="alice-token", display=False)
            task = remote.start("Pay the invoice.")
            (card,) = await remote.until_paused()
            thread = server.threads[remote.thread_id]

            async def another_run() -> None:  # holds the thread as a run does, then answers
                async with thread.lock:
                    await asyncio.sleep(0.6)
                    await thread.session.act({"action": "approve", "tool_call_id": card["tool_call_id"]})

            assert thread.loop is not None
            other = asyncio.run_coroutine_threadsafe(another_run(), thread.loop)
            await asyncio.sleep(0.1)
            following = asyncio.ensure_future(remote.follow(every=0.1, timeout=10))
            seen: set[str] = set()  # every reason the turn shows while the refusal is read

            def told() -> bool:
                seen.add(remote.current.reason)
                busy = any(r.error_code == "thread_busy" for r in remote.current.runs)
                return busy and remote.current.reason.startswith("The check for answers given elsewhere failed:")

            await wait_until(told, "a busy poll, told")
            said = remote.current.reason
            other.result(10)
            return said, seen, await following, await asyncio.wait_for(task, 10)

        said, seen, got, final = run_sync(scenario())
    assert "refused the answers" not in said
    assert not [r for r in seen if "thread_busy" in r], seen  # the code is the record's, never the card's words
    assert got == "finished" and final == "The payment: success. paid 120.0 EUR to ACME GmbH"


def test_a_link_answered_while_another_approval_is_being_checked_counts_after_it(tmp_path: Any) -> None:
    """Two approvals are needed; alice's is being checked when bob's link is posted. The link
    waits for it (it is not refused "no longer waits for an answer: deciding", false once alice's
    approval leaves the call open for the next person) and the call runs once, after both."""
    import httpx

    from nb_hitl.answers.record import origin
    from tests.agui.test_agui_links import World

    world = World(tmp_path)
    try:
        url = world.link("bob")
        thread = world.server.threads[world.tid]
        run = thread.session.current
        message = {"action": "approve", "tool_call_id": world.interrupt.tool_call_id}

        async def alices_answer() -> Any:  # the Desk's two steps, its checks taking 0.5 s
            pause, decision = thread.session.desk.begin_decision(run, message)
            await asyncio.sleep(0.5)
            return await thread.session.desk.finish_decision(run, pause, decision, "alice", origin("kernel"))

        assert thread.loop is not None
        alice = asyncio.run_coroutine_threadsafe(alices_answer(), thread.loop)
        time.sleep(0.1)
        got = httpx.post(url, data={"action": "approve"}, timeout=20)
        assert alice.result(10)["status"] == "approval_recorded"
        assert got.status_code == 200, got.text
        assert 'data-testid="nbh-link-done"' in got.text and "was the last one needed" in got.text
        world.wait_runs(1)
    finally:
        world.handle.stop()
    assert [r[1:] for r in world.factory.runs] == [("ACME GmbH", 120.0)]
    assert [r["decided_by"] for r in world.answered()] == ["alice", "bob"]
