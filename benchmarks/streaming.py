"""Benchmark: a long streamed reply in the page, next to three baselines in the same run.

In real JupyterLab + Debian Chromium, one kernel runs, in turn, the same real
``agentscope.agent.Agent`` on the scripted offline model streaming ``--deltas``
text deltas (one word each, 1 ms apart; ``--burst``: no pause between them,
only a turn of the event loop):

* ``no UI``: ``Session(agent, display=False)`` (the CPU baseline);
* ``Output``: the agent's ``reply_stream`` consumed by hand, each delta
  printed into an ``ipywidgets.Output`` (``with out: print(...)``: one
  ``stream`` message per delta; ``Output.append_stdout`` would resend the
  whole output list each time, quadratic);
* ``per delta``: each delta sent as its own custom comm message;
* ``nb_hitl``: ``Session(agent)`` with its ``ReplyWidget``;
* ``not drawn``: the same, but the widget is never displayed, so the page
  draws nothing: the kernel's own cost of nb_hitl, without the browser's
  drawing competing for the same cores (this 2-core machine runs Chromium,
  JupyterLab's server and the kernel together);
* ``page draws``: the no-UI agent while the page itself (no kernel message)
  appends the same text to a block in the cell's output, in the steps
  nb_hitl's view takes: what the browser's drawing alone costs the kernel's
  CPU time on the cores they share.

For each it prints: the CPU time the browser (the Chromium processes it
started, read with ``psutil``) used while the cell ran, bytes kernel -> page (the sizes of the websocket frames
carrying ``comm_msg`` or ``stream`` messages, seen by the browser, and of the
``status`` messages the kernel sends around the page's own comm requests),
page updates per second (the ``comm_msg`` / ``stream`` frames / the stream's
duration), the latency of the last delta (kernel ``time.time()`` when it was
yielded -> the page's ``Date.now()`` when the text is in the DOM; the model
stalls ``STALL`` (1 s) after it, so only a trailing flush shows it), the transcript stream
messages nb_hitl's widget was sent, and the kernel's CPU time
(``time.process_time()``) against ``no UI``. ``START()`` and ``STOP(kind,
run)``, no-ops here, mark the measured part of each run:
``benchmarks/kernel_instructions.py`` counts the kernel's instructions there.

Each run starts with ``gc.collect()`` (not timed). Without it, a run paid
at random for the garbage of the runs before it: a full collection of this
kernel's heap (agentscope, pydantic, ipywidgets: some 300,000 objects) takes
about 0.17 s on this machine, as much as a whole no-UI reply, so the no-UI
runs alone spread from 0.18 s to 0.35 s and hid what nb_hitl adds. The full
collections inside a run are counted and printed. Kernel CPU still varies
from one run to the next on a shared machine, so each round runs no UI,
nb_hitl, no UI, not drawn
(``--repeat`` rounds; ``page draws`` joins them when chosen): each nb_hitl, not-drawn or page-draws run is divided by the no-UI
run just before it (a slow spell of the machine hits both), and its CPU
figure is the median of those ratios, printed with a 90 % confidence
interval of that median (``median_interval``: order statistics, no
assumption on the ratios' distribution) and their spread. The other
figures are medians over the runs; the other baselines run once, against the
median no-UI run. A first round warms the kernel up (imports; the first
widget also sends the page code, once per kernel) and is printed, not counted.

The default run streams 2,000 deltas in 15 rounds (six runs a round: 98 runs
in all with the warm-up round and the two other baselines); ``--deltas 10000``
runs 3 rounds (``default_repeat``: as many deltas in all). ``--kinds`` picks
what to run (``no UI``, the CPU baseline, always runs). JupyterLab's server
runs with its IOPub rate limits off (``SERVER_ARGS``: the ``Output``
baseline sends past them, and what the server drops would never reach the
page).

Run from the repository root::

    .venv/bin/python -m benchmarks.streaming [--deltas 2000] [--burst] [--repeat N] [--kinds noui output perdelta nbhitl notdrawn pagedraw]

Bound: it ends within 900 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import argparse
import itertools
import math
import re
import statistics
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil

from benchmarks._lab import cell_json, lab_page, open_notebook, run_cell, write_notebook
from nb_hitl.entries import SHOWN_CHARS

SETUP = """
import asyncio, gc, json, time
import ipywidgets
import IPython.display as ipd
from IPython.display import display
from agentscope.agent import Agent
from agentscope.message import TextBlock, UserMsg
from agentscope.model import ChatResponse
from agentscope.tool import Toolkit
from nb_hitl import Session
from nb_hitl.models import ScriptedChatModel, Turn

