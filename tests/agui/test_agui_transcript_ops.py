"""The AG-UI client's widget streams its transcript as ops, as a local Session does.

A real ``agentscope.agent.Agent`` on ScriptedChatModel, served by nb_hitl's
``AguiServer`` on 127.0.0.1 (uvicorn), writes a long reply (300 words, one
AG-UI ``TEXT_MESSAGE_CONTENT`` delta each). A ``RemoteSession`` reads it; what
its ``ReplyWidget`` publishes on its comm is read where ipywidgets publishes it
(outside a kernel, ``comm.DummyComm``) and page messages go through the widget's
comm handler.
"""

from __future__ import annotations

import asyncio
import statistics
from typing import Any

from agentscope.agent import Agent
from agentscope.tool import Toolkit

from benchmarks.approve_all import connect, page_message
from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
from nb_hitl.models import ScriptedChatModel, Turn
from tests.session.test_card_stream import Wire
from tests.support import run_async

WORDS = 300
LONG = " ".join(f"word-{i:04d}-of-a-long-remote-reply" for i in range(WORDS))


def long_writer(words: str = LONG, chunk_delay: float = 0.004) -> Agent:
    """A real agent whose one reply streams ``words``, one delta a word."""
    return Agent(
        name="writer",
        system_prompt="Write.",
        model=ScriptedChatModel([Turn(words)], chunk_delay=chunk_delay),
        toolkit=Toolkit(),
    )


async def remote_turn(words: str, chunk_delay: float, *, connected: bool) -> tuple[Any, Wire, RemoteSession, str]:
    """One turn of a ``RemoteSession`` with a served :func:`long_writer`, its widget's
    comm read from the start (a view connected first when ``connected``):
    ``(widget, wire, remote, final text)``."""
    server = AguiServer(lambda _thread_id: long_writer(words, chunk_delay))
    with serve_in_background(server, announce=False) as handle:
        remote = RemoteSession(handle.url, token=handle.token, display=False)
        task = remote.start("Write.")
        widget = remote.current.view.widget  # type: ignore[union-attr]
        wire = Wire(widget)
        if connected:
            connect(widget)
        final = await asyncio.wait_for(task, 60)
    return widget, wire, remote, final


def answers(wire: Wire) -> dict[str, dict[str, Any]]:
    """The widget's answers to page requests on ``wire`` (what ``RequestWidget`` sends back), by request id."""
    sent = [m["content"] for m in wire.messages if m.get("method") == "custom"]
    return {a["request_id"]: a for a in sent if isinstance(a, dict) and "request_id" in a}


def test_a_long_remote_reply_costs_the_page_the_same_bytes_per_delta_early_and_late() -> None:
    """Every push of the turn sends the transcript's changes as one ``nbh_transcript``
    message: what a message costs beyond the text it brings is the same for the first
    deltas and the last (it grew with the transcript when the whole trait was set per
    push: O(n) per delta), the ``transcript`` record never goes as a trait update, nor
    the final text (the page holds it: ``final_entry`` names its entry), and the page's
    copy built from the ops equals the kernel's record and the reply."""
    widget, wire, _remote, final = run_async(remote_turn(LONG, 0.004, connected=True))
    assert final == LONG
    assert wire.transcript_traits() == []  # the whole transcript never went as a trait
    (entry,) = wire.page_transcript()
    assert entry["text"] == LONG and entry == widget.transcript[0]  # the page's copy is the kernel's record
    # the final text is that entry's: kept in the kernel, the entry named for the page
    assert widget.final_text == LONG and widget.final_entry == entry["id"]
    assert not [m for m in wire.messages if m.get("method") == "update" and "final_text" in m["state"]]
    costs = wire.transcript_costs()
    carried = 0
    early: list[int] = []
    late: list[int] = []
    for size, text in costs:
        carried += text
        words = carried * WORDS // len(LONG)  # the deltas on the page once this message is applied
        (early if words <= 30 else late if words >= WORDS - 30 else []).append(size - text)
    assert early and late, costs
    # the envelope and op framing of one message, whatever the transcript's length
    # (setting the whole trait, a late push cost ~10 kB more than an early one)
    assert statistics.median(late) <= 1.3 * statistics.median(early) + 20, (early, late)
    assert max(size - text for size, text in costs) < 400, costs


