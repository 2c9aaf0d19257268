"""Helpers of the MCP tests: a real MCP server (tests/mcp/db_server.py, the SDK's own
``MCPServer``) as a stdio subprocess behind nb_hitl's ``AskingMCPClient``, and what it wrote;
the agent the tests drive (a real ``Agent`` on the scripted model that calls the server's
tools, then reports the result it read) and the waits for the cards the server raises."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from agentscope.agent import Agent
from agentscope.mcp import HttpMCPConfig, StdioMCPConfig
from agentscope.message import Msg
from agentscope.permission import PermissionBehavior, PermissionRule
from agentscope.state import AgentState
from agentscope.tool import Toolkit

from nb_hitl import Session
from nb_hitl.mcp import AskingMCPClient
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from nb_hitl.pauses import Pause
from tests.support import wait_until

SERVER = Path(__file__).with_name("db_server.py")
MODES = ["auto", "legacy"]
"""The SDK's protocol modes: ``auto`` (input-required results), ``legacy`` (server-sent requests)."""
SUMMARIZE = "mcp__db__summarize_table"
ASKED = "Summarize the table customers in one line."
SAW = f"system: You summarize database tables. | user: {ASKED}"
"""What :func:`sampled` answers to the server's own request."""


def report(msgs: list[Any]) -> Turn:
    """The model's last turn: it repeats the tool result it read."""
    r = tool_results(msgs)[-1]
    return Turn(f"{r.name} {r.state}: {result_text(r)}")


def sampled(msgs: list[Msg]) -> Turn:
    """The model's answer to a sampling request: it repeats what it was sent."""
    return Turn(" | ".join(f"{m.role}: {m.get_text_content()}" for m in msgs))


def dba_agent(model: Any, tools: Sequence[Any], *, allow: str | None = None, recorder: Any = None) -> Agent:
    """The agent ``dba`` on ``model`` with the server's ``tools``; ``allow``: a whole-tool allow rule."""
    state = AgentState()
    if allow is not None:
        rule = PermissionRule(tool_name=allow, rule_content=None, behavior=PermissionBehavior.ALLOW, source="t")
        state.permission_context.allow_rules[allow] = [rule]
    return Agent(
        name="dba",
        system_prompt="Run the database.",
        model=model,
        toolkit=Toolkit(tools=list(tools)),
        middlewares=[recorder] if recorder is not None else None,
        state=state,
    )


def mcp_script(calls: list[Any], between: Sequence[Any] = ()) -> list[Any]:
    """The model's turns: ``calls``, then ``between`` (answers to sampling requests), then :func:`report`."""
    return [Turn("On it.", calls), *between, report]


def mcp_agent(
    tools: Sequence[Any],
    calls: list[Any],
    *,
    allow: str | None = None,
    recorder: Any = None,
    between: Sequence[Any] = (),
) -> Agent:
    """:func:`dba_agent` on the scripted model playing :func:`mcp_script`."""
    model = ScriptedChatModel(mcp_script(calls, between), on_exhausted="raise")
    return dba_agent(model, tools, allow=allow, recorder=recorder)


def sampling_agent(tools: Sequence[Any], *, model_turns: int = 1) -> Agent:
    """Calls summarize_table (allowed by a rule), answers ``model_turns`` sampling requests, then reports."""
    return mcp_agent(tools, [tool_call(SUMMARIZE, table="customers")], allow=SUMMARIZE, between=[sampled] * model_turns)


async def open_pause(session: Any, found: Callable[[Pause], bool], what: str) -> Pause:
    """The first pause of the current reply that ``found`` picks, once it is open."""

    def first() -> Pause | None:
        got = [p for p in session.current.pauses.values() if found(p)]
        return got[0] if got and got[0].status == "open" else None

    return await wait_until(first, what)


async def question(session: Session, n: int = 1) -> Pause:
    """The ``n``-th elicitation pause of the current reply, once it is open."""
    return await open_pause(session, lambda p: p.tool_call_id.endswith(f"~elicitation-{n}"), f"MCP question {n}")


async def card(session: Any, stage: str) -> Pause:
    """The open sampling pause of ``stage`` (``"request"`` / ``"completion"``) in the current reply."""
    return await open_pause(
        session, lambda p: (p.sampling or {}).get("stage") == stage and p.status == "open", f"the sampling {stage} card"
    )


@asynccontextmanager
async def db_client(log: Path, mode: str = "auto", name: str = "db", **options: Any) -> AsyncIterator[AskingMCPClient]:
    """A connected :class:`AskingMCPClient` on a fresh ``db_server.py`` writing to ``log``; closed after."""
    client = AskingMCPClient(
        name=name,
        is_stateful=True,
        mcp_config=StdioMCPConfig(command=sys.executable, args=[str(SERVER), str(log)]),
        mode=mode,  # type: ignore[arg-type]
        **options,
    )
    await client.connect()
    try:
        yield client
    finally:
        await client.close()


def server_log(log: Path) -> list[dict[str, Any]]:
    """What the server wrote: one dict per line (its start line first)."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def server_pid(log: Path) -> int:
    """The server's process id, as it wrote it when it started."""
    return int(next(e["pid"] for e in server_log(log) if e.get("event") == "started"))


def answers(log: Path) -> list[dict[str, Any]]:
    """The server's lines about answers it got (not its start line)."""
    return [e for e in server_log(log) if "tool" in e]


@contextmanager
def http_server(log: Path) -> Iterator[str]:
    """``db_server.py`` serving streamable HTTP on a free port of 127.0.0.1; its URL. Stopped by its own handle after."""
    from tests.harness.lab import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), str(log), str(port)], stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 60
        while True:  # ready once it accepts connections
            if proc.poll() is not None:
                raise RuntimeError(f"the MCP server exited with {proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@asynccontextmanager
async def http_client(url: str, mode: str = "auto", name: str = "db") -> AsyncIterator[AskingMCPClient]:
    """A connected, stateful :class:`AskingMCPClient` over streamable HTTP; closed after."""
    client = AskingMCPClient(name=name, is_stateful=True, mcp_config=HttpMCPConfig(url=url), mode=mode)  # type: ignore[arg-type]
    await client.connect()
    try:
        yield client
    finally:
        await client.close()
