"""The page's "Approve all" on one reply parked on N confirmations, against the same agent with no UI.

A real ``agentscope.agent.Agent`` on :class:`~nb_hitl.models.ScriptedChatModel`
asks for N parallel calls of a tool that needs confirmation (N = 50 and 200
by default). Two ways to approve them, in the same run:

* baseline: the agent alone, resumed directly with AgentScope's
  ``UserConfirmResultEvent`` holding one ``ConfirmResult`` per call;
* nb_hitl: a displayed :class:`~nb_hitl.Session` whose view connected (the
  ``sync`` a drawn page sends first, :func:`connect`), approved by the page's
  "Approve all" message (``{"action": "batch", "items": [...]}``) delivered
  through the widget's comm handler, as the page's message would be.

For each it prints the wall time and the kernel's CPU time from "approve" to
the reply's end, the bytes the kernel sent to the page (every comm message of
the reply's widget, as JSON) and the peak of traced memory (a separate pass
under ``tracemalloc``); and the bytes per decision when the N calls are
approved one at a time (flat as N grows: each decision sends its own card). It checks that the agent was resumed once with every
result and that the model was called once after them. Outside a kernel
ipywidgets' comms are ``comm.DummyComm``: the bytes are counted where the
comm would publish them.

Run: ``.venv/bin/python benchmarks/approve_all.py [N ...]``. Targets: ≤ 0.5 s
for 50, growth about linear (200 ≈ 4× 50).

Bound: it ends within 300 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import tracemalloc
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentscope.agent import Agent
from agentscope.event import ConfirmResult, RequireUserConfirmEvent, UserConfirmResultEvent
from agentscope.message import TextBlock, ToolResultState, UserMsg
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, ToolChunk, Toolkit

from nb_hitl import Session
from nb_hitl.models import ScriptedChatModel, Turn, tool_call, tool_results


def archive(path: str) -> ToolChunk:
    """Archive one file (a tool that asks: not read-only).

    Args:
        path (str): file name.
    """
    return ToolChunk(content=[TextBlock(text=f"Archived {path}.")], state=ToolResultState.SUCCESS)


class AskEachTime(FunctionTool):
    """A tool whose every call is a safety check (``bypass_immune``): AgentScope
    asks for each of N parallel calls. (An ordinary ASK suggests an "always
    allow" rule that covers the batch's later calls and leaves them pending.)"""

    async def check_permissions(self, tool_input: dict[str, Any], context: Any) -> PermissionDecision:
        return PermissionDecision(behavior=PermissionBehavior.ASK, message="archive asks each time", bypass_immune=True)


def make_agent(n: int) -> Agent:
    """An agent whose first model call asks for ``n`` parallel ``archive`` calls."""

    def final(msgs: list[Any]) -> Turn:
        return Turn(f"Archived {len(tool_results(msgs, 'archive'))} files.")

    calls = [tool_call("archive", id=f"call-{i:05d}", path=f"file-{i}.txt") for i in range(n)]
    return Agent(
        name="archiver",
        system_prompt="Archive what you are asked to.",
        model=ScriptedChatModel([Turn("Archiving.", calls), final], on_exhausted="raise"),
        toolkit=Toolkit(tools=[AskEachTime(archive, is_concurrency_safe=True)]),
    )


async def baseline(n: int, measure: Callable[[], Any]) -> dict[str, Any]:
    """The agent alone: park, then one ``UserConfirmResultEvent`` with every ``ConfirmResult``."""
    agent = make_agent(n)
    asked: list[Any] = []
    async for ev in agent.reply_stream(UserMsg(name="user", content="Archive them all.")):
        if isinstance(ev, RequireUserConfirmEvent):
            asked.extend(ev.tool_calls)
            reply_id = ev.reply_id
    assert len(asked) == n, f"parked on {len(asked)} calls, not {n}"
    calls_before = len(agent.model.calls)
    with measure() as m:
        resume = UserConfirmResultEvent(
            reply_id=reply_id, confirm_results=[ConfirmResult(confirmed=True, tool_call=tc) for tc in asked]
        )
        async for _ in agent.reply_stream(resume):
            pass
    assert len(agent.model.calls) == calls_before + 1
    return {**m.figures, "bytes": 0, "resumes": 1, "model_calls_after": len(agent.model.calls) - calls_before}


async def parked_session(n: int) -> tuple[Session, Any, asyncio.Task, dict[str, int]]:
    """A displayed Session parked on ``n`` confirmations; ``(session, run, task, sent)`` where
    ``sent`` counts what its widget publishes from now on (``bytes``, ``messages``)."""
    agent = make_agent(n)
    session = Session(agent)
    task = session.start("Archive them all.")
    while not (session.current and session.current.status == "paused" and len(session.pending) == n):
        if task.done():
            raise RuntimeError(f"the reply ended before parking: {task.result()!r}")
        await asyncio.sleep(0.005)
    run = session.current
    widget = run.widget
    sent = {"bytes": 0, "messages": 0}
    publish = widget.comm.publish_msg

    def counting(msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any) -> Any:
        sent["bytes"] += len(json.dumps(data, default=str))
        sent["messages"] += 1
        return publish(msg_type, data, metadata, buffers, **keys)

    widget.comm.publish_msg = counting
    return session, run, task, sent


def page_message(widget: Any, message: dict[str, Any]) -> None:
    """What ipywidgets does with the page's ``model.send(message)``: the comm's custom-message handler."""
    widget._handle_msg({"content": {"data": {"method": "custom", "content": message}}, "buffers": []})


def connect(widget: Any) -> None:
    """What a view of the reply does when it is drawn: ask for both streams (``sync``).
    From then on the session sends a card that changed as one op; a widget no view
    connected to sends its whole ``pauses`` record instead (no page would read ops)."""
    page_message(widget, {"request_id": "connect", "action": "sync", "transcript_seq": 0, "cards_seq": 0})


async def one_at_a_time_bytes(n: int) -> float:
    """Bytes sent to the page per decision when the ``n`` calls are approved one by one."""
    session, run, task, sent = await parked_session(n)
    connect(run.widget)
    sent.update(bytes=0, messages=0)  # from the first decision on
    for k, pause in enumerate(list(session.pending)):
        page_message(run.widget, {"request_id": f"r{k}", "action": "approve", "tool_call_id": pause.tool_call_id})
        while k < n - 1 and (run.resumes < k + 1 or run.status != "paused"):
            await asyncio.sleep(0.001)
    await task
    return sent["bytes"] / n


async def with_ui(n: int, measure: Callable[[], Any]) -> dict[str, Any]:
    """A displayed Session; "Approve all" as the page sends it, through the widget's comm handler."""
    session, run, task, sent = await parked_session(n)
    connect(run.widget)  # the page drew the reply before its button was clicked
    sent.update(bytes=0, messages=0)  # from the click on
    agent = session.agent
    calls_before = len(agent.model.calls)
    items = [{"action": "approve", "tool_call_id": p.tool_call_id, "reply_id": p.reply_id} for p in session.pending]
    message = {"request_id": "approve-all", "action": "batch", "items": items}
    with measure() as m:
        page_message(run.widget, message)
        await task
    assert run.resumes == 1, f"resumed {run.resumes} times"
    return {
        **m.figures,
        **sent,
        "resumes": run.resumes,
        "model_calls_after": len(agent.model.calls) - calls_before,
        "card_messages": run.cards.messages,
    }


class Timer:
    """Wall and CPU seconds of a block (``figures`` after it)."""

    def __enter__(self) -> Timer:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.figures = {"wall_s": time.perf_counter() - self.wall, "cpu_s": time.process_time() - self.cpu}


class Peak:
    """Peak traced memory of a block, in MB (``figures`` after it)."""

    def __enter__(self) -> Peak:
        tracemalloc.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.figures = {"peak_mb": tracemalloc.get_traced_memory()[1] / 1e6}
        tracemalloc.stop()


def measured(fn: Callable[[int, Callable[[], Any]], Coroutine[Any, Any, dict[str, Any]]], n: int) -> dict[str, Any]:
    """Best wall/CPU of three timed runs, then one run under tracemalloc for the memory peak."""
    runs = [asyncio.run(fn(n, Timer)) for _ in range(3)]
    best = min(runs, key=lambda r: r["wall_s"])
    return {**best, "cpu_s": min(r["cpu_s"] for r in runs), **asyncio.run(fn(n, Peak))}


def main(argv: list[str] | None = None) -> dict[int, dict[str, dict[str, Any]]]:
    """Measure each N (default 50 and 200), print a table; returns the figures."""
    sizes = [int(a) for a in (argv if argv is not None else sys.argv[1:])] or [50, 200]
    out: dict[int, dict[str, dict[str, Any]]] = {}
    for n in sizes:
        out[n] = {"baseline": measured(baseline, n), "nb_hitl": measured(with_ui, n)}
        out[n]["nb_hitl"]["one_at_a_time_bytes"] = asyncio.run(one_at_a_time_bytes(n))
    print(f"{'N':>5} {'':9} {'wall s':>8} {'cpu s':>8} {'bytes':>9} {'peak MB':>8} {'resumes':>7} {'model':>5}")
    for n, rows in out.items():
        for name, r in rows.items():
            print(
                f"{n:>5} {name:9} {r['wall_s']:8.3f} {r['cpu_s']:8.3f} {r['bytes']:9d} {r['peak_mb']:8.1f}"
                f" {r['resumes']:7d} {r['model_calls_after']:5d}"
            )
        ratio = rows["nb_hitl"]["wall_s"] / rows["baseline"]["wall_s"]
        cpu = rows["nb_hitl"]["cpu_s"] / rows["baseline"]["cpu_s"]
        print(
            f"{n:>5} nb_hitl / baseline: wall ×{ratio:.2f}, cpu ×{cpu:.2f}; card messages "
            f"{rows['nb_hitl']['card_messages']}; one at a time: "
            f"{rows['nb_hitl']['one_at_a_time_bytes'] / 1000:.1f} KB per decision"
        )
    if len(out) > 1:
        small, big = min(out), max(out)
        growth = out[big]["nb_hitl"]["wall_s"] / out[small]["nb_hitl"]["wall_s"]
        print(f"growth {small} -> {big}: ×{growth:.1f} (linear: ×{big / small:.0f})")
    return out


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(main, 300, "approve_all")  # seconds, on a loaded 2-core machine
