"""The pure parts of :mod:`nb_hitl.team` on real AgentScope objects.

Which agent owns a reply, which calls wait for a person (never the leader's
``TeamAssign``), the ``TeamAssign`` steps written into a transcript from
AgentScope's own events, and one checkpoint JSON for every agent that
restores into new agents.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentscope.agent import Agent
from agentscope.event import (
    ReplyStartEvent,
    ToolCallDeltaEvent,
    ToolCallStartEvent,
    ToolResultEndEvent,
    ToolResultStartEvent,
    ToolResultTextDeltaEvent,
)
from agentscope.message import ToolResultState, UserMsg
from agentscope.state import AgentState
from agentscope.tool import Toolkit

from nb_hitl.models import ScriptedChatModel, Turn
from nb_hitl.session import Transcript
from nb_hitl.team import CHECKPOINT_FORMAT, Team, states_from_checkpoint
from nb_hitl.team_demo import LEADER, WORKER, team_demo
from nb_hitl.team_steps import assignment_text, plumbing_step, tag_entry
from tests.support import apply_ops, run_async


def plain_agent() -> Agent:
    return Agent(name="solo", system_prompt="s", model=ScriptedChatModel([Turn("hi")]), toolkit=Toolkit())


def test_assignment_text() -> None:
    assert assignment_text("lead", '{"member": "worker", "prompt": "tidy"}') == (
        "worker",
        "tidy",
        "lead assigned “tidy” to worker",
    )
    assert assignment_text("lead", {"member": "w", "prompt": "p"})[2] == "lead assigned “p” to w"
    assert assignment_text("lead", "{not json") == ("", "", "lead assigned a task")
    assert assignment_text("lead", "[1]") == ("", "", "lead assigned a task")


def test_team_of_rejects_what_is_not_an_agent_or_pipeline() -> None:
    with pytest.raises(TypeError, match="TeamPipeline or a GoalPipeline, got int"):
        Team.of(3)
    solo = Team.of(plain_agent())
    assert solo.shape == "agent" and not solo.is_pipeline and list(solo.agents) == ["solo"]


def test_parked_team_owners_and_checkpoint(tmp_path: Path) -> None:
    pipe = team_demo(tmp_path / "box", chunk_delay=0)
    team = Team.of(pipe)
    assert team.shape == "team" and list(team.agents) == [LEADER, WORKER]

    async def park() -> None:
        async for _ in team.stream(UserMsg(name="user", content="clean up")):
            pass

    run_async(park())
    worker = pipe.members[WORKER].agent
    # the leader waits on its TeamAssign, the worker on AskUser: only the latter is a person's
    assert [tc.name for tc in pipe.leader.state.get_awaiting_tool_calls(LEADER)] == ["TeamAssign"]
    assert [(a.name, tc.name) for a, tc in team.parked_calls()] == [(WORKER, "AskUser")]
    assert team.is_parked()
    assert team.owner(worker.state.reply_id) is worker and team.owner(pipe.leader.state.reply_id) is pipe.leader
    assert team.owner_of_call(team.parked_calls()[0][1].id) is worker
    assert team.interrupt_event().reply_id == pipe.leader.state.reply_id

    blob = json.loads(team.state_json())
    assert blob["format"] == CHECKPOINT_FORMAT and blob["leader"] == LEADER
    states = states_from_checkpoint(blob)
    assert isinstance(states, dict) and set(states) == {LEADER, WORKER}
    restored = Team.of(team_demo(tmp_path / "box", chunk_delay=0, states=states))
    assert [(a.name, tc.id) for a, tc in restored.parked_calls()] == [(a.name, tc.id) for a, tc in team.parked_calls()]
    # a single agent's checkpoint stays a bare AgentState
    solo = plain_agent()
    assert isinstance(states_from_checkpoint(json.loads(Team.of(solo).state_json())), AgentState)


def test_plumbing_steps_from_teamassign_events(tmp_path: Path) -> None:
    team = Team.of(team_demo(tmp_path / "box", chunk_delay=0))
    transcript = Transcript()
    events = [
        ReplyStartEvent(reply_id="r-lead", name=LEADER, session_id="s"),
        ToolCallStartEvent(reply_id="r-lead", tool_call_id="c1", tool_call_name="TeamAssign"),
        ToolCallDeltaEvent(reply_id="r-lead", tool_call_id="c1", delta='{"member": "worker", '),
        ToolCallDeltaEvent(reply_id="r-lead", tool_call_id="c1", delta='"prompt": "tidy"}'),
        ToolResultStartEvent(reply_id="r-lead", tool_call_id="c1", tool_call_name="TeamAssign"),
        ReplyStartEvent(reply_id="r-w", name=WORKER, session_id="s"),
        ToolCallStartEvent(reply_id="r-w", tool_call_id="c2", tool_call_name="delete_file"),
        ToolResultTextDeltaEvent(reply_id="r-lead", tool_call_id="c1", delta="Deleted x."),
        ToolResultEndEvent(reply_id="r-lead", tool_call_id="c1", state=ToolResultState.SUCCESS),
    ]
    handled = []
    for ev in events:
        team.owner_name(ev)
        took = plumbing_step(team, transcript, ev)
        handled.append(took)
        if not took and isinstance(ev, ToolCallStartEvent):
            transcript.tool_call(ev.tool_call_id)
        tag_entry(team, transcript, ev)
    assert handled == [False, True, True, True, True, False, False, True, True]
    assert [(e["kind"], e["text"], e.get("agent")) for e in transcript] == [
        ("note", "lead assigned “tidy” to worker", LEADER),
        ("tool_call", "", WORKER),
        ("note", "worker reported back to lead (success): Deleted x.", WORKER),
    ]
    # the page gets the steps and each entry's agent as stream ops, not only the saved record
    _seq, ops = transcript.take_ops()
    page: list[dict] = []
    apply_ops(page, ops)
    assert page == transcript.view()
    # the worker's own tool call is not plumbing, even if named like one elsewhere
    assert not plumbing_step(team, [], ToolCallStartEvent(reply_id="r-w", tool_call_id="c3", tool_call_name="x"))


def test_tag_entry_names_the_agent_once_as_a_set_op(tmp_path: Path) -> None:
    """The first event of an entry names its agent (a ``set`` op); later events and
    events of entries not in the transcript change nothing."""
    team = Team.of(team_demo(tmp_path / "box", chunk_delay=0))
    transcript = Transcript()
    team.owner_name(ReplyStartEvent(reply_id="r-w", name=WORKER, session_id="s"))
    transcript.tool_call("c2", "delete_file")
    transcript.take_ops()
    start = ToolCallStartEvent(reply_id="r-w", tool_call_id="c2", tool_call_name="delete_file")
    assert tag_entry(team, transcript, start)
    assert transcript.take_ops()[1] == [{"op": "set", "id": "call:c2", "fields": {"agent": WORKER}}]
    delta = ToolCallDeltaEvent(reply_id="r-w", tool_call_id="c2", delta="{}")
    assert not tag_entry(team, transcript, delta)  # named already
    assert not tag_entry(team, transcript, ToolCallStartEvent(reply_id="r-w", tool_call_id="c9", tool_call_name="x"))
    assert not tag_entry(team, transcript, ReplyStartEvent(reply_id="r-w", name=WORKER, session_id="s"))
    assert transcript.take_ops()[1] == []
    assert transcript.view()[0]["agent"] == WORKER


def test_goal_pipeline_view() -> None:
    from agentscope.pipeline import GoalPipeline

    ex, ver = plain_agent(), Agent(name="ver", system_prompt="v", model=ScriptedChatModel([]), toolkit=Toolkit())
    team = Team.of(GoalPipeline(ex, ver))
    assert team.shape == "goal" and team.leader is ex and list(team.members) == ["ver"]
    blob = json.loads(team.state_json())
    assert blob["goal"] == {"goal": None, "iters": 0, "executor_retries": 0, "verifier_retries": 0}
