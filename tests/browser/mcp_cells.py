"""The notebook cell both MCP page tests run: nb_hitl's ``AskingMCPClient`` on
the real MCP server of tests/mcp/db_server.py (a stdio subprocess of the
kernel) and a real agent on the scripted model, started in the background."""

from __future__ import annotations

import textwrap
from pathlib import Path

SERVER = Path(__file__).resolve().parents[1] / "mcp" / "db_server.py"


def mcp_agent_cell(log: Path, tool: str, opening: str, message: str, middle_turns: str = "") -> str:
    """The cell's code: ``tool`` of the ``db`` server allowed by a rule, the model
    saying ``opening`` and calling it with ``table="customers"``, then
    ``middle_turns`` (script items, Python source ending in a comma) and a last
    turn repeating the tool's result; ``session.start(message)`` as ``task``."""
    name = f"mcp__db__{tool}"
    return textwrap.dedent(
        f"""
        import sys
        from agentscope.agent import Agent
        from agentscope.mcp import StdioMCPConfig
        from agentscope.permission import PermissionBehavior, PermissionRule
        from agentscope.state import AgentState
        from agentscope.tool import Toolkit
        from nb_hitl import Session
        from nb_hitl.mcp import AskingMCPClient
        from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results

        client = AskingMCPClient(name="db", is_stateful=True,
            mcp_config=StdioMCPConfig(command=sys.executable, args=[{str(SERVER)!r}, {str(log)!r}]))
        await client.connect()
        tools = await client.list_tools()
        state = AgentState()
        state.permission_context.allow_rules[{name!r}] = [PermissionRule(
            tool_name={name!r}, rule_content=None, behavior=PermissionBehavior.ALLOW, source="nb")]
        agent = Agent(name="dba", system_prompt="Run the database.", state=state, toolkit=Toolkit(tools=tools),
            model=ScriptedChatModel([Turn({opening!r}, [tool_call({name!r}, table="customers")]), {middle_turns}
                                     lambda msgs: Turn("The tool said: " + result_text(tool_results(msgs)[-1]))]))
        session = Session(agent)
        task = session.start({message!r})
        """
    )
