"""A long transcript entry reaches the page in part; the rest comes when asked.

* :func:`~nb_hitl.entries.shown_entry` cuts a text past ``SHOWN_CHARS`` and
  says how much is left out (``more``), without the Markdown of the whole;
* the stream of a text that grows past the limit sends what fills the shown
  part, then only the count left out; the kernel keeps every character; a
  text replaced by a shorter one clears the count;
* a real agent's tool returns 1 MB: AgentScope keeps a part of it for the
  model (its ``tool_result_limit``) and says so; the transcript shows what the
  model reads, not the 1 MB; the page gets 20,000 characters of it (stream and
  sync answer alike), and the page's ``entry_text`` action answers the whole
  text; a bad id is refused with a clear error at ``id``;
* a hostile page's ``entry_text``: a non-string, empty or huge id, and
  ``entry_text`` inside a ``batch``, are refused with a clear error at ``id``
  (or ``action``), the error stays short (a 5 MB id is not echoed back), and
  the kernel keeps answering.

Agents are real ``agentscope.agent.Agent``s on
:class:`~nb_hitl.models.ScriptedChatModel`; page messages go through the
widget's own comm handler.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import TextBlock, ToolResultState
from agentscope.permission import PermissionBehavior, PermissionRule
from agentscope.state import AgentState
from agentscope.tool import FunctionTool, ToolChunk, Toolkit

from nb_hitl import Session
from nb_hitl.entries import SHOWN_CHARS, entry_text, lookup_in, shown_entry
from nb_hitl.errors import DecisionError
from nb_hitl.models import ScriptedChatModel, Turn, tool_call, tool_results
from nb_hitl.session._transcript import Transcript
from tests.harness.kernel import apply_ops
from tests.support import StreamRecorder, run_async, wait_until


# ------------------------------------------------------------- the cut
def test_shown_entry_cuts_long_text_and_drops_its_markdown() -> None:
    short = {"kind": "text", "id": "b", "text": "x" * SHOWN_CHARS, "html": "<p>x</p>"}
    assert shown_entry(short) == short and shown_entry(short) is not short
    long = {"kind": "text", "id": "b", "text": "é" * (SHOWN_CHARS + 5), "html": "<p>é</p>"}
    cut = shown_entry(long)
    assert cut == {"kind": "text", "id": "b", "text": "é" * SHOWN_CHARS, "more": 5}
    assert len(long["text"]) == SHOWN_CHARS + 5, "the entry itself is not changed"


def test_a_text_growing_past_the_limit_streams_its_shown_part_then_a_count() -> None:
    tr = Transcript()
    page: list[dict[str, Any]] = []
    sent = 0
    whole = ""
    for n in range(6):  # 6 batches of 500 deltas of 10 characters: 30,000 in all
        for i in range(500):
            delta = f"{n}{i:04d}-abcd"
            whole += delta
            tr.tool_result("c1", delta=delta, name="dump")
        _, ops = tr.take_ops()
        sent += len(json.dumps(ops))
        apply_ops(page, ops)
    kept = tr.by_id("result:c1")
    assert kept is not None and kept["text"] == whole, "the kernel keeps every character"
    assert page == [shown_entry(e) for e in tr] == tr.view()
    assert page[0]["text"] == whole[:SHOWN_CHARS] and page[0]["more"] == len(whole) - SHOWN_CHARS
    assert sent < SHOWN_CHARS + 2_000, f"the page got {sent} bytes for 20,000 shown characters"
    # the finished result replaces its text with a shorter one: the count goes
    tr.tool_result("c1", text="short now", state="success")
    _, ops = tr.take_ops()
    apply_ops(page, ops)
    assert page[0]["text"] == "short now" and page[0]["more"] == 0


def test_a_long_text_block_gets_no_markdown() -> None:
    tr = Transcript()
    tr.text("b1", "**bold** " * 3000)
    tr.end_text("b1")
    entry = tr.by_id("b1")
    assert entry is not None and "html" not in entry
    tr.text("b2", "**bold**")
    tr.end_text("b2")
    assert "<strong>" in tr.by_id("b2")["html"]  # type: ignore[index]


def test_entry_text_answers_the_whole_text_or_refuses_at_id() -> None:
    entries = [{"kind": "tool_result", "id": "result:a", "text": "y" * 50_000}]
    assert entry_text(lookup_in(entries), "result:a") == {"id": "result:a", "text": "y" * 50_000}
    for bad in (None, "", 3, "result:zz"):
        with pytest.raises(DecisionError) as err:
            entry_text(lookup_in(entries), bad)
        assert err.value.field == "id"


# ---------------------------------------------------------- in a session
BIG = 1_000_000


def dump() -> ToolChunk:
    """Return the whole log."""
    return ToolChunk(content=[TextBlock(text=("log line " * (BIG // 9 + 1))[:BIG])], state=ToolResultState.SUCCESS)


def reader() -> Agent:
    state = AgentState()
    state.permission_context.allow_rules["dump"] = [
        PermissionRule(tool_name="dump", rule_content=None, behavior=PermissionBehavior.ALLOW, source="t")
    ]
    return Agent(
        name="reader",
        system_prompt="Read logs.",
        state=state,
        model=ScriptedChatModel(
            [
                Turn("Reading the log.", [tool_call("dump")]),
                lambda msgs: Turn(f"The log has {len(str(tool_results(msgs, 'dump')[-1].output[0].text))} characters."),
            ]
        ),
        toolkit=Toolkit(tools=[FunctionTool(dump)]),
    )


async def read_the_log() -> tuple[Session, Any, StreamRecorder]:
    """A displayed session whose reader agent ended its reply (its tool
    returned 1 MB), with its widget's messages recorded from the start."""
    session = Session(reader(), display=True)
    task = session.start("How long is the log?")
    await wait_until(lambda: session.current is not None and session.current.widget is not None, "the widget")
    widget = session.current.widget
    rec = StreamRecorder(widget)
    await asyncio.wait_for(task, 60)
    return session, widget, rec


