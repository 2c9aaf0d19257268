"""C41: an MCP tool's annotations reach the confirmation card, and a Policy can ask on them.

The real MCP server (tests/mcp/db_server.py) declares ``delete_rows``
destructive, idempotent and closed-world, ``count_rows`` read-only, and
nothing for ``rename_table``. AgentScope's ``MCPTool`` keeps only
``read_only_hint``; nb_hitl reads the rest from the MCP tool it wraps.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agentscope.permission import PermissionBehavior, PermissionRule
from agentscope.state import AgentState

from nb_hitl import Session
from nb_hitl.models import ScriptedChatModel, Turn, tool_call
from nb_hitl.policy import Policy, effective_mcp_hints, policy_middleware
from tests.mcp.mcp_support import db_client
from tests.support import run_async, wait_until
from tests.support_agents import scripted_agent

DELETE = "mcp__db__delete_rows"
COUNT = "mcp__db__count_rows"
RENAME = "mcp__db__rename_table"


def test_c41_the_confirmation_card_carries_the_servers_hints(tmp_path: Path) -> None:
    async def scenario() -> dict[str, Any]:
        async with db_client(tmp_path / "server.jsonl") as client:
            tools = await client.list_tools()
            agent = scripted_agent([Turn("Deleting.", [tool_call(DELETE, table="customers")])], tools)
            session = Session(agent, display=False)
            task = session.start("Clear customers.")
            pause = await wait_until(lambda: session.pending and session.pending[0], "the confirmation")
            view = dict(pause.to_view())
            await session.interrupt()
            await asyncio.wait_for(task, 30)
            return view

    view = run_async(scenario())
    assert view["kind"] == "confirm" and view["tool_name"] == DELETE
    assert view["tool_hints"] == {"destructiveHint": True, "idempotentHint": True, "openWorldHint": False}


def test_effective_hints_follow_the_mcp_defaults() -> None:
    assert effective_mcp_hints({}) == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": True,
    }
    assert effective_mcp_hints({"readOnlyHint": True, "destructiveHint": True})["destructiveHint"] is False
    with pytest.raises(ValueError, match="mcp_hints"):
        Policy(name="x", mcp_hints={"destructive": True})


def test_c41_a_policy_makes_every_destructive_mcp_tool_ask(tmp_path: Path) -> None:
    """Allow rules would let both calls run; the policy asks for the destructive one
    (declared) and for the one that declares nothing (MCP's default), never for the read-only one."""
    state = AgentState()
    for name in (DELETE, RENAME, COUNT):
        state.permission_context.allow_rules[name] = [
            PermissionRule(tool_name=name, rule_content=None, behavior=PermissionBehavior.ALLOW, source="t")
        ]
    policy = Policy(name="destructive MCP tools", mcp_hints={"destructiveHint": True})

    async def scenario() -> list[tuple[str, str | None]]:
        from agentscope.agent import Agent
        from agentscope.tool import Toolkit

        async with db_client(tmp_path / "server.jsonl") as client:
            tools = await client.list_tools()
            calls = [tool_call(COUNT, table="c"), tool_call(DELETE, table="c"), tool_call(RENAME, table="c")]
            agent = Agent(
                name="dba",
                system_prompt="x",
                model=ScriptedChatModel([Turn("Go.", calls)], on_exhausted="text"),
                toolkit=Toolkit(tools=tools),
                middlewares=[policy_middleware(policy)],
                state=state,
            )
            session = Session(agent, display=False)
            task = session.start("go")
            asked: list[tuple[str, str | None]] = []
            # MCP tools are not concurrency-safe: AgentScope asks for them one after another
            for _ in range(2):
                pause = await wait_until(
                    lambda: [p for p in session.pending if (p.tool_name, p.policy) not in asked], "the next ask"
                )
                asked.append((pause[0].tool_name, pause[0].policy))
                await session.act({"action": "deny", "tool_call_id": pause[0].tool_call_id})
            await asyncio.wait_for(task, 30)
            return asked

    asked = run_async(scenario())
    # the read-only count ran without asking; the declared-destructive and the silent tool asked
    assert asked == [(DELETE, "destructive MCP tools"), (RENAME, "destructive MCP tools")]
