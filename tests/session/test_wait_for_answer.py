"""A notebook cell's wait for a person's answer (``nb_hitl.walkthrough.wait_for_answer``).

A real AgentScope agent (:func:`nb_hitl.demo.demo_agent`) on the scripted offline model, answered
through ``Session.act`` (the path of a click). Checked: while the card is open the cell says what
to click and waits as a waiter of the card's status change (``lifecycle.settled``), not a poll;
the answer ends the wait; run again after the answer, it says how the card was answered and
returns at once. A remote card's view (the AG-UI client's dict, moved by ``turn.move``) waits out
a refused answer (``deciding -> open``) and ends on the next; an error of ``follow`` ends the wait
and leaves no waiter.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from nb_hitl import Session
from nb_hitl.agui.turn import RemoteCard, move
from nb_hitl.answers import lifecycle
from nb_hitl.demo import demo_agent
from nb_hitl.walkthrough import answered_line, next_pause, wait_for_answer
from tests.support import run_async


def ends_without_waiting(coro: Any) -> bool:
    """Whether ``coro`` returns at its first step, without awaiting anything (no wait at all)."""
    try:
        coro.send(None)
    except StopIteration:
        return True
    coro.close()
    return False


def test_the_wait_says_what_to_click_and_ends_on_the_answers_status_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def go() -> tuple[bool, bool, str]:
        session = Session(demo_agent(tmp_path / "sandbox", chunk_delay=0), display=False)
        session.start("Please tidy up my sandbox folder.")
        ask = await next_pause(session, "ask_user", timeout=30)
        waiting = asyncio.create_task(wait_for_answer(ask, "pick a file on the card above"))
        await asyncio.sleep(0.2)
        # waiting as a waiter of the card's status change, not by looking at it again and again
        registered = id(ask) in lifecycle._waiting and not waiting.done()
        question = ask.ask_user.questions[0].question
        await session.act(
            {
                "action": "answer",
                "tool_call_id": ask.tool_call_id,
                "answers": [{"question": question, "selected": ["notes.txt"]}],
            }
        )
        await asyncio.wait_for(waiting, 10)
        first = capsys.readouterr().out
        # run again after the answer: at once, how it was answered
        at_once = ends_without_waiting(wait_for_answer(ask, "pick a file on the card above"))
        await session.interrupt()
        return registered, first == "Waiting for you: pick a file on the card above.\n", at_once

    registered, said_click, at_once = run_async(go())
    assert registered and said_click and at_once
    assert capsys.readouterr().out == "Already answered: AskUser (Which file should I delete?): answer (notes.txt).\n"
    assert lifecycle._waiting == {}


def remote_view() -> dict[str, Any]:
    """A remote interrupt's pause view as the AG-UI client keeps it (the fields the card's line reads)."""
    return {
        "tool_call_id": "call-r",
        "reply_id": "r1",
        "tool_name": "send_payment",
        "status": "open",
        "input_text": '{"to": "ACME GmbH", "amount": 120.0}',
        "decision": None,
        "reason": None,
    }


def test_a_remote_card_waits_out_a_refused_answer_and_ends_on_the_next(capsys: pytest.CaptureFixture[str]) -> None:
    view = remote_view()

    async def go() -> list[bool]:
        waiting = asyncio.create_task(wait_for_answer(view, "press Approve on the card above"))
        seen = []
        for to in ("deciding", "open", "deciding"):  # checked, refused by the server, answered again
            await asyncio.sleep(0.05)
            move(view, to)  # type: ignore[arg-type]
            await asyncio.sleep(0.05)
            seen.append(waiting.done())
        move(view, "decided")
        view["decision"] = {"action": "approve", "by": "bob", "at": 1.0}
        await asyncio.wait_for(waiting, 5)
        return seen

    assert run_async(go()) == [False, False, False]
    assert capsys.readouterr().out == "Waiting for you: press Approve on the card above.\n"
    line = 'Already answered: send_payment (to="ACME GmbH", amount=120.0): approve by bob.'
    assert answered_line(RemoteCard(view)) == line
    assert ends_without_waiting(wait_for_answer(view, "press Approve on the card above"))
    assert capsys.readouterr().out == line + "\n"


def test_an_error_of_follow_ends_the_wait_and_leaves_no_waiter() -> None:
    view = remote_view()

    async def server_gone() -> str:
        await asyncio.sleep(0.05)
        raise ConnectionError("the server is gone")

    with pytest.raises(ConnectionError, match="the server is gone"):
        run_async(asyncio.wait_for(wait_for_answer(view, "open the link", follow=server_gone), 5))
    assert lifecycle._waiting == {} and view["status"] == "open"
