"""Approvals by several people on the console's road, against the real cluster
(two AgentScope workers, Redis, PostgreSQL; tests/conftest.py): consoles with
their own HTTP clients and ledger objects over one ledger file, and one in its
own process (tests/service/approver.py). The tool runs once, after the last
approval; a denial vetoes; the same person twice is refused; a Modify restarts
the count. Every loop is bounded."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from nb_hitl.errors import DecisionError
from nb_hitl.notify import Notify
from nb_hitl.service import ServiceClient, SessionConsole
from nb_hitl.store import AuditLog
from tests.service.approver import notes_policy
from tests.service.cluster import Cluster
from tests.service.test_scale_out import note_prompt, park, until
from tests.session.test_card_stream import Wire
from tests.support import run_async

pytestmark = pytest.mark.timeout(300)
ROOT = Path(__file__).resolve().parents[2]


def _console(workers: Cluster, user: str, audit: Path, by: str, approvals: int = 2) -> ServiceClient:
    """One person's console: its own HTTP client and ledger object over the shared file."""
    return ServiceClient(
        workers.b.url, user, audit_path=audit, service_id="cluster", decided_by=by, policies=[notes_policy(approvals)]
    )


async def _parked_note(workers: Cluster, tmp_path: Path, approvals: int = 2) -> tuple[Any, ...]:
    """A parked ``write_note`` call and two consoles (ana, bob) showing it."""
    user, audit = f"u-{uuid.uuid4().hex[:8]}", tmp_path / "audit.jsonl"
    ana, bob = (_console(workers, user, audit, by, approvals) for by in ("ana", "bob"))
    text = f"note-{uuid.uuid4().hex[:8]}"
    agent_id, sid = await park(ana, workers.model.base_url, note_prompt(text))
    one, two = await ana.open(sid, agent_id, show=False), await bob.open(sid, agent_id, show=False)
    (tcid,) = one.pauses
    assert list(two.pauses) == [tcid] and one.pauses[tcid].approvals_needed == approvals
    assert one.pauses[tcid].policy == "notes" and f"{approvals} approvals" in (
        one.pauses[tcid].permission_message or ""
    )
    return ana, bob, one, two, agent_id, sid, tcid, text


async def _idle(client: ServiceClient, agent_id: str, sid: str) -> bool:
    return await client.http.status(agent_id, sid) == "idle"


def _by(console: SessionConsole, tcid: str) -> list[str]:
    return [a["by"] for a in console.pauses[tcid].to_view()["approvals"]]


def test_two_consoles_run_once_after_both_and_same_person_is_refused(workers: Cluster, tmp_path: Path) -> None:
    async def go() -> None:
        ana, bob, one, two, agent_id, sid, tcid, text = await _parked_note(workers, tmp_path)
        first = await one.act({"action": "approve", "tool_call_id": tcid})
        assert first["status"] == "approval_recorded" and first["approvals_needed"] == 2
        assert "1 of 2 approvals recorded (ana)" in first["outcome"] and one.pauses[tcid].status == "open"
        await asyncio.sleep(1.0)
        assert workers.notes(text) == [] and await ana.http.status(agent_id, sid) == "awaiting_permission"
        # the same person again, on this console and on the other: refused, in the card's words
        with pytest.raises(DecisionError, match="ana already approved this call; it needs 2 approvals"):
            await one.act({"action": "approve", "tool_call_id": tcid})
        two.follow()  # bob's card shows ana's approval by itself (nothing reached the service's stream)

        async def shown() -> bool:
            return _by(two, tcid) == ["ana"]

        await until(shown, "ana's approval on bob's card", timeout=10)
        two.close()
        two.answerer.decided_by = "ana"
        with pytest.raises(DecisionError, match="ana already approved"):
            await two.act({"action": "approve", "tool_call_id": tcid})
        assert two.pauses[tcid].status == "open"
        two.answerer.decided_by = "bob"
        done = await two.act({"action": "approve", "tool_call_id": tcid})
        assert done["status"] == "delivered", done
        await until(lambda: _idle(ana, agent_id, sid), "the reply to finish")
        assert len(workers.notes(text)) == 1
        lines = [r for r in one.ledger.records(sid) if r["tool_call_id"] == tcid]
        assert [(r["phase"], r["decided_by"]) for r in lines] == [
            ("approval", "ana"),
            ("counted", "bob"),
            ("sending", "bob"),
            ("applied", "bob"),
        ]
        assert all(r["origin"]["road"] == "service" for r in lines)
        assert [a["by"] for a in lines[1]["approvals"]] == ["ana", "bob"] and lines[1]["approval"]["count"] == 2
        assert two.ledger.approved(sid, tcid) is not None  # the console that sent it remembers the approval
        await one.refresh()
        assert one.pauses[tcid].status == "expired"  # ana's card: settled by bob's approval
        await ana.aclose()
        await bob.aclose()

    run_async(go())


