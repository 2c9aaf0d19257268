"""Shared pieces of the team tests: a two-member team whose members both ask
before deleting, and small readers of what happened.

Every agent is a real ``agentscope.agent.Agent`` on
:class:`~nb_hitl.models.ScriptedChatModel`, in AgentScope's own
``TeamPipeline``; nothing of AgentScope is mocked.
"""

from __future__ import annotations

from typing import Any

from agentscope.agent import Agent
from agentscope.message import TextBlock, ToolResultState
from agentscope.pipeline import TeamMember, TeamPipeline
from agentscope.state import AgentState
from agentscope.tool import FunctionTool, ToolChunk, Toolkit

from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results

QUESTION = "Which file should I delete?"


def since_last_user(messages: list[Any]) -> list[Any]:
    last_user = max((i for i, m in enumerate(messages) if getattr(m, "role", None) == "user"), default=-1)
    return messages[last_user + 1 :]


def deleter(name: str, target: str, runs: list[tuple[str, str]], state: AgentState | None = None) -> Agent:
    """A member that deletes ``target`` (asks first) and reports what happened."""

    def delete_file(path: str) -> ToolChunk:
        """Delete one file.

        Args:
            path (str): the file's name.
        """
        runs.append((name, path))
        return ToolChunk(content=[TextBlock(text=f"Deleted {path}.")], state=ToolResultState.SUCCESS)

    def step(messages: list[Any]) -> Turn:
        done = tool_results(since_last_user(messages), "delete_file")
        if not done:
            return Turn(f"Deleting {target}.", [tool_call("delete_file", path=target)])
        return Turn(f"{name}: {getattr(done[-1].state, 'value', done[-1].state)} {result_text(done[-1])}")

    return Agent(
        name=name,
        system_prompt="Delete what you are told.",
        model=ScriptedChatModel([step] * 20),
        toolkit=Toolkit(tools=[FunctionTool(delete_file)]),
        state=state,
    )


def pair_team(runs: list[tuple[str, str]], states: dict[str, AgentState] | None = None) -> TeamPipeline:
    """Leader ``boss`` assigns two deletions in ONE turn, to ``ann`` and ``bob``."""
    states = states or {}

    def step(messages: list[Any]) -> Turn:
        results = tool_results(since_last_user(messages), "TeamAssign")
        if not results:
            return Turn(
                "Two jobs.",
                [
                    tool_call("TeamAssign", member="ann", prompt="delete a.txt"),
                    tool_call("TeamAssign", member="bob", prompt="delete b.txt"),
                ],
            )
        return Turn("Reports: " + " / ".join(result_text(r) for r in results))

    leader = Agent(
        name="boss",
        system_prompt="Lead.",
        model=ScriptedChatModel([step] * 20),
        toolkit=Toolkit(),
        state=states.get("boss"),
    )
    members = [
        TeamMember(agent=deleter("ann", "a.txt", runs, states.get("ann")), description="deletes a"),
        TeamMember(agent=deleter("bob", "b.txt", runs, states.get("bob")), description="deletes b"),
    ]
    return TeamPipeline(leader, members)


def ask_answer(pause: Any, pick: str) -> dict[str, Any]:
    return {
        "action": "answer",
        "tool_call_id": pause.tool_call_id,
        "reply_id": pause.reply_id,
        "answers": [{"question": QUESTION, "selected": [pick], "other": None}],
    }
