"""Benchmark: a click on another widget reaches Python during streaming, next to baselines in the same run.

In real JupyterLab + Debian Chromium, one kernel runs, in turn, scenarios in
which a real ``agentscope.agent.Agent`` on the scripted offline model
streams a reply of ``--deltas`` one-word text deltas (a 1 ms sleep between
them), while the benchmark clicks a plain ``ipywidgets.Button`` in the same
cell's output every ``--every`` seconds with Playwright's mouse (real input
events, queued behind whatever the page is doing). The button's
``on_click`` notes the kernel's ``time.time()``; the latency of a click is
that time minus the ``time.time()`` at which the benchmark was due to send
it (one machine, one clock): a click sent late because the page kept
Playwright waiting counts that wait. Only clicks due while the reply ran count.

Scenarios:

* ``idle``: the cell awaits ``asyncio.sleep`` as long as a reply takes, no
  agent (the floor: browser -> server -> kernel);
* ``no UI``: ``Session(agent, display=False)``, the agent's own load;
* ``nb_hitl``: ``Session(agent)``, its reply drawn;
* ``no UI, 1 MB result`` / ``nb_hitl, 1 MB result``: the model first calls
  a tool (allowed by a rule: no pause) that returns ``--big`` characters,
  then streams;
* ``nb_hitl, turn 21``: one ``Session`` runs 20 short replies (each drawn),
  then the 21st streams while the clicks are measured;
* ``explorer replay``: the permission explorer (``explore(agent,
  history=path)``) replays a recorded log of ``--replay-calls`` calls
  (100,000 by default, about 150,000 records: ``benchmarks/replay.py``'s
  log, Bash/Read/Write and two function tools) against its 1,000 candidate
  rules, the way the page's replay asks for it
  (``PermissionExplorer.replay_history``); the button shown above the
  explorer also answers each click (its label counts them), and the page
  notes when each answer is drawn: click due -> answer drawn is reported too,
  with the garbage collector's full collections during the replay
  (``gc.callbacks``) and when the slowest clicks were due.

Each prints the median, p90 and max latency (ms) and how many clicks
reached Python (a click lost would show as fewer). Target: a click
reaches Python within 100 ms while nb_hitl streams, with a 1 MB tool
result and in a 20-turn session; a click is answered within 100 ms while
the explorer replays 100,000 recorded calls.

Run from the repository root::

    .venv/bin/python -m benchmarks.responsive [--deltas 2000] [--big 1000000] [--repeat 2] [--replay-calls 100000]
    .venv/bin/python -m benchmarks.responsive --kinds explorer_replay   # the explorer's replay alone

Bound: it ends within 1500 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._lab import cell_json, lab_page, open_notebook, run_cell, summarize, write_notebook

SETUP = """
import asyncio, gc, json, time
import ipywidgets
from IPython.display import display
from agentscope.agent import Agent
from agentscope.message import TextBlock, ToolResultState
from agentscope.permission import PermissionBehavior, PermissionRule
from agentscope.state import AgentState
from agentscope.tool import FunctionTool, ToolChunk, Toolkit
from nb_hitl import Session
from nb_hitl.models import ScriptedChatModel, Turn, tool_call

DELTAS, BIG, REPLAY_CALLS = {deltas}, {big}, {replay_calls}
CLICKS = []
button = ipywidgets.Button(description="ping")
button.on_click(lambda b: CLICKS.append(time.time()))

def answered(b):
    CLICKS.append(time.time())
    b.description = f"ping {{len(CLICKS)}}"  # the answer the page draws

