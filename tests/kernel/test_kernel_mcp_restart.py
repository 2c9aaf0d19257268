"""A pending MCP elicitation when the kernel restarts (real kernels, a real MCP server).

Kernel A runs an agent, with checkpoints, whose MCP tool ``delete_rows``
(tests/mcp/db_server.py) asks "Delete all rows of customers?"; the question
is open when the kernel restarts. Two servers:

* stdio (AgentScope's usual): the server is the kernel's subprocess; it
  ends with the kernel, its question with it;
* streamable HTTP on 127.0.0.1, the test's own process, on the current
  protocol (``mode="auto"``, AgentScope's): the server asked with an
  input-required result and holds no request, so nothing of it waits; it
  serves the next client.

Either way no answer is invented (the server never notes one), and a second
kernel restoring the checkpoint finds the call closed as interrupted: the
model reads that it stopped and may or may not have taken effect.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.harness import KernelHarness
from tests.mcp.mcp_support import SERVER, answers, http_server, server_log, server_pid

pytestmark = pytest.mark.kernel

TOOL = "mcp__db__delete_rows"
CTX_TOOL = "mcp__db__delete_rows_ctx"
SHUTDOWN_SAID = "The notebook's kernel is shutting down: nobody will answer this request."


def agent_code(config: str, ckpt: Path, tool: str = TOOL, mode: str = "auto") -> str:
    return textwrap.dedent(
        f"""
        import json
        from agentscope.agent import Agent
        from agentscope.mcp import HttpMCPConfig, StdioMCPConfig
        from agentscope.permission import PermissionBehavior, PermissionRule
        from agentscope.state import AgentState
        from agentscope.tool import Toolkit
        from nb_hitl import Session
        from nb_hitl.mcp import AskingMCPClient
        from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results

        client = AskingMCPClient(name="db", is_stateful=True, mcp_config={config}, mode={mode!r})
        await client.connect()
        tools = await client.list_tools()

        def make(state=None):
            fresh = state is None
            state = state or AgentState()
            state.permission_context.allow_rules[{tool!r}] = [PermissionRule(
                tool_name={tool!r}, rule_content=None, behavior=PermissionBehavior.ALLOW, source="t")]
            report = lambda msgs: Turn("I read: " + result_text(tool_results(msgs)[-1]))
            script = [Turn("Deleting.", [tool_call({tool!r}, table="customers")])] if fresh else []
            return Agent(name="dba", system_prompt="Run the database.", state=state,
                         toolkit=Toolkit(tools=tools), model=ScriptedChatModel(script + [report]))
        CKPT = {str(ckpt)!r}
        """
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def run_across_a_restart(
    k: KernelHarness,
    config: str,
    ckpt: Path,
    tool: str = TOOL,
    mode: str = "auto",
    now: bool = True,
    exit_cell: bool = False,
) -> tuple[list, str]:
    """Kernel A to the open question, a restart (``now``: killed, else JupyterLab's graceful
    restart; ``exit_cell``: a cell's ``exit()`` ends kernel A first), kernel B restoring;
    (B's closed call blocks, its model's reply)."""
    k.execute(
        agent_code(config, ckpt, tool, mode)
        + 'session = Session(make(), checkpoints=CKPT, session_id="mcp-1")\n'
        + 'task = session.start("Clear the customers table.")\n'
    ).raise_for_error()

    def asked() -> bool:
        code = "print([p.status for p in session.current.pauses.values() if p.kind == 'elicitation'])"
        return k.execute(code).raise_for_error().stdout.strip() == "['open']"

    k.wait_for(asked, 60, what="the server's question open in kernel A")
    if exit_cell:  # IPython's exit(): the kernel's loop stops and its process ends, no shutdown_request
        k.execute("exit()", timeout=30)
        k.wait_for(lambda: not k.km.is_alive(), 30, what="kernel A's process to end")
    k.restart(now=now)
    out = k.execute(
        agent_code(config, ckpt, tool, mode)
        + textwrap.dedent(
            """
            session = Session.restore(make, CKPT, display=False)
            print(json.dumps([[b.type, str(getattr(b, "state", "")), result_text(b) if b.type == "tool_result" else ""]
                              for m in session.agent.state.context if not isinstance(m.content, str)
                              for b in m.content if b.type in ("tool_call", "tool_result")]))
            print((await session.run("What happened?")).get_text_content())
            await client.close()
            """
        ),
        timeout=120,
    ).raise_for_error()
    first, *rest = out.stdout.splitlines()
    return json.loads(first), "\n".join(rest)


INTERRUPTED = "This tool call was interrupted: the process running it stopped before it returned a result"


def check_model_side(blocks: list, reply: str) -> None:
    calls = [b for b in blocks if b[0] == "tool_call"]
    results = [b for b in blocks if b[0] == "tool_result"]
    assert len(calls) == 1 and len(results) == 1, blocks
    assert "interrupted" in results[0][1].lower() and INTERRUPTED in results[0][2], blocks
    assert reply.startswith("I read: ") and INTERRUPTED in reply


def test_a_pending_question_of_a_stdio_server_ends_with_the_kernel(tmp_path: Path) -> None:
    log, ckpt = tmp_path / "server.jsonl", tmp_path / "ckpt"
    config = f"StdioMCPConfig(command={sys.executable!r}, args=[{str(SERVER)!r}, {str(log)!r}])"
    with KernelHarness() as k:
        blocks, reply = run_across_a_restart(k, config, ckpt)
    first = server_pid(log)  # the server kernel A started
    end = time.monotonic() + 30
    while alive(first) and time.monotonic() < end:
        time.sleep(0.1)
    assert not alive(first), "the stdio server of the restarted kernel is still running"
    assert answers(log) == []  # no answer was invented
    check_model_side(blocks, reply)


def test_a_pending_question_of_an_http_server_leaves_nothing_waiting(tmp_path: Path) -> None:
    log, ckpt = tmp_path / "server.jsonl", tmp_path / "ckpt"
    with http_server(log) as url, KernelHarness() as k:
        blocks, reply = run_across_a_restart(k, f"HttpMCPConfig(url={url!r})", ckpt)
        served = k.execute(  # the server serves the next client: nothing of the old question holds it
            agent_code(f"HttpMCPConfig(url={url!r})", ckpt)
            + 'print((await (await client.get_tool("count_rows"))(table="customers")).content[0].text)\n'
            + "await client.close()\n"
        ).raise_for_error()
        assert served.stdout.strip().endswith("customers has 3 rows.")
    assert answers(log) == []
    check_model_side(blocks, reply)


@pytest.mark.parametrize("how", ["restart", "exit"])
def test_a_graceful_restart_answers_a_legacy_http_servers_question_with_an_error(tmp_path: Path, how: str) -> None:
    """JupyterLab's restart (shutdown_request), or ``exit()`` in a cell, while a legacy
    streamable-HTTP server's tool waits in ``ctx.elicit``: the kernel answers the request with an MCP error before it exits, the
    server's tool ends with that error (it notes it) instead of waiting for ever, and the
    restored session's model reads what the server said."""
    log, ckpt = tmp_path / "server.jsonl", tmp_path / "ckpt"
    with http_server(log) as url, KernelHarness() as k:
        blocks, reply = run_across_a_restart(
            k, f"HttpMCPConfig(url={url!r})", ckpt, tool=CTX_TOOL, mode="legacy", now=False, exit_cell=how == "exit"
        )
        ended = [e for e in server_log(log) if e.get("event") == "ended"]
    assert ended == [{"event": "ended", "of": "delete_rows_ctx", "error": f"MCPError: {SHUTDOWN_SAID}"}]
    assert answers(log) == []  # no answer was invented
    # kernel A read the server's error result before it exited; its checkpoint has it
    said = f"Error occurred when calling MCP tool: {SHUTDOWN_SAID}"
    assert [b for b in blocks if b[0] == "tool_result"] == [["tool_result", "error", said]], blocks
    assert reply == f"I read: {said}"
