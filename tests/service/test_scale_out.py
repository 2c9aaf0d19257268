"""The console against two real AgentScope workers on one Redis bus, storage in
PostgreSQL 15 (tests/conftest.py). Every loop is bounded in count and time."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from agentscope.message import ToolResultBlock, ToolResultState

from nb_hitl.errors import DecisionError, NbHitlError
from nb_hitl.service import AlreadyApprovedError, ServiceClient
from nb_hitl.service.http import external_body, user_msg_body
from tests.service.cluster import Cluster
from tests.support import run_async

pytestmark = pytest.mark.timeout(240)


async def until(check: Any, what: str, timeout: float = 20.0, every: float = 0.25) -> Any:
    """Await ``check()`` until it returns something truthy (bounded)."""
    for _ in range(int(timeout / every) + 1):
        value = await check()
        if value:
            return value
        await asyncio.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


async def park(client_a: ServiceClient, model_url: str, prompt: str, agent: str = "writer") -> tuple[str, str]:
    """Create an agent and a session through ``client_a``'s worker and start a chat that parks."""
    http = client_a.http
    cred = await http.create_credential(model_url)
    agent_id = await http.create_agent(agent)
    session_id = await http.create_session(agent_id, cred, name=agent)
    await http.chat(agent_id, session_id, user_msg_body(prompt))

    async def parked() -> bool:
        return (await http.status(agent_id, session_id)).startswith("awaiting")

    await until(parked, "the chat to park")
    return agent_id, session_id


def clients(cluster: Cluster, tmp_path: Path, **kw: Any) -> tuple[ServiceClient, ServiceClient]:
    """The same user on worker A and on worker B, one ledger (the console's)."""
    user = f"u-{uuid.uuid4().hex[:8]}"
    audit = tmp_path / "audit.jsonl"
    return (
        ServiceClient(cluster.a.url, user, audit_path=tmp_path / "a-audit.jsonl", **kw),
        # the console talks to B, and falls back to A when B is gone
        ServiceClient([cluster.b.url, cluster.a.url], user, audit_path=audit, service_id="cluster", **kw),
    )


def note_prompt(text: str, hold: float = 0.0) -> str:
    return "call: write_note " + json.dumps({"text": text, "hold_seconds": hold})


def test_answer_through_other_worker_runs_once(workers: Cluster, tmp_path: Path) -> None:
    """Chat started on A, answered from the console on B: the tool runs once;
    the inbox lists the pause before and not after."""
    text = f"note-{uuid.uuid4().hex[:8]}"

    async def go() -> None:
        via_a, console = clients(workers, tmp_path)
        agent_id, sid = await park(via_a, workers.model.base_url, note_prompt(text))
        rows = await console.refresh()
        assert [(r["session_id"], r["status"], r["tool"]) for r in rows] == [(sid, "awaiting_permission", "write_note")]
        assert "text=" in rows[0]["summary"] and text in rows[0]["summary"]
        session = await console.open(sid, agent_id)
        (tcid,) = session.pauses
        assert session.pauses[tcid].kind == "confirm"
        result = await session.act({"action": "approve", "tool_call_id": tcid})
        assert result["status"] == "delivered"
        assert session.outcomes[-1].status == "applied"
        await until(lambda: _idle(console, agent_id, sid), "the session to finish")
        assert len(workers.notes(text)) == 1
        assert await console.refresh() == []
        phases = [(r["decision"], r["phase"]) for r in console.ledger.records(sid)]
        assert phases == [("approve", "sending"), ("approve", "applied")]
        await via_a.aclose()
        await console.aclose()

    run_async(go())


async def _idle(client: ServiceClient, agent_id: str, sid: str) -> bool:
    return await client.http.status(agent_id, sid) == "idle"


def test_sigkill_parked_worker_then_answer_through_b(workers: Cluster, tmp_path: Path) -> None:
    """SIGKILL worker A while the chat it ran is parked: the console (on B) still
    lists the pause, answers it through B, the tool runs once."""
    text = f"note-{uuid.uuid4().hex[:8]}"

    async def go() -> None:
        via_a, console = clients(workers, tmp_path)
        agent_id, sid = await park(via_a, workers.model.base_url, note_prompt(text))
        await via_a.aclose()
        workers.a.kill()
        rows = await console.refresh()
        assert [r["session_id"] for r in rows] == [sid]
        session = await console.open(sid, agent_id)
        (tcid,) = session.pauses
        await session.act({"action": "approve", "tool_call_id": tcid})
        await until(lambda: _idle(console, agent_id, sid), "the session to finish on B")
        runs = workers.notes(text)
        assert len(runs) == 1 and runs[0]["pid"] == workers.b.proc.pid  # type: ignore[union-attr]
        assert await console.refresh() == []
        await console.aclose()

    run_async(go())