TEXT = {text!r}
PACE = {pace}  # seconds between two deltas; 0: a burst (one loop turn between them, no wait)
STALL = {stall}  # seconds the model stalls after its last delta
LAST = {{}}
# the measured part of each run: benchmarks/kernel_instructions.py counts
# the kernel's instructions there (callgrind); no-ops in this benchmark
START = lambda: None
STOP = lambda kind, run: None

class Stream(ScriptedChatModel):
    async def _stream(self, text, calls):
        words = text.text.split(" ")
        for i, w in enumerate(words):
            last = i == len(words) - 1
            if last:
                LAST["at"] = time.time()
            yield ChatResponse(id="r", is_last=False, content=[TextBlock(id=text.id, text=w if last else w + " ")])
            await asyncio.sleep(PACE)
        await asyncio.sleep(STALL)  # the model stalls after its last delta

def agent():
    return Agent(name="bench", system_prompt="x", model=Stream([Turn(TEXT)]), toolkit=Toolkit())

async def measure(kind, run):
    a = agent()
    gc.collect()  # every run starts with no garbage left by the ones before
    before = [g["collections"] for g in gc.get_stats()]
    messages = None  # the reply widget's transcript stream messages
    START()
    cpu, wall = time.process_time(), time.time()
    if kind in ("noui", "pagedraw"):  # pagedraw: the page draws text meanwhile, on its own
        await Session(a, display=False).run("go")
    elif kind == "nbhitl":
        s = Session(a)
        await s.run("go")
        messages = s.runs[-1].transcript.seq
    elif kind == "notdrawn":
        shown = ipd.display
        ipd.display = lambda *args, **kwargs: None  # the widget is made, never displayed
        try:
            s = Session(a)
            await s.run("go")
            messages = s.runs[-1].transcript.seq
        finally:
            ipd.display = shown
    elif kind == "output":
        out = ipywidgets.Output(); display(out)
        async for ev in a.reply_stream(UserMsg(name="user", content="go")):
            if type(ev).__name__ == "TextBlockDeltaEvent":
                with out:
                    print(ev.delta, end="")
    elif kind == "perdelta":
        w = ipywidgets.HTML("per-delta"); display(w)
        async for ev in a.reply_stream(UserMsg(name="user", content="go")):
            if type(ev).__name__ == "TextBlockDeltaEvent":
                w.send({{"delta": ev.delta}})
    cpu, wall = time.process_time() - cpu, time.time() - wall
    STOP(kind, run)
    full = gc.get_stats()[2]["collections"] - before[2]
    print("RESULT", json.dumps({{"kind": kind, "run": run, "cpu": cpu, "wall": wall, "full_gc": full,
                                 "last_at": LAST["at"], "messages": messages}}))
