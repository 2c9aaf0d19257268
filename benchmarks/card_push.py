"""The kernel's work and the bytes sent per push of a reply's cards, at 10, 100 and 500 open cards.

A real ``agentscope.agent.Agent`` on :class:`~nb_hitl.models.ScriptedChatModel`
asks for N parallel calls of a tool that needs confirmation
(:func:`benchmarks.approve_all.make_agent`); a displayed
:class:`~nb_hitl.Session` parks on N open cards. Then, 60 times, one card
changes as an answer's arrival changes it (``transition`` to ``deciding``, then
back to ``open``: the front door's and a refusal's edges of the status table)
and the session pushes (``SessionCore._push``, what every answer, status
change and resume ends with). It prints, per N, the median kernel time of
one push (CPU seconds of ``_push``) and the bytes it publishes on the
widget's comm (as JSON; outside a kernel ipywidgets' comm is
``comm.DummyComm``, counted where it would publish). Then, 20 times, a card
is added (a copy of an open pause under a new ``tool_call`` id, as a reply
that asks again adds one) and pushed, then dropped and pushed: the median
CPU and bytes of the push that adds it.

The AG-UI client's widget too (``remote``): a real :class:`~nb_hitl.agui.AguiServer`
on 127.0.0.1 serves the same agent; a :class:`~nb_hitl.agui.RemoteSession`
(``auto_send=False``: nothing is resumed) shows its turn paused on N
interrupts, a view connects, and :data:`PUSHES` cards (at most N) are answered
one by one through ``RemoteSession.act``: the median CPU of one answer (its
checks and its push) and the bytes its push publishes. The service console
is not measured here (it needs AgentScope's service on Redis and PostgreSQL):
``tests/service/test_console_cards.py`` counts its card bytes.

Before and after in the same run: the same measurement runs in a subprocess
on the code of another git revision (``--before REF``, default ``main``;
extracted with ``git archive`` into a temporary directory, with this
checkout's built page code), then on this checkout. Before the change a push
built every card's view (``Pause.to_view``) and compared it with what the page
holds; now it builds the views of the cards a transition marked changed
(``CardFeed.views_of``).

Run: ``.venv/bin/python benchmarks/card_push.py [--before REF] [N ...]``
(default N: 10 100 500). Target: a push at 500 cards under 1 ms of kernel
CPU (it built 500 views before), bytes per push flat in N, a card added
included (the whole ``pauses`` list went to the page before). Both sides run
this file's worker on their own code.

Bound: it ends within 600 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PUSHES = 60
ADDS = 20


async def measure(n: int) -> dict[str, float]:
    """Park a displayed Session on ``n`` cards, then time :data:`PUSHES` pushes of one changed card."""
    from benchmarks.approve_all import page_message, parked_session
    from nb_hitl.answers.lifecycle import transition

    session, run, task, sent = await parked_session(n)
    # a view is drawn: it connects (from then on a session sends cards as ops)
    page_message(run.widget, {"request_id": "c", "action": "sync", "transcript_seq": 0, "cards_seq": 0})
    cards = list(run.pauses.values())
    cpu: list[float] = []
    sizes: list[int] = []
    for k in range(PUSHES):
        pause = cards[k % n]
        transition(pause, "deciding" if pause.status == "open" else "open")
        before = sent["bytes"]
        t0 = time.process_time()
        session._push(run)
        cpu.append(time.process_time() - t0)
        sizes.append(sent["bytes"] - before)
    for pause in cards:
        if pause.status == "deciding":
            transition(pause, "open")
    add_cpu: list[float] = []
    add_sizes: list[int] = []
    for k in range(ADDS):
        call = cards[0].tool_call.model_copy(update={"id": f"added-{k}"})  # AgentScope's ToolCallBlock
        new = dataclasses.replace(cards[0], tool_call=call, status="open")
        run.pauses[new.tool_call_id] = new
        before = sent["bytes"]
        t0 = time.process_time()
        session._push(run)
        add_cpu.append(time.process_time() - t0)
        add_sizes.append(sent["bytes"] - before)
        del run.pauses[new.tool_call_id]
        session._push(run)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return {
        "push_ms": 1000 * statistics.median(cpu),
        "push_bytes": statistics.median(sizes),
        "add_ms": 1000 * statistics.median(add_cpu),
        "add_bytes": statistics.median(add_sizes),
    }


async def measure_remote(n: int) -> dict[str, float]:
    """A RemoteSession's widget on a turn paused on ``n`` interrupts: answer cards one by one
    (``auto_send=False``), each answer's CPU and the bytes its push publishes (medians)."""
    from benchmarks.approve_all import make_agent, page_message
    from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background

    server = AguiServer(lambda _thread_id: make_agent(n), interrupt_ttl=600)
    with serve_in_background(server, announce=False) as handle:
        remote = RemoteSession(handle.url, token=handle.token, display=False, auto_send=False)
        task = remote.start("Archive them all.")
        views = await remote.until_paused()
        widget = remote.current.view.widget  # type: ignore[union-attr]
        # a view is drawn: it connects (a widget that streams its cards sends them as ops from then on)
        page_message(widget, {"request_id": "c", "action": "sync", "transcript_seq": 0, "cards_seq": 0})
        sent = {"bytes": 0}
        publish = widget.comm.publish_msg

        def counting(msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any) -> Any:
            sent["bytes"] += len(json.dumps(data, default=str))
            return publish(msg_type, data, metadata, buffers, **keys)

        widget.comm.publish_msg = counting
        cpu: list[float] = []
        sizes: list[int] = []
        for view in views[: min(PUSHES, n)]:
            before = sent["bytes"]
            t0 = time.process_time()
            await remote.act({"action": "approve", "tool_call_id": view["tool_call_id"]})
            cpu.append(time.process_time() - t0)
            sizes.append(sent["bytes"] - before)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return {"remote_ms": 1000 * statistics.median(cpu), "remote_bytes": statistics.median(sizes)}


