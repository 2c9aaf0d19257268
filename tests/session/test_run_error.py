"""What a failed reply's card says (nb_hitl.session._run_error): each error named, and whether the call ran.

A real ``Agent`` on the scripted model sends a tool call whose input is
nested 900 levels deep: AgentScope's permission check copies it first and
fails with ``RecursionError`` inside its task group, before any card or run.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agentscope.message import TextBlock, ToolResultState
from agentscope.tool import FunctionTool, ToolChunk

from nb_hitl import Session
from nb_hitl.models import Turn, tool_call
from nb_hitl.session._run_error import run_error_text
from tests.support import run_async
from tests.support_agents import scripted_agent


def nested(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    here = root
    for _ in range(levels):
        here["a"] = {}
        here = here["a"]
    return root


def test_an_input_too_deep_for_agentscopes_permission_check_is_named_and_said_not_run() -> None:
    ran: list[Any] = []

    def note(data: dict) -> ToolChunk:
        """Keep a note.

        Args:
            data (dict): what to keep.
        """
        ran.append(data)
        return ToolChunk(content=[TextBlock(text="kept")], state=ToolResultState.SUCCESS)

    agent = scripted_agent(
        [Turn("Noting.", tool_calls=[tool_call("note", id="c1", data=nested(900))]), Turn("done")],
        [FunctionTool(note)],
        name="noter",
    )

    async def scenario() -> Session:
        session = Session(agent, display=False)
        with pytest.raises(BaseExceptionGroup):
            await asyncio.wait_for(session.run("note it"), 30)
        return session

    session = run_async(scenario())
    run = session.runs[-1]
    assert ran == [] and run.pauses == {}
    assert run.status == "error" and run.reason is not None
    assert run.reason.startswith("A tool call failed inside the agent: RecursionError: maximum recursion depth")
    assert (
        "AgentScope's permission check could not read the model's tool call input (the input is nested too "
        "deeply to copy), so the call did not run. Send the agent a new message to go on." in run.reason
    )
    assert "One or more tool calls raised" not in run.reason


def test_a_group_names_each_error_it_holds_and_counts_the_rest() -> None:
    group = ExceptionGroup("outer", [ValueError("one"), ExceptionGroup("inner", [KeyError("two"), OSError("three")])])
    assert (
        run_error_text(group) == "A tool call failed inside the agent: ValueError: one; KeyError: 'two'; OSError: three"
    )
    many = ExceptionGroup("x", [ValueError(str(i)) for i in range(5)])
    assert run_error_text(many).endswith("ValueError: 2; and 2 more errors")
    assert run_error_text(RuntimeError("plain")) == "RuntimeError: plain"  # raised outside a tool call: as it was
