"""The transcript's operations replayed as the page applies them.

Every public way of changing a transcript (text, thinking as
``record_event`` adds it, tool calls and results, block ends with and without
a replacing text, labels, notes, steps, ``finish``), deltas at the
20,000-character cut and page syncs between deltas: the page's rebuild equals
the kernel's view, the record's view (made again only for the entries that
changed) is every entry as shown, and neither a batch handed out by
``take_ops`` nor a view is changed afterwards (the page may hold or re-read it). Also a real reply whose thinking
and text alternate deltas, and a rendering that is no longer its text's.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import TextBlock, ThinkingBlock
from agentscope.model import ChatResponse
from agentscope.tool import Toolkit
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nb_hitl import Session
from nb_hitl.entries import SHOWN_CHARS, shown_entry
from nb_hitl.models import ScriptedChatModel, Turn
from nb_hitl.session import Transcript
from tests.support import StreamRecorder, apply_ops, run_async, wait_until

_SIZES = st.sampled_from([1, 5_000, 9_000, SHOWN_CHARS - 1, SHOWN_CHARS, SHOWN_CHARS + 1])
_TEXTS = st.one_of(st.text(alphabet="ab*_ \n`#", max_size=6), _SIZES)

_WHAT = [
    "text",
    "thinking",
    "call",
    "result",
    "result_end",
    "result_text",
    "end",
    "end_text",
    "end_thinking",
    "label",
    "note",
    "step",
    "finish",
    "take",
    "sync",
    "view",
]
_CHANGES = st.tuples(st.sampled_from(_WHAT), st.sampled_from(["a", "b"]), _TEXTS)


def _same_view(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``more: 0`` read as no ``more`` (nothing left out), as the page reads it."""
    return [{k: v for k, v in e.items() if not (k == "more" and v == 0)} for e in entries]


class _Page:
    """The page: applies each batch as it is handed out, keeps a snapshot of
    it, and can replace everything by a sync answer."""

    def __init__(self, tr: Transcript) -> None:
        self.tr = tr
        self.entries: list[dict[str, Any]] = []
        self.batches: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
        self.views: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []

    def take(self) -> None:
        _seq, ops = self.tr.take_ops()
        self.batches.append((ops, copy.deepcopy(ops)))
        apply_ops(self.entries, ops)

    def sync(self) -> None:
        # nb_hitl.widgets._transcript_feed.sync: flush, then every entry as shown
        self.take()
        self.entries = [dict(shown_entry(e)) for e in self.tr]

    def record(self) -> None:
        # the widget's ``transcript`` trait, as a push sets it (its unchanged entries are the dicts made before)
        view = self.tr.view()
        self.views.append((view, copy.deepcopy(view)))


def _apply(tr: Transcript, page: _Page, what: str, key: str, text: str) -> None:
    if what == "text":
        tr.text(key, text)
    elif what == "thinking":  # record_event's ThinkingBlockDeltaEvent
        tr._append(tr.add("thinking", "thinking:" + key), text)
    elif what == "call":
        tr.tool_call(key, "tool", input_text=text)
    elif what == "result":
        tr.tool_result(key, text)
    elif what == "result_end":
        tr.tool_result(key, state="success")
    elif what == "result_text":
        tr.tool_result(key, text=text)
    elif what == "end":
        tr.end_text(key)
    elif what == "end_text":
        tr.end_text(key, text)
    elif what == "end_thinking":
        tr.end_text("thinking:" + key)
    elif what == "label":
        tr.label(key, "agent-" + text[:3])
    elif what == "note":
        tr.note(text)
    elif what == "step":
        tr.add("step", "step:" + key, state=text[:4])
    elif what == "finish":
        tr.finish()
    elif what == "take":
        page.take()
    elif what == "view":
        page.record()
    else:
        page.sync()


@settings(max_examples=1500, deadline=None)
@given(st.lists(_CHANGES, max_size=40))
# a delta, a replacement (a ``set`` op), a delta, to one entry handed out before: the
# second delta must not ride in the append op before the set (random lists rarely hit it)
@example(
    [("result", "a", "x"), ("take", "a", ""), ("result", "a", "abc"), ("result_text", "a", "Z"), ("result", "a", "d")]
)
@example([("text", "a", "x"), ("take", "a", ""), ("text", "a", "ab"), ("label", "a", "p"), ("text", "a", "c")])
def test_every_kind_of_change_rebuilds_the_view_and_handed_out_batches_stay_put(
    changes: list[tuple[str, str, str | int]],
) -> None:
    tr = Transcript()
    page = _Page(tr)
    for what, key, given_text in changes:
        text = "x" * given_text if isinstance(given_text, int) else given_text
        _apply(tr, page, what, key, text)
    page.take()
    assert _same_view(page.entries) == _same_view(tr.view())
    # the record's view, made again only for what changed, is every entry as shown now
    assert tr.view() == [shown_entry(e) for e in tr]
    for ops, snapshot in page.batches + page.views:  # nothing handed out was changed afterwards
        assert ops == snapshot
    # the kernel keeps every character; the page holds a prefix and the count left out
    for shown, e in zip(page.entries, tr, strict=True):
        assert e["text"].startswith(shown["text"])
        assert len(shown["text"]) + shown.get("more", 0) == len(e["text"])


