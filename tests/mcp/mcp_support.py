"""Helpers of the MCP tests: a real MCP server (tests/mcp/db_server.py, the SDK's own
``MCPServer``) as a stdio subprocess behind nb_hitl's ``AskingMCPClient``, and what it wrote."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from agentscope.mcp import HttpMCPConfig, StdioMCPConfig

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
