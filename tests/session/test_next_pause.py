"""A notebook's wait for the next card ends when the reply ends without it (``nb_hitl.walkthrough.next_pause``).

Real AgentScope agents (:func:`nb_hitl.demo.demo_agent`, :func:`nb_hitl.team_demo.team_demo`) on the
scripted offline model; answers go through ``Session.act`` (the path of a click). Checked: the wait
returns the card when it comes, and when the person's answer takes another path (another file picked
in quickstart, an AskUser declined in teams) it returns ``None`` at once with one line that says how
the reply ended, instead of raising or waiting for ever.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from nb_hitl import Session
from nb_hitl.demo import demo_agent
from nb_hitl.team_demo import team_demo
from nb_hitl.walkthrough import next_pause
from tests.support import run_async


def test_next_pause_returns_none_when_another_file_was_picked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """quickstart: notes.txt picked and approved, so no fresh draft.md card comes; the reply finished."""

    async def go() -> tuple[object, object, object]:
        session = Session(demo_agent(tmp_path / "sandbox", chunk_delay=0), display=False)
        task = session.start("Please tidy up my sandbox folder.")
        ask = await next_pause(session, "ask_user", timeout=30)
        question = ask.ask_user.questions[0].question
        await session.act(
            {
                "action": "answer",
                "tool_call_id": ask.tool_call_id,
                "answers": [{"question": question, "selected": ["notes.txt"]}],
            }
        )
        confirm = await next_pause(session, "confirm", timeout=30)
        await session.act({"action": "approve", "tool_call_id": confirm.tool_call_id})
        again = await asyncio.wait_for(next_pause(session, "confirm", seen={confirm.tool_call_id}), 30)
        return confirm, again, await task

    confirm, again, final = run_async(go())
    assert confirm.input == {"path": "notes.txt"}
    assert again is None
    last = " ".join(final.get_text_content().split())
    out = capsys.readouterr().out
    assert out == (
        f"nb_hitl: the reply ended (finished: {last!r}) without a confirm card: your answer above took another "
        "path. The cells below that need that card are skipped; run the notebook again to take this path.\n"
    )
    assert not (tmp_path / "sandbox" / "notes.txt").exists()


def test_next_pause_returns_none_when_the_question_was_declined(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """teams: the worker's AskUser declined; the reply finished without the confirm card that cell waits for."""

    async def go() -> object:
        session = Session(team_demo(tmp_path / "sandbox", chunk_delay=0), display=False)
        session.start("Please clean up the sandbox folder.")
        ask = await next_pause(session, "ask_user", timeout=30)
        await session.act(
            {
                "action": "return_error",
                "tool_call_id": ask.tool_call_id,
                "reply_id": ask.reply_id,
                "message": "The user declined to answer these questions.",
            }
        )
        return await asyncio.wait_for(next_pause(session, "confirm"), 30)

    assert run_async(go()) is None
    out = capsys.readouterr().out
    assert out.startswith("nb_hitl: the reply ended (finished: ") and "without a confirm card" in out
    assert "You did not pick a file, so I deleted nothing." in out


def test_next_pause_times_out_while_the_reply_still_waits(tmp_path: Path) -> None:
    """A time limit that passes while the reply is still parked on another card raises TimeoutError."""

    async def go() -> None:
        session = Session(demo_agent(tmp_path / "sandbox", chunk_delay=0), display=False)
        session.start("Please tidy up my sandbox folder.")
        await next_pause(session, "ask_user", timeout=30)
        try:
            await next_pause(session, "confirm", timeout=0.3)
        finally:
            await session.interrupt()

    with pytest.raises(TimeoutError, match="no confirm card within 0.3 s"):
        run_async(go())


def test_next_pause_is_woken_by_the_card_and_leaves_no_listener(tmp_path: Path) -> None:
    """Waiting before the reply starts: the card's opening wakes the wait (the session's change, not a
    timer: nothing sleeps meanwhile), and the wait's listener is gone once it returns or times out."""

    async def go() -> tuple[object, int, int, int, int]:
        session = Session(demo_agent(tmp_path / "sandbox", chunk_delay=0), display=False)
        before = len(session._listeners)
        waiting = asyncio.ensure_future(next_pause(session, "ask_user", timeout=30))
        await asyncio.sleep(0)
        during = len(session._listeners)
        slept: list[float] = []
        real_sleep = asyncio.sleep

        async def counted(delay: float, *args: object) -> object:
            slept.append(delay)
            return await real_sleep(delay, *args)

        asyncio.sleep = counted  # type: ignore[assignment]
        try:
            session.start("Please tidy up my sandbox folder.")
            ask = await waiting
        finally:
            asyncio.sleep = real_sleep  # type: ignore[assignment]
        after = len(session._listeners)
        with pytest.raises(TimeoutError):
            await next_pause(session, "confirm", timeout=0.2)
        after_timeout = len(session._listeners)
        await session.interrupt()
        assert not any(0 < d < 1 for d in slept), slept  # no short sleeps: the wait did not poll
        return ask, before, during, after, after_timeout

    ask, before, during, after, after_timeout = run_async(go())
    assert getattr(ask, "kind", None) == "ask_user"
    assert during == before + 1
    assert after == before and after_timeout == before