def worker(sizes: list[int]) -> None:
    """Measure each N in this process and print the figures as one JSON line."""
    import nb_hitl

    assert Path(nb_hitl.__file__).resolve().is_relative_to(ROOT.resolve()), f"nb_hitl from {nb_hitl.__file__}"
    print(json.dumps({str(n): {**asyncio.run(measure(n)), **asyncio.run(measure_remote(n))} for n in sizes}))


def run_on(tree: Path, sizes: list[int], source: Path = Path(__file__)) -> dict[str, Any]:
    """The figures of the code in ``tree`` (a subprocess with ``tree`` first on the path):
    the ``--worker`` of the benchmark file ``source`` (default this one), run with ``sizes``
    as its arguments; it prints its figures as the last line of JSON."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    script = tree / "benchmarks" / source.name
    if script.resolve() != source.resolve():  # that file's worker, on that tree's code
        shutil.copy(source, script)
    out = subprocess.run(
        [sys.executable, str(script), "--worker", *map(str, sizes)],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def checkout(ref: str, into: Path) -> Path:
    """The tracked files of ``ref`` under ``into`` (``git archive``), with this checkout's built page code."""
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    static = ROOT / "nb_hitl" / "static"
    shutil.copytree(static, into / "nb_hitl" / "static", dirs_exist_ok=True)
    return into


def table(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]], sizes: list[int], what: str) -> None:
    """Print CPU (ms) and bytes of one kind of push (``push``: a card changed, ``add``: a card added), per N."""
    print(f"{'cards':>6} {'before ms':>10} {'after ms':>9} {'ratio':>7} {'before B':>9} {'after B':>8}")
    for n in sizes:
        b, a = before[str(n)], after[str(n)]
        ms, size = f"{what}_ms", f"{what}_bytes"
        print(f"{n:>6} {b[ms]:10.3f} {a[ms]:9.3f} {b[ms] / max(a[ms], 1e-6):6.1f}× {b[size]:9.0f} {a[size]:8.0f}")


def main(argv: list[str] | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """Measure ``--before REF`` (default ``main``) and this checkout; print a table; returns the figures."""
    args = list(argv if argv is not None else sys.argv[1:])
    ref = "main"
    if "--before" in args:
        i = args.index("--before")
        ref = args[i + 1]
        del args[i : i + 2]
    sizes = [int(a) for a in args] or [10, 100, 500]
    with tempfile.TemporaryDirectory(prefix="card-push-") as tmp:
        before = run_on(checkout(ref, Path(tmp)), sizes)
    after = run_on(ROOT, sizes)
    table(before, after, sizes, "push")
    print("a card added:")
    table(before, after, sizes, "add")
    print("a remote card answered (AG-UI client's widget):")
    table(before, after, sizes, "remote")
    small, big = str(min(sizes)), str(max(sizes))
    print(
        f"growth {small} -> {big} cards, per push: before ×{before[big]['push_ms'] / before[small]['push_ms']:.1f}, "
        f"after ×{after[big]['push_ms'] / after[small]['push_ms']:.1f} (before = {ref})"
    )
    return {"before": before, "after": after}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker([int(a) for a in sys.argv[2:]])
    else:
        from benchmarks._bound import run_bounded

        run_bounded(main, 600, "card_push")  # seconds, on a loaded 2-core machine
