"""Soak the AG-UI server: memory per finished thread, eviction on vs off.

Runs N one-message threads (a real AgentScope agent on the scripted model:
one streamed answer, no tool) through two ``AguiServer``s in this process,
one after the other: first with eviction **on** (``max_threads=M``), then
with eviction **off** (the baseline: every finished thread is kept). For
each it prints the threads kept, the Python heap grown (``tracemalloc``),
the heap per finished thread and the process RSS (``/proc/self/statm``).

    python benchmarks/agui_soak.py            # N=400, M=50
    python benchmarks/agui_soak.py 1000 100

Bound: it ends within 300 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import time
import tracemalloc
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from ag_ui.core import UserMessage  # noqa: E402
from agentscope.agent import Agent  # noqa: E402

from nb_hitl.agui import AguiServer  # noqa: E402
from nb_hitl.agui.client import AguiClient  # noqa: E402
from nb_hitl.models import ScriptedChatModel, Turn  # noqa: E402


def agent(thread_id: str) -> Agent:
    text = "Hello there, this is a reply of a few words, streamed word by word to the client. " * 4
    return Agent(name="soak", system_prompt="Greet.", model=ScriptedChatModel([Turn(text.strip())]))


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


async def soak(server: AguiServer, n: int, tag: str) -> dict[str, float]:
    gc.collect()
    heap0, _ = tracemalloc.get_traced_memory()
    started = time.perf_counter()
    for i in range(n):
        inp = AguiClient.make_input(f"{tag}-{i}", [UserMessage(id=f"{tag}-u{i}", content="hi")])
        events = [e async for e in server.run(inp)]
        assert events[-1].type.value == "RUN_FINISHED", events[-1]
    took = time.perf_counter() - started
    gc.collect()
    heap1, _ = tracemalloc.get_traced_memory()
    return {
        "kept": len(server.threads),
        "heap_mb": (heap1 - heap0) / 1e6,
        "per_thread_kb": (heap1 - heap0) / n / 1e3,
        "rss_mb": rss_mb(),
        "runs_per_s": n / took,
    }


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    m = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    tracemalloc.start()
    print(f"{n} finished threads per server; eviction on keeps at most {m}")
    print(f"RSS at start: {rss_mb():.1f} MB")
    warm = AguiServer(agent, token=False, max_threads=5)  # imports, caches, first-run costs: not counted
    asyncio.run(soak(warm, 20, "warm"))
    del warm
    rows = []
    on = AguiServer(agent, token=False, max_threads=m, thread_ttl=3600)
    rows.append(("eviction on", asyncio.run(soak(on, n, "on"))))
    del on
    off = AguiServer(agent, token=False, max_threads=10**9, thread_ttl=None)
    rows.append(("eviction off (baseline)", asyncio.run(soak(off, n, "off"))))
    print(f"{'':26}{'kept':>6}{'heap MB':>10}{'KB/thread':>11}{'RSS MB':>9}{'runs/s':>8}")
    for name, r in rows:
        print(
            f"{name:26}{r['kept']:>6.0f}{r['heap_mb']:>10.1f}{r['per_thread_kb']:>11.1f}"
            f"{r['rss_mb']:>9.1f}{r['runs_per_s']:>8.1f}"
        )
    off_r, on_r = rows[1][1], rows[0][1]
    print(
        f"memory per finished thread kept: {off_r['per_thread_kb']:.1f} KB; with eviction the heap grew "
        f"{on_r['heap_mb']:.1f} MB instead of {off_r['heap_mb']:.1f} MB"
    )


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(main, 300, "agui_soak")  # seconds, on a loaded 2-core machine
