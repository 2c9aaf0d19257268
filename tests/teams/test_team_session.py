"""``Session`` driving AgentScope's ``TeamPipeline`` and ``GoalPipeline`` in-process.

The leader delegates to a member whose pauses (AskUser, a confirmation)
come out of the pipeline with the MEMBER's ``reply_id``. Checked: each card
names the agent that asks and is answered with that agent's ``reply_id``;
the pipeline's ``TeamAssign`` is a transcript step, never a card; the reply
ends with the leader's; ``run()`` returns the leader's final message; the
tool ran exactly as often as decided; what each model was sent
(``ScriptedChatModel.calls``).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.event import ReplyEndEvent
from agentscope.message import ToolResultState
from agentscope.pipeline import GoalPipeline
from agentscope.tool import Toolkit

from nb_hitl import Session
from nb_hitl.errors import DecisionError
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from nb_hitl.store import AuditLog
from nb_hitl.team_demo import LEADER, TASK, WORKER, team_demo
from tests.support import StreamRecorder, parked_on, run_async, wait_until
from tests.support_agents import files
from tests.teams.team_support import ask_answer, pair_team

FINAL_OK = "worker reported back (success): Done. Deleted draft.md. The folder now holds: notes.txt, old_log.txt."


def worker(pipe: Any) -> Agent:
    return pipe.members[WORKER].agent


def notes(run: Any) -> list[str]:
    return [e["text"] for e in run.transcript if e["kind"] == "note"]


def test_approve_member_pauses(tmp_path: Path) -> None:
    pipe = team_demo(tmp_path / "box", chunk_delay=0)
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> Any:
        session = Session(pipe, display=False, audit_log=str(audit))
        assert session.agent is pipe.leader
        task = session.start("Please clean up the sandbox.")
        ask = await parked_on(session, "ask_user")
        # the card says who asks, and carries the worker's reply_id
        assert ask.agent == WORKER
        assert ask.reply_id == worker(pipe).state.reply_id != pipe.leader.state.reply_id
        assert [p.tool_name for p in session.pending] == ["AskUser"]
        await session.act(ask_answer(ask, "draft.md"))
        confirm = await parked_on(session, "confirm")
        assert confirm.agent == WORKER and confirm.tool_name == "delete_file"
        assert confirm.reply_id == ask.reply_id
        assert confirm.input_schema["required"] == ["path"]  # the worker's tool, not the leader's toolkit
        assert [p.tool_name for p in session.pending] == ["delete_file"]
        assert pipe.runs == []
        await session.act({"action": "approve", "tool_call_id": confirm.tool_call_id, "reply_id": confirm.reply_id})
        final = await asyncio.wait_for(task, 10)
        return session, final

    session, final = run_async(scenario())
    assert final.get_text_content().endswith(FINAL_OK)
    assert final.name == LEADER and str(getattr(final.finished_reason, "value", final.finished_reason)) == "completed"
    run = session.current
    assert run.status == "finished" and run.final is final
    # TeamAssign is never a card, only a step of the transcript
    assert [p.tool_name for p in run.pauses.values()] == ["AskUser", "delete_file"]
    assert [p.status for p in run.pauses.values()] == ["delivered", "delivered"]
    assert f"{LEADER} assigned “{TASK}” to {WORKER}" in notes(run)
    assert not any(e.get("name") == "TeamAssign" for e in run.transcript if e["kind"] != "note")
    assert {e.get("agent") for e in run.transcript if e["kind"] == "tool_call"} == {WORKER}
    # exactly once, and what each model was sent
    assert pipe.runs == ["draft.md"] and files(pipe.sandbox) == ["notes.txt", "old_log.txt"]
    assert len(pipe.leader.model.calls) == 2 and len(worker(pipe).model.calls) == 4
    assign_result = tool_results(pipe.leader.model.calls[-1], "TeamAssign")[-1]
    assert assign_result.state == ToolResultState.SUCCESS
    assert result_text(assign_result) == "Done. Deleted draft.md. The folder now holds: notes.txt, old_log.txt."
    saw = worker(pipe).model.calls[-1]
    assert [r.name for r in tool_results(saw)] == ["list_files", "AskUser", "delete_file"]
    # the audit log names the agent that asked
    records = AuditLog(audit).records("answered")
    assert [(r["agent"], r["tool_name"], r["decision"]) for r in records] == [
        (WORKER, "AskUser", "answer"),
        (WORKER, "delete_file", "approve"),
    ]
    assert {r["reply_id"] for r in records} == {run.pauses[next(iter(run.pauses))].reply_id}


def test_the_streamed_page_names_the_agent_of_each_entry(tmp_path: Path) -> None:
    """What the page builds from the transcript stream (not the saved record) names
    the agent behind every text, tool call and result, and holds the team's steps."""
    pipe = team_demo(tmp_path / "box", chunk_delay=0)

    async def scenario() -> tuple[Any, StreamRecorder]:
        session = Session(pipe, display=True)
        task = session.start("Please clean up the sandbox.")
        rec = StreamRecorder(session.current.widget)  # the widget exists, nothing is sent yet
        await session.act(ask_answer(await parked_on(session, "ask_user"), "draft.md"))
        await session.act({"action": "approve", "tool_call_id": (await parked_on(session, "confirm")).tool_call_id})
        await asyncio.wait_for(task, 10)
        return session.current, rec

    run, rec = run_async(scenario())
    page = rec.rebuilt()
    assert page == list(run.transcript)
    by_kind: dict[str, set[str]] = {}
    for e in page:
        assert e.get("agent"), f"no agent on {e}"
        by_kind.setdefault(e["kind"], set()).add(e["agent"])
    assert by_kind["tool_call"] == by_kind["tool_result"] == {WORKER}
    assert by_kind["text"] == by_kind["step"] == {LEADER, WORKER}
    steps = [(e["id"].split(":")[0], e["agent"]) for e in page if e["kind"] == "note"]
    assert steps == [("assign", LEADER), ("report", WORKER)]


