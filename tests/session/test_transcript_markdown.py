"""A text block's Markdown is rendered once, when the block ends, locally and remotely.

* while a block streams, the page gets plain text (``append`` ops); its
  end (AgentScope's ``TextBlockEndEvent``, or the end of the stream when a
  model error cut the block short) gives one ``set`` op with ``html`` (sanitised, see
  ``tests/unit/test_markdown.py``); text that reads the same without HTML
  gets none;
* an AG-UI remote turn gets the same ``html`` at ``TEXT_MESSAGE_END`` (or at
  the run's end for ``TEXT_MESSAGE_CHUNK`` messages, which have no end).

Agents are real ``agentscope.agent.Agent``s on
:class:`~nb_hitl.models.ScriptedChatModel`; AG-UI events are ``ag_ui.core``'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from ag_ui.core import (
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)
from agentscope.agent import Agent
from agentscope.event import TextBlockEndEvent, ThinkingBlockEndEvent
from agentscope.message import TextBlock
from agentscope.model import ChatResponse
from agentscope.tool import Toolkit

from nb_hitl import Session
from nb_hitl.agui.turn import RemoteTurn, RunReader, RunRecord
from nb_hitl.markdown import to_safe_html
from nb_hitl.models import ScriptedChatModel, Turn
from nb_hitl.session import Transcript
from nb_hitl.session._transcript_events import record_event
from tests.support import run_async, wait_until

MARKDOWN = "Here is the plan:\n\n- read `notes.txt`\n- **ask** you\n\nSee [the docs](https://example.org)."


def ops_of(tr: Transcript) -> list[dict[str, Any]]:
    return tr.take_ops()[1]


def test_the_end_of_a_block_sets_its_html_once() -> None:
    tr = Transcript()
    tr.text("b1")
    for word in MARKDOWN.split(" "):
        tr.text("b1", word + " ")
    streamed = ops_of(tr)
    assert all("html" not in op.get("entry", {}) and op["op"] in ("add", "append") for op in streamed)
    assert record_event(tr, TextBlockEndEvent(reply_id="r", block_id="b1"))
    assert ops_of(tr) == [{"op": "set", "id": "b1", "fields": {"html": to_safe_html(tr[0]["text"])}}]
    assert "<ul>" in tr[0]["html"] and 'href="https://example.org"' in tr[0]["html"]
    tr.finish()  # already rendered: nothing again
    assert ops_of(tr) == []


def test_plain_text_ends_without_html() -> None:
    tr = Transcript()
    tr.text("b1", "I deleted the old log <b>now</b>.")
    ops_of(tr)
    record_event(tr, TextBlockEndEvent(reply_id="r", block_id="b1"))
    assert ops_of(tr) == [] and "html" not in tr[0]


def test_the_final_text_of_an_end_event_replaces_what_streamed() -> None:
    tr = Transcript()
    tr.text("b1", "- one\n- two\n- thr")
    ops_of(tr)
    record_event(tr, TextBlockEndEvent(reply_id="r", block_id="b1", text="- one\n- two"))
    assert tr[0]["text"] == "- one\n- two"
    assert tr[0]["html"] == "<ul>\n<li>one</li>\n<li>two</li>\n</ul>"
    # one op: consecutive sets of one entry are merged
    assert [op["fields"] for op in ops_of(tr)] == [{"text": "- one\n- two", "html": tr[0]["html"]}]


def test_thinking_is_rendered_on_its_end_and_tool_text_never() -> None:
    tr = Transcript()
    tr.add("thinking", "thinking:t1", text="1. look\n2. act")
    tr.tool_call("c1", "lookup", input_text='{"q": "- a\\n- b"}')
    tr.tool_result("c1", "- a\n- b", state="success")
    record_event(tr, ThinkingBlockEndEvent(reply_id="r", block_id="t1"))
    tr.end_text("call:c1")
    tr.end_text("result:c1")
    tr.finish()
    assert tr[0]["html"] == "<ol>\n<li>look</li>\n<li>act</li>\n</ol>"
    assert all("html" not in e for e in tr[1:])


def test_a_finished_reply_has_its_markdown_rendered() -> None:
    agent = Agent(
        name="writer",
        system_prompt="Write.",
        model=ScriptedChatModel([Turn(MARKDOWN)], on_exhausted="raise"),
        toolkit=Toolkit(),
    )

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        session = Session(agent, display=True)
        sent: list[dict[str, Any]] = []
        task = session.start("Plan.")
        await wait_until(lambda: session.current is not None and session.current.widget is not None, "the widget")
        widget = session.current.widget
        real_send = widget.send
        widget.send = lambda content, buffers=None: (sent.append(content), real_send(content, buffers))[1]
        await asyncio.wait_for(task, 30)
        return list(session.current.transcript), sent

    entries, sent = run_async(scenario())
    text = next(e for e in entries if e["kind"] == "text")
    assert text["text"] == MARKDOWN and text["html"] == to_safe_html(MARKDOWN)
    # in a set op, or in the add op of a block that began and ended within one message
    with_html = [
        op.get("id") or op["entry"]["id"]
        for m in sent
        if m.get("type") == "nbh_transcript"
        for op in m["ops"]
        if "html" in (op.get("fields") or op.get("entry") or {})
    ]
    assert with_html == [text["id"]], "the html is sent once, for the text block"


def test_a_block_cut_short_is_rendered_when_the_reply_ends() -> None:
    words = ["- item"] + [f"w{i}" for i in range(400)]
    agent = Agent(
        name="cut",
        system_prompt="Write.",
        model=ScriptedChatModel([Turn(" ".join(words))], chunk_delay=0.02, on_exhausted="raise"),
        toolkit=Toolkit(),
    )

    async def scenario() -> dict[str, Any]:
        session = Session(agent, display=False)
        task = session.start("Write a lot.")

        def texts() -> list[dict[str, Any]]:
            return [e for e in session.current.transcript if e["kind"] == "text"] if session.current else []

        await wait_until(lambda: any("w3" in e["text"] for e in texts()), "some text", timeout=20)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        return texts()[0]

    entry = run_async(scenario())
    assert "w399" not in entry["text"], "the reply was cut short"
    assert entry["html"] == to_safe_html(entry["text"]) and entry["html"].startswith("<ul>")


class FailingModel(ScriptedChatModel):
    """Streams a list's first item, then fails (a connection lost mid-block)."""

    async def _stream(self, text: TextBlock | None, calls: list[Any]) -> AsyncGenerator[ChatResponse, None]:
        assert text is not None
        yield ChatResponse(id="resp_fail", is_last=False, content=[TextBlock(id=text.id, text="- first item\n")])
        raise ConnectionError("the model's connection was lost")


