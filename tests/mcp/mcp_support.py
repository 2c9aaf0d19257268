"""Helpers of the MCP tests: a real MCP server (tests/mcp/db_server.py, the SDK's own
``MCPServer``) as a stdio subprocess behind nb_hitl's ``AskingMCPClient``, and what it wrote."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from agentscope.mcp import StdioMCPConfig

from nb_hitl.mcp import AskingMCPClient

SERVER = Path(__file__).with_name("db_server.py")


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
