"""Pause deadlines (``Session(deadline=..., on_deadline=...)``), in-process.

Real AgentScope ``Agent`` s on the scripted model; the Session displays a real
``ReplyWidget`` (outside a kernel its comm is ipywidgets' dummy comm, the
traits are the same JSON the page receives). Deadlines are small (0.3-0.5 s)
and the tests wait for what the deadline causes, never assert durations.

Checked: the default is applied (a denial, an error result, or an
interrupted reply), the audit log has a ``timeout`` line saying what was
applied, the widget's pause shows ``decision: {"action": "timeout"}``, and a
click after the deadline is refused with ``PauseNotLiveError`` naming the
deadline.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import ToolResultState
from agentscope.permission import PermissionBehavior, PermissionRule
from agentscope.state import AgentState
from agentscope.tool import AskUser, FunctionTool, Toolkit

from nb_hitl import PauseNotLiveError, Session
from nb_hitl.demo import make_sandbox, sandbox_tools
from nb_hitl.kinds.form import FormTool
from nb_hitl.kinds.review_tool import reviewed
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from nb_hitl.store import AuditLog
from tests.support import run_async, wait_until
from tests.support_agents import sandbox_agent, scripted_agent


def report(msgs: list[Any]) -> Turn:
    return Turn(" | ".join(f"{r.name} {r.state}: {result_text(r)}" for r in tool_results(msgs)))


def delete_agent(folder: Path) -> Agent:
    return sandbox_agent(folder, [Turn("Deleting.", [tool_call("delete_file", path="notes.txt")]), report])


def widget_pause(session: Session) -> dict[str, Any]:
    """The pause as the page sees it (the ReplyWidget's synced ``pauses`` trait)."""
    pauses = session.current.widget.pauses
    assert len(pauses) == 1
    return pauses[0]


def test_deny_is_applied_when_the_deadline_passes(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    agent = delete_agent(folder)
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> None:
        session = Session(agent, audit_log=str(audit), deadline=0.4, on_deadline="deny")
        task = session.start("delete notes.txt")
        pause = await wait_until(lambda: session.pending and session.pending[0], "the confirmation")
        await wait_until(lambda: session.current.widget.pauses, "the pause in the widget")
        view = widget_pause(session)
        assert view["deadline"] == pytest.approx(view["created_at"] + 0.4)
        assert view["decision"] is None and view["status"] == "open"
        final = await asyncio.wait_for(task, 10)  # no click: the deadline decides
        # C17: the model reads that nobody answered, not that the user denied it
        text = final.get_text_content()
        assert text.startswith("delete_file denied: The call to delete_file did not run: nobody answered")
        assert "denied by user" not in text
        view = widget_pause(session)
        assert view["decision"] == {"action": "timeout", "applied": "denied"}
        assert session.current.widget.status == "finished"
        with pytest.raises(PauseNotLiveError, match="deadline") as late:
            session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        assert "denied" in str(late.value)

    run_async(scenario())
    assert sorted(p.name for p in folder.iterdir()) == ["draft.md", "notes.txt", "old_log.txt"]
    records = AuditLog(audit).records("answered")
    assert [(r["tool_name"], r["decision"], r["applied"]) for r in records] == [("delete_file", "timeout", "denied")]
    denied = tool_results(agent.model.calls[-1], "delete_file")[-1]
    assert denied.state == ToolResultState.DENIED


def test_interrupt_is_applied_when_the_deadline_passes(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    agent = delete_agent(folder)
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> None:
        session = Session(agent, audit_log=str(audit), deadline=0.3, on_deadline="interrupt")
        task = session.start("delete notes.txt")
        pause = await wait_until(lambda: session.pending and session.pending[0], "the confirmation")
        await asyncio.wait_for(task, 10)
        run = session.current
        assert run.status == "interrupted"
        assert "deadline" in run.reason
        assert run.widget.status == "interrupted"
        view = widget_pause(session)
        assert view["decision"] == {"action": "timeout", "applied": "reply interrupted"}
        assert view["status"] == "expired" and "deadline passed" in view["reason"]
        with pytest.raises(PauseNotLiveError, match="deadline"):
            session.act({"action": "approve", "tool_call_id": pause.tool_call_id})

    run_async(scenario())
    assert len(agent.model.calls) == 1  # the reply ended without another model call
    records = AuditLog(audit).records("answered")
    assert [(r["decision"], r["applied"]) for r in records] == [("timeout", "reply interrupted")]
    results = tool_results(agent.state.context, "delete_file")
    assert [r.state for r in results] == [ToolResultState.INTERRUPTED]
    assert sorted(p.name for p in folder.iterdir()) == ["draft.md", "notes.txt", "old_log.txt"]


def _question() -> dict[str, Any]:
    return {
        "questions": [
            {
                "question": "Which file?",
                "header": "File",
                "options": [{"label": "a.txt", "description": "A"}, {"label": "b.txt", "description": "B"}],
            }
        ]
    }


def test_non_confirm_pauses_get_an_error_result(tmp_path: Path) -> None:
    """AskUser, a form and a review: the default is an ERROR result; a
    reviewed tool's raw output never reaches the model."""
    runs: list[str] = []

    def lookup(customer: str) -> str:
        """Look up a customer.

        Args:
            customer (str): name.
        """
        runs.append(customer)
        return "SECRET-CARD-4111"

    state = AgentState()
    state.permission_context.allow_rules["lookup"] = [
        PermissionRule(tool_name="lookup", rule_content=None, behavior=PermissionBehavior.ALLOW, source="t")
    ]
    agent = Agent(
        name="asker",
        system_prompt="x",
        model=ScriptedChatModel(
            [
                Turn(
                    "",
                    [
                        tool_call("AskUser", **_question()),
                        tool_call(
                            "AskForm",
                            title="Refund",
                            schema={"type": "object", "properties": {"n": {"type": "number"}}},
                        ),
                        tool_call("lookup", customer="Ana"),
                    ],
                ),
                report,
            ],
            on_exhausted="raise",
        ),
        toolkit=Toolkit(tools=[AskUser(), FormTool(), reviewed(FunctionTool(lookup))]),
        state=state,
    )
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> Any:
        session = Session(agent, audit_log=str(audit), deadline=0.5)
        task = session.start("go")
        await wait_until(lambda: len(session.pending) == 3, "three open pauses")
        assert sorted(p.kind for p in session.pending) == ["ask_user", "form", "review"]
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario()).get_text_content()
    assert final == " | ".join(
        f"{name} error: The user did not answer before the deadline." for name in ("AskUser", "AskForm", "lookup")
    )
    assert runs == ["Ana"]
    assert "SECRET-CARD-4111" not in "".join(m.model_dump_json() for call in agent.model.calls for m in call)
    records = AuditLog(audit).records("answered")
    assert sorted((r["tool_name"], r["decision"], r["applied"]) for r in records) == [
        ("AskForm", "timeout", "error returned to the agent"),
        ("AskUser", "timeout", "error returned to the agent"),
        ("lookup", "timeout", "error returned to the agent"),
    ]


def test_a_decision_in_time_wins_and_the_deadline_does_nothing(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    agent = delete_agent(folder)
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> None:
        session = Session(agent, audit_log=str(audit), deadline=0.3)
        task = session.start("delete notes.txt")
        pause = await wait_until(lambda: session.pending and session.pending[0], "the confirmation")
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        await asyncio.wait_for(task, 10)
        await asyncio.sleep(0.5)  # let the deadline's timer fire: it must find the pause decided
        shown = str(folder / "notes.txt")  # the card's diff of the deletion: what the approval was bound to
        assert widget_pause(session)["decision"] == {"action": "approve", "confirmed": True, "file_shown": shown}

    run_async(scenario())
    assert [r["decision"] for r in AuditLog(audit).records("answered")] == ["approve"]
    assert sorted(p.name for p in folder.iterdir()) == ["draft.md", "old_log.txt"]


def test_a_click_after_the_deadline_but_before_its_timer_is_refused(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    agent = delete_agent(folder)

    async def scenario() -> None:
        session = Session(agent, display=False, deadline=60)
        session.start("delete notes.txt")
        pause = await wait_until(lambda: session.pending and session.pending[0], "the confirmation")
        pause.deadline = time.time() - 0.01  # the clock passed the deadline; the timer has not run yet
        with pytest.raises(PauseNotLiveError, match="deadline of this pause has passed"):
            session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        assert pause.status == "open"
        await session.interrupt()

    run_async(scenario())
    assert sorted(p.name for p in folder.iterdir()) == ["draft.md", "notes.txt", "old_log.txt"]


@pytest.mark.parametrize("kwargs", [{"deadline": 0}, {"deadline": -1}, {"on_deadline": "approve"}])
def test_bad_deadline_settings_are_refused(tmp_path: Path, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Session(delete_agent(make_sandbox(tmp_path / "box")), display=False, **kwargs)


def test_c17_interrupt_tells_the_model_nobody_answered_not_that_the_user_interrupted(tmp_path: Path) -> None:
    """``on_deadline="interrupt"`` with a confirmation and an AskUser: only the AskUser
    is answered. The model reads, for the call nobody confirmed, that nobody answered
    before the deadline (not AgentScope's "interrupted by the user"), and the final
    text says why the reply stopped (not AgentScope's "I notice the interruption")."""
    folder = make_sandbox(tmp_path / "box")
    turn = Turn("", [tool_call("delete_file", path="draft.md"), tool_call("AskUser", **_question())])
    agent = scripted_agent([turn, report, report], [*sandbox_tools(folder), AskUser()])
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> Any:
        session = Session(agent, display=False, audit_log=str(audit), deadline=0.5, on_deadline="interrupt")
        task = session.start("tidy")
        await wait_until(lambda: len(session.pending) == 2, "both pauses")
        asked = next(p for p in session.pending if p.kind == "ask_user")
        await session.act(
            {
                "action": "answer",
                "tool_call_id": asked.tool_call_id,
                "answers": [{"question": "Which file?", "selected": ["a.txt"]}],
            }
        )
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario())
    (deleted,) = tool_results(agent.state.context, "delete_file")
    assert deleted.state == ToolResultState.INTERRUPTED
    told = result_text(deleted)
    assert "nobody answered the confirmation before the deadline" in told and "interrupted by the user" not in told
    assert final.get_text_content() == (
        "Nobody answered the confirmation about delete_file before the deadline, so the reply was stopped."
    )
    records = AuditLog(audit).records("answered")
    assert [(r["tool_name"], r["decision"]) for r in records] == [("AskUser", "answer"), ("delete_file", "timeout")]
    assert sorted(p.name for p in folder.iterdir()) == ["draft.md", "notes.txt", "old_log.txt"]


@pytest.mark.parametrize("second", ["delete_file", "AskUser"])
def test_c17_interrupt_tells_the_model_why_the_other_call_did_not_run(tmp_path: Path, second: str) -> None:
    """Nobody answers. A second ``delete_file`` of the turn is left ``pending`` by
    AgentScope (never asked); an AskUser is open beside the confirmation. When the
    first deadline stops the reply, every call's result says it did not run because
    nobody answered before the deadline; none says the user interrupted."""
    folder = make_sandbox(tmp_path / "box")
    call = (
        tool_call("delete_file", path="notes.txt") if second == "delete_file" else tool_call("AskUser", **_question())
    )
    agent = scripted_agent(
        [Turn("", [tool_call("delete_file", path="draft.md"), call]), report], [*sandbox_tools(folder), AskUser()]
    )

    async def scenario() -> None:
        session = Session(agent, display=False, deadline=0.3, on_deadline="interrupt")
        await asyncio.wait_for(session.start("tidy"), 10)

    run_async(scenario())
    results = tool_results(agent.state.context)
    assert [(r.name, r.state) for r in results] == [
        ("delete_file", ToolResultState.INTERRUPTED),
        (second, ToolResultState.INTERRUPTED),
    ]
    texts = [result_text(r) for r in results]
    assert all("did not run" in t and "before the deadline" in t and "interrupted by the user" not in t for t in texts)
    assert sorted(p.name for p in folder.iterdir()) == ["draft.md", "notes.txt", "old_log.txt"]


def test_a_deadline_that_passes_while_an_answer_is_checked_applies_once_the_pause_is_open_again(
    tmp_path: Path,
) -> None:
    """The deadline's timer fires while an answer is being checked (``deciding``); that answer
    leaves the pause open (an approval short of N). The default must still apply: a pause
    that nobody may answer any more (its deadline passed) must not wait forever. It applies
    as the answer leaves ``deciding`` (the transition wakes the deadline's judgement), so by
    the time the answer's caller hears "approval recorded" the default is already taken."""
    from tests.session.test_four_eyes import Mail, open_payment

    mail = Mail()
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> Any:
        session, task, pause = await open_payment(mail, audit, deadline=0.3, on_deadline="deny")
        first = session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="alice")
        assert pause.status == "deciding"
        time.sleep(0.4)  # the loop is busy (another cell's work) as the deadline passes
        await asyncio.sleep(0)  # the loop's next step: the answer's checks start, the deadline's timer is due
        assert (await first)["status"] == "approval_recorded"  # the timer ran while it was checked
        assert pause.status in ("decided", "delivered") and pause.decision["action"] == "timeout"
        with pytest.raises(PauseNotLiveError, match="deadline of this pause passed; denied"):
            session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="bob")
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario()).get_text_content()
    assert mail.sent == []
    assert "it needed 2 approvals and had 1 (alice) when the deadline passed" in final
    assert [(r["decision"], r["decided_by"]) for r in AuditLog(audit).records("answered")] == [
        ("approve", "alice"),
        ("timeout", "deadline"),
    ]
