"""The console's answers through nb_hitl.answers against the real cluster
(tests/conftest.py): batches (C31), two consoles and a PostgreSQL
restart (C30), a redis-server restart (C36). Every loop is bounded."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from nb_hitl.answers.front import BatchRefused
from nb_hitl.service import OutcomeError, ServiceClient, SessionConsole
from nb_hitl.service.ledger import AnswerLedger
from tests.service.cluster import Cluster
from tests.service.test_scale_out import note_prompt, park, until
from tests.support import run_async

pytestmark = pytest.mark.timeout(300)


def _question(text: str) -> dict[str, Any]:
    return {
        "question": text,
        "header": text[:12],
        "options": [{"label": "red", "description": "warm"}, {"label": "blue", "description": "cold"}],
    }


def _user() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


async def _console(client: ServiceClient, agent_id: str, sid: str, path: Path, **kw: Any) -> SessionConsole:
    """A console of the session with its own ledger (another process's view), not following the stream."""
    console = SessionConsole(
        client.http, AnswerLedger(path, "cluster", client.user_id), agent_id, sid, agent_name="writer", **kw
    )
    await console.refresh()
    return console


def test_c31_submit_all_on_two_askuser_calls_is_one_answer(workers: Cluster, tmp_path: Path) -> None:
    """Two AskUser calls in one parked reply; "Submit all" sends one batch message:
    a refused item sends nothing; then both answers go in ONE
    EXTERNAL_EXECUTION_RESULT, judged once, and the page gets the local session's
    batch shape."""

    async def go() -> None:
        client = ServiceClient(workers.b.url, _user(), audit_path=tmp_path / "audit.jsonl", service_id="cluster")
        prompt = "\n".join(
            "call: AskUser " + json.dumps({"questions": [_question(q)]}) for q in ("Which colour?", "Which shade?")
        )
        agent_id, sid = await park(client, workers.model.base_url, prompt, "asker")
        session = await _console(client, agent_id, sid, tmp_path / "audit.jsonl")
        first, second = list(session.pauses)
        assert [p.kind for p in session.pauses.values()] == ["ask_user", "ask_user"]

        def item(tcid: str, question: str, choice: str) -> dict[str, Any]:
            return {
                "action": "answer",
                "tool_call_id": tcid,
                "answers": [{"question": question, "selected": [choice]}],
            }

        # one item does not fit its question: nothing is sent, both stay open
        bad = {"action": "batch", "items": [item(first, "Which colour?", "red"), item(second, "Which shade?", "green")]}
        with pytest.raises(BatchRefused) as refused:
            await session.handle(bad)
        assert [r["ok"] for r in refused.value.results] == [True, False]
        assert session.ledger.records(sid) == []
        assert [p.status for p in session.pauses.values()] == ["open", "open"]
        # the page's "Submit all"
        good = {"action": "batch", "items": [item(first, "Which colour?", "red"), item(second, "Which shade?", "blue")]}
        answer = await session.handle(good)
        assert answer["status"] == "delivered", answer
        assert [(r["tool_call_id"], r["ok"]) for r in answer["results"]] == [(first, True), (second, True)]
        assert all(r["decision"]["action"] == "answer" for r in answer["results"])
        assert [o.status for o in session.outcomes] == ["applied"]  # judged once
        assert [session.pauses[t].status for t in (first, second)] == ["delivered", "delivered"]
        sent = [r for r in session.ledger.records(sid) if r["phase"] == "sending"]
        assert len(sent) == 2 and len({r["origin"]["event_id"] for r in sent}) == 1  # one event
        assert {r["phase"] for r in session.ledger.records(sid)} == {"sending", "applied"}
        assert await until(lambda: _status_is(client, agent_id, sid, "idle"), "the reply to finish")
        body = await client.http.messages(agent_id, sid)
        results = [
            b
            for m in body["messages"]
            for b in (m.get("content") or [])
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
        assert {b["id"] for b in results} >= {first, second}
        await client.aclose()

    run_async(go())


async def _status_is(client: ServiceClient, agent_id: str, sid: str, status: str) -> bool:
    return await client.http.status(agent_id, sid) == status


def test_c30_stale_console_is_told_answered_elsewhere(workers: Cluster, tmp_path: Path) -> None:
    """Two consoles (separate ledgers) show the same parked call; one approves, the
    stale other approves too: exactly one applied, the other answered elsewhere
    (by the first console, with the event id and time); the tool ran once; no
    'may run twice' flag anywhere."""

    async def go() -> None:
        user = _user()
        via = ServiceClient(workers.a.url, user, audit_path=tmp_path / "via.jsonl", service_id="cluster")
        text = f"note-{uuid.uuid4().hex[:8]}"
        agent_id, sid = await park(via, workers.model.base_url, note_prompt(text))
        one = await _console(via, agent_id, sid, tmp_path / "one.jsonl", console_id="console-one")
        two = await _console(via, agent_id, sid, tmp_path / "two.jsonl", console_id="console-two")
        (tcid,) = one.pauses
        assert list(two.pauses) == [tcid]
        # the diff of an edit being typed (Modify): the console's own kernel computes it; nothing is sent
        base = dict(one.pauses[tcid].input or {})
        key = next(k for k, v in base.items() if isinstance(v, str))
        edit = json.dumps({**base, key: base[key] + " (edited)"})
        previewed = (await one.handle({"action": "preview", "tool_call_id": tcid, "input": edit}))["preview"]
        assert previewed["file_change"] is None  # a remote card: the console has no tool to read the file with
        shown = previewed["diff"]
        assert f'+  "{key}": {json.dumps(base[key] + " (edited)")}' in [line.rstrip(",") for line in shown.splitlines()]
        assert one.pauses[tcid].status == "open" and one.ledger.records(sid) == []
        done = await one.act({"action": "approve", "tool_call_id": tcid})
        assert done["status"] == "delivered" and one.pauses[tcid].status == "delivered"
        event_one = one.outcomes[-1]
        assert event_one.status == "applied"
        # the stale console: its card still shows the call open
        assert two.pauses[tcid].status == "open"
        with pytest.raises(OutcomeError) as late:
            await two.act({"action": "approve", "tool_call_id": tcid})
        out = late.value.outcome
        assert late.value.code == "answered_elsewhere" and out.status == "answered_elsewhere"
        # the other answer's run is over: the service keeps only when its result came
        assert out.at and out.at in out.detail and user in out.detail and "not sent" in out.detail
        assert two.pauses[tcid].status == "expired" and "Answered elsewhere" in (two.pauses[tcid].reason or "")
        assert len(workers.notes(text)) == 1
        assert [r["phase"] for r in two.ledger.records(sid)] == ["sending", "answered_elsewhere"]
        assert two.ledger.approved(sid, tcid) is None  # nothing to warn about later
        await via.aclose()

    run_async(go())


def test_c30_two_consoles_approve_at_once(workers: Cluster, tmp_path: Path) -> None:
    """Both consoles approve at the same moment: the service runs the call once;
    one console says applied, the other answered elsewhere, by the first (its
    console, from the stream's echo), in words without event ids."""

    async def go() -> None:
        via = ServiceClient(workers.a.url, _user(), audit_path=tmp_path / "via.jsonl", service_id="cluster")
        text = f"note-{uuid.uuid4().hex[:8]}"
        agent_id, sid = await park(via, workers.model.base_url, note_prompt(text))
        one = await _console(via, agent_id, sid, tmp_path / "one.jsonl", console_id="console-one")
        two = await _console(via, agent_id, sid, tmp_path / "two.jsonl", console_id="console-two")
        (tcid,) = one.pauses
        got = await asyncio.gather(
            one.act({"action": "approve", "tool_call_id": tcid}),
            two.act({"action": "approve", "tool_call_id": tcid}),
            return_exceptions=True,
        )
        applied = [g for g in got if isinstance(g, dict)]
        elsewhere = [g for g in got if isinstance(g, OutcomeError)]
        assert len(applied) == 1 and applied[0]["status"] == "delivered", got
        assert len(elsewhere) == 1 and elsewhere[0].code == "answered_elsewhere", got
        winner = one if isinstance(got[0], dict) else two
        loser = two if winner is one else one
        out = elsewhere[0].outcome
        assert out.at and out.at in out.detail
        if out.by is not None:  # both were sent: the stream showed the winner's echo before its result
            event = winner.ledger.records(sid)[0]["origin"]["event_id"]
            assert out.by == f"{via.user_id} ({winner.console_id})" and out.by in out.detail
            assert event not in out.detail
        assert loser.ledger.approved(sid, tcid) is None
        assert sorted(c.pauses[tcid].status for c in (one, two)) == ["delivered", "expired"]
        await until(lambda: _status_is(via, agent_id, sid, "idle"), "the reply to finish")
        assert len(workers.notes(text)) == 1
        await via.aclose()

    run_async(go())


def test_c30_postgres_restart_after_the_post(workers: Cluster, tmp_path: Path) -> None:
    """PostgreSQL restarts right after the approval is POSTed: the console says
    applied only if the tool ran; otherwise not applied, the session stays in the
    inbox with the call open and no 'may run twice' flag, and approving again
    runs the tool once."""

    async def go() -> None:
        client = ServiceClient(workers.b.url, _user(), audit_path=tmp_path / "audit.jsonl", service_id="cluster")
        text = f"note-{uuid.uuid4().hex[:8]}"
        agent_id, sid = await park(client, workers.model.base_url, note_prompt(text))
        await client.refresh()
        session = await client.open(sid, agent_id)
        session.close()  # judged by the answer alone
        (tcid,) = session.pauses
        chat = client.http.chat

        async def chat_then_restart(*args: Any) -> Any:
            got = await chat(*args)
            await asyncio.to_thread(workers.pg.restart)
            return got

        client.http.chat = chat_then_restart  # type: ignore[method-assign]
        try:
            result: Any = await session.act({"action": "approve", "tool_call_id": tcid})
        except OutcomeError as exc:
            result = exc
        finally:
            client.http.chat = chat  # type: ignore[method-assign]
        ran = len(workers.notes(text))
        if isinstance(result, dict):  # the worker ran the tool before the restart cut it off
            assert result["status"] == "delivered" and ran == 1
            await client.aclose()
            return
        assert result.code == "not_applied" and ran == 0, (result, ran)
        assert "storage" in str(result) or "run failed" in str(result)

        async def listed() -> list[dict[str, Any]]:
            return [r for r in await client.refresh() if r["session_id"] == sid]

        rows = await until(listed, "the session in the inbox after the restart")
        assert rows[0]["status"] == "awaiting_permission" and rows[0]["note"] == ""
        pause = session.pauses[tcid]
        assert pause.status == "open" and "Already approved" not in (pause.message or "")
        assert client.ledger.approved(sid, tcid) is None
        again = await session.act({"action": "approve", "tool_call_id": tcid})
        assert again["status"] == "delivered"
        await until(lambda: _status_is(client, agent_id, sid, "idle"), "the reply to finish")
        assert len(workers.notes(text)) == 1
        await client.aclose()

    run_async(go())


def test_c36_redis_restart_is_told_and_answering_works_after_the_workers_restart(
    workers: Cluster, tmp_path: Path
) -> None:
    """redis-server restarts while a session is parked: AgentScope's workers lose
    their bus subscription for good. The answer is not applied and the card and
    the inbox say which part fails and what to do, within a bounded time; once the
    workers are restarted answering works again."""

    async def go() -> None:
        client = ServiceClient(
            workers.b.url, _user(), audit_path=tmp_path / "audit.jsonl", service_id="cluster", outcome_timeout=12.0
        )
        text = f"note-{uuid.uuid4().hex[:8]}"
        agent_id, sid = await park(client, workers.model.base_url, note_prompt(text))
        await client.refresh()
        session = await client.open(sid, agent_id)
        session.close()
        session.answerer.take_within = 3.0
        (tcid,) = session.pauses
        workers.redis.restart()
        try:
            assert await client.http.status(agent_id, sid) == "awaiting_permission"  # the service looks healthy
            with pytest.raises(OutcomeError) as failed:
                await session.act({"action": "approve", "tool_call_id": tcid})
            out = failed.value.outcome
            assert out.status == "not_applied" and out.seconds < 12.0
            assert "Redis" in out.detail and "Restart the service's worker processes" in out.detail
            assert "may still be applied" not in out.detail
            assert session.pauses[tcid].status == "open" and "Redis" in (session.pauses[tcid].message or "")
            await client.refresh()
            assert "Redis" in client.notice
            assert workers.notes(text) == []
        finally:
            workers.restart_workers()
        # the restarted workers take the queued answer first, as the card said
        await until(lambda: _status_is(client, agent_id, sid, "idle"), "the queued answer to run", timeout=40)
        assert len(workers.notes(text)) == 1
        # answering works again
        other = f"note-{uuid.uuid4().hex[:8]}"
        agent2, sid2 = await park(client, workers.model.base_url, note_prompt(other), "writer2")
        fresh = await client.open(sid2, agent2)
        fresh.close()
        (tcid2,) = fresh.pauses
        assert (await fresh.act({"action": "approve", "tool_call_id": tcid2}))["status"] == "delivered"
        await client.refresh()
        assert client.notice == ""
        await client.aclose()

    run_async(go())