def test_killed_after_side_effect_needs_explicit_second_approval(workers: Cluster, tmp_path: Path) -> None:
    """The worker running an approved tool dies after the side effect: the call comes
    back awaiting; the console flags it as approved before and sends nothing until
    a second, explicit approval."""
    text = f"note-{uuid.uuid4().hex[:8]}"

    async def go() -> None:
        via_a, console = clients(workers, tmp_path, stranded_after=1.0)
        agent_id, sid = await park(via_a, workers.model.base_url, note_prompt(text, hold=8))
        await via_a.aclose()
        session = await console.open(sid, agent_id)
        (tcid,) = session.pauses
        session.answerer.outcome_timeout = 3.0
        await session.act({"action": "approve", "tool_call_id": tcid})
        runs = await until(lambda: _notes(workers, text), "the side effect")
        runner = workers.worker_by_pid(runs[0]["pid"])
        assert runner is not None
        runner.kill()
        # a stranded run: the dead worker's run lock stays until its TTL
        assert await console.http.status(agent_id, sid) == "running"
        await console.refresh()
        await asyncio.sleep(1.2)
        rows = await console.refresh()
        assert [(r["session_id"], r["status"]) for r in rows] == [(sid, "stranded")]
        # the TTL (600 s) running out, without the wait
        workers.redis.client().delete(f"agentscope:session:lock:{sid}")
        assert await console.http.status(agent_id, sid) == "awaiting_permission"
        rows = await console.refresh()
        assert rows[0]["status"] == "awaiting_permission" and "approved here" in rows[0]["note"]
        await session.refresh()
        pause = session.pauses[tcid]
        assert pause.status == "open" and "Already approved" in (pause.message or "")
        sent_before = len(console.ledger.records(sid))
        with pytest.raises(AlreadyApprovedError) as refused:
            await session.act({"action": "approve", "tool_call_id": tcid})
        assert "Approve again" in str(refused.value)
        assert len(console.ledger.records(sid)) == sent_before  # nothing sent
        await asyncio.sleep(1.0)
        assert len(workers.notes(text)) == 1
        # the explicit second approval
        session.answerer.outcome_timeout = 10.0
        result = await session.act({"action": "approve", "tool_call_id": tcid})
        assert result["status"] == "delivered"
        await until(lambda: _idle(console, agent_id, sid), "the second run to finish", timeout=30)
        assert len(workers.notes(text)) == 2
        last = console.ledger.records(sid)[-1]
        assert last["second_approval"] is True and last["phase"] == "applied"
        await console.aclose()

    run_async(go())


async def _notes(workers: Cluster, text: str) -> list[dict]:
    return workers.notes(text)


