"""The service's own policy (nb_hitl.service.required): a call that needs two
approvals is not run on one, whoever answers. Against a real worker pair whose
service has the policy (Redis bus database 1, PostgreSQL, the fake model;
tests/conftest.py), and the middleware's decision on AgentScope's own events."""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agentscope.event import ConfirmResult, UserConfirmResultEvent
from agentscope.message import ToolCallBlock

from nb_hitl.policy import Policy
from nb_hitl.service import ServiceClient
from nb_hitl.service.http import confirm_body
from nb_hitl.service.required import APPROVALS_KEY, load_policies, shortfall
from nb_hitl.service.told import NOTES_KEY
from tests.service.cluster import Cluster, FakeModel, PostgresServer, RedisServer
from tests.service.test_four_eyes import _idle, _parked_note, _tool_results
from tests.service.test_pieces import CALL
from tests.service.test_scale_out import note_prompt, park, until
from tests.support import run_async

pytestmark = pytest.mark.timeout(300)
POLICY = {"name": "notes", "tools": ["write_note"], "approvals": 2}


@pytest.fixture(scope="module")
def guarded(redis_server: RedisServer, postgres: PostgresServer, fake_model: FakeModel) -> Iterator[Cluster]:
    """Two workers whose service enforces :data:`POLICY` (``NB_HITL_SERVICE_POLICIES``)."""
    folder = Path(tempfile.mkdtemp(prefix="nbh-guarded-"))
    (folder / "policies.json").write_text(json.dumps([POLICY]))
    env = {"NB_HITL_SERVICE_POLICIES": str(folder / "policies.json")}
    c = Cluster(redis_server, postgres, fake_model, folder, env=env, bus_db=1).start()
    try:
        yield c
    finally:
        c.stop()


def _confirm(metadata: dict[str, Any] | None = None, *, confirmed: bool = True, name: str = "write_note") -> Any:
    call = ToolCallBlock.model_validate({**CALL, "name": name})
    result = ConfirmResult(confirmed=confirmed, tool_call=call)
    return UserConfirmResultEvent(reply_id="reply-1", confirm_results=[result], metadata=metadata or {})


def _carried(*names: str) -> dict[str, Any]:
    return {APPROVALS_KEY: {"call_1": [{"decided_by": n, "at": 1.0} for n in names]}}


def test_the_decision_on_agentscope_events(tmp_path: Path) -> None:
    policies = [Policy("notes", tools=["write_note"], approvals=2)]
    short = shortfall(policies, _confirm(_carried("alice")), "u1")
    assert short == {
        "call_1": "Not run: this call needs 2 approvals from distinct people (the service's policy 'notes', "
        "tool write_note); the answer carried 1 (alice)."
    }
    assert "carried 1 (alice)" in shortfall(policies, _confirm(_carried("alice", "alice")), "u1")["call_1"]
    assert shortfall(policies, _confirm(_carried("alice", "bob")), "u1") == {}
    assert "carried 1 (u1)" in shortfall(policies, _confirm(), "u1")["call_1"]  # no count: the sender alone
    assert "carried none" in shortfall(policies, _confirm({APPROVALS_KEY: {"call_1": "x"}}), "u1")["call_1"]
    assert shortfall(policies, _confirm(confirmed=False), "u1") == {}  # a denial always passes
    assert shortfall(policies, _confirm(name="slow_job"), "u1") == {}
    # renamed in the confirmation: the call as parked is matched too
    parked = {"call_1": ToolCallBlock.model_validate(CALL)}
    assert shortfall(policies, _confirm(name="slow_job"), "u1", parked)
    same = [Policy("notes", tools=["write_note"], approvals=2, distinct=False)]
    assert shortfall(same, _confirm(_carried("alice", "alice")), "u1") == {}
    (tmp_path / "p.toml").write_text('[[policy]]\nname = "notes"\ntools = ["write_note"]\napprovals = 2\n')
    assert load_policies(tmp_path / "p.toml") == (Policy("notes", tools=("write_note",), approvals=2),)
    (tmp_path / "p.json").write_text(json.dumps([{**POLICY, "when": "x"}]))
    with pytest.raises(ValueError, match="unknown policy field 'when'"):
        load_policies(tmp_path / "p.json")


def test_the_middleware_turns_a_short_confirmation_into_a_told_denial() -> None:
    from agentscope.event import ToolResultEndEvent, ToolResultStartEvent

    from nb_hitl.service.required import RequiredMiddleware
    from nb_hitl.session._promise import NOT_RUN_KEY

    seen: list[Any] = []

    async def inner(**kw: Any) -> Any:
        seen.append(kw["inputs"])
        yield ToolResultStartEvent(reply_id="reply-1", tool_call_id="call_1", tool_call_name="write_note")
        yield ToolResultEndEvent(reply_id="reply-1", tool_call_id="call_1", state="denied")

    async def go() -> list[Any]:
        mw = RequiredMiddleware([Policy("notes", tools=["write_note"], approvals=2)], "u1")
        return [e async for e in mw.on_reply(None, {"inputs": _confirm(_carried("alice"))}, inner)]  # no parked calls

    out = run_async(go())
    (sent,) = seen
    assert [r.confirmed for r in sent.confirm_results] == [False]
    assert "carried 1 (alice)" in sent.metadata[NOTES_KEY]["call_1"]  # what ToldMiddleware puts in the result
    assert all("carried 1 (alice)" in e.metadata[NOT_RUN_KEY] for e in out)