def test_a_1_mb_tool_result_reaches_the_page_in_part_and_whole_on_request() -> None:
    async def scenario() -> None:
        session, widget, rec = await read_the_log()
        run = session.current
        streamed = sum(len(json.dumps(msg)) for _, msg in rec.stream)
        assert streamed < 60_000, f"{streamed} bytes streamed for a 1 MB result"
        page = {e["id"]: e for e in rec.rebuilt()}
        result = next(e for e in run.transcript if e["kind"] == "tool_result")
        # what the model read: AgentScope's part of the result, and its word that the rest was cut
        told = tool_results(session.agent.model.calls[-1], "dump")[-1].output[0].text
        assert widget.final_text == f"The log has {len(told)} characters." and len(told) < BIG
        assert result["text"] == told.replace("<system-reminder>", "").replace("</system-reminder>", "").strip()
        assert "<<<TRUNCATED>>>" in result["text"] and "omitted" in result["text"]
        shown = page[result["id"]]
        assert shown["text"] == result["text"][:SHOWN_CHARS] and shown["more"] == len(result["text"]) - SHOWN_CHARS
        # a page that connects late gets the same part
        widget._on_page_message(widget, {"request_id": "s", "action": "sync", "transcript_seq": -1, "cards_seq": 0}, [])
        synced = {e["id"]: e for e in rec.replies[-1]["transcript"]["entries"]}
        assert synced[result["id"]] == shown
        # "Show all": the whole text
        widget._on_page_message(widget, {"request_id": "a", "action": "entry_text", "id": result["id"]}, [])
        answer = rec.replies[-1]
        assert answer["ok"] and answer["text"] == result["text"]
        widget._on_page_message(widget, {"request_id": "b", "action": "entry_text", "id": "result:nope"}, [])
        refused = rec.replies[-1]
        assert not refused["ok"] and refused["field"] == "id" and "no transcript entry" in refused["error"]

    run_async(scenario())


def test_entry_text_from_a_hostile_page_is_refused_clearly() -> None:
    async def scenario() -> None:
        session, widget, rec = await read_the_log()
        first = session.current
        result_id = next(e["id"] for e in first.transcript if e["kind"] == "tool_result")
        for n, bad in enumerate([3, None, "", {"id": result_id}, [result_id], True, 1e308, "x" * 5_000_000]):
            widget._on_page_message(widget, {"request_id": f"h{n}", "action": "entry_text", "id": bad}, [])
            answer = rec.replies[-1]
            assert answer["request_id"] == f"h{n}" and answer["ok"] is False and answer["field"] == "id", answer
            assert len(json.dumps(answer)) < 5_000
        batch = {"action": "batch", "items": [{"action": "entry_text", "id": result_id}]}
        widget._on_page_message(widget, {"request_id": "b", **batch}, [])
        await wait_until(lambda: rec.replies[-1].get("request_id") == "b", "the batch answer")
        assert [r["ok"] for r in rec.replies[-1]["results"]] == [False]
        widget._on_page_message(widget, {"request_id": "ok", "action": "entry_text", "id": result_id}, [])
        assert rec.replies[-1]["ok"] and len(rec.replies[-1]["text"]) > 20_000

    run_async(scenario())
