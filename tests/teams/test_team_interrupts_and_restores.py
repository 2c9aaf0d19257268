"""A team's member interrupted while it runs a tool, and restored teams (the goal pipeline keeps its goal; a leader restored mid-member-tool is interrupted first): real AgentScope pipelines on the scripted model."""

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
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from tests.support import parked_on, run_async, wait_until


def test_interrupt_while_the_member_runs_a_tool() -> None:
    from agentscope.message import TextBlock
    from agentscope.pipeline import TeamMember, TeamPipeline
    from agentscope.tool import FunctionTool, ToolChunk

    started: list[int] = []

    async def slow_scan() -> ToolChunk:
        """Scan slowly (read-only)."""
        started.append(1)
        await asyncio.sleep(30)
        return ToolChunk(content=[TextBlock(text="scanned")], state=ToolResultState.SUCCESS)

    member = Agent(
        name="scanner",
        system_prompt="scan",
        model=ScriptedChatModel([Turn("", [tool_call("slow_scan")]), Turn("scanned")], on_exhausted="raise"),
        toolkit=Toolkit(tools=[FunctionTool(slow_scan, is_read_only=True)]),
    )
    leader = Agent(
        name="boss",
        system_prompt="lead",
        model=ScriptedChatModel([Turn("", [tool_call("TeamAssign", member="scanner", prompt="scan")])]),
        toolkit=Toolkit(),
    )
    pipe = TeamPipeline(leader, [TeamMember(agent=member, description="scans")])
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
        task = session.start("scan")
        await wait_until(lambda: started, "the member's tool running")
        assert session.current.status == "running"
        await asyncio.wait_for(session.interrupt("Stop."), 10)
        await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 10)
        return session

    session = run_async(scenario())
    assert session.current.status == "interrupted" and session.current.reason == "Stop."
    assert ends == [("scanner", "interrupted"), ("boss", "interrupted")]
    assert not session.team.is_parked()
    assert len(leader.model.calls) == 1 and len(member.model.calls) == 1


def goal_pipeline(runs: list[tuple[str, str]], states: dict[str, Any] | None = None) -> GoalPipeline:
    """An executor that deletes a.txt (asks first) and reports; a verifier that passes it."""
    from tests.teams.team_support import deleter, since_last_user

    states = states or {}
    executor = deleter("maker", "a.txt", runs, states.get("maker"))

    def step(messages: list[Any]) -> Turn:
        if not tool_results(since_last_user(messages), "delete_file"):
            return Turn("Deleting a.txt.", [tool_call("delete_file", path="a.txt")])
        return Turn("", [tool_call("GenerateStructuredOutput", report="deleted a.txt")])

    executor.model.script = [step] * 10
    verifier = Agent(
        name="checker",
        system_prompt="Verify.",
        model=ScriptedChatModel(
            [Turn("", [tool_call("GenerateStructuredOutput", result="pass", message="ok")])], on_exhausted="raise"
        ),
        toolkit=Toolkit(),
        state=states.get("checker"),
    )
    return GoalPipeline(executor, verifier)


def test_goal_pipeline_restored_keeps_its_goal(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    runs: list[tuple[str, str]] = []
    first = goal_pipeline(runs)

    async def park() -> str:
        session = Session(first, display=False, checkpoints=str(ckpt))
        session.start("Please delete a.txt")
        await parked_on(session, "confirm")
        session.current.task.cancel()
        return session.session_id

    sid = run_async(park())
    built: list[GoalPipeline] = []

    async def resume() -> Any:
        session = Session.restore(
            lambda states: built.append(goal_pipeline(runs, states)) or built[-1], str(ckpt), sid, display=False
        )
        task = session.start_resume()
        confirm = await parked_on(session, "confirm")
        assert confirm.agent == "maker"
        await session.act({"action": "approve", "tool_call_id": confirm.tool_call_id})
        return await asyncio.wait_for(task, 10)

    final = run_async(resume())
    assert runs == [("maker", "a.txt")] and final.name == "maker"
    verifier_saw = built[0].verifier.model.calls[0]
    assert "Please delete a.txt" in "".join(m.get_text_content() or "" for m in verifier_saw)


def test_restored_mid_member_tool_the_leader_is_interrupted_first(tmp_path: Path) -> None:
    """A checkpoint taken while the member's tool ran: restored, the member's
    call is closed as interrupted and only the leader waits (on TeamAssign).
    A new message is refused, then sent with interrupt_pending=True."""
    from agentscope.message import TextBlock
    from agentscope.pipeline import TeamMember, TeamPipeline
    from agentscope.tool import FunctionTool, ToolChunk

    from nb_hitl.errors import PendingPauseError
    from nb_hitl.team import Team, states_from_checkpoint

    started: list[int] = []

    def build(states: dict[str, Any] | None = None) -> TeamPipeline:
        states = states or {}

        async def slow_scan() -> ToolChunk:
            """Scan slowly (read-only)."""
            started.append(1)
            await asyncio.sleep(30)
            return ToolChunk(content=[TextBlock(text="scanned")], state=ToolResultState.SUCCESS)

        def lead(messages: list[Any]) -> Turn:
            from tests.teams.team_support import since_last_user

            if not tool_results(since_last_user(messages), "TeamAssign"):
                return Turn("", [tool_call("TeamAssign", member="scanner", prompt="scan")])
            return Turn("lead done: " + result_text(tool_results(since_last_user(messages), "TeamAssign")[-1]))

        member = Agent(
            name="scanner",
            system_prompt="scan",
            model=ScriptedChatModel([Turn("", [tool_call("slow_scan")]), Turn("scan finished")] * 3),
            toolkit=Toolkit(tools=[FunctionTool(slow_scan, is_read_only=True)]),
            state=states.get("scanner"),
        )
        leader = Agent(
            name="boss",
            system_prompt="lead",
            model=ScriptedChatModel([lead] * 5),
            toolkit=Toolkit(),
            state=states.get("boss"),
        )
        return TeamPipeline(leader, [TeamMember(agent=member, description="scans")])

    first = build()

    async def crash() -> str:
        session = Session(first, display=False)
        task = session.start("scan")
        await wait_until(lambda: started, "the member's tool running")
        blob = Team.of(first).state_json()  # what a checkpoint written now would hold
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return blob

    blob = run_async(crash())
    ckpt = tmp_path / "ckpt"
    from nb_hitl.store import CheckpointStore

    CheckpointStore(ckpt).save("crashed", "boss", blob)
    states = states_from_checkpoint(json.loads(blob))
    assert isinstance(states, dict)

    async def again() -> Any:
        session = Session.restore(build, str(ckpt), "crashed", display=False)
        assert session.parked_tool_calls() == [] and session.team.is_parked()
        with pytest.raises(PendingPauseError):
            session.start("scan again")
        started.clear()
        task = session.start("scan again", interrupt_pending=True)
        await wait_until(lambda: started, "the new reply's tool running")
        await session.interrupt("enough")
        await asyncio.gather(task, return_exceptions=True)
        return session

    session = run_async(again())
    assert session.current.status == "interrupted"
    assert not session.team.is_parked()
    leader_saw = session.agent.model.calls[-1]
    # the first assignment got an interrupted result before the new message reached the leader
    assert [str(r.state) for r in tool_results(leader_saw, "TeamAssign")] == ["interrupted"]
