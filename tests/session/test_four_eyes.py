"""M-of-N approvals (``Policy(approvals=2)``) through the one answer pipeline.

Real AgentScope ``Agent`` s on the scripted model, the real permission chain
with the policy middleware; answers through ``Session.act`` (the road a
click takes) with different ``decided_by``. Checked: the call runs once,
after the last approval; a denial vetoes and the model reads who denied it;
the same person twice is refused; a modify restarts the count; the card's
view and the audit lines.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from nb_hitl import Session
from nb_hitl.answers.front import BatchRefused
from nb_hitl.answers.record import origin
from nb_hitl.errors import DecisionError
from nb_hitl.models import Turn, tool_call
from nb_hitl.policy import Policy, policy_middleware
from nb_hitl.store import AuditLog
from tests.session.test_policy import Mail, agent_for, report, settle
from tests.support import run_async

FOUR_EYES = Policy("four eyes", tools=["send_payment"], approvals=2, distinct=True)


def payer(mail: Mail, policy: Policy = FOUR_EYES) -> Any:
    script = [Turn("Paying.", [tool_call("send_payment", to="ACME", amount=120.0)]), report]
    return agent_for(mail, script, middlewares=[policy_middleware(policy)])


async def open_payment(mail: Mail, audit: Path, **kwargs: Any) -> tuple[Session, asyncio.Task[Any], Any]:
    """A session of :func:`payer` (recording to ``audit``) parked on its payment: (session, run task, pause)."""
    session = Session(payer(mail), display=False, audit_log=str(audit), **kwargs)
    task = session.start("pay ACME")
    return session, task, await settle(session, task)


async def modify_amount(session: Session, pause: Any, amount: float, by: str) -> dict[str, Any]:
    """``by`` modifies the payment's amount (a Modify through ``Session.act``)."""
    edited = json.dumps({"to": "ACME", "amount": amount})
    got: dict[str, Any] = await session.act(
        {"action": "modify", "tool_call_id": pause.tool_call_id, "input": edited}, decided_by=by
    )
    return got


def test_two_approvals_from_two_people_run_the_call_once_after_the_second(tmp_path: Path) -> None:
    mail = Mail()
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> Any:
        session, task, pause = await open_payment(mail, audit, decided_by="alice")
        assert pause.to_view()["approvals_needed"] == 2
        first = await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        assert first["status"] == "approval_recorded"
        assert [a["by"] for a in first["approvals"]] == ["alice"]
        assert pause.status == "open" and mail.sent == []
        assert session.current.status == "paused" and not task.done()
        view = pause.to_view()
        assert [a["by"] for a in view["approvals"]] == ["alice"] and view["approvals"][0]["at"] > 0
        where = origin("agui", thread_id="t1", run_id="r9", principal="bob")
        second = await session.act(
            {"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="bob", origin=where
        )
        assert second["status"] == "decided"
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario())
    assert mail.sent == [("ACME", 120.0)]  # once, after the second approval
    assert final.get_text_content() == "send_payment success: paid 120.0 to ACME"
    records = AuditLog(audit).records("answered")
    assert [(r["decision"], r["decided_by"], r["origin"]["road"], r["approval"]) for r in records] == [
        ("approve", "alice", "kernel", {"count": 1, "needed": 2}),
        ("approve", "bob", "agui", {"count": 2, "needed": 2}),
    ]
    assert [a["by"] for a in records[-1]["approvals"]] == ["alice", "bob"]
    assert "approvals" not in records[0]  # the list goes with the final decision


@pytest.mark.parametrize("again", ["alice", "Alice", " alice "])  # one person whatever the case or spaces
def test_the_same_person_twice_is_refused(tmp_path: Path, again: str) -> None:
    mail = Mail()
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> Any:
        session, task, pause = await open_payment(mail, audit)
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="alice")
        with pytest.raises(DecisionError, match=r"already approved this call; it needs 2 approvals from distinct"):
            await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by=again)
        assert pause.status == "open" and mail.sent == []
        assert [a["by"] for a in pause.to_view()["approvals"]] == ["alice"]
        # a batch (the road of "Approve all" and of an AG-UI resume) is refused the same way
        with pytest.raises(Exception, match="already approved this call"):
            await session.act_all([{"action": "approve", "tool_call_id": pause.tool_call_id}], decided_by=again)
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="Carol ")
        return await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert mail.sent == [("ACME", 120.0)]
    assert [r["decided_by"] for r in AuditLog(audit).records("answered")] == ["alice", "Carol "]  # names as given


def test_one_deny_vetoes_and_the_model_reads_who_and_why(tmp_path: Path) -> None:
    mail = Mail()
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> Any:
        session, task, pause = await open_payment(mail, audit)
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="alice")
        got = await session.act(
            {"action": "deny", "tool_call_id": pause.tool_call_id, "reason": "not on the invoice list"},
            decided_by="bob",
        )
        assert got["status"] == "decided"
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario()).get_text_content()
    assert mail.sent == []
    assert "bob denied your call" in final and "approved before by alice" in final
    assert "not on the invoice list" in final
    records = AuditLog(audit).records("answered")
    assert [(r["decision"], r["decided_by"]) for r in records] == [("approve", "alice"), ("deny", "bob")]
    assert [(a["by"], a["action"]) for a in records[-1]["approvals"]] == [("alice", "approve"), ("bob", "deny")]