"""

#: seconds between two deltas of the scripted model (``--burst``: 0, a loop turn and no wait)
PACE = 0.001
#: seconds the model stalls after its last delta, so only a trailing flush shows
#: the last delta (nb_hitl's pacing timer is due at most ``QUIET_OVER``, 0.1 s,
#: after the last change; ``nb_hitl/session/_pace.py``); the
#: stall is idle time in every run, so it is no longer than that needs
STALL = 1.0
#: seconds to wait for the last delta in the page once the cell has ended
SEEN_TIMEOUT = 120.0
#: JupyterLab's server drops IOPub messages past 1,000 a second (its
#: ``iopub_msg_rate_limit``); the ``Output`` baseline sends about three per
#: delta (the output's ``msg_id`` set and cleared around each print, and the
#: print), so its last delta could be dropped and never reach the page. The
#: limits are off here: each way is measured with all it sends. nb_hitl's
#: stream sends at most 20 messages a second and never reaches them.
SERVER_ARGS = ("--ServerApp.iopub_msg_rate_limit=0", "--ServerApp.iopub_data_rate_limit=0")


def setup_cell(deltas: int, *, pace: float = PACE, stall: float = STALL, markdown: bool = False) -> str:
    """The notebook's first cell: the scripted model streaming :func:`reply_text`
    (``deltas`` one-word deltas) ``pace`` seconds apart, then stalling ``stall``
    seconds, and ``measure``."""
    return textwrap.dedent(SETUP.format(text=reply_text(deltas, markdown), pace=pace, stall=stall))


KINDS = ["noui", "output", "perdelta", "nbhitl", "notdrawn", "pagedraw"]
# the kinds whose kernel CPU is measured against the no-UI run just before each
PAIRED = ("nbhitl", "notdrawn", "pagedraw")
# the first msg_type of a frame is its header's (the parent header comes after it)
MSG_TYPE = re.compile(r'"msg_type":\s*"([a-z_]+)"')
# a kernel -> page message that carries a view's update (widget message or printed output)
VIEW_TYPES = ("comm_msg", "stream")


def frame_kind(text: str) -> str | None:
    """``"update"`` for a ``comm_msg`` / ``stream`` frame, ``"status"`` for a
    kernel status sent around a comm request of the page, else ``None``."""
    types = MSG_TYPE.findall(text)
    if not types:
        return None
    if types[0] in VIEW_TYPES:
        return "update"
    if types[0] == "status" and "comm_msg" in types[1:]:
        return "status"
    return None


# armed before cell ``i`` runs, on that cell's output only: sets
# ``window.__nbhSeen`` to the page's clock (s) when the last delta is in the DOM
SEEN_JS = """
([i, marks]) => {
  window.__nbhSeen = null;
  const check = () => {
    const cell = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')[i];
    const hit = !!cell && [...cell.querySelectorAll('.jp-OutputArea-output')].some((e) => marks.some((m) => e.textContent.includes(m)));
    if (hit) window.__nbhSeen = Date.now() / 1000;
    return hit;
  };
  if (check()) return;
  const obs = new MutationObserver(() => { if (check()) obs.disconnect(); });
  obs.observe(document.body, { subtree: true, childList: true, characterData: true });
}
"""


def reply_text(deltas: int, markdown: bool = False) -> str:
    """The text the scripted model streams: ``deltas`` one-word deltas, the last
    ``LASTDELTA``. ``markdown``: every fifth word in bold and a new paragraph
    after every hundredth, so the block is Markdown, which the page also gets
    as HTML when the block ends (one plain paragraph gets no HTML)."""
    words = [f"w{i:04d}" for i in range(deltas - 1)]
    if markdown:
        words = [f"**{w}**" if i % 5 == 0 else w for i, w in enumerate(words)]
        words = [w + "\n\n" if i % 100 == 99 else w for i, w in enumerate(words)]
    return " ".join([*words, "LASTDELTA"])


def seen_marks(deltas: int, markdown: bool = False) -> list[str]:
    """What is in the page once the last delta is: the word itself, or, for a text
    longer than the part of an entry the page gets (``SHOWN_CHARS``), the count of
    characters left out that the last delta makes (``js/reply/transcript.ts``)."""
    more = len(reply_text(deltas, markdown)) - SHOWN_CHARS
    return ["LASTDELTA"] + ([f"… {more:,} more characters not shown"] if more > 0 else [])


# for "pagedraw": the page itself appends the reply's text to a block in cell
# ``i``'s output area, in the steps nb_hitl's view takes (about 1.2 kB every
# 250 ms, 12 kB in all), while the kernel runs the agent with no UI: what
# drawing alone costs the kernel on cores it shares with the browser
PAGE_DRAW_JS = """
(i) => {
  const cell = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')[i];
  const block = document.createElement('div');
  block.style.whiteSpace = 'pre-wrap';
  (cell.querySelector('.jp-Cell-outputWrapper') || cell).append(block);
  let step = 0;
  const timer = setInterval(() => {
    block.append(Array.from({ length: 200 }, (_, k) => `w${String(step * 200 + k).padStart(4, '0')} `).join(''));
    if (++step === 10) clearInterval(timer);
  }, 250);
}
"""


def browser_cpu() -> float:
    """CPU seconds (user + system) used so far by the Chromium processes this
    benchmark started (descendants of this process, through Playwright)."""
    total = 0.0
    for proc in psutil.Process().children(recursive=True):
        try:
            if "chrom" in proc.name():
                times = proc.cpu_times()
                total += times.user + times.system
        except psutil.Error:  # a process that ended meanwhile
            continue
    return total


def paired(sequence: list[dict[str, Any]], kind: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each ``kind`` run in ``sequence`` (the runs in the order they ran) with
    the no-UI run just before it, as ``(no_ui, run)``."""
    return [(b, r) for b, r in itertools.pairwise(sequence) if b["kind"] == "noui" and r["kind"] == kind]