def test_a_page_that_connects_again_gets_every_entry_once_then_ops() -> None:
    """A second view (or a reloaded page) asks ``sync`` with the ``seq`` it holds:
    holding nothing, it gets every entry as shown and the ``seq`` they include; holding
    that ``seq``, it is told it is current; a gap (``transcript_sync``) is answered with
    every entry. The card sync rides in the same answer, as a local Session's."""
    widget, wire, remote, _final = run_async(remote_turn(" ".join(LONG.split(" ")[:40]), 0.0, connected=False))
    tr = remote.current.transcript  # type: ignore[union-attr]
    streamed = len(wire.custom("nbh_transcript"))
    page_message(widget, {"request_id": "reload", "action": "sync", "transcript_seq": -1, "cards_seq": -1})
    page_message(widget, {"request_id": "early", "action": "sync", "transcript_seq": 0, "cards_seq": 0})
    page_message(widget, {"request_id": "held", "action": "sync", "transcript_seq": tr.seq, "cards_seq": 0})
    page_message(widget, {"request_id": "gap", "action": "transcript_sync", "seq": 0})
    got = answers(wire)
    assert tr.seq == streamed >= 1  # one seq per stream message
    # a reloaded page (it holds no seq): every entry as shown, once, and the cards' sync
    assert got["reload"]["transcript"] == {"seq": tr.seq, "entries": widget.transcript}
    assert [e["text"] for e in widget.transcript] == [tr[0]["text"]]
    assert got["reload"]["cards"] == {"seq": 0, "pauses": []}
    # a page that holds an earlier seq on connect: the messages up to seq went out before the answer
    assert got["early"]["transcript"] == {"seq": tr.seq, "sent": True}
    assert got["held"]["transcript"] == {"seq": tr.seq, "current": True}
    assert got["gap"]["seq"] == tr.seq and got["gap"]["entries"] == widget.transcript
    assert len(wire.custom("nbh_transcript")) == streamed  # a sync sends no stream message of its own
    assert wire.transcript_traits() == []


class StallingModel(ScriptedChatModel):
    """The scripted model, holding its stream for ``stall`` seconds after the word ``after``
    (a model that thinks mid-sentence, or a slow network)."""

    def __init__(self, words: str, after: int, stall: float) -> None:
        super().__init__([Turn(words)], chunk_delay=0.001)
        self.after, self.stall = after, stall

    async def _stream(self, text: Any, calls: Any) -> Any:
        async for i, chunk in _numbered(super()._stream(text, calls)):
            yield chunk
            if i == self.after:
                await asyncio.sleep(self.stall)


async def _numbered(chunks: Any) -> Any:
    i = 0
    async for chunk in chunks:
        i += 1
        yield i, chunk


def test_the_words_before_a_remote_stream_stalls_reach_the_page_during_the_stall() -> None:
    """The AG-UI client's widget paces streamed text as a local reply does (one pacing):
    the deltas that came before the server went quiet are sent when the quiet is noticed
    (a trailing flush on the loop), not held until the next event, seconds later."""
    words = " ".join(f"w{i}" for i in range(40))

    async def scenario() -> tuple[str, str]:
        server = AguiServer(
            lambda _thread_id: Agent(
                name="writer", system_prompt="Write.", model=StallingModel(words, 25, 3.0), toolkit=Toolkit()
            )
        )
        with serve_in_background(server, announce=False) as handle:
            remote = RemoteSession(handle.url, token=handle.token, display=False)
            task = remote.start("Write.")
            widget = remote.current.view.widget  # type: ignore[union-attr]
            wire = Wire(widget)
            connect(widget)
            shown = ""
            for _ in range(150):  # up to 1.5 s into the 3 s stall
                await asyncio.sleep(0.01)
                shown = "".join(e.get("text", "") for e in wire.page_transcript())
                if shown.split() == words.split()[:25]:
                    break
            during = shown
            final = await asyncio.wait_for(task, 60)
        return during, final

    during, final = run_async(scenario())
    assert final == words
    assert during.split() == words.split()[:25]  # every word before the stall, during it
