"""``Session`` in-process (``display=False``) around real AgentScope agents.

Every agent is a real ``agentscope.agent.Agent`` on
:class:`~nb_hitl.models.ScriptedChatModel`; decisions go through
``Session.act`` (the same path as a click). What is checked is what really
happened: files on disk, what the model was sent (``model.calls``), the
agent's history (``agent.state.context``) and how often the agent was resumed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import ToolCallBlock, ToolResultBlock, ToolResultState
from agentscope.permission import PermissionBehavior
from agentscope.tool import AskUserMetadata

from nb_hitl import AlreadyDecidedError, PauseNotLiveError, PendingPauseError, Session
from nb_hitl.demo import demo_agent, make_sandbox
from nb_hitl.models import Turn, result_text, tool_call, tool_results
from nb_hitl.store import AuditLog
from tests.support import parked_on, run_async
from tests.support_agents import files, sandbox_agent

QUESTION = "Which file should I delete?"


def history_blocks(agent: Agent, cls: type) -> list[Any]:
    out = []
    for m in agent.state.context:
        if not isinstance(m.content, str):
            out.extend(b for b in m.content if isinstance(b, cls))
    return out


def report(msgs: list[Any]) -> Turn:
    return Turn(" | ".join(f"{r.state}: {result_text(r)}" for r in tool_results(msgs, "delete_file")))


# ---------------------------------------------------------------------------
def test_demo_flow_answer_then_approve(tmp_path: Path) -> None:
    agent = demo_agent(tmp_path / "box", chunk_delay=0)
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> None:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("Please tidy up my sandbox folder.")
        ask = await parked_on(session, "ask_user")
        labels = [o.label for o in ask.ask_user.questions[0].options]
        assert labels == ["draft.md", "notes.txt", "old_log.txt"]
        assert ask.ask_user.questions[0].header == "Cleanup"
        assert "notes.txt" in ask.ask_user.questions[0].context
        await session.act(
            {
                "action": "answer",
                "tool_call_id": ask.tool_call_id,
                "reply_id": ask.reply_id,
                "answers": [{"question": QUESTION, "selected": ["old_log.txt"], "other": None}],
            }
        )
        confirm = await parked_on(session, "confirm")
        assert confirm.tool_name == "delete_file" and confirm.input == {"path": "old_log.txt"}
        assert confirm.permission_message == "Permission required for delete_file"
        assert [r.tool_name for r in confirm.suggested_rules] == ["delete_file"]
        assert files(agent.sandbox) == ["draft.md", "notes.txt", "old_log.txt"]
        await session.act({"action": "approve", "tool_call_id": confirm.tool_call_id, "reply_id": confirm.reply_id})
        final = await asyncio.wait_for(task, 10)

        assert final.get_text_content() == "Done. Deleted old_log.txt. The folder now holds: draft.md, notes.txt."
        assert files(agent.sandbox) == ["draft.md", "notes.txt"]
        run = session.current
        assert run.status == "finished" and run.resumes == 2
        assert [p.status for p in run.pauses.values()] == ["delivered", "delivered"]
        assert session.pending == []

    run_async(scenario())

    # what the model saw on its last call: the AskUser answer (text + metadata) and the deletion
    last = agent.model.calls[-1]
    ask_result = tool_results(last, "AskUser")[-1]
    assert ask_result.state == ToolResultState.SUCCESS
    assert result_text(ask_result) == f'The user answered:\n- "{QUESTION}" -> old_log.txt'
    assert AskUserMetadata.model_validate(ask_result.metadata).answers[0].selected == ["old_log.txt"]
    del_result = tool_results(last, "delete_file")[-1]
    assert del_result.state == ToolResultState.SUCCESS and result_text(del_result) == "Deleted old_log.txt."
    assert len(agent.model.calls) == 4
    # every tool call in the history has its result
    calls = {b.id for b in history_blocks(agent, ToolCallBlock)}
    assert calls == {b.id for b in history_blocks(agent, ToolResultBlock)}
    records = AuditLog(audit).records("answered")
    assert [(r["tool_name"], r["decision"]) for r in records] == [("AskUser", "answer"), ("delete_file", "approve")]


def test_deny_flow_keeps_the_file(tmp_path: Path) -> None:
    agent = demo_agent(tmp_path / "box", chunk_delay=0)

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("tidy")
        ask = await parked_on(session, "ask_user")
        await session.act(
            {
                "action": "answer",
                "tool_call_id": ask.tool_call_id,
                "answers": [{"question": QUESTION, "selected": ["notes.txt"]}],
            }
        )
        confirm = await parked_on(session, "confirm")
        await session.act({"action": "deny", "tool_call_id": confirm.tool_call_id})
        final = await asyncio.wait_for(task, 10)
        assert final.get_text_content().startswith("Understood: you denied the deletion")
        assert session.current.pauses[confirm.tool_call_id].decision == {"action": "deny", "confirmed": False}

    run_async(scenario())
    assert files(agent.sandbox) == ["draft.md", "notes.txt", "old_log.txt"]
    denied = tool_results(agent.model.calls[-1], "delete_file")[-1]
    assert denied.state == ToolResultState.DENIED
    assert "denied by user" in result_text(denied)


def test_always_allow_adds_the_rule_and_the_next_call_runs_without_asking(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    agent = sandbox_agent(
        folder,
        [
            Turn("First.", [tool_call("delete_file", path="notes.txt")]),
            Turn("Second.", [tool_call("delete_file", path="draft.md")]),
            report,
        ],
    )
    assert not agent.state.permission_context.allow_rules

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("delete two files")
        confirm = await parked_on(session, "confirm")
        out = await session.act({"action": "approve", "tool_call_id": confirm.tool_call_id, "rules": [0]})
        assert out["decision"]["accepted_rules"] == ["allow delete_file"]
        final = await asyncio.wait_for(task, 10)
        assert final.get_text_content() == "success: Deleted notes.txt. | success: Deleted draft.md."
        assert list(session.current.pauses) == [confirm.tool_call_id]  # the second call never asked
        assert session.current.resumes == 1

    run_async(scenario())
    rules = agent.state.permission_context.allow_rules["delete_file"]
    assert [(r.rule_content, r.behavior) for r in rules] == [(None, PermissionBehavior.ALLOW)]
    assert files(folder) == ["old_log.txt"]


def test_edited_input_runs_on_a_copy(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    agent = sandbox_agent(folder, [Turn("Deleting.", [tool_call("delete_file", path="notes.txt")]), report])

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("delete")
        confirm = await parked_on(session, "confirm")
        live = next(b for b in history_blocks(agent, ToolCallBlock) if b.id == confirm.tool_call_id)
        assert confirm.tool_call is not live
        pending = session.act(
            {"action": "modify", "tool_call_id": confirm.tool_call_id, "input": '{"path": "draft.md"}'}
        )
        await pending  # recorded and queued; the driving task has not resumed the agent yet
        decision = session.current.queue[0]
        assert decision.confirm_result.tool_call is not live
        assert json.loads(decision.confirm_result.tool_call.input) == {"path": "draft.md"}
        assert json.loads(live.input) == {"path": "notes.txt"}, (
            "the live history block changed before the agent applied the edit"
        )
        assert json.loads(confirm.tool_call.input) == {"path": "notes.txt"}
        await asyncio.wait_for(task, 10)
        # AgentScope applied the edit to its own history when it resumed
        assert json.loads(live.input) == {"path": "draft.md"}
        assert json.loads(confirm.tool_call.input) == {"path": "notes.txt"}  # the pause keeps what was asked

    run_async(scenario())
    assert files(folder) == ["notes.txt", "old_log.txt"]
    assert result_text(tool_results(agent.model.calls[-1], "delete_file")[-1]) == "Deleted draft.md."


@pytest.mark.parametrize("second", ["approve", "deny"])
def test_C15_second_decision_in_the_same_tick_is_already_decided(tmp_path: Path, second: str) -> None:
    folder = make_sandbox(tmp_path / "box")
    agent = sandbox_agent(folder, [Turn("Deleting.", [tool_call("delete_file", path="notes.txt")]), report])

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("delete")
        confirm = await parked_on(session, "confirm")
        first = session.act({"action": "approve", "tool_call_id": confirm.tool_call_id, "reply_id": confirm.reply_id})
        with pytest.raises(AlreadyDecidedError) as info:
            session.act({"action": second, "tool_call_id": confirm.tool_call_id, "reply_id": confirm.reply_id})
        assert info.value.code == "already_decided" and confirm.tool_call_id not in str(info.value)
        assert str(info.value).startswith('Already decided: delete_file (path="notes.txt") has its decision')
        await first
        # and once it is recorded, still refused
        with pytest.raises(AlreadyDecidedError):
            session.act({"action": "deny", "tool_call_id": confirm.tool_call_id})
        await asyncio.wait_for(task, 10)
        assert session.current.resumes == 1
        with pytest.raises((AlreadyDecidedError, PauseNotLiveError)):
            session.act({"action": "approve", "tool_call_id": confirm.tool_call_id})

    run_async(scenario())
    results = [b for b in history_blocks(agent, ToolResultBlock) if b.name == "delete_file"]
    assert len(results) == 1 and results[0].state == ToolResultState.SUCCESS
    assert files(folder) == ["draft.md", "old_log.txt"]
    assert len(agent.model.calls) == 2


def test_C15_concurrent_clicks_from_two_tasks(tmp_path: Path) -> None:
    """Two click handlers racing on the loop: exactly one decision wins."""
    folder = make_sandbox(tmp_path / "box")
    agent = sandbox_agent(folder, [Turn("Deleting.", [tool_call("delete_file", path="notes.txt")]), report])

    async def click(session: Session, action: str, tool_call_id: str) -> str:
        try:
            result = session.act({"action": action, "tool_call_id": tool_call_id})
            await result
            return "ok"
        except AlreadyDecidedError:
            return "already_decided"

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("delete")
        confirm = await parked_on(session, "confirm")
        outcomes = await asyncio.gather(
            click(session, "deny", confirm.tool_call_id), click(session, "approve", confirm.tool_call_id)
        )
        assert sorted(outcomes) == ["already_decided", "ok"]
        await asyncio.wait_for(task, 10)
        assert session.current.resumes == 1

    run_async(scenario())
    results = [b for b in history_blocks(agent, ToolResultBlock) if b.name == "delete_file"]
    assert len(results) == 1 and results[0].state == ToolResultState.DENIED
    assert files(folder) == ["draft.md", "notes.txt", "old_log.txt"]


def test_C07_new_message_while_parked(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    agent = sandbox_agent(
        folder,
        [
            Turn("Deleting.", [tool_call("delete_file", id="call_first", path="notes.txt")]),
            lambda msgs: Turn("Interrupted result was: " + str(tool_results(msgs, "delete_file")[-1].state)),
        ],
    )

    async def scenario() -> None:
        session = Session(agent, display=False)
        first_task = session.start("delete")
        confirm = await parked_on(session, "confirm")
        first = session.current
        with pytest.raises(PendingPauseError) as info:
            session.start("something else")
        assert 'waiting on delete_file (path="notes.txt").' in str(info.value) and "call_first" not in str(info.value)
        assert "interrupt_pending=True" in str(info.value)
        with pytest.raises(PendingPauseError):
            await session.run("something else")
        assert session.current is first and confirm.status == "open"
        assert len(agent.model.calls) == 1

        final = await asyncio.wait_for(session.run("never mind, what now?", interrupt_pending=True), 10)
        assert final.get_text_content() == "Interrupted result was: interrupted"
        await asyncio.wait_for(first_task, 10)
        assert first.status == "interrupted"
        assert confirm.status == "expired" and "new message" in (confirm.reason or "")
        with pytest.raises(PauseNotLiveError):  # what the old reply's widget handler calls on a click
            session.desk.on_action(first, {"action": "approve", "tool_call_id": "call_first"})
        assert session.current is not first and session.current.status == "finished"

    run_async(scenario())
    assert files(folder) == ["draft.md", "notes.txt", "old_log.txt"]
    interrupted = [b for b in history_blocks(agent, ToolResultBlock) if b.id == "call_first"]
    assert len(interrupted) == 1 and interrupted[0].state == ToolResultState.INTERRUPTED