def cpu_ratios(sequence: list[dict[str, Any]], kind: str, figure: str = "cpu") -> list[float]:
    """``figure`` (default the kernel CPU) of each ``kind`` run in ``sequence``
    over that of the no-UI run just before it (:func:`paired`)."""
    return [r[figure] / b[figure] for b, r in paired(sequence, kind)]


def median_interval(values: list[float], level: float = 0.9) -> tuple[float, float]:
    """A distribution-free confidence interval for the median of ``values``:
    the order statistics ``(x_(j), x_(n+1-j))`` with the largest ``j`` whose
    coverage, from the binomial distribution with ``p = 1/2``
    (``1 - 2 * P(B <= j - 1)``, B ~ Binomial(n, 1/2)), is at least ``level``.
    The sample's whole range when no narrower pair covers ``level`` (fewer than
    about 5 values for 90 %).

    Raises:
        ValueError: ``values`` is empty.
    """
    xs = sorted(values)
    n = len(xs)
    if not n:
        raise ValueError("no values")
    j = 1  # 1-based: (x_(1), x_(n)) covers 1 - 2 / 2**n
    while j + 1 <= n + 1 - (j + 1):
        below = sum(math.comb(n, i) for i in range(j + 1)) / 2**n  # P(B <= j)
        if 1 - 2 * below < level:
            break
        j += 1
    return xs[j - 1], xs[n - j]


# the kinds that show the text in the page (one message per delta only sends it)
SHOWN = {"output", "nbhitl"}


def default_repeat(deltas: int) -> int:
    """Rounds when ``--repeat`` is not given: 15 at 2,000 deltas, as many deltas
    streamed in all for longer replies (at least 3), so the run keeps its bound."""
    return max(3, round(15 * 2_000 / deltas))