def test_a_modify_restarts_the_count_and_everyone_approves_the_edited_input(tmp_path: Path) -> None:
    mail = Mail()
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> Any:
        session, task, pause = await open_payment(mail, audit)
        tcid = pause.tool_call_id
        await session.act({"action": "approve", "tool_call_id": tcid}, decided_by="alice")
        assert (await modify_amount(session, pause, 100.0, "bob"))["status"] == "approval_recorded"
        view = pause.to_view()
        assert [a["by"] for a in view["approvals"]] == ["bob"]  # alice approved another input
        assert json.loads(view["input_text"]) == {"to": "ACME", "amount": 100.0}
        with pytest.raises(DecisionError, match="bob already approved"):
            await session.act({"action": "approve", "tool_call_id": tcid}, decided_by="bob")
        await session.act({"action": "approve", "tool_call_id": tcid}, decided_by="alice")
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario()).get_text_content()
    assert mail.sent == [("ACME", 100.0)]  # the edited input ran, once
    assert "paid 100.0 to ACME" in final
    records = AuditLog(audit).records("answered")
    assert [(r["decision"], r["decided_by"], r["approval"]["count"]) for r in records] == [
        ("approve", "alice", 1),
        ("modify", "bob", 1),
        ("modify", "alice", 2),  # the final decision is the edited call, approved by both
    ]
    assert records[-1]["edited_input"] == {"to": "ACME", "amount": 100.0}


def test_an_edit_is_compared_with_the_input_the_card_shows_not_the_models(tmp_path: Path) -> None:
    mail = Mail()
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> Any:
        session, task, pause = await open_payment(mail, audit)
        await modify_amount(session, pause, 100.0, "alice")
        # the preview of bob's edit compares with what his card shows: alice's edit, named so
        edit = json.dumps({"to": "ACME", "amount": 90.0})
        shown = await session.act({"action": "preview", "tool_call_id": pause.tool_call_id, "input": edit})
        diff = shown["preview"]["diff"]
        lines = diff.splitlines()
        assert lines[:2] == ["--- edit approved so far", "+++ edited input"]
        assert '-  "amount": 100.0,' in lines and '+  "amount": 90.0,' in lines
        with pytest.raises(DecisionError, match="changes nothing: press Approve to run the call with the edited input"):
            await modify_amount(session, pause, 100.0, "bob")
        # back to the model's input: a real edit of what the card shows, the count starts again
        assert (await modify_amount(session, pause, 120.0, "bob"))["status"] == "approval_recorded"
        assert [a["by"] for a in pause.to_view()["approvals"]] == ["bob"]
        assert json.loads(pause.to_view()["input_text"]) == {"to": "ACME", "amount": 120.0}
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="alice")
        return await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert mail.sent == [("ACME", 120.0)]
    records = AuditLog(audit).records("answered")
    assert [r["decided_by"] for r in records] == ["alice", "bob", "alice"]
    assert records[-1]["approval"] == {"count": 2, "needed": 2}  # bob's edit, then alice


def test_a_batch_naming_the_same_call_twice_is_told_so(tmp_path: Path) -> None:
    mail = Mail()

    async def scenario() -> Any:
        session, task, pause = await open_payment(mail, tmp_path / "audit.jsonl")
        twice = [{"action": "approve", "tool_call_id": pause.tool_call_id}] * 2
        with pytest.raises(BatchRefused, match="twice: a call takes one answer") as refused:
            await session.act_all(twice, decided_by="alice")
        assert pause.status == "open" and pause.approvals == []  # nothing was taken
        return refused.value.results

    first, second = run_async(scenario())
    assert first["ok"] is True  # refused with the batch: all or nothing
    assert second["ok"] is False and second["field"] == "tool_call_id"
    assert "This batch names" in second["error"] and "being checked right now" not in second["error"]
    assert mail.sent == []


def test_approvals_must_be_a_positive_integer() -> None:
    with pytest.raises(ValueError, match="approvals must be a positive integer"):
        Policy("p", tools=["send_payment"], approvals=0)
    assert Policy("p", tools=["a", "b"], approvals={"a": 3}).approvals_for("b") == 1


def test_the_session_deadline_covers_all_the_approvals(tmp_path: Path) -> None:
    mail = Mail()
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> Any:
        session, task, pause = await open_payment(mail, audit, deadline=60, on_deadline="deny")
        deadline = pause.deadline
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="alice")
        assert pause.deadline == deadline  # an approval does not restart the clock
        session.desk.deadline_passed(session.current, pause)  # what the pause's timer runs at the deadline
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario()).get_text_content()
    assert mail.sent == []  # one approval of two: the deadline's default (deny) applies
    # alice answered: the model is not told that nobody did
    assert "did not run: it needed 2 approvals and had 1 (alice) when the deadline passed. Nobody denied it" in final
    assert "nobody answered" not in final
    assert [(r["decision"], r["decided_by"]) for r in AuditLog(audit).records("answered")] == [
        ("approve", "alice"),
        ("timeout", "deadline"),
    ]