def test_a_denial_vetoes_after_an_approval(workers: Cluster, tmp_path: Path) -> None:
    async def go() -> None:
        ana, bob, one, two, agent_id, sid, tcid, text = await _parked_note(workers, tmp_path)
        assert (await one.act({"action": "approve", "tool_call_id": tcid}))["status"] == "approval_recorded"
        await two.refresh()
        denied = await two.act({"action": "deny", "tool_call_id": tcid, "reason": "wrong account"})
        assert denied["status"] == "delivered" and denied["decision"]["action"] == "deny"
        await until(lambda: _idle(ana, agent_id, sid), "the reply to finish")
        assert workers.notes(text) == []
        (counted,) = [r for r in two.ledger.records(sid) if r["phase"] == "counted"]
        assert counted["decision"] == "deny" and counted["decided_by"] == "bob"
        assert counted["reason"] == "wrong account" and [a["by"] for a in counted["approvals"]] == ["ana", "bob"]
        told = _tool_results(await ana.http.messages(agent_id, sid), tcid)
        assert told and "bob denied your call" in told[0] and "wrong account" in told[0] and "ana" in told[0]
        await ana.aclose()
        await bob.aclose()

    run_async(go())


def _tool_results(body: dict[str, Any], tcid: str) -> list[str]:
    """The text of the call's result as the service stored it (what the model reads)."""
    out = []
    for m in body.get("messages") or []:
        for b in m.get("content") or []:
            if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("id") == tcid:
                got = b.get("output")
                out.append(got if isinstance(got, str) else json.dumps(got))
    return out


def test_a_modify_restarts_the_count(workers: Cluster, tmp_path: Path) -> None:
    async def go() -> None:
        ana, bob, one, two, agent_id, sid, tcid, text = await _parked_note(workers, tmp_path)
        assert (await one.act({"action": "approve", "tool_call_id": tcid}))["status"] == "approval_recorded"
        await two.refresh()
        edited = {**(two.pauses[tcid].input or {}), "text": text + "-edited"}
        got = await two.act({"action": "modify", "tool_call_id": tcid, "input": json.dumps(edited)})
        assert got["status"] == "approval_recorded" and [a["by"] for a in got["approvals"]] == ["bob"]
        await one.refresh()  # ana's card: the count started again from bob's edit, which is what she approves now
        assert _by(one, tcid) == ["bob"] and json.loads(one.pauses[tcid].to_view()["input_text"]) == edited
        await asyncio.sleep(0.5)
        assert workers.notes(text) == [] and workers.notes(text + "-edited") == []
        done = await one.act({"action": "approve", "tool_call_id": tcid})
        assert done["status"] == "delivered", done
        await until(lambda: _idle(ana, agent_id, sid), "the reply to finish")
        assert workers.notes(text) == [] and len(workers.notes(text + "-edited")) == 1
        (counted,) = [r for r in one.ledger.records(sid) if r["phase"] == "counted"]
        assert [(a["by"], a["action"]) for a in counted["approvals"]] == [("bob", "modify"), ("ana", "approve")]
        await ana.aclose()
        await bob.aclose()

    run_async(go())


def _approver(workers: Cluster, user: str, audit: Path, agent_id: str, sid: str, by: str, tcid: str, n: int, at: float):  # type: ignore[no-untyped-def]
    """The second console, in its own process (tests/service/approver.py)."""
    args = [workers.b.url, user, str(audit), agent_id, sid, by, tcid, str(n), str(at)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.service.approver", *args, cwd=ROOT, env=env, stdout=subprocess.PIPE
    )


def test_consoles_in_two_processes_approve_at_once_and_the_tool_runs_once(workers: Cluster, tmp_path: Path) -> None:
    """Three approvals needed: ana first, then carol here and bob in another process at
    the same moment. Both are counted (none lost), exactly one decides, the tool runs once."""

    async def go() -> None:
        ana, _bob, one, _two, agent_id, sid, tcid, text = await _parked_note(workers, tmp_path, approvals=3)
        assert (await one.act({"action": "approve", "tool_call_id": tcid}))["status"] == "approval_recorded"
        carol = _console(workers, ana.user_id, tmp_path / "audit.jsonl", "carol", 3)
        three = await carol.open(sid, agent_id, show=False)
        at = time.time() + 12.0  # the other process's imports and its first read are done by then
        proc = await _approver(workers, ana.user_id, tmp_path / "audit.jsonl", agent_id, sid, "bob", tcid, 3, at)
        await asyncio.sleep(max(0.0, at - time.time()))
        here, (out, _) = await asyncio.gather(
            three.act({"action": "approve", "tool_call_id": tcid}), asyncio.wait_for(proc.communicate(), 120)
        )
        there = json.loads(out.decode().strip().splitlines()[-1])
        assert there["ok"], there
        statuses = sorted([here["status"], there["answer"]["status"]])
        assert statuses == ["approval_recorded", "delivered"], (here, there)
        await until(lambda: _idle(ana, agent_id, sid), "the reply to finish")
        assert len(workers.notes(text)) == 1
        lines = [r for r in one.ledger.records(sid) if r["phase"] in ("approval", "counted")]
        assert [r["decided_by"] for r in lines][0] == "ana" and sorted(r["decided_by"] for r in lines[1:]) == [
            "bob",
            "carol",
        ]
        assert [a["by"] for a in lines[-1]["approvals"]] == ["ana", lines[1]["decided_by"], lines[2]["decided_by"]]
        for client in (ana, _bob, carol):
            await client.aclose()

    run_async(go())