def last_seen(page: Any) -> float:
    """The page's clock (s) when the last delta was in the DOM (``SEEN_JS``), waited
    for up to ``SEEN_TIMEOUT`` s after the cell ended; ``nan`` if it never came."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("() => window.__nbhSeen !== null", timeout=SEEN_TIMEOUT * 1000, polling=200)
    except PlaywrightTimeout:
        print(f"  the last delta was not in the page {SEEN_TIMEOUT:.0f} s after the cell ended")
        return math.nan
    return float(page.evaluate("() => window.__nbhSeen"))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=2_000)
    parser.add_argument(
        "--kinds", nargs="+", choices=KINDS, default=KINDS, help="what to run (no UI always runs: the CPU baseline)"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="rounds of the paired runs (default: 15 at 2,000 deltas, fewer for more deltas, at least 3)",
    )
    parser.add_argument("--burst", action="store_true", help="no pause between deltas (a loop turn each)")
    parser.add_argument("--markdown", action="store_true", help="a Markdown text (bold words, paragraphs)")
    args = parser.parse_args(argv)
    repeat = args.repeat if args.repeat is not None else default_repeat(args.deltas)
    pace = 0.0 if args.burst else PACE
    chosen = [k for k in KINDS if k in args.kinds and k != "noui"]
    # each measured kind follows a no-UI run, so a slow spell of the machine hits both
    pair = [x for k in PAIRED if k in chosen for x in ("noui", k)] or ["noui"]
    # a first pair warms up (imports, the page code's first trip): not counted
    warm_up = len(pair)
    kinds = pair + [k for k in chosen if k not in pair] + pair * max(1, repeat)
    runs: dict[str, list[dict[str, Any]]] = {}
    sequence: list[dict[str, Any]] = []  # the counted runs, in order
    with lab_page(extra_args=SERVER_ARGS) as (lab, page):
        frames: list[tuple[float, int, str]] = []

        def on_ws(ws: Any) -> None:
            def received(payload: Any) -> None:
                text = payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
                kind = frame_kind(text)
                if kind is not None:
                    frames.append((time.monotonic(), len(payload), kind))

            ws.on("framereceived", received)

        page.on("websocket", on_ws)
        cells = [setup_cell(args.deltas, pace=pace, markdown=args.markdown)] + [
            f'await measure("{k}", {n})' for n, k in enumerate(kinds, start=1)
        ]
        write_notebook(lab.root / "streaming.ipynb", cells)
        open_notebook(page, lab, "streaming.ipynb")
        run_cell(page, 0)
        time.sleep(5)
        for n, kind in enumerate(kinds, start=1):
            frames.clear()
            if kind in SHOWN:
                page.evaluate(SEEN_JS, [n, seen_marks(args.deltas, args.markdown)])
            browser_before = browser_cpu()
            run_cell(page, n)
            if kind == "pagedraw":
                page.evaluate(PAGE_DRAW_JS, n)
            # polled in that cell only: a locator over every output would keep the
            # browser busy on the cores the kernel is measured on
            res = cell_json(page, n, "RESULT", timeout_ms=300_000)
            browser = browser_cpu() - browser_before
            if kind in SHOWN:
                res["latency"] = last_seen(page) - res["last_at"]
            res["browser_cpu"] = browser
            res["bytes"] = sum(size for _, size, _ in frames)
            res["updates_per_s"] = sum(1 for *_, k in frames if k == "update") / max(res["wall"] - STALL, 1e-9)
            if n > warm_up:
                runs.setdefault(kind, []).append(res)
                sequence.append(res)
            else:
                print(f"warm-up {kind}: kernel CPU {res['cpu']:.3f} s (not counted)")
        errors = [e for e in page.nbh_errors if "pageerror" in e]
        if errors:
            print("page errors:", *errors, sep="\n  ")
    # each figure's median over the runs of its kind
    results = {
        k: {f: statistics.median(r[f] for r in rs) for f, v in rs[0].items() if isinstance(v, (int, float))}
        for k, rs in runs.items()
    }
    text_bytes = len(reply_text(args.deltas, args.markdown).encode())
    base_cpu = results["noui"]["cpu"]
    paced = "a burst (no pause between deltas)" if args.burst else f"{pace * 1000:g} ms between deltas"
    print(
        f"{args.deltas} deltas, {text_bytes} bytes of {'Markdown' if args.markdown else 'plain'} text, {paced}, a {STALL:g} s stall after the last; "
        f"no UI and nb_hitl: medians of {len(runs['noui'])} runs"
    )
    labels = {
        "noui": "agent, no UI",
        "output": "ipywidgets.Output",
        "perdelta": "one message per delta",
        "nbhitl": "nb_hitl",
        "notdrawn": "nb_hitl, not drawn",
        "pagedraw": "no UI, page draws",
    }
    for kind in dict.fromkeys(pair):
        cpus = ", ".join(f"{r['cpu']:.3f}" for r in runs[kind])
        full = sum(r["full_gc"] for r in runs[kind])
        print(f"  kernel CPU of each {labels[kind]} run: {cpus} s; full collections inside them: {full}")
    ratios = {k: cpu_ratios(sequence, k) for k in PAIRED if k in runs}
    for kind, r in ratios.items():
        q1, _, q3 = statistics.quantiles(r, n=4) if len(r) > 1 else (r[0], r[0], r[0])
        lo, hi = median_interval(r)
        print(
            f"  {labels[kind]} / no UI, run by run: {', '.join(f'{x:.2f}' for x in r)}; "
            f"median x{statistics.median(r):.2f} (90% confidence interval of the median x{lo:.2f}-x{hi:.2f}; "
            f"middle half x{q1:.2f}-x{q3:.2f}, range x{min(r):.2f}-x{max(r):.2f})"
        )
    for kind in results:
        r = results[kind]
        ratio = statistics.median(ratios[kind]) if kind in ratios else r["cpu"] / base_cpu
        line = (
            f"{labels[kind]:>22}: kernel CPU {r['cpu']:.2f} s (x{ratio:.2f} vs no UI), "
            f"browser CPU {r['browser_cpu']:.2f} s, "
            f"kernel->page {r['bytes'] / 1e3:.0f} kB (x{r['bytes'] / text_bytes:.2f} the text), "
            f"{r['updates_per_s']:.1f} updates/s"
        )
        if "messages" in r:
            line += f", {r['messages']:.0f} stream messages"
        if "latency" in r:
            line += f", last delta on the page {r['latency'] * 1000:.0f} ms after it was yielded"
        print(line)
    return results


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(main, 900, "streaming")  # seconds, on a loaded 2-core machine