# ------------------------------------------- a real reply: thinking and text


class Interleaving(ScriptedChatModel):
    """Each chunk carries a thinking piece and a text piece of the same model
    call (AgentScope emits the thinking delta, then the text delta, per chunk):
    two entries alternate deltas. The thinking grows past the page's cut."""

    chunks = 120

    async def _stream(self, text: TextBlock | None, calls: list[Any]) -> AsyncGenerator[ChatResponse, None]:
        assert text is not None
        for i in range(self.chunks):
            think = ("t" * 300) + f"[{i}]"  # ~36,000 characters in all: past 20,000
            say = f"**w{i}** "
            yield ChatResponse(
                id="resp_mix",
                is_last=False,
                content=[ThinkingBlock(id="th", thinking=think), TextBlock(id=text.id, text=say)],
            )
            await asyncio.sleep(0.001 if i % 7 else 0.06)  # quiet spells: flushes mid-stream


def _page_replay(rec: StreamRecorder, syncs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a page holds that got every stream message and, in between, the
    sync answers in ``syncs`` (each noted with the number of stream messages
    sent before it was answered)."""
    entries: list[dict[str, Any]] = []
    seq = 0
    pending = sorted(syncs, key=lambda s: s["after"])
    for n, (_, msg) in enumerate(rec.stream):
        while pending and pending[0]["after"] <= n:
            answer = pending.pop(0)["answer"]
            entries, seq = [dict(e) for e in answer["entries"]], answer["seq"]
        if msg["seq"] <= seq:
            continue
        assert msg["seq"] == seq + 1
        apply_ops(entries, msg["ops"])
        seq = msg["seq"]
    for s in pending:
        entries, seq = [dict(e) for e in s["answer"]["entries"]], s["answer"]["seq"]
    return entries


def test_interleaved_thinking_and_text_with_syncs_mid_stream_reach_the_page_whole() -> None:
    agent = Agent(
        name="mixer",
        system_prompt="Think and talk.",
        model=Interleaving([Turn("x")], on_exhausted="raise"),
        toolkit=Toolkit(),
    )

    async def scenario() -> None:
        session = Session(agent, display=True)
        task = session.start("Go.")
        await wait_until(lambda: session.current is not None and session.current.widget is not None, "the widget")
        widget = session.current.widget
        rec = StreamRecorder(widget)
        syncs: list[dict[str, Any]] = []
        n = 0
        while not task.done():
            await asyncio.sleep(0.013)
            n += 1
            if n % 3 == 0:  # the page asks for a sync between deltas
                widget._on_page_message(widget, {"request_id": f"s{n}", "action": "transcript_sync", "seq": -5}, [])
                syncs.append({"after": len(rec.stream), "answer": rec.replies[-1]})
        await asyncio.wait_for(task, 60)
        run = session.current
        assert syncs, "a sync was asked mid-stream"
        view = run.transcript.view()
        assert _same_view(rec.rebuilt()) == _same_view(view)
        assert _same_view(_page_replay(rec, syncs)) == _same_view(view)
        assert _same_view(widget.transcript) == _same_view(view)
        thinking = next(e for e in run.transcript if e["kind"] == "thinking")
        text = next(e for e in run.transcript if e["kind"] == "text")
        assert thinking["text"] == "".join(("t" * 300) + f"[{i}]" for i in range(Interleaving.chunks))
        assert text["text"] == "".join(f"**w{i}** " for i in range(Interleaving.chunks))

    run_async(scenario())


# -------------------------------- a rendering that is no longer its text's


@pytest.mark.parametrize("more", [3, SHOWN_CHARS - 1], ids=["within the cut", "past the cut"])
@pytest.mark.parametrize("handed_out", [True, False], ids=["html sent", "html pending"])
def test_text_after_the_block_end_drops_its_old_rendering_on_both_sides(more: int, handed_out: bool) -> None:
    """A delta to a block whose Markdown was rendered: the old ``html`` is not
    the rendering of the new text, on the page (a ``set`` op with ``html:
    None`` removes it) as in the kernel; ``finish`` renders the whole text
    again when it fits the page's part."""
    tr = Transcript()
    page: list[dict[str, Any]] = []
    tr._append(tr.add("thinking", "thinking:a"), "___")  # Markdown: a rule
    tr.finish()  # rendered: html "<hr>"
    assert tr[0]["html"] == "<hr>"
    if handed_out:
        apply_ops(page, tr.take_ops()[1])
        assert page[0]["html"] == "<hr>"
    tr._append(tr.add("thinking", "thinking:a"), "\n\n**" + "x" * more + "**")
    apply_ops(page, tr.take_ops()[1])
    assert "html" not in tr[0] and "html" not in page[0], page[0].get("html")
    assert page == tr.view()
    tr.finish()  # the block ends again: its whole text is rendered when the page shows it whole
    apply_ops(page, tr.take_ops()[1])
    assert page == tr.view()
    if more == 3:
        assert page[0]["html"] == tr[0]["html"] == "<hr>\n<p><strong>xxx</strong></p>"
    else:
        assert "html" not in page[0] and page[0]["more"] == len(tr[0]["text"]) - SHOWN_CHARS > 0


def test_a_replacing_end_text_that_reads_plain_drops_the_old_rendering() -> None:
    """``end_text(key, text)`` with a final text that needs no HTML, after the
    block was rendered: the page shows the plain text, not the old HTML."""
    tr = Transcript()
    page: list[dict[str, Any]] = []
    tr.text("b1", "**bold**")
    tr.end_text("b1")
    apply_ops(page, tr.take_ops()[1])
    assert "<strong>" in page[0]["html"]
    tr.end_text("b1", "plain words")
    apply_ops(page, tr.take_ops()[1])
    assert page == tr.view() and page[0] == {"kind": "text", "id": "b1", "text": "plain words"}


def test_a_delta_after_a_set_of_the_same_entry_is_not_merged_before_the_set() -> None:
    """The pending append op of an entry stops taking deltas once a ``set`` of
    that entry follows it (``Transcript._record`` clears the tail): the page
    applies append then set, so a later delta merged into the append would be
    overwritten by the set's text."""
    tr = Transcript()
    page: list[dict[str, Any]] = []
    tr.tool_result("a", "x")
    apply_ops(page, tr.take_ops()[1])
    tr.tool_result("a", "abc")
    tr.tool_result("a", text="Z")  # the result as the model reads it
    tr.tool_result("a", "d")
    ops = tr.take_ops()[1]
    assert [o["op"] for o in ops] == ["append", "set", "append"]
    apply_ops(page, ops)
    assert page == tr.view() and page[0]["text"] == "Zd"


def test_follow_turns_each_read_of_the_whole_list_into_what_changed() -> None:
    """``Transcript.follow`` (the service console's reads of ``/messages``): a new entry is
    added, a grown text appended to (the delta only), a replaced text and changed fields
    set, a field gone set to None (removed on the page), an entry a later read no longer
    holds kept; a read that changed nothing records no op. The page's rebuild equals the
    kernel's view after every read, including a text past the shown part."""
    tr = Transcript()
    page = _Page(tr)
    long = "x" * (SHOWN_CHARS + 10)
    reads = [
        [{"kind": "note", "id": "msg:1", "text": "user: go"}],
        [
            {"kind": "note", "id": "msg:1", "text": "user: go"},
            {"kind": "text", "id": "t1", "text": "Hello", "html": "<p>Hello</p>"},
        ],
        [
            {"kind": "note", "id": "msg:1", "text": "user: go"},
            {"kind": "text", "id": "t1", "text": "Hello world"},
            {"kind": "tool_call", "id": "call:c1", "text": "{}", "name": "w", "tool_call_id": "c1", "state": None},
        ],
        [  # msg:1 scrolled out of the read; the call's input replaced, its result came
            {"kind": "text", "id": "t1", "text": "Hello world"},
            {"kind": "tool_call", "id": "call:c1", "text": '{"a": 1}', "name": "w", "tool_call_id": "c1"},
            {"kind": "tool_result", "id": "result:c1", "text": long, "name": "w", "tool_call_id": "c1"},
        ],
    ]
    expected_ops = [
        [("add", "msg:1")],
        [("add", "t1")],
        [("append", "t1"), ("set", "t1"), ("add", "call:c1")],
        [("set", "call:c1"), ("add", "result:c1")],
    ]
    for read, expected in zip(reads, expected_ops, strict=True):
        tr.follow(read)
        seq_before = tr.seq
        page.take()
        ops = page.batches[-1][0]
        assert [(op["op"], op.get("id") or op["entry"]["id"]) for op in ops] == expected
        assert tr.seq == seq_before + 1
        assert _same_view(page.entries) == _same_view(tr.view())
        tr.follow(read)  # the same read again: nothing to send
        assert not tr.pending
    append = next(op for op in page.batches[2][0] if op["op"] == "append")
    assert append["text"] == " world"  # the delta, not the text again
    assert "html" not in tr.by_id("t1")  # gone from the read: removed, here and on the page
    assert [e["id"] for e in tr] == ["msg:1", "t1", "call:c1", "result:c1"]
    assert page.entries[-1]["more"] == 10 and len(tr.by_id("result:c1")["text"]) == SHOWN_CHARS + 10