def test_a_block_cut_by_an_error_is_rendered_when_the_reply_ends() -> None:
    agent = Agent(
        name="failing",
        system_prompt="Write.",
        model=FailingModel([Turn("- first item\n- second")], on_exhausted="raise"),
        toolkit=Toolkit(),
    )

    async def scenario() -> tuple[str, list[dict[str, Any]]]:
        session = Session(agent, display=False)
        try:
            await session.run("Write.")
        except Exception as exc:  # the reply fails: its widget shows how it ended
            error = f"{type(exc).__name__}: {exc}"
        else:
            error = ""
        return error, list(session.runs[-1].transcript)

    error, entries = run_async(scenario())
    assert "connection was lost" in error
    text = next(e for e in entries if e["kind"] == "text")
    assert text["text"] == "- first item\n"
    assert text["html"] == "<ul>\n<li>first item</li>\n</ul>"


def _reader() -> tuple[RemoteTurn, RunReader]:
    turn = RemoteTurn(prompt="hi")
    record = RunRecord(run_id="run1")
    reader = RunReader(turn, record, "t1")
    reader.feed(RunStartedEvent(thread_id="t1", run_id="run1"))
    return turn, reader


def test_a_remote_message_is_rendered_at_its_end() -> None:
    turn, reader = _reader()
    reader.feed(TextMessageStartEvent(message_id="m1", role="assistant"))
    for word in MARKDOWN.split(" "):
        reader.feed(TextMessageContentEvent(message_id="m1", delta=word + " "))
    assert "html" not in turn.transcript[0]
    reader.feed(TextMessageEndEvent(message_id="m1"))
    assert turn.transcript[0]["html"] == to_safe_html(turn.transcript[0]["text"])
    reader.feed(TextMessageStartEvent(message_id="m2", role="assistant"))
    reader.feed(TextMessageContentEvent(message_id="m2", delta="Plain words."))
    reader.feed(TextMessageEndEvent(message_id="m2"))
    assert "html" not in turn.transcript[1]


def test_remote_chunks_are_rendered_when_the_run_ends() -> None:
    turn, reader = _reader()
    reader.feed(TextMessageChunkEvent(message_id="m3", role="assistant", delta="1. one\n"))
    reader.feed(TextMessageChunkEvent(message_id="m3", delta="2. two"))
    assert "html" not in turn.transcript[0]
    reader.feed(RunFinishedEvent(thread_id="t1", run_id="run1", result="done"))
    reader.end()
    assert turn.transcript[0]["html"] == "<ol>\n<li>one</li>\n<li>two</li>\n</ol>"


class TwoBlocks(ScriptedChatModel):
    """One response of two text blocks: AgentScope streams them as one block
    (their texts run together) and joins them with a newline in the reply."""

    async def _stream(self, text: TextBlock | None, calls: list[Any]) -> AsyncGenerator[ChatResponse, None]:
        yield ChatResponse(id="r", is_last=False, content=[TextBlock(id="b1", text="# Part one\n\n**ONE**")])
        yield ChatResponse(id="r", is_last=False, content=[TextBlock(id="b2", text="- **TWO**")])


def test_a_final_message_that_is_not_a_text_block_is_rendered_for_its_own_box() -> None:
    agent = Agent(name="two", system_prompt="x", model=TwoBlocks([Turn("x")]), toolkit=Toolkit())

    async def scenario() -> Any:
        session = Session(agent, display=True)
        reply = await session.run("Talk.")
        return reply, session.current

    reply, run = run_async(scenario())
    final = reply.get_text_content()
    assert run.transcript.final_entry(final) is None  # no entry holds it: it travels itself
    widget = run.widget
    assert widget.final_entry == "" and widget.final_text == final
    assert widget.final_html == to_safe_html(final)
    assert "<h1>Part one</h1>" in widget.final_html and "<li><strong>TWO</strong></li>" in widget.final_html