def test_wrong_answers_reach_the_card_and_session_stays_answerable(workers: Cluster, tmp_path: Path) -> None:
    """Bad AskUser metadata and a wrong tool call id: the service answers 200 and
    applies nothing; the console shows the error at the card; a right answer then works."""

    async def go() -> None:
        via_a, console = clients(workers, tmp_path)
        questions = {
            "questions": [
                {
                    "question": "Which colour?",
                    "header": "Colour",
                    "options": [{"label": "red", "description": "warm"}, {"label": "blue", "description": "cold"}],
                }
            ]
        }
        agent_id, sid = await park(via_a, workers.model.base_url, "call: AskUser " + json.dumps(questions), "asker")
        await via_a.aclose()
        session = await console.open(sid, agent_id)
        (tcid,) = session.pauses
        pause = session.pauses[tcid]
        assert pause.kind == "ask_user"
        # refused by the console itself: nothing is sent
        with pytest.raises(DecisionError):
            await session.act(
                {
                    "action": "answer",
                    "tool_call_id": tcid,
                    "answers": [{"question": "Which colour?", "selected": ["green"]}],
                }
            )
        assert console.ledger.records(sid) == []
        # sent, and refused by the service (metadata breaks AskUser's schema)
        bad = external_body(
            pause.reply_id,
            [
                ToolResultBlock(
                    id=tcid, name="AskUser", output="x", state=ToolResultState.SUCCESS, metadata={"bogus": 1}
                )
            ],
        )
        out = await session.send_raw(bad, [tcid])
        assert out.status == "not_applied", out
        assert session.pauses[tcid].status == "open"
        assert "not applied" in (session.pauses[tcid].message or "")
        view = session.make_widget().pauses[0]
        assert view["status"] == "open" and "not applied" in view["message"]
        # a tool call id that is not parked
        wrong = external_body(
            pause.reply_id,
            [ToolResultBlock(id="call_nope", name="AskUser", output="x", state=ToolResultState.SUCCESS)],
        )
        out = await session.send_raw(wrong, [tcid])
        assert out.status == "not_applied", out
        assert await console.http.status(agent_id, sid) == "awaiting_external_result"
        # a stale reply id on the page message is refused at the card
        with pytest.raises(DecisionError):
            await session.act(
                {
                    "action": "answer",
                    "tool_call_id": tcid,
                    "reply_id": "other",
                    "answers": [{"question": "Which colour?", "selected": ["red"]}],
                }
            )
        # still answerable
        result = await session.act(
            {"action": "answer", "tool_call_id": tcid, "answers": [{"question": "Which colour?", "selected": ["red"]}]}
        )
        assert result["status"] == "delivered"
        await until(lambda: _idle(console, agent_id, sid), "the session to finish")
        phases = [r["phase"] for r in console.ledger.records(sid) if r["phase"] != "sending"]
        assert phases == ["not_applied", "not_applied", "applied"]
        await console.aclose()

    run_async(go())


def test_page_message_through_widget_channel(workers: Cluster, tmp_path: Path) -> None:
    """The ReplyWidget's own channel answers a page message with the service's verdict
    ({ok: true} only once applied), and the inbox widget opens a session by message."""

    async def go() -> None:
        via_a, console = clients(workers, tmp_path)
        text = f"note-{uuid.uuid4().hex[:8]}"
        agent_id, sid = await park(via_a, workers.model.base_url, note_prompt(text))
        await via_a.aclose()
        await console.refresh()
        from nb_hitl.widgets.inbox import InboxView, InboxWidget

        inbox = InboxWidget(handler=console._on_page)
        console.view = InboxView(inbox)
        console._widget = inbox
        console._push()
        assert [e["session_id"] for e in inbox.rows] == [sid]
        sent: list[dict] = []
        inbox.send = lambda msg, *a, **k: sent.append(msg)  # type: ignore[method-assign]
        inbox._on_page_message(None, {"request_id": "r1", "action": "open", "session_id": sid}, None)
        await until(lambda: _true(sent), "the open answer")
        assert sent[0]["ok"] is True and inbox.opened == sid
        reply = console.view.detail.children[0]
        (view,) = reply.pauses
        replies: list[dict] = []
        reply.send = lambda msg, *a, **k: replies.append(msg)  # type: ignore[method-assign]
        reply._on_page_message(None, {"request_id": "r2", "action": "deny", "tool_call_id": view["tool_call_id"]}, None)
        await until(lambda: _true(replies), "the deny answer", timeout=30)  # a verdict: up to 5 s to subscribe + 10 s
        assert replies[0]["ok"] is True and replies[0]["status"] == "delivered", replies
        assert reply.pauses[0]["status"] == "delivered"
        await until(lambda: _idle(console, agent_id, sid), "the session to finish")
        assert workers.notes(text) == []
        await console.aclose()

    run_async(go())


async def _true(items: list) -> bool:
    return bool(items)


def test_unknown_answer_is_an_error_not_sent(workers: Cluster, tmp_path: Path) -> None:
    """An answer for a call that is not open is refused before anything is sent."""

    async def go() -> None:
        via_a, console = clients(workers, tmp_path)
        agent_id, sid = await park(via_a, workers.model.base_url, note_prompt("x"))
        await via_a.aclose()
        session = await console.open(sid, agent_id)
        with pytest.raises(NbHitlError):
            await session.act({"action": "approve", "tool_call_id": "call_other"})
        assert console.ledger.records(sid) == []
        await session.act({"action": "deny", "tool_call_id": next(iter(session.pauses))})
        await console.aclose()

    run_async(go())
