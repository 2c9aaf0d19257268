"""A hostile page's ``entry_text`` messages ("Show all") to a real session.

A non-string, empty or huge id, and ``entry_text`` inside a
``batch``, are refused with a clear error at ``id`` (or ``action``), the
error stays short (a 5 MB id is not echoed back), and the kernel keeps
answering. The agent is a real ``agentscope.agent.Agent`` on
:class:`~nb_hitl.models.ScriptedChatModel` (tests/session/test_long_entries.py).
"""

from __future__ import annotations

import asyncio
import json

from nb_hitl import Session
from tests.session.test_long_entries import reader
from tests.support import StreamRecorder, run_async, wait_until


def test_entry_text_from_a_hostile_page_is_refused_clearly() -> None:
    async def scenario() -> None:
        session = Session(reader(), display=True)
        task = session.start("How long is the log?")
        await wait_until(lambda: session.current is not None and session.current.widget is not None, "the widget")
        widget = session.current.widget
        rec = StreamRecorder(widget)
        await asyncio.wait_for(task, 60)
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