def test_a_second_approval_while_the_first_is_checked_is_told_the_truth() -> None:
    mail = Mail()
    agent = payer(mail)

    async def scenario() -> Any:
        session = Session(agent, display=False)
        task = session.start("pay ACME")
        pause = await settle(session, task)
        first = session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="alice")
        assert pause.status == "deciding"  # the front door took it; its checks run when awaited
        with pytest.raises(DecisionError, match="is being checked right now .it needs 2 approvals.; answer again"):
            session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="bob")
        assert (await first)["status"] == "approval_recorded"
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="bob")
        return await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert mail.sent == [("ACME", 120.0)]


def test_approvals_so_far_survive_a_restart_with_the_checkpoint(tmp_path: Path) -> None:
    mail = Mail()
    ckpt = tmp_path / "ckpt"
    audit = tmp_path / "audit.jsonl"

    def build(state: Any = None) -> Any:
        first = [] if state is not None else [Turn("Paying.", [tool_call("send_payment", to="ACME", amount=120.0)])]
        return agent_for(mail, [*first, report], state=state, middlewares=[policy_middleware(FOUR_EYES)])

    async def first() -> str:
        session = Session(build(), display=False, checkpoints=str(ckpt), audit_log=str(audit))
        task = session.start("pay ACME")
        pause = await settle(session, task)
        edited = json.dumps({"to": "ACME", "amount": 99.0})
        await session.act({"action": "modify", "tool_call_id": pause.tool_call_id, "input": edited}, decided_by="alice")
        task.cancel()  # the kernel "dies" here
        sid = session.session_id
        session.close()
        return sid

    sid = run_async(first())

    async def second() -> None:
        session = Session.restore(build, str(ckpt), sid, display=False, audit_log=str(audit))
        task = session.start_resume()
        pause = await settle(session, task)
        view = pause.to_view()
        assert [(a["by"], a["action"]) for a in view["approvals"]] == [("alice", "modify")]
        assert json.loads(view["input_text"]) == {"to": "ACME", "amount": 99.0}
        with pytest.raises(DecisionError, match="alice already approved"):
            await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="alice")
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="bob")
        await asyncio.wait_for(task, 10)

    run_async(second())
    assert mail.sent == [("ACME", 99.0)]
    assert [(r["decision"], r["decided_by"]) for r in AuditLog(audit).records("answered")] == [
        ("modify", "alice"),
        ("modify", "bob"),
    ]


@pytest.mark.parametrize(
    ("message", "refused"),
    [
        ({"action": "approve"}, False),
        ({"action": "deny", "reason": "no"}, False),
        ({"action": "approve", "rules": [0]}, True),  # rules to keep are the owner's
        ({"action": "modify", "input": '{"to": "EVE", "amount": 1.0}'}, True),
    ],
)
def test_another_principal_may_approve_or_deny_but_not_keep_rules_or_edit(
    tmp_path: Path, message: dict[str, Any], refused: bool
) -> None:
    """AG-UI's check of a resume sent by someone who does not own the thread (the second pair of eyes)."""
    from nb_hitl.agui.refusals import Refusal, check_answerer

    async def scenario() -> Any:
        session, task, pause = await open_payment(Mail(), tmp_path / "audit.jsonl")
        answers = [(pause, {**message, "tool_call_id": pause.tool_call_id})]
        check_answerer("t", "alice", "alice", answers)  # the owner may send anything
        try:
            check_answerer("t", "alice", "eve", answers)
        except Refusal as refusal:
            return refusal
        finally:
            task.cancel()
        return None

    got = run_async(scenario())
    if refused:
        assert got is not None and got.code == "not_owner"
        assert "only the thread's owner may edit the call or keep rules" in str(got)
    else:
        assert got is None


def test_a_deadline_that_stops_the_reply_after_one_approval_tells_the_model_who_approved(tmp_path: Path) -> None:
    mail = Mail()

    async def scenario() -> Any:
        session, task, pause = await open_payment(mail, tmp_path / "audit.jsonl", deadline=60, on_deadline="interrupt")
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="alice")
        session.desk.deadline_passed(session.current, pause)  # what the pause's timer runs at the deadline
        await asyncio.wait_for(task, 10)
        return session.agent.state.context

    context = run_async(scenario())
    told = " ".join(m.get_text_content() or "" for m in context) + " ".join(
        str(b.output) for m in context for b in m.get_content_blocks("tool_result")
    )
    assert mail.sent == []
    assert "it needed 2 approvals and had 1 (alice) when the deadline passed, so the reply was stopped" in told
    assert "nobody answered" not in told