def test_run_returns_the_leaders_final_message(tmp_path: Path) -> None:
    pipe = team_demo(tmp_path / "box", chunk_delay=0)

    async def scenario() -> Any:
        session = Session(pipe, display=False)

        async def answer() -> None:
            ask = await parked_on(session, "ask_user")
            await session.act(ask_answer(ask, "notes.txt"))
            confirm = await parked_on(session, "confirm")
            await session.act({"action": "approve", "tool_call_id": confirm.tool_call_id})

        answering = asyncio.ensure_future(answer())
        final = await asyncio.wait_for(session.run("clean up"), 10)
        await answering
        return final

    final = run_async(scenario())
    assert final is not None and final.name == LEADER
    assert final.get_text_content() == pipe.leader.state.context[-1].get_text_content()
    assert pipe.runs == ["notes.txt"]


def test_deny_member_confirmation(tmp_path: Path) -> None:
    pipe = team_demo(tmp_path / "box", chunk_delay=0)

    async def scenario() -> Any:
        session = Session(pipe, display=False)
        task = session.start("clean up")
        await session.act(ask_answer(await parked_on(session, "ask_user"), "old_log.txt"))
        confirm = await parked_on(session, "confirm")
        await session.act({"action": "deny", "tool_call_id": confirm.tool_call_id, "reply_id": confirm.reply_id})
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario())
    assert pipe.runs == [] and files(pipe.sandbox) == ["draft.md", "notes.txt", "old_log.txt"]
    assert "you denied the deletion" in final.get_text_content()
    denied = tool_results(worker(pipe).model.calls[-1], "delete_file")[-1]
    assert denied.state == ToolResultState.DENIED
    assert len(pipe.leader.model.calls) == 2


def test_modify_is_checked_against_the_members_schema(tmp_path: Path) -> None:
    pipe = team_demo(tmp_path / "box", chunk_delay=0)

    async def scenario() -> Any:
        session = Session(pipe, display=False)
        task = session.start("clean up")
        await session.act(ask_answer(await parked_on(session, "ask_user"), "draft.md"))
        confirm = await parked_on(session, "confirm")
        with pytest.raises(DecisionError) as bad:
            await session.act(
                {"action": "modify", "tool_call_id": confirm.tool_call_id, "input": json.dumps({"file": "x"})}
            )
        assert bad.value.field is not None and bad.value.field.startswith("input")
        assert confirm.status == "open" and pipe.runs == []
        await session.act(
            {"action": "modify", "tool_call_id": confirm.tool_call_id, "input": json.dumps({"path": "notes.txt"})}
        )
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario())
    assert pipe.runs == ["notes.txt"] and files(pipe.sandbox) == ["draft.md", "old_log.txt"]
    assert "Deleted notes.txt." in final.get_text_content()


def test_interrupt_ends_both_replies(tmp_path: Path) -> None:
    pipe = team_demo(tmp_path / "box", chunk_delay=0)
    ends: list[tuple[str, str]] = []

    async def scenario() -> Any:
        session = Session(pipe, display=False)
        session.on_event(
            lambda ev, run: (
                ends.append((session.team.owner_name(ev), str(ev.finished_reason)))
                if isinstance(ev, ReplyEndEvent)
                else None
            )
        )
        task = session.start("clean up")
        await session.act(ask_answer(await parked_on(session, "ask_user"), "draft.md"))
        await parked_on(session, "confirm")
        await session.interrupt()
        (final,) = await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 10)
        return session, final

    session, final = run_async(scenario())
    assert session.current.status == "interrupted"
    assert ends == [(WORKER, "interrupted"), (LEADER, "interrupted")]
    # the answer is AgentScope's interruption message, not the leader's first line again
    assert final.get_text_content() == pipe.leader.react_config.interruption_message
    assert str(final.finished_reason) == "interrupted"
    # the member's report is AgentScope's interruption text without its markup for the model
    (report,) = [e["text"] for e in session.current.transcript.view() if e["id"].startswith("report:")]
    assert (
        report == f"{WORKER} reported back to {LEADER} (interrupted): The tool call has been interrupted by the user."
    )
    assert pipe.runs == []
    assert not session.team.is_parked()
    assert len(pipe.leader.model.calls) == 1  # the leader never went on with a result


