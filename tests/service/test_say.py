"""The console's message box against the real cluster (tests/conftest.py): a
new message to a session parked on a pause is not sent, and the page is told
why and what to do (answer the open pause first); to a running session the
same; once the pause is answered and the session idle, the message goes and
starts a reply. A message that reaches a parked session anyway (it parked
between the check and the message) is reported from the stream as not taken,
never as sent. Every loop is bounded."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from nb_hitl.errors import PendingPauseError
from nb_hitl.service import ServiceClient
from nb_hitl.service.http import user_msg_body
from nb_hitl.service.say import said
from tests.service.cluster import Cluster
from tests.service.test_scale_out import note_prompt, park, until
from tests.support import run_async

pytestmark = pytest.mark.timeout(300)


class Page:
    """The inbox page's requests, through the widget's comm handler (as js/inbox.ts sends them)."""

    def __init__(self, svc: ServiceClient) -> None:
        self.widget = svc.make_view().inbox
        self.answers: list[dict[str, Any]] = []
        self.widget.send = lambda msg, *a, **k: self.answers.append(msg)  # type: ignore[method-assign]
        self.n = 0

    async def request(self, action: str, **payload: Any) -> dict[str, Any]:
        self.n += 1
        rid = f"r{self.n}"
        self.widget._on_page_message(None, {"request_id": rid, "action": action, **payload}, None)

        async def answered() -> dict[str, Any] | None:
            return next((m for m in self.answers if m.get("request_id") == rid), None)

        return await until(answered, f"the answer to {action}", timeout=60)


def test_a_message_to_a_parked_session_says_to_answer_the_pause_first(workers: Cluster, tmp_path: Path) -> None:
    async def go() -> None:
        svc = ServiceClient(workers.b.url, f"u-{uuid.uuid4().hex[:8]}", audit_path=tmp_path / "audit.jsonl")
        text = f"note-{uuid.uuid4().hex[:8]}"
        agent_id, sid = await park(svc, workers.model.base_url, note_prompt(text, hold=3.0))
        await svc.refresh()
        page = Page(svc)
        assert (await page.request("open", session_id=sid, agent_id=agent_id))["ok"]
        history = len((await svc.http.messages(agent_id, sid))["messages"])

        # parked: refused before anything is sent, with what to do
        got = await page.request("say", session_id=sid, text="hello, are you there?")
        assert got["ok"] is False and got["code"] == PendingPauseError.code, got
        assert got["error"].startswith("Not sent: this session waits for a confirmation on write_note"), got
        assert "Answer the open pause first" in got["error"]
        assert await svc.http.status(agent_id, sid) == "awaiting_permission"
        assert len((await svc.http.messages(agent_id, sid))["messages"]) == history
        console = svc.consoles[sid]
        assert [p.status for p in console.pauses.values()] == ["open"]  # the pause is as it was

        # the pause answered: the tool holds the run for 3 s; a message now is refused as running
        (tcid,) = console.pauses
        assert (await console.act({"action": "approve", "tool_call_id": tcid}))["status"] == "delivered"
        if await svc.http.status(agent_id, sid) == "running":
            got = await page.request("say", session_id=sid, text="hello?")
            assert got["ok"] is False and got["error"].startswith("Not sent: this session is running a reply"), got

        # idle: the message goes and the session starts its reply
        async def idle() -> bool:
            return await svc.http.status(agent_id, sid) == "idle"

        await until(idle, "the run to end", timeout=60)
        got = await page.request("say", session_id=sid, text="thanks, that is all")
        assert got["ok"] is True and got["sent"] == sid and got["started"] is True, got
        assert len(workers.notes(text)) == 1
        await svc.aclose()

    run_async(go())


def test_a_message_that_reaches_a_parked_session_is_reported_not_taken(workers: Cluster, tmp_path: Path) -> None:
    """What AgentScope's service does with it: 200 "started", then a run that
    ends at once with an error while the session stays parked. The console's
    verdict reads that from the stream and says to answer the pause first."""

    async def go() -> None:
        svc = ServiceClient(workers.b.url, f"u-{uuid.uuid4().hex[:8]}", audit_path=tmp_path / "audit.jsonl")
        agent_id, sid = await park(svc, workers.model.base_url, note_prompt(f"note-{uuid.uuid4().hex[:8]}"))
        cursor = (await svc.http.messages(agent_id, sid, limit=1)).get("event_cursor")
        accepted = await svc.http.chat(agent_id, sid, user_msg_body("a message past the check"))
        assert accepted.get("status") == "started"  # the HTTP answer says nothing of what follows
        with pytest.raises(PendingPauseError) as refused:
            await asyncio.wait_for(said(svc.http, agent_id, sid, cursor, within=30), 60)
        assert str(refused.value).startswith("Not taken: this session was waiting for a confirmation")
        assert await svc.http.status(agent_id, sid) == "awaiting_permission"
        await svc.aclose()

    run_async(go())
