"""Closing the console tells its widgets the truth, against the real cluster (tests/conftest.py:
AgentScope workers on Redis and PostgreSQL): after ``ServiceClient.aclose()`` the inbox says it is
closed and no longer follows the service (its page disables its buttons and refuses its actions),
and an opened session's widget is no longer "running" or "waiting for you": its status is
``closed`` (no Interrupt), its open card expired saying why, and nothing refreshes it back."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from nb_hitl.errors import DecisionError
from nb_hitl.service import ServiceClient
from nb_hitl.service.console import CLOSED
from tests.service.cluster import Cluster
from tests.service.test_scale_out import note_prompt, park
from tests.support import run_async

pytestmark = pytest.mark.timeout(300)


def test_after_aclose_the_inbox_says_closed_and_the_session_widget_is_not_live(
    workers: Cluster, tmp_path: Path
) -> None:
    async def go() -> None:
        svc = ServiceClient(
            workers.a.url, f"u-{uuid.uuid4().hex[:8]}", audit_path=tmp_path / "audit.jsonl", bus=workers.redis.url
        )
        agent_id, sid = await park(svc, workers.model.base_url, note_prompt(f"note-{uuid.uuid4().hex[:8]}"))
        view = svc.inbox()
        await svc.refresh()
        inbox = view.inbox
        console = await svc.open(sid, agent_id)
        widget = console.widget
        # live: the inbox follows the service's bus; the session waits for its card
        assert inbox.closed is False and inbox.live.startswith("Pushed:")
        assert widget.status == "paused" and [p["status"] for p in widget.pauses] == ["open"]

        await svc.aclose()
        assert inbox.closed is True
        assert inbox.live == "Closed: this inbox no longer follows the service; the rows are as last read."
        assert all(t.done() for t in svc._tasks)
        assert widget.status == "closed" and widget.status_reason == CLOSED
        assert [(p["status"], p["reason"]) for p in widget.pauses] == [("expired", CLOSED)]
        with pytest.raises(DecisionError, match="This inbox is closed"):
            svc._on_page({"action": "open", "session_id": sid})
        await asyncio.sleep(1.5)  # the stream follower would have refreshed by now: it is stopped
        assert widget.status == "closed"

    run_async(go())
