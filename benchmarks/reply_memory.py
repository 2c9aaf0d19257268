"""Benchmark: kernel memory kept per finished reply, a displayed Session against the agent alone.

A real ``agentscope.agent.Agent`` on :class:`~nb_hitl.models.ScriptedChatModel`
gives ``--replies`` replies (100 by default) in one conversation. Each reply
asks for one ``archive`` call that needs confirmation, is approved, and ends
with about 1 kB of text. Two ways, in the same run:

* baseline: the agent alone, resumed with AgentScope's own
  ``UserConfirmResultEvent`` / ``ConfirmResult``, no UI;
* nb_hitl: a displayed :class:`~nb_hitl.Session` (one ``ReplyWidget`` per
  reply; outside a kernel ipywidgets' comms are ``comm.DummyComm``), each
  pause approved with ``session.act``, as a click is.

Printed: the memory still allocated after 10 and after ``--replies``
replies (``tracemalloc``, after ``gc.collect()``, the agent and session kept
alive, as in a notebook; after a warm-up, so imports are not counted), and
``per_reply``: what each reply between the two adds, for each, and their
ratio. The agent's own conversation
memory is in both figures: nb_hitl's share is the difference. Target: the
ratio ≤ 2×.

Run from the repository root::

    .venv/bin/python -m benchmarks.reply_memory [--replies 100]

Bound: it ends within 300 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import io
import sys
import tracemalloc
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentscope.agent import Agent
from agentscope.event import ConfirmResult, RequireUserConfirmEvent, UserConfirmResultEvent
from agentscope.message import TextBlock, ToolResultState, UserMsg
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, ToolChunk, Toolkit

from nb_hitl import Session
from nb_hitl.models import ScriptedChatModel, Turn, tool_call

TEXT = " ".join(f"word{i}" for i in range(140))
"""About 1 kB: each reply's final text."""


def archive(path: str) -> ToolChunk:
    """Archive one file.

    Args:
        path (str): file name.
    """
    return ToolChunk(content=[TextBlock(text=f"Archived {path}.")], state=ToolResultState.SUCCESS)


class AskEachTime(FunctionTool):
    """A tool whose every call asks (no "always allow" rule silences it)."""

    async def check_permissions(self, tool_input: dict[str, Any], context: Any) -> PermissionDecision:
        return PermissionDecision(behavior=PermissionBehavior.ASK, message="archive asks each time", bypass_immune=True)


def make_agent(replies: int) -> Agent:
    """An agent whose replies each ask for one ``archive`` call, then end with :data:`TEXT`."""
    turns: list[Any] = []
    for i in range(replies):
        turns += [Turn("Archiving.", [tool_call("archive", id=f"call-{i:05d}", path=f"file-{i}.txt")]), Turn(TEXT)]
    return Agent(
        name="archiver",
        system_prompt="Archive what you are asked to.",
        model=ScriptedChatModel(turns, on_exhausted="raise"),
        toolkit=Toolkit(tools=[AskEachTime(archive)]),
    )


async def alone(replies: int) -> tuple[Any, ...]:
    """The agent alone; returns what a notebook would keep alive (the agent)."""
    agent = make_agent(replies)
    for i in range(replies):
        asked: list[Any] = []
        async for ev in agent.reply_stream(UserMsg(name="user", content=f"Archive file {i}.")):
            if isinstance(ev, RequireUserConfirmEvent):
                asked.extend(ev.tool_calls)
                reply_id = ev.reply_id
        assert len(asked) == 1, asked
        resume = UserConfirmResultEvent(
            reply_id=reply_id, confirm_results=[ConfirmResult(confirmed=True, tool_call=tc) for tc in asked]
        )
        async for _ in agent.reply_stream(resume):
            pass
    return (agent,)


async def with_session(replies: int) -> tuple[Any, ...]:
    """A displayed Session, each pause approved with ``session.act``; keeps the agent and session."""
    agent = make_agent(replies)
    session = Session(agent)
    for i in range(replies):
        task = session.start(f"Archive file {i}.")
        while not session.pending:
            if task.done():
                raise RuntimeError(f"reply {i} ended before its pause: {task.result()!r}")
            await asyncio.sleep(0.001)
        pause = session.pending[0]
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id})
        final = await task
        assert TEXT in final.get_text_content(), final
    return (agent, session)


def kept_mb(fn: Any, replies: int) -> float:
    """MB still allocated after ``fn(replies)`` with its result kept alive (gc collected).

    Outside a kernel ``display`` prints each widget's repr: that output is dropped."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    with contextlib.redirect_stdout(io.StringIO()):
        kept = asyncio.run(fn(replies))
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return (after - before) / 1e6


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure, print the table; returns the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=100)
    args = parser.parse_args(argv)
    kept_mb(alone, 2), kept_mb(with_session, 2)  # warm up: imports and first-use caches are not a reply's
    out: dict[Any, Any] = {}
    for n in (10, args.replies):
        base, ui = kept_mb(alone, n), kept_mb(with_session, n)
        out[n] = {"alone_mb": base, "nb_hitl_mb": ui}
    small, big = out[10], out[args.replies]
    span = args.replies - 10
    # what each further reply adds: the slope between 10 and N replies
    out["per_reply"] = {
        "alone_mb": (big["alone_mb"] - small["alone_mb"]) / span,
        "nb_hitl_mb": (big["nb_hitl_mb"] - small["nb_hitl_mb"]) / span,
    }
    print(f"{'replies':>11} {'alone kB':>10} {'nb_hitl kB':>11} {'ratio':>6}")
    for n, row in out.items():
        ratio = row["nb_hitl_mb"] / row["alone_mb"]
        print(f"{n!s:>11} {row['alone_mb'] * 1e3:>10.1f} {row['nb_hitl_mb'] * 1e3:>11.1f} {ratio:>5.2f}x")
    print("target: ratio <= 2x")
    return out


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(main, 300, "reply_memory")  # seconds, on a loaded 2-core machine