def test_people_are_told_once_for_every_console_sharing_the_ledger(workers: Cluster, tmp_path: Path) -> None:
    """Notify on the console: the inbox finds the parked call, each person is told once
    (with the approvals it needs); a second console on the same ledger, and opening the
    session, tell nobody again; the ledger keeps one ``notified`` line, not an answer."""

    async def go() -> None:
        told: list[dict[str, Any]] = []
        user, audit = f"u-{uuid.uuid4().hex[:8]}", tmp_path / "audit.jsonl"
        kw: dict[str, Any] = {"audit_path": audit, "service_id": "cluster", "policies": [notes_policy(2)]}
        first = ServiceClient(workers.b.url, user, notify=Notify(told.append, to=["alice", "bob"]), **kw)
        other = ServiceClient(workers.a.url, user, notify=Notify(told.append, to=["alice", "bob"]), **kw)
        text = f"note-{uuid.uuid4().hex[:8]}"
        agent_id, sid = await park(first, workers.model.base_url, note_prompt(text))
        await first.refresh()
        assert first.notices is not None and other.notices is not None
        await first.notices.drain(10)
        assert sorted(t["to"] for t in told) == ["alice", "bob"], told
        assert {t["session_id"] for t in told} == {sid} and told[0]["approvals"] == {"needed": 2, "by": []}
        assert told[0]["tool_name"] == "write_note" and told[0]["policy"] == "notes" and told[0]["link"] is None
        await other.refresh()
        await first.open(sid, agent_id, show=False)
        await other.open(sid, agent_id, show=False)
        await other.notices.drain(10)
        assert len(told) == 2 and [d.ok for d in first.notices.notify.deliveries] == [True, True]
        lines = AuditLog(audit).records()
        assert [r["event"] for r in lines] == ["notified"] and AuditLog(audit).records("answered") == []
        assert lines[0]["to"] == ["alice", "bob"] and lines[0]["origin"]["service_session_id"] == sid
        for client in (first, other):
            await client.aclose()

    run_async(go())


def test_inbox_rows_show_the_approvals_and_refuse_the_same_person_in_the_cards_words(
    workers: Cluster, tmp_path: Path
) -> None:
    """The inbox's rows of a call that needs two approvals: each row says how many it has
    (the row's op carries them, the page draws them with the card's text: js tests), an
    approval from the row changes that row only, another console's row follows the shared
    ledger by itself, the same person approving again from the row is refused with the
    sentence the card says, and the second person's approval from the row runs the tool once."""

    async def go() -> None:
        ana, bob, one, _two, agent_id, sid, tcid, text = await _parked_note(workers, tmp_path)
        (bob_row,) = [r for r in await bob.refresh() if r["session_id"] == sid]
        assert (bob_row["approvals_needed"], bob_row["approvals"]) == (2, [])
        bob.make_view()
        bob.start()  # follows the service and the ledger
        await ana.refresh()
        widget = ana.make_view().inbox
        wire = Wire(widget)
        assert widget.rows_sync(-1)["rows"][0]["approvals"] == []
        row = {"session_id": sid, "agent_id": agent_id}
        (got,) = await ana.approve_selected([row])
        assert (got["ok"], got["code"]) == (True, "approval_recorded"), got

        async def row_ops() -> list[dict[str, Any]]:
            return [op for m in wire.custom("nbh_inbox") for op in m["ops"]]

        ops = await until(row_ops, "the row's op", timeout=5, every=0.05)  # pushed within 0.1 s
        assert [op["row"]["session_id"] for op in ops] == [sid]  # that row only
        (mine,) = ops[0]["row"]["approvals"]
        assert (mine["by"], mine["action"]) == ("ana", "approve") and abs(mine["at"] - time.time()) < 60
        assert ops[0]["row"]["approvals_needed"] == 2
        # the same person again, from the row: refused, nothing recorded, in the card's words
        with pytest.raises(DecisionError) as card:
            await one.act({"action": "approve", "tool_call_id": tcid})
        (again,) = await ana.approve_selected([row])
        assert (again["ok"], again["text"]) == (False, str(card.value)), again
        assert str(card.value).startswith("ana already approved this call; it needs 2 approvals from distinct people")
        assert widget.outcomes[sid]["text"] == str(card.value)
        assert [r["phase"] for r in ana.ledger.records(sid)] == ["approval"]

        async def bob_sees_ana() -> bool:
            (shown,) = [r for r in bob.view.inbox.rows if r["session_id"] == sid]
            return [a["by"] for a in shown["approvals"]] == ["ana"]

        await until(bob_sees_ana, "ana's approval on bob's row", timeout=15)
        (done,) = await bob.approve_selected([row])
        assert (done["ok"], done["code"]) == (True, "delivered"), done
        await until(lambda: _idle(ana, agent_id, sid), "the reply to finish")
        assert len(workers.notes(text)) == 1
        await ana.aclose()
        await bob.aclose()

    run_async(go())
