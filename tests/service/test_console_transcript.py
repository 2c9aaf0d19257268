"""The service console's widget streams its transcript as ops, as a local Session does,
against the real cluster (tests/conftest.py: AgentScope workers on Redis and PostgreSQL,
nb_hitl's fake OpenAI server). Each read of ``/messages`` is diffed against what the page
holds (``Transcript.follow``): new entries are added, nothing else is sent again. What the
console's ``ReplyWidget`` publishes on its comm is read where ipywidgets publishes it
(outside a kernel, ``comm.DummyComm``); page messages go through the widget's comm handler."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.approve_all import page_message
from tests.service.cluster import Cluster
from tests.service.test_console_cards import approve_open, stepping_console
from tests.session.test_card_stream import Wire, connect
from tests.support import run_async

pytestmark = pytest.mark.timeout(300)


def test_each_console_read_sends_the_new_entries_only_and_a_read_of_nothing_new_sends_nothing(
    workers: Cluster, tmp_path: Path
) -> None:
    """A session whose reply writes 6 notes, one confirmation at a time, answered in its
    console: the transcript grows by a tool call, its result and the model's text per
    note. Once a view connected, a re-read of the unchanged session sends no transcript
    bytes; each step's transcript bytes stay flat as the transcript grows (the whole
    ``transcript`` trait went with every read before: step 5 cost about 5 times step 1);
    no message costs more than its envelope beyond the text it brings; the record never
    goes as a trait update; the page's copy built from the ops equals the kernel's
    record, and a reloaded page's ``sync`` gets every entry once."""
    n = 6

    async def go() -> tuple[list[int], Wire, Any]:
        client, console = await stepping_console(workers, tmp_path, n)
        widget = console.make_widget()
        start, start_seq = list(widget.transcript), widget.transcript_seq
        assert start and start_seq == console.transcript.seq  # the record the page gets with the widget
        connect(widget)
        wire = Wire(widget)
        await console.refresh()
        assert wire.transcript_costs() == []  # nothing changed: no transcript byte
        per_step: list[int] = []
        for k in range(n - 1):
            sent = len(wire.messages)
            await approve_open(console, f"card {k + 2}")
            per_step.append(sum(size for size, _text in wire.since(sent).transcript_costs()))
            before = len(wire.messages)
            await console.refresh()  # read again: the same messages
            assert wire.since(before).transcript_costs() == []
        assert wire.transcript_traits() == []
        assert wire.page_transcript(start) == widget.transcript == console.transcript.view()
        assert len(widget.transcript) >= len(start) + n - 1  # a result per note answered, at least
        page_message(widget, {"request_id": "reload", "action": "sync", "transcript_seq": -1, "cards_seq": -1})
        (reload,) = [m["content"] for m in wire.messages if m.get("content", {}).get("request_id") == "reload"]
        assert reload["transcript"] == {"seq": console.transcript.seq, "entries": widget.transcript}
        await client.aclose()
        return per_step, wire, widget

    per_step, wire, widget = run_async(go())
    assert all(per_step), per_step  # every step brought entries
    # step 2 is read beside 1 step's entries, step 5 beside 4: the same bytes
    assert max(per_step) <= 1.5 * min(per_step), per_step
    # an added result entry's fields and the envelope, never the entries before it
    assert max(size - text for size, text in wire.transcript_costs()) < 800, wire.transcript_costs()
    assert max(per_step) * 3 < len(json.dumps(widget.transcript)), per_step
