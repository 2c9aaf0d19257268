"""The inbox's rows reach the page as what changed: with 1,000 rows, one
session leaving, changing or parking sends that one row (or its id), measured
in bytes where ipywidgets publishes them (outside a kernel the widget's comm
is ``comm.DummyComm``, as in tests/session/test_card_stream.py); every view
gets all rows once, by its own ``rows_sync``, and what a page holds after
applying the messages is the kernel's rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nb_hitl.service import ServiceClient
from nb_hitl.service.inbox import InboxEntry
from tests.service.test_pieces import CALL
from tests.session.test_card_stream import Wire

N = 1000


def entry(i: int) -> InboxEntry:
    call = {**CALL, "id": f"call_{i}", "input": json.dumps({"text": f"note number {i} for the inbox"})}
    return InboxEntry("a1", "writer", f"s{i:04}", f"notes {i}", "awaiting_permission", f"r{i}", [call], since=1e9 + i)


def page_sync(widget: Any, wire: Wire, seq: int, request_id: str) -> dict[str, Any]:
    """The page's ``rows_sync``, as js/inbox_feed.ts sends it; the kernel's answer."""
    widget._on_page_message(None, {"request_id": request_id, "action": "rows_sync", "seq": seq}, None)
    (answer,) = [m["content"] for m in wire.messages if (m.get("content") or {}).get("request_id") == request_id]
    return answer


def apply(rows: dict[str, dict[str, Any]], ops: list[dict[str, Any]]) -> None:
    """js/inbox_logic.ts's applyRowOps, on the page's rows by session id."""
    for op in ops:
        if op["op"] == "row":
            rows[op["row"]["session_id"]] = op["row"]
        else:
            rows.pop(op["id"], None)


def test_one_change_among_1000_rows_sends_one_row(tmp_path: Path) -> None:
    svc = ServiceClient("http://127.0.0.1:1", "ana", audit_path=tmp_path / "audit.jsonl")
    for i in range(N):
        e = entry(i)
        svc.state.entries[e.session_id] = e
    widget = svc.make_view().inbox
    wire = Wire(widget)
    assert wire.messages == []  # made with the rows: nothing is sent before a page asks

    # a page opens: every row once, in its sync answer
    answer = page_sync(widget, wire, -1, "r1")
    assert answer["ok"] and len(answer["rows"]) == N
    held = {r["session_id"]: r for r in answer["rows"]}
    seq = answer["seq"]
    full = wire.bytes()
    one_row = len(json.dumps(answer["rows"][0]))
    print(f"all {N} rows: {full} bytes; one row {one_row} bytes")

    def change(act: Any) -> tuple[int, list[dict[str, Any]]]:
        before, count = wire.bytes(), len(wire.messages)
        act()
        new = wire.messages[count:]
        msgs = [m["content"] for m in new if m.get("method") == "custom"]
        for m in msgs:
            assert m["seq"] == seq + 1
            apply(held, m["ops"])
        return wire.bytes() - before, [op for m in msgs for op in m["ops"]]

    # a session leaves (an answer taken elsewhere: the service's event)
    sent, ops = change(lambda: svc.state.on_event("s0500", "USER_CONFIRM_RESULT"))
    seq += 1
    assert ops == [{"op": "drop", "id": "s0500"}]
    assert sent < 200, sent
    # a row changes (a note added), and a session parks: one row each
    svc.state.entries["s0007"].flags["call_7"] = "write_note was approved here before"
    sent_changed, ops = change(svc._push)
    seq += 1
    assert [op["row"]["session_id"] for op in ops] == ["s0007"] and "approved here" in ops[0]["row"]["note"]
    # one row's worth: the row, and an envelope (message type, seq, op; the `updated` time) under 200 bytes
    assert sent_changed < len(json.dumps(ops[0]["row"])) + 200, sent_changed
    new = entry(N)
    svc.state.entries[new.session_id] = new
    sent_new, ops = change(svc._push)
    seq += 1
    assert [op["row"]["session_id"] for op in ops] == [new.session_id]
    assert sent_new < len(json.dumps(ops[0]["row"])) + 200, sent_new
    assert full > 100 * max(sent, sent_changed, sent_new), (full, sent, sent_changed, sent_new)
    print(f"one drop {sent} bytes, one changed row {sent_changed}, one new row {sent_new}")
    # nothing changed: nothing sent
    assert change(svc._push) == (0, [])
    # what the page holds is the kernel's rows
    assert held == {r["session_id"]: r for r in svc.state.views()}
    assert len(wire.custom("nbh_inbox")) == 3

    # a second view, opened late: all rows at the current seq; one holding it is told so
    late = page_sync(widget, wire, -1, "r2")
    assert late["seq"] == seq and {r["session_id"]: r for r in late["rows"]} == held
    current = page_sync(widget, wire, seq, "r3")
    assert current == {"request_id": "r3", "ok": True, "seq": seq, "current": True}