async def _alone(guarded: Cluster, tmp_path: Path) -> tuple[Any, ...]:
    """A parked ``write_note`` call on the card of alice's console, which has no policy."""
    user, text = f"u-{uuid.uuid4().hex[:8]}", f"note-{uuid.uuid4().hex[:8]}"
    alice = ServiceClient(guarded.b.url, user, audit_path=tmp_path / "a.jsonl", decided_by="alice")
    agent_id, sid = await park(alice, guarded.model.base_url, note_prompt(text))
    card = await alice.open(sid, agent_id, show=False)
    (tcid,) = card.pauses
    return alice, card, agent_id, sid, tcid, text


def test_a_console_without_the_policy_cannot_run_the_call(guarded: Cluster, tmp_path: Path) -> None:
    async def go() -> None:
        alice, card, agent_id, sid, tcid, text = await _alone(guarded, tmp_path)
        assert card.pauses[tcid].approvals_needed == 1  # this console has no policy
        got = await card.act({"action": "approve", "tool_call_id": tcid})
        why = "Not run: this call needs 2 approvals from distinct people"
        assert why in got["outcome"] and "carried 1 (alice)" in got["outcome"]
        pause = card.pauses[tcid]
        assert pause.status == "expired" and why in (pause.reason or "")
        assert "applied" not in (pause.reason or "").lower() and "approved" not in (pause.reason or "").lower()
        await until(lambda: _idle(alice, agent_id, sid), "the reply to finish")
        assert guarded.notes(text) == []
        body = await alice.http.messages(agent_id, sid)
        (result,) = _tool_results(body, tcid)
        assert why in result and "(alice)" in result and "denied by user" not in result
        said = [b.get("text") for m in body["messages"] for b in m.get("content") or [] if isinstance(b, dict)]
        assert any(isinstance(t, str) and t.startswith("Done: ") and why in t for t in said), said
        (line,) = [r for r in card.ledger.records(sid) if r["phase"] != "sending"]
        assert line["decision"] == "approve" and why in line["detail"]
        await alice.aclose()

    run_async(go())


def test_two_consoles_with_the_policy_run_the_call_once(guarded: Cluster, tmp_path: Path) -> None:
    async def go() -> None:
        ana, bob, one, two, agent_id, sid, tcid, text = await _parked_note(guarded, tmp_path)
        assert (await one.act({"action": "approve", "tool_call_id": tcid}))["status"] == "approval_recorded"
        await two.refresh()
        done = await two.act({"action": "approve", "tool_call_id": tcid})
        assert done["status"] == "delivered" and "Applied by the service" in done["outcome"], done
        assert two.pauses[tcid].status == "delivered"
        await until(lambda: _idle(ana, agent_id, sid), "the reply to finish")
        assert len(guarded.notes(text)) == 1
        await ana.aclose()
        await bob.aclose()

    run_async(go())


def test_a_denial_from_a_console_without_the_policy_is_a_denial(guarded: Cluster, tmp_path: Path) -> None:
    async def go() -> None:
        alice, card, agent_id, sid, tcid, text = await _alone(guarded, tmp_path)
        got = await card.act({"action": "deny", "tool_call_id": tcid, "reason": "wrong account"})
        assert got["status"] == "delivered" and "Not run" not in got["outcome"]
        assert card.pauses[tcid].status == "delivered" and card.pauses[tcid].decision["note"]
        await until(lambda: _idle(alice, agent_id, sid), "the reply to finish")
        assert guarded.notes(text) == []
        (result,) = _tool_results(await alice.http.messages(agent_id, sid), tcid)
        assert "wrong account" in result and "approvals" not in result
        await alice.aclose()

    run_async(go())


def test_another_client_of_the_service_counts_as_its_sender_alone(guarded: Cluster, tmp_path: Path) -> None:
    """A raw confirmation (no count in its metadata, as any other client posts it): not run either."""

    async def go() -> None:
        alice, card, agent_id, sid, tcid, text = await _alone(guarded, tmp_path)
        pause = card.pauses[tcid]
        body = confirm_body(pause.reply_id, [ConfirmResult(confirmed=True, tool_call=pause.tool_call)])
        got = await card.send_raw(body, [tcid], "approve")
        assert f"carried 1 ({alice.user_id})" in got.detail and got.not_run
        await until(lambda: _idle(alice, agent_id, sid), "the reply to finish")
        assert guarded.notes(text) == [] and card.pauses[tcid].status == "expired"
        await alice.aclose()

    run_async(go())
