"""Waiting for an answer's checks (nb_hitl.answers.lifecycle.settled): woken by the
transition that takes the pause out of ``deciding`` (each of its leaving edges), on the
waiter's own loop whatever thread made the transition, and leaving no waiter behind when
it times out or is cancelled.

The loops run in asyncio's debug mode: there, resolving a future from a thread other
than its loop's raises, so a wake that skipped ``call_soon_threadsafe`` fails the tests."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from agentscope.message import ToolCallBlock

from nb_hitl.agui.turn import RemoteCard, move
from nb_hitl.answers import lifecycle
from nb_hitl.answers.lifecycle import settled, transition
from nb_hitl.pauses import Pause, PauseStatus


def deciding_pause(call_id: str = "call-1") -> Pause:
    pause = Pause(reply_id="r1", tool_call=ToolCallBlock(id=call_id, name="send_payment", input="{}"), kind="confirm")
    transition(pause, "deciding")
    return pause


def run_debug(coro: Any) -> Any:
    """``asyncio.run(coro, debug=True)`` in a worker thread (the main thread may have a loop)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro, debug=True).result()


@pytest.fixture(autouse=True)
def no_waiters_left() -> Any:
    assert lifecycle._waiting == {}
    yield
    assert lifecycle._waiting == {}  # every test leaves no waiter behind


@pytest.mark.parametrize("to", ["open", "decided", "expired"])
def test_each_edge_out_of_deciding_wakes_the_waiter(to: PauseStatus) -> None:
    pause = deciding_pause()

    async def scenario() -> tuple[bool, str]:
        waiter = asyncio.create_task(settled(pause, None))  # no timeout: only a wake ends it
        await asyncio.sleep(0)  # it is waiting now
        assert not waiter.done() and len(lifecycle._waiting) == 1
        transition(pause, to, reason="done")
        return await asyncio.wait_for(waiter, 10), pause.status

    assert run_debug(scenario()) == (True, to)


def test_a_pause_not_deciding_is_settled_at_once() -> None:
    pause = deciding_pause()
    transition(pause, "decided")
    assert run_debug(settled(pause, 0)) is True  # even with no time to wait


def test_a_transition_that_stays_out_of_deciding_wakes_no_one() -> None:
    """Only leaving ``deciding`` wakes a waiter: one that goes ``open -> deciding`` does not."""
    pause = Pause(reply_id="r1", tool_call=ToolCallBlock(id="c", name="send_payment", input="{}"), kind="confirm")

    async def scenario() -> bool:
        other = deciding_pause("call-2")
        waiter = asyncio.create_task(settled(other, 0.3))
        await asyncio.sleep(0)
        transition(pause, "deciding")  # another pause's transition
        return await waiter

    assert run_debug(scenario()) is False


def test_a_transition_on_another_thread_wakes_waiters_on_their_own_loops() -> None:
    """Two loops in two threads wait for one pause; a third thread (the Session's, an agent's
    loop) moves it: each waiter is resolved on its own loop (debug mode would raise otherwise)."""
    pause = deciding_pause()
    ready = [threading.Event(), threading.Event()]

    failed: list[BaseException] = []

    async def wait(n: int) -> tuple[bool, int]:
        waiter = asyncio.create_task(settled(pause, 10))  # bounded: a lost wake fails, never hangs
        await asyncio.sleep(0)
        ready[n].set()
        t0 = time.monotonic()
        woke = await waiter
        return woke and time.monotonic() - t0 < 5, threading.get_ident()  # woken, not run out

    def move_it() -> None:
        try:
            transition(pause, "decided")
        except BaseException as exc:  # e.g. a future touched from this thread (debug mode raises)
            failed.append(exc)

    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = [pool.submit(asyncio.run, wait(n), debug=True) for n in (0, 1)]
        assert all(r.wait(10) for r in ready)
        assert len(lifecycle._waiting[id(pause)][1]) == 2
        mover = threading.Thread(target=move_it)
        mover.start()
        mover.join()
        got = [r.result(20) for r in runs]
    assert failed == [] and pause.status == "decided"
    assert [woke for woke, _ in got] == [True, True]
    assert mover.ident not in {ident for _, ident in got}


def test_a_timeout_returns_false_and_leaves_no_waiter() -> None:
    pause = deciding_pause()

    async def scenario() -> tuple[bool, float]:
        t0 = time.monotonic()
        woke = await settled(pause, 0.1)
        return woke, time.monotonic() - t0

    woke, took = run_debug(scenario())
    assert woke is False and took >= 0.09 and pause.status == "deciding"
    assert lifecycle._waiting == {}
    transition(pause, "open")  # a transition after the waiter gave up finds no one to wake


def test_a_cancelled_waiter_leaves_none() -> None:
    pause = deciding_pause()

    async def scenario() -> None:
        waiter = asyncio.create_task(settled(pause, None))
        await asyncio.sleep(0)
        assert len(lifecycle._waiting) == 1
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert lifecycle._waiting == {}

    run_debug(scenario())
    transition(pause, "expired")


def test_one_waiter_gone_leaves_the_others_waiting() -> None:
    pause = deciding_pause()

    async def scenario() -> list[Any]:
        short = asyncio.create_task(settled(pause, 0.05))
        cancelled = asyncio.create_task(settled(pause, None))
        long = asyncio.create_task(settled(pause, None))
        await asyncio.sleep(0)
        cancelled.cancel()
        assert await short is False
        assert len(lifecycle._waiting[id(pause)][1]) == 1  # only the long one is left
        transition(pause, "decided")
        return [await asyncio.wait_for(long, 10), cancelled.cancelled()]

    assert run_debug(scenario()) == [True, True]


def test_a_remote_card_is_woken_through_its_view_whichever_card_moves_it() -> None:
    """The AG-UI client wraps a remote interrupt's view in a new RemoteCard for each move:
    a waiter on one card is woken by a move made through another."""
    view: dict[str, Any] = {"tool_call_id": "call-r", "reply_id": "r1", "tool_name": "send_payment", "status": "open"}
    transition(RemoteCard(view), "deciding")

    async def scenario() -> bool:
        waiter = asyncio.create_task(settled(RemoteCard(view), None))
        await asyncio.sleep(0)
        move(view, "open", reason="refused by the server")
        return await asyncio.wait_for(waiter, 5)

    assert run_debug(scenario()) is True
    assert view["status"] == "open" and view["reason"] == "refused by the server"


@pytest.mark.parametrize("last", ["decided", "expired"])
def test_a_waiter_of_other_statuses_is_woken_only_when_the_pause_leaves_them(last: PauseStatus) -> None:
    """``waiting=("open", "deciding")`` (until the pause has its answer): a check that starts or is
    refused moves the pause between those two and wakes no one; leaving both wakes the waiter."""
    pause = Pause(reply_id="r1", tool_call=ToolCallBlock(id="c", name="send_payment", input="{}"), kind="confirm")

    async def scenario() -> list[bool]:
        waiter = asyncio.create_task(settled(pause, None, waiting=("open", "deciding")))
        seen = []
        for to in ("deciding", "open"):
            await asyncio.sleep(0)
            transition(pause, to)  # type: ignore[arg-type]
            await asyncio.sleep(0.05)
            seen.append(waiter.done())
        if last == "decided":
            transition(pause, "deciding")
        transition(pause, last)
        seen.append(await asyncio.wait_for(waiter, 10))
        return seen

    assert run_debug(scenario()) == [False, False, True]
