"""The transcript stream is paced so its messages are worth their envelopes,
and a reply's text reaches the page once.

* :func:`~nb_hitl.session._pace.flush_delay`: send once the stream is quiet, or
  when the oldest change has waited ``MAX_DELAY``, never twice within ``MIN_GAP``;
* a fast stream goes out in few messages (far fewer than 20 a second);
* a session without a widget keeps no ops (nothing would take them);
* at the end, ``final_text`` that is the last text block stays in the kernel and
  ``final_entry`` names the block; a different final text is sent; the
  ``transcript`` trait is never sent to the page, only kept in the kernel;
* the page's connect request (``sync``) answers ``current`` / ``sent`` / every
  entry, by the ``seq`` the page holds.

Agents are real ``agentscope.agent.Agent``s on
:class:`~nb_hitl.models.ScriptedChatModel`; page messages go through the
widget's own comm handler, and what the kernel would send is read off the
widget's comm.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.tool import Toolkit

from nb_hitl import Session
from nb_hitl.models import ScriptedChatModel, Turn
from nb_hitl.session._pace import (
    ENVELOPE,
    MAX_DELAY,
    MAX_DELAY_OVER,
    MIN_GAP,
    QUIET,
    QUIET_OVER,
    RATIO,
    flush_delay,
    over_budget,
)
from tests.support import StreamRecorder, run_async, wait_until


# ------------------------------------------------------------- the rule
@pytest.mark.parametrize(
    ("now", "last_flush", "first", "last", "expected"),
    [
        (10.0, 0.0, 10.0, 10.0, QUIET),  # one change: sent once the stream is quiet
        (10.0 + QUIET, 0.0, 10.0, 10.0, 0.0),  # quiet now: due
        (10.1, 0.0, 10.0, 10.1, QUIET),  # still changing: wait for quiet...
        (10.0 + MAX_DELAY, 0.0, 10.0, 10.0 + MAX_DELAY, 0.0),  # ...but not past MAX_DELAY
        (10.0 + QUIET, 10.0 + QUIET - 0.01, 10.0, 10.0, MIN_GAP - 0.01),  # never within MIN_GAP of the last message
    ],
)
def test_flush_delay(now: float, last_flush: float, first: float, last: float, expected: float) -> None:
    got = flush_delay(now, last_flush=last_flush, first_change=first, last_change=last)
    assert got == pytest.approx(expected)


def test_flush_delay_is_never_negative_and_never_beyond_max_delay() -> None:
    for first in (0.0, 5.0, 9.99):
        for last in (first, first + 0.03, 10.0):
            wait = flush_delay(10.0, last_flush=0.0, first_change=first, last_change=last)
            assert 0.0 <= wait <= MAX_DELAY
            assert 10.0 + wait <= max(first + MAX_DELAY, 10.0) + 1e-9


def test_over_budget_the_stream_waits_longer_for_quiet_and_age() -> None:
    assert flush_delay(10.0, last_flush=0.0, first_change=10.0, last_change=10.0, over=True) == pytest.approx(
        QUIET_OVER
    )
    busy = flush_delay(10.5, last_flush=0.0, first_change=10.0, last_change=10.5, over=True)
    assert busy == pytest.approx(QUIET_OVER)  # still changing: wait for a longer quiet...
    late = flush_delay(
        10.0 + MAX_DELAY_OVER, last_flush=0.0, first_change=10.0, last_change=10.0 + MAX_DELAY_OVER, over=True
    )
    assert late == 0.0  # ...but not past MAX_DELAY_OVER
    assert QUIET < QUIET_OVER and MAX_DELAY < MAX_DELAY_OVER


def test_the_byte_budget_follows_the_text_not_the_clock() -> None:
    assert not over_budget(0, 0) and not over_budget(ENVELOPE, 0)  # the first two messages
    assert over_budget(2 * ENVELOPE, 0)  # a third message with no text would pass it
    # each message after those is paid for by (RATIO - 1) * text
    text = int(10 * ENVELOPE / (RATIO - 1))
    assert not over_budget(10 * ENVELOPE, text) and over_budget(12 * ENVELOPE, text)


# --------------------------------------------------------- in a session
def talker(name: str, text: str, chunk_delay: float = 0.0) -> Agent:
    return Agent(
        name=name,
        system_prompt="Talk.",
        model=ScriptedChatModel([Turn(text)], chunk_delay=chunk_delay, on_exhausted="raise"),
        toolkit=Toolkit(),
    )


class StateRecorder:
    """The state updates the widget's comm would send to the page."""

    def __init__(self, widget: Any) -> None:
        self.updates: list[dict[str, Any]] = []
        real = widget.comm.send

        def send(data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
            if isinstance(data, dict) and data.get("method") == "update":
                self.updates.append(dict(data.get("state") or {}))
            real(data, metadata, buffers)

        widget.comm.send = send

    def keys(self) -> set[str]:
        return {k for u in self.updates for k in u}


def recorded_reply(agent: Any) -> tuple[StreamRecorder, float]:
    """Run one reply of ``agent`` in a displayed session: what its widget was
    sent, and the seconds from the widget's creation to the reply's end."""

    async def scenario() -> tuple[StreamRecorder, float]:
        session = Session(agent, display=True)
        task = session.start("Talk.")
        await wait_until(lambda: session.current is not None and session.current.widget is not None, "the widget")
        rec = StreamRecorder(session.current.widget)
        started = time.monotonic()
        await asyncio.wait_for(task, 60)
        return rec, time.monotonic() - started

    return run_async(scenario())


def test_a_fast_stream_is_sent_in_few_messages_each_character_once() -> None:
    words = " ".join(f"w{i}" for i in range(3000))
    rec, took = recorded_reply(talker("fast", words, chunk_delay=0.0002))
    text = "".join(e["text"] for e in rec.rebuilt() if e["kind"] == "text")
    assert text == words
    # 20 a second would be 20 * took; a change waits up to MAX_DELAY, so a few a second
    assert len(rec.stream) <= took / MAX_DELAY * 2 + 4, (len(rec.stream), round(took, 2))


def test_a_model_at_a_local_models_pace_is_not_sent_token_by_token() -> None:
    """A delta every 45 ms (about 20 tokens a second, a local model's pace): the
    gaps between tokens are not pauses, so the text goes out a few times a second,
    not once per token as with a 40 ms quiet rule (about 20 messages a second)."""
    words = " ".join(f"w{i}" for i in range(40))
    rec, took = recorded_reply(talker("local", words, chunk_delay=0.045))
    assert "".join(e["text"] for e in rec.rebuilt() if e["kind"] == "text") == words
    assert took >= 40 * 0.045
    assert len(rec.stream) <= took / MAX_DELAY * 2 + 4, (len(rec.stream), round(took, 2))


def test_a_session_without_a_widget_keeps_no_ops() -> None:
    agent = talker("quiet", "one two three " * 200)

    async def scenario() -> None:
        session = Session(agent, display=False)
        await session.run("Talk.")
        tr = session.current.transcript
        assert not tr.pending and tr.take_ops() == (0, [])
        assert [e["text"] for e in tr if e["kind"] == "text"] == ["one two three " * 200]

    run_async(scenario())


@pytest.mark.parametrize("final_is_streamed", [True, False])
def test_the_end_of_a_reply_sends_no_text_the_page_has(final_is_streamed: bool) -> None:
    agent = talker("ender", "All done, nothing left.")

    async def scenario() -> None:
        session = Session(agent, display=True)
        task = session.start("Finish.")
        await wait_until(lambda: session.current is not None and session.current.widget is not None, "the widget")
        run = session.current
        widget = run.widget
        states = StateRecorder(widget)
        if not final_is_streamed:
            run.transcript.final_entry = lambda text: None  # type: ignore[method-assign]
        await asyncio.wait_for(task, 10)
        assert "transcript" not in states.keys(), "the transcript trait is kept in the kernel"
        assert widget.transcript == list(run.transcript) and widget.transcript_seq == run.transcript.seq
        assert widget.final_text == "All done, nothing left."  # the kernel's value, as the API reads it
        end = states.updates[-1]
        assert end["status"] == "finished" and end["status_reason"], "the end is one update"
        if final_is_streamed:
            block = next(e["id"] for e in run.transcript if e["kind"] == "text")
            assert end["final_entry"] == block and "final_text" not in states.keys()
        else:
            assert end["final_text"] == "All done, nothing left." and "final_entry" not in end

    run_async(scenario())


def test_the_connect_sync_answers_by_the_seq_the_page_holds() -> None:
    agent = talker("syncer2", "one two three")

    async def scenario() -> None:
        session = Session(agent, display=True)
        await session.run("Count.")
        widget = session.current.widget
        seq = session.current.transcript.seq
        assert seq >= 1
        rec = StreamRecorder(widget)

        def sync(page_seq: Any) -> dict[str, Any]:
            message = {"request_id": f"s{page_seq}", "action": "sync", "transcript_seq": page_seq, "cards_seq": 0}
            widget._on_page_message(widget, message, [])
            reply = rec.replies[-1]
            assert reply["ok"] and reply["cards"] == {"seq": 0, "current": True}
            return dict(reply["transcript"])

        assert sync(seq) == {"seq": seq, "current": True}
        # an earlier seq: the messages up to seq went out before this answer
        assert sync(seq - 1) == {"seq": seq, "sent": True}
        # nothing held (a widget saved before the seq was kept) or nonsense: every entry
        for held in (-1, None, "2", True, seq + 5):
            answer = sync(held)
            assert answer["seq"] == seq and answer["entries"] == list(session.current.transcript)
        # a gap seen later asks transcript_sync: every entry unless current
        widget._on_page_message(widget, {"request_id": "g", "action": "transcript_sync", "seq": seq - 1}, [])
        assert rec.replies[-1]["entries"] == list(session.current.transcript)

    run_async(scenario())


def test_only_deltas_wait_for_the_pace_every_other_change_is_sent_at_once(tmp_path: Any) -> None:
    """What follows a person's answer is never held back by the stream's pacing:
    when the next event reaches the session, every change an event other than a
    text delta made (a tool result starting and ending, a model call starting and
    ending, a tool call's input complete) has already gone to the page; only
    deltas (and a text block's empty start) wait."""
    from nb_hitl.demo import make_sandbox
    from nb_hitl.models import tool_call
    from nb_hitl.session._drive import PACED_EVENTS
    from tests.support import parked
    from tests.support_agents import sandbox_agent

    folder = make_sandbox(tmp_path / "box")
    agent = sandbox_agent(folder, [Turn("Deleting.", [tool_call("delete_file", path="old_log.txt")]), Turn("Done.")])
    held: list[str] = []

    async def scenario() -> None:
        session = Session(agent, display=True)
        last: list[Any] = []

        def listener(ev: Any, run: Any) -> None:
            # ``ev`` is about to be handled: the one before it was handled in full
            if last and not isinstance(last[0], PACED_EVENTS) and run.transcript.pending:
                held.append(type(last[0]).__name__)
            last[:] = [ev]

        session.on_event(listener)
        task = session.start("Tidy up.")
        (pause,) = await parked(session)
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        await asyncio.wait_for(task, 20)

    run_async(scenario())
    assert held == [], f"changes left waiting for the pace after {held}"