def test_two_member_pauses_in_one_leader_reply(tmp_path: Path) -> None:
    runs: list[tuple[str, str]] = []
    pipe = pair_team(runs)

    async def scenario() -> Any:
        session = Session(pipe, display=False)
        task = session.start("two jobs")
        pauses = await wait_until(lambda: len(session.pending) == 2 and session.pending, "two open cards")
        assert sorted((p.agent, p.input["path"]) for p in pauses) == [("ann", "a.txt"), ("bob", "b.txt")]
        by_agent = {p.agent: p for p in pauses}
        assert by_agent["ann"].reply_id == pipe.members["ann"].agent.state.reply_id
        assert by_agent["bob"].reply_id == pipe.members["bob"].agent.state.reply_id
        # bob first: ann's card stays open and live
        await session.act({"action": "approve", "tool_call_id": by_agent["bob"].tool_call_id})
        await wait_until(lambda: runs == [("bob", "b.txt")], "bob's deletion")
        await wait_until(lambda: session.current.status == "paused", "parked on ann")
        assert [p.agent for p in session.pending] == ["ann"] and by_agent["ann"].status == "open"
        await session.act({"action": "approve", "tool_call_id": by_agent["ann"].tool_call_id})
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario())
    assert sorted(runs) == [("ann", "a.txt"), ("bob", "b.txt")] and len(runs) == 2
    # the leader got bob's result first: it was answered first and fed to the leader on its own
    assert final.get_text_content().endswith("Reports: bob: success Deleted b.txt. / ann: success Deleted a.txt.")
    assert len(pipe.leader.model.calls) == 2


def test_restore_mid_team(tmp_path: Path) -> None:
    box = tmp_path / "box"
    ckpt = tmp_path / "ckpt"
    pipe = team_demo(box, chunk_delay=0)

    async def first() -> str:
        session = Session(pipe, display=False, checkpoints=str(ckpt))
        session.start("clean up")
        await session.act(ask_answer(await parked_on(session, "ask_user"), "old_log.txt"))
        await parked_on(session, "confirm")
        sid = session.session_id
        session.current.task.cancel()  # the kernel "dies" here
        return sid

    sid = run_async(first())
    record = json.loads((ckpt / f"{sid}.json").read_text())
    assert set(record["state"]["agents"]) == {LEADER, WORKER}

    built: list[Any] = []

    def factory(states: dict[str, Any]) -> Any:
        built.append(team_demo(box, chunk_delay=0, states=states))
        return built[-1]

    async def second() -> Any:
        session = Session.restore(factory, str(ckpt), display=False)
        task = session.start_resume()
        confirm = await parked_on(session, "confirm")
        # only the open call comes back: the AskUser answer is not asked again
        assert [p.tool_name for p in session.pending] == ["delete_file"] and confirm.agent == WORKER
        assert confirm.reply_id == built[0].members[WORKER].agent.state.reply_id
        await session.act({"action": "approve", "tool_call_id": confirm.tool_call_id, "reply_id": confirm.reply_id})
        return await asyncio.wait_for(task, 10)

    final = run_async(second())
    new = built[0]
    assert pipe.runs == [] and new.runs == ["old_log.txt"]
    assert files(box) == ["draft.md", "notes.txt"]
    assert final.name == LEADER and "Deleted old_log.txt." in final.get_text_content()
    # the restored models were sent the history from the checkpoint
    assert len(new.leader.model.calls) == 1 and len(worker(new).model.calls) == 1
    assert [r.name for r in tool_results(worker(new).model.calls[0])] == ["list_files", "AskUser", "delete_file"]


def test_goal_pipeline_executor_pause(tmp_path: Path) -> None:
    runs: list[tuple[str, str]] = []
    from tests.teams.team_support import deleter

    executor = deleter("maker", "a.txt", runs)

    def report(messages: list[Any]) -> Turn:
        return Turn("", [tool_call("GenerateStructuredOutput", report="deleted a.txt")])

    executor.model.script = [
        Turn("Deleting a.txt.", [tool_call("delete_file", path="a.txt")]),
        report,
    ]
    verifier = Agent(
        name="checker",
        system_prompt="Verify.",
        model=ScriptedChatModel(
            [Turn("", [tool_call("GenerateStructuredOutput", result="pass", message="ok")])], on_exhausted="raise"
        ),
        toolkit=Toolkit(),
    )
    pipe = GoalPipeline(executor, verifier)

    async def scenario() -> Any:
        session = Session(pipe, display=False)
        task = session.start("delete a.txt")
        confirm = await parked_on(session, "confirm")
        assert confirm.agent == "maker" and confirm.reply_id == executor.state.reply_id
        await session.act({"action": "approve", "tool_call_id": confirm.tool_call_id})
        return await asyncio.wait_for(task, 10), session

    final, session = run_async(scenario())
    assert runs == [("maker", "a.txt")]
    assert session.current.status == "finished"
    assert final.name == "maker"
    assert len(verifier.model.calls) == 1