def dump() -> ToolChunk:
    \"\"\"Return the whole log.\"\"\"
    return ToolChunk(content=[TextBlock(text=("log line " * (BIG // 9 + 1))[:BIG])], state=ToolResultState.SUCCESS)

WORDS = " ".join(f"w{{i:04d}}" for i in range(DELTAS))

def agent(big=False, turns=()):
    state = AgentState()
    state.permission_context.allow_rules["dump"] = [
        PermissionRule(tool_name="dump", rule_content=None, behavior=PermissionBehavior.ALLOW, source="bench")]
    script = [Turn("short reply") for _ in turns]
    script += ([Turn("Reading the log.", [tool_call("dump")])] if big else []) + [Turn(WORDS)]
    return Agent(name="bench", system_prompt="x", state=state, model=ScriptedChatModel(script, chunk_delay=0.001),
                 toolkit=Toolkit(tools=[FunctionTool(dump)]))

async def explorer_replay(run):
    from pathlib import Path
    from benchmarks.replay import candidate_rules, recorded_calls, toolkit
    from nb_hitl.permissions import explore
    records = recorded_calls(REPLAY_CALLS, 1000)
    Path("history.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in records))
    a = Agent(name="bench", system_prompt="x", model=ScriptedChatModel([]),
              toolkit=Toolkit(tools=list(toolkit().values())))
    explorer = explore(a, history="history.jsonl", watch=False)
    candidate = json.dumps(candidate_rules(1000))
    ping = ipywidgets.Button(description="ping 0", _dom_classes=["nbh-bench-answer"])
    ping.on_click(answered)
    display(ping, explorer)
    await asyncio.sleep(1.5)  # the benchmark finds the button and starts clicking
    full = []  # the garbage collector's full collections during the replay: [start, end] (time.time())
    def collected(phase, info):
        if info["generation"] == 2:
            full.append([time.time()]) if phase == "start" else full[-1].append(time.time())
    gc.callbacks.append(collected)
    start = time.time()
    summary = await explorer.replay_history(candidate)
    end = time.time()
    gc.callbacks.remove(collected)
    Path(f"replayed-{{run}}").touch()  # the benchmark stops clicking
    print("RESULT", json.dumps({{"kind": "explorer_replay", "run": run, "start": start, "end": end,
                                "calls": summary["calls"], "records": len(records), "full_gc": full}}))

async def scenario(kind, run):
    if kind == "explorer_replay":
        return await explorer_replay(run)
    ui = kind.startswith("nbhitl")
    a = agent(big=kind.endswith("big"), turns=range(20) if kind.endswith("turn21") else ())
    session = Session(a, display=ui)
    if kind.endswith("turn21"):
        for i in range(20):
            await session.run(f"turn {{i}}")
    display(button)
    await asyncio.sleep(1.5)  # the benchmark finds the button and starts clicking
    start = time.time()
    if kind == "idle":
        await asyncio.sleep(3.0)
    else:
        await session.run("go")
    end = time.time()
    print("RESULT", json.dumps({{"kind": kind, "run": run, "start": start, "end": end}}))
"""

COLLECT = 'await asyncio.sleep(1.0); print("CLICKS", json.dumps(CLICKS)); CLICKS.clear()'

KINDS = ["idle", "noui", "nbhitl", "noui_big", "nbhitl_big", "nbhitl_turn21", "explorer_replay"]
LABELS = {
    "idle": "idle kernel",
    "noui": "agent, no UI",
    "nbhitl": "nb_hitl",
    "noui_big": "agent, no UI, 1 MB result",
    "nbhitl_big": "nb_hitl, 1 MB result",
    "nbhitl_turn21": "nb_hitl, turn 21",
    "explorer_replay": "explorer, replay of the log",
}

# the page notes when it handles each click on a button (Date.now(), in s)
PAGE_CLICKS_JS = """
() => { window.__nbhClicks = []; document.addEventListener("click", (e) => {
  if (e.target instanceof Element && e.target.closest(".widget-button")) window.__nbhClicks.push(Date.now() / 1000);
}, true); }
"""


# the page notes when each answer to a click is drawn: [clicks counted in the label, Date.now() in s]
PAGE_ANSWERS_JS = """
(i) => { window.__nbhAnswers = []; let last = null; if (window.__nbhAnswerObs) window.__nbhAnswerObs.disconnect();
  window.__nbhAnswerObs = new MutationObserver(() => {
    const cell = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')[i];
    const b = cell && cell.querySelector('.nbh-bench-answer');
    if (b && b.textContent !== last) { last = b.textContent; window.__nbhAnswers.push([parseInt(last.split(' ')[1]), Date.now() / 1000]); }
  });
  window.__nbhAnswerObs.observe(document.body, { subtree: true, childList: true, characterData: true });
}
"""


def answer_latencies(
    sent: list[float], answers: list[list[float]], start: float, end: float
) -> list[tuple[float, float]]:
    """Per click due between ``start`` and ``end``: milliseconds from the click
    due to the first answer drawn that counts it (``answers``: ``[clicks counted,
    time]`` as the page noted them), and when it was due (seconds after ``start``);
    a click never answered is left out (the count says so)."""
    out = []
    for n, due in enumerate(sent, start=1):
        drawn = next((t for count, t in answers if count >= n), None)
        if start <= due <= end and drawn is not None:
            out.append(((drawn - due) * 1000, due - start))
    return out


def click_while_running(
    page: Any, lab: Any, index: int, every: float, done: Callable[[], bool] | None = None
) -> list[float]:
    """Click the ping button of cell ``index`` every ``every`` seconds until the
    kernel is idle again (the cell ended; asked of the server once a second,
    not of the page), or until ``done()`` (asked once a second) when given;
    each click's scheduled ``time.time()``. A click sent late (the page busy, so a Playwright call
    waited) keeps its scheduled time: its latency counts the wait, as a
    person's click at that moment would wait."""
    button = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".widget-button")
    button.wait_for(timeout=600_000)
    button.scroll_into_view_if_needed()
    box = button.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    sent: list[float] = []
    due = checked = time.time()
    while True:
        time.sleep(max(0.0, due - time.time()))
        sent.append(due)
        page.mouse.click(x, y)
        due += every
        if time.time() - checked >= 1.0:
            if done() if done is not None else all(k.get("execution_state") == "idle" for k in lab.kernels()):
                return sent
            checked = time.time()


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=2_000)
    parser.add_argument("--big", type=int, default=1_000_000, help="characters of the big tool result")
    parser.add_argument("--every", type=float, default=0.1, help="seconds between two clicks")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--replay-calls", type=int, default=100_000, help="recorded calls the explorer replays")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=KINDS)
    args = parser.parse_args(argv)
    # a first idle run warms the page and kernel up: not counted
    order = ["idle"] + [k for _ in range(args.repeat) for k in args.kinds]
    latencies: dict[str, list[float]] = {k: [] for k in args.kinds}
    # of each click: due -> handled by the page, and page -> Python
    in_page: dict[str, list[float]] = {k: [] for k in args.kinds}
    to_kernel: dict[str, list[float]] = {k: [] for k in args.kinds}
    counts: dict[str, list[tuple[int, int]]] = {k: [] for k in args.kinds}
    answered: list[float] = []  # explorer_replay: click due -> its answer drawn
    with lab_page() as (lab, page):
        cells = [textwrap.dedent(SETUP.format(deltas=args.deltas, big=args.big, replay_calls=args.replay_calls))]
        for n, kind in enumerate(order, start=1):
            cells += [f'await scenario("{kind}", {n})', COLLECT]
        write_notebook(lab.root / "responsive.ipynb", cells)
        open_notebook(page, lab, "responsive.ipynb")
        page.evaluate(PAGE_CLICKS_JS)
        run_cell(page, 0)
        time.sleep(5)
        for n, kind in enumerate(order, start=1):
            index = 2 * n - 1
            page.evaluate("() => { window.__nbhClicks = []; }")
            if kind == "explorer_replay":
                page.evaluate(PAGE_ANSWERS_JS, index)
            run_cell(page, index)
            # the server was seen to report the kernel idle while the explorer cell still ran: a file says when it ended
            marker = lab.root / f"replayed-{n}"
            sent = click_while_running(
                page, lab, index, args.every, marker.exists if kind == "explorer_replay" else None
            )
            result = cell_json(page, index, "RESULT")
            run_cell(page, index + 1)
            got = cell_json(page, index + 1, "CLICKS")
            handled = page.evaluate("() => window.__nbhClicks")
            # the clicks sent while the reply ran, each with the kernel time it arrived
            during = [(s, g) for s, g in zip(sent, got, strict=False) if result["start"] <= s <= result["end"]]
            if n == 1:
                continue  # the warm-up
            latencies[kind] += [(g - s) * 1000 for s, g in during]
            if kind == "explorer_replay":
                drawn = answer_latencies(
                    sent, page.evaluate("() => window.__nbhAnswers"), result["start"], result["end"]
                )
                answered.extend(ms for ms, _ in drawn)
                pauses = [f"{(b - a) * 1000:.0f} ms at {a - result['start']:.1f} s" for a, b in result["full_gc"]]
                slowest = sorted(((g - s) * 1000, s - result["start"]) for s, g in during)[-3:]
                print(
                    f"run {n}: {result['calls']:,} recorded calls ({result['records']:,} records) replayed in "
                    f"{result['end'] - result['start']:.1f} s; {len(drawn)} of {len(during)} clicks answered in the page; "
                    f"full garbage collections: {', '.join(pauses) or 'none'}; slowest clicks to Python: "
                    + ", ".join(f"{ms:.0f} ms at {at:.1f} s" for ms, at in reversed(slowest))
                    + "; slowest answers drawn: "
                    + ", ".join(f"{ms:.0f} ms at {at:.1f} s" for ms, at in sorted(drawn)[-3:][::-1])
                )
            if len(handled) == len(sent):
                for s, p, g in zip(sent, handled, got, strict=False):
                    if result["start"] <= s <= result["end"]:
                        in_page[kind].append((p - s) * 1000)
                        to_kernel[kind].append((g - p) * 1000)
            counts[kind].append((len(sent), len(got)))
            print(
                f"run {n} {LABELS[kind]}: {len(sent)} clicks sent, {len(got)} reached Python, {len(during)} during the reply"
            )
        errors = [e for e in page.nbh_errors if "pageerror" in e]
        if errors:
            print("page errors:", *errors, sep="\n  ")
    print(
        f"{args.deltas} deltas, tool result {args.big} characters, a click every {args.every * 1000:.0f} ms; "
        f"latency = kernel time.time() in on_click - the time the click was due"
    )
    figures: dict[str, dict[str, float]] = {}
    for kind, samples in latencies.items():
        if not samples:
            print(f"{LABELS[kind]:>26}: no click during the reply")
            continue
        st = summarize(samples)
        figures[kind] = st
        lost = sum(s - g for s, g in counts[kind])
        print(
            f"{LABELS[kind]:>26}: median {st['median']:.0f} ms, p90 {st['p90']:.0f} ms, max {st['max']:.0f} ms "
            f"(n={int(st['n'])}; clicks not reaching Python: {lost})"
        )
        if in_page[kind]:
            a, b = summarize(in_page[kind]), summarize(to_kernel[kind])
            print(
                f"{'':>28}of which due -> page handled it: median {a['median']:.0f}, max {a['max']:.0f} ms; "
                f"page -> Python: median {b['median']:.0f}, max {b['max']:.0f} ms"
            )
    if "idle" in figures:
        floor = figures["idle"]["median"]
        for kind, st in figures.items():
            if kind != "idle":
                print(f"{LABELS[kind]:>26}: median ×{st['median'] / max(floor, 1e-9):.1f} the idle kernel's")
    if answered:
        st = summarize(answered)
        print(
            f"{'explorer replay, answered':>26}: median {st['median']:.0f} ms, p90 {st['p90']:.0f} ms, "
            f"max {st['max']:.0f} ms (click due -> answer drawn; goal < 100 ms: "
            f"{'met' if st['max'] < 100 else 'NOT met'})"
        )
        figures["explorer_replay_answered"] = st
    return figures


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(main, 1500, "responsive")  # seconds, on a loaded 2-core machine
