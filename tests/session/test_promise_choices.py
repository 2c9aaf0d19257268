"""Choices that fit the tool: per-tool decisions, "Always deny", rules that say what they let through.

Real agents on :class:`~nb_hitl.models.ScriptedChatModel`, decisions through
``Session.act`` (the path of a click); the permission rules checked are the
agent's own engine's (``agent._engine.context``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import ToolResultState

from nb_hitl import DecisionError, Session
from nb_hitl._agentscope import permission_context
from nb_hitl.demo import make_sandbox
from nb_hitl.models import Turn, tool_call, tool_results
from tests.support import parked_on, run_async
from tests.support_agents import sandbox_agent


def delete_agent(folder: Path, second: bool = False) -> Agent:
    script: list[Any] = [Turn("Deleting.", [tool_call("delete_file", id="call_1", path="old_log.txt")])]
    if second:
        script.append(Turn("Again.", [tool_call("delete_file", id="call_2", path="notes.txt")]))
    script.append(Turn("ok"))
    return sandbox_agent(folder, script)


def base(pause: Any) -> dict[str, Any]:
    return {"tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id}


def test_decisions_per_tool_remove_modify_and_always_allow(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    agent = delete_agent(folder)

    async def scenario() -> None:
        session = Session(agent, display=False, decisions={"delete_file": ["approve", "deny"]})
        task = session.start("tidy")
        pause = await parked_on(session, "confirm")
        assert pause.to_view()["decisions"] == ["approve", "deny"]
        with pytest.raises(DecisionError, match="Modify is not offered") as err:
            await session.act({**base(pause), "action": "modify", "input": '{"path": "draft.md"}'})
        assert err.value.field == "action"
        with pytest.raises(DecisionError, match="Always allow is not offered"):
            await session.act({**base(pause), "action": "approve", "rules": [0]})
        with pytest.raises(DecisionError, match="Always deny is not offered"):
            await session.act({**base(pause), "action": "deny", "deny_rules": [0]})
        assert pause.status == "open"
        await session.act({**base(pause), "action": "approve"})
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert sorted(p.name for p in folder.iterdir()) == ["draft.md", "notes.txt"]
    assert not permission_context(agent).allow_rules.get("delete_file")


def test_unlisted_tools_offer_every_decision_and_bad_decisions_are_refused(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    agent = delete_agent(folder)

    async def scenario() -> None:
        session = Session(agent, display=False, decisions={"send_payment": ["approve", "deny"]})
        task = session.start("tidy")
        pause = await parked_on(session, "confirm")
        assert pause.to_view()["decisions"] == ["approve", "deny", "modify", "always_allow", "always_deny"]
        await session.act({**base(pause), "action": "deny"})
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    with pytest.raises(ValueError, match="unknown"):
        Session(delete_agent(folder), display=False, decisions={"delete_file": ["approve", "deny", "edit"]})
    with pytest.raises(ValueError, match="must include 'deny'"):
        Session(delete_agent(folder), display=False, decisions={"delete_file": ["approve"]})
    with pytest.raises(ValueError, match="list of decisions"):
        Session(delete_agent(folder), display=False, decisions={"delete_file": "approve"})


def test_always_deny_adds_a_deny_rule_through_the_permission_engine(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    agent = delete_agent(folder, second=True)

    async def scenario() -> Session:
        session = Session(agent, display=False)
        task = session.start("tidy")
        pause = await parked_on(session, "confirm")
        out = await session.act({**base(pause), "action": "deny", "deny_rules": [0], "reason": "never delete"})
        assert out["decision"]["denied_rules"] == ["deny delete_file"]
        await asyncio.wait_for(task, 10)  # the second delete_file is refused by the rule: no new pause
        return session

    session = run_async(scenario())
    rules = permission_context(agent).deny_rules.get("delete_file") or []
    assert [(r.rule_content, r.behavior.value) for r in rules] == [(None, "deny")]
    results = tool_results(agent.model.calls[-1], "delete_file")
    assert [r.state for r in results] == [ToolResultState.DENIED, ToolResultState.DENIED]
    assert len(session.runs[-1].pauses) == 1
    assert sorted(p.name for p in folder.iterdir()) == ["draft.md", "notes.txt", "old_log.txt"]


def test_C18_each_suggested_rule_says_what_else_it_lets_through(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    agent = delete_agent(folder)

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("tidy")
        pause = await parked_on(session, "confirm")
        rules = pause.to_view()["suggested_rules"]
        assert [r["label"] for r in rules] == ["allow delete_file"]
        assert "every call of delete_file" in rules[0]["reach"]
        # approving without a rule adds none: the next matching call still asks
        await session.act({**base(pause), "action": "approve"})
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert not permission_context(agent).allow_rules.get("delete_file")


def test_C18_an_edited_rule_is_validated_before_it_is_added(tmp_path: Path) -> None:
    """An edited "Always allow" rule that does not match the call it is accepted for is refused
    (the tool's own match_rule), and so is an edit of a rule that is not ticked or is empty; nothing
    is added and the pause stays open."""
    folder = make_sandbox(tmp_path / "box")
    agent = delete_agent(folder)

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("tidy")
        pause = await parked_on(session, "confirm")
        with pytest.raises(DecisionError, match="does not match this call") as err:
            await session.act(
                {**base(pause), "action": "approve", "rules": [0], "rule_edits": [{"index": 0, "rule_content": "x"}]}
            )
        assert err.value.field == "rules"
        with pytest.raises(DecisionError, match="not ticked"):
            await session.act({**base(pause), "action": "approve", "rule_edits": [{"index": 0, "rule_content": "x"}]})
        with pytest.raises(DecisionError, match="cannot be empty"):
            await session.act(
                {**base(pause), "action": "approve", "rules": [0], "rule_edits": [{"index": 0, "rule_content": " "}]}
            )
        assert pause.status == "open" and not permission_context(agent).allow_rules.get("delete_file")
        await session.act({**base(pause), "action": "approve", "rules": [0]})
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert [r.rule_content for r in permission_context(agent).allow_rules["delete_file"]] == [None]
