"""The transcript entries the reply widget renders, built from plain values."""

from __future__ import annotations

import json

from nb_hitl.session import Transcript


def test_entries_have_the_shape_the_page_renders() -> None:
    tr = Transcript()
    tr.text("b1")
    tr.text("b1", "Deleting ")
    tr.text("b1", "now.")
    tr.tool_call("c1", "delete_file")
    tr.tool_call("c1", input_text='{"path": ')
    tr.tool_call("c1", input_text='"a.txt"}')
    tr.tool_result("c1", state="running", name="delete_file")
    tr.tool_result("c1", "Deleted a.txt.")
    tr.tool_result("c1", state="success")
    tr.note("The agent reached its iteration limit.")
    assert list(tr) == [
        {"kind": "text", "id": "b1", "text": "Deleting now."},
        {
            "kind": "tool_call",
            "id": "call:c1",
            "text": '{"path": "a.txt"}',
            "name": "delete_file",
            "tool_call_id": "c1",
        },
        {
            "kind": "tool_result",
            "id": "result:c1",
            "text": "Deleted a.txt.",
            "name": "delete_file",
            "tool_call_id": "c1",
            "state": "success",
        },
        {"kind": "note", "id": "note:3", "text": "The agent reached its iteration limit."},
    ]
    assert json.loads(json.dumps(tr)) == tr.view() == list(tr)
    assert tr.view()[0] is not tr[0]  # copies for the widget trait


def test_a_result_without_its_start_takes_the_call_name() -> None:
    tr = Transcript()
    tr.tool_call("c2", "lookup")
    tr.tool_result("c2", "Ana")
    assert tr[-1] == {"kind": "tool_result", "id": "result:c2", "text": "Ana", "name": "lookup", "tool_call_id": "c2"}
    tr.tool_result("c3", "orphan")
    assert tr[-1]["name"] == ""


def test_a_runtime_hint_reads_as_a_person_would_read_it() -> None:
    """AgentScope's runtime hint: a JSON label as its ``source`` and the text wrapped in
    ``<system-reminder>`` for the model. The entry keeps the words, not the markup."""
    from agentscope.event import HintBlockEvent

    from nb_hitl.session._transcript_events import hint_source, record_event

    tr = Transcript()
    ev = HintBlockEvent(
        reply_id="r1",
        block_id="h1",
        source=json.dumps({"label": "System", "sublabel": "Runtime State"}),
        hint="<system-reminder>\n<current-time>2026-11-30T18:08:26</current-time>\n</system-reminder>",
    )
    assert record_event(tr, ev) is True
    (entry,) = list(tr)
    assert entry["kind"] == "hint" and entry["source"] == "System · Runtime State"
    assert "<system-reminder>" not in entry["text"] and "2026-11-30T18:08:26" in entry["text"]
    assert hint_source("alice") == "alice"
    assert hint_source("{not json") == "{not json"
    assert hint_source(None) == ""
