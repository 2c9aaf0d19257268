"""Benchmark: the kernel's instructions for a streamed reply, nb_hitl against the agent with no UI.

``benchmarks/streaming.py`` measures the kernel's CPU *time*; on this 2-core
machine the no-UI agent alone spreads ±30 % from one run to the next, more
than nb_hitl adds. This benchmark counts *instructions* instead, which do not
depend on what else the machine does: JupyterLab starts the kernel under
Valgrind's callgrind (``--instr-atstart=no``: nothing is counted until asked),
and the notebook runs ``streaming.py``'s very cells (the same agent on the
scripted model, the same ``--deltas`` one-word deltas; a 3 s stall after
the last one, as when its figures were measured, where ``streaming.py`` now
stalls 1 s) with the counting switched on around the measured part
of each run only (a three-function C helper built here with gcc from
``valgrind/callgrind.h``: zero and start, then stop and dump). Every thread
of the kernel is counted: the main thread's asyncio loop, and the IOPub
thread that sends the messages.

Each round runs ``no UI``, ``nb_hitl`` (drawn in the page), ``no UI``,
``nb_hitl, not drawn``; each nb_hitl run is divided by the no-UI run just
before it. The same two no-UI runs count within about 1 % of each other, so
three rounds are plenty. A first round warms the kernel up (imports, the
page code's first trip) and is printed, not counted.

**Bias, on purpose, against nb_hitl.** Under callgrind the kernel runs some
40 times slower, so a reply lasts 40 times longer; nb_hitl sends its stream
messages by the clock (at most 4 a second while a model streams without a
pause, ``nb_hitl/session/_pace.py``), so it sends many more messages per
delta here than at full speed (both counts are printed). Its share here is
therefore an upper bound of its share at full speed, as long as its cost
grows with the messages it sends. The page's own requests (the connect's
``sync``; liveness probes if the slowed kernel answers late) are counted
too and printed.

**From there to full speed.** Rounds at a slower pace (``--paces``: nb_hitl's
``MAX_DELAY`` set to each value in turn; a delta comes every 9 ms or so under
callgrind, so the quiet rule never sends and ``MAX_DELAY`` alone sets the
messages) give a second point: the instructions nb_hitl adds are fitted
as ``fixed + per_message * messages`` (least squares over every counted run of
that kind), and its share is printed at the message count a full-speed reply
sends (``--native-messages``: what ``benchmarks/streaming.py`` prints for the
same ``--deltas``).

Needs Debian's ``valgrind`` (``apt-get install valgrind``: the ``callgrind.h``
header comes with it) and gcc. Takes about 12 minutes with the defaults.
Run from the repository root::

    .venv/bin/python -m benchmarks.kernel_instructions [--deltas 2000] [--repeat 3] [--paces 0.25 1.0] [--native-messages 13]

Bound: it ends within 2400 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._lab import cell_json, lab_page, open_notebook, run_cell, write_notebook
from benchmarks.streaming import cpu_ratios, median_interval, paired, setup_cell
from tests.harness.kernel import VENV_PYTHON

HELPER_C = """
#include <valgrind/callgrind.h>
void nbh_cg_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void nbh_cg_stop(const char *name) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT(name); }
int nbh_cg_running(void) { return RUNNING_ON_VALGRIND; }
"""

#: run after streaming.py's SETUP cell: its START / STOP hooks count instructions
HOOKS = """
import ctypes, os
_cg = ctypes.CDLL(os.environ["NBH_CALLGRIND_LIB"])
_cg.nbh_cg_stop.argtypes = [ctypes.c_char_p]
assert _cg.nbh_cg_running(), "this kernel does not run under valgrind"
START = _cg.nbh_cg_start
STOP = lambda kind, run: _cg.nbh_cg_stop(f"{kind}-{run}".encode())
print("COUNTING", json.dumps(True))
"""

ROUND = ["noui", "nbhitl", "noui", "notdrawn"]
LABELS = {"noui": "agent, no UI", "nbhitl": "nb_hitl", "notdrawn": "nb_hitl, not drawn"}
# a dump names the client request that wrote it, and holds the instructions
# counted since the last zeroing ("totals"; its "summary" line reads 0 here)
DESC = re.compile(r"^desc: Trigger: Client Request: (\S+)$", re.M)
TOTALS = re.compile(r"^totals: (\d+)", re.M)
MSG_TYPE = re.compile(r'"msg_type":\s*"([a-z_]+)"')


def build_helper(folder: Path) -> Path:
    """Compile :data:`HELPER_C` into ``folder/libnbhcg.so``.

    Raises:
        SystemExit: valgrind, its ``callgrind.h`` header or gcc is missing.
    """
    if not shutil.which("valgrind") or not Path("/usr/include/valgrind/callgrind.h").exists():
        raise SystemExit("needs Debian's valgrind (apt-get install valgrind), which brings callgrind.h")
    if not shutil.which("gcc"):
        raise SystemExit("needs gcc to build the three-function callgrind helper")
    src, lib = folder / "nbhcg.c", folder / "libnbhcg.so"
    src.write_text(HELPER_C)
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return lib


def write_kernelspec(folder: Path, lib: Path, dumps: Path) -> Path:
    """A ``python3`` kernelspec under ``folder/kernels`` (put on ``JUPYTER_PATH``,
    it wins over ipykernel's own) that starts ipykernel under callgrind with
    counting off; ``PYTHONHASHSEED=0`` so dict and set layouts repeat."""
    spec = folder / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={dumps}/callgrind.out.%p",
        str(VENV_PYTHON),
        "-m",
        "ipykernel_launcher",
        "-f",
        "{connection_file}",
    ]
    kernel = {
        "argv": argv,
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "env": {"PYTHONHASHSEED": "0", "NBH_CALLGRIND_LIB": str(lib)},
    }
    (spec / "kernel.json").write_text(json.dumps(kernel, indent=1))
    return folder


def read_dumps(dumps: Path) -> dict[str, int]:
    """``{"<kind>-<run>": instructions}`` from the dump files callgrind wrote."""
    counts: dict[str, int] = {}
    for path in dumps.glob("callgrind.out.*"):
        text = path.read_text(errors="replace")
        desc, totals = DESC.search(text), TOTALS.search(text)
        if desc and totals:
            counts[desc.group(1)] = int(totals.group(1))
    return counts


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=3, help="counted rounds of no UI, nb_hitl, no UI, not drawn")
    parser.add_argument(
        "--paces",
        type=float,
        nargs="+",
        default=[0.25, 1.0],
        help="nb_hitl's MAX_DELAY (seconds) for each set of rounds",
    )
    parser.add_argument(
        "--native-messages",
        type=float,
        default=13.0,
        help="stream messages of a full-speed reply of --deltas (streaming.py; 13 for 2,000)",
    )
    args = parser.parse_args(argv)
    # the first round warms up; each pace then runs its rounds
    cells_kinds: list[tuple[float, str]] = [(args.paces[0], k) for k in ROUND] + [
        (pace, k) for pace in args.paces for k in ROUND * args.repeat
    ]
    tmp = Path(tempfile.mkdtemp(prefix="nbh-cg-"))
    dumps = tmp / "dumps"
    dumps.mkdir()
    spec_path = write_kernelspec(tmp / "jupyter", build_helper(tmp), dumps)
    results: list[dict[str, Any]] = []
    try:
        with lab_page(env={"JUPYTER_PATH": str(spec_path)}) as (lab, page):
            page_msgs: list[str] = []

            def on_ws(ws: Any) -> None:
                def sent(payload: Any) -> None:
                    text = payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
                    types = MSG_TYPE.findall(text)
                    if types and types[0] == "comm_msg":
                        page_msgs.append(text)

                ws.on("framesent", sent)

            page.on("websocket", on_ws)
            cells = [setup_cell(args.deltas, stall=3.0), HOOKS] + [
                f'import nb_hitl.session._pace as _pace\n_pace.MAX_DELAY = {pace}\nawait measure("{k}", {n})'
                for n, (pace, k) in enumerate(cells_kinds, start=1)
            ]
            write_notebook(lab.root / "instructions.ipynb", cells)
            started = time.monotonic()
            open_notebook(page, lab, "instructions.ipynb", timeout=600)
            run_cell(page, 0)
            run_cell(page, 1)
            cell_json(page, 1, "COUNTING", timeout_ms=900_000)
            print(f"kernel under callgrind ready after {time.monotonic() - started:.0f} s", flush=True)
            for n, (pace, kind) in enumerate(cells_kinds, start=1):
                page_msgs.clear()
                run_cell(page, n + 1)
                res = cell_json(page, n + 1, "RESULT", timeout_ms=900_000)
                res["page_requests"] = len(page_msgs)
                res["counted"] = n > len(ROUND)
                res["pace"] = pace
                results.append(res)
                print(
                    f"  {'' if res['counted'] else 'warm-up '}{LABELS[kind]} (pace {pace} s): {res['wall']:.1f} s, "
                    f"{res['messages'] if res['messages'] is not None else '-'} stream messages, "
                    f"{res['page_requests']} page requests",
                    flush=True,
                )
        counts = read_dumps(dumps)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for res in results:
        res["ir"] = counts.get(f"{res['kind']}-{res['run']}")
    counted = [r for r in results if r["counted"] and r["ir"]]
    print(f"{args.deltas} deltas, instructions counted by callgrind around each run ({args.repeat} rounds a pace)")
    base = [r["ir"] for r in counted if r["kind"] == "noui"]
    median_base = statistics.median(base)
    print(
        f"  {LABELS['noui']}: median {median_base / 1e6:,.0f}M instructions "
        f"(runs x{min(base) / median_base:.3f}-x{max(base) / median_base:.3f} of it)"
    )
    for pace in args.paces:
        at_pace = [r for r in counted if r["pace"] == pace]
        for kind in ("nbhitl", "notdrawn"):
            runs = [r for r in at_pace if r["kind"] == kind]
            ratios = cpu_ratios(at_pace, kind, "ir")
            if not ratios:
                continue
            lo, hi = median_interval(ratios)
            irs = ", ".join(f"{r['ir'] / 1e6:,.0f}M" for r in runs)
            print(
                f"  pace {pace} s, {LABELS[kind]}: {irs} instructions, "
                f"{statistics.median(r['messages'] for r in runs):.0f} stream messages; / no UI run by run "
                f"{', '.join(f'{x:.3f}' for x in ratios)}: median x{statistics.median(ratios):.3f} "
                f"(range x{lo:.3f}-x{hi:.3f})"
            )
    for kind in ("nbhitl", "notdrawn"):
        fit = added_fit(counted, kind)
        if fit is None:
            continue
        fixed, per_message = fit
        share = (fixed + per_message * args.native_messages) / median_base
        print(
            f"  {LABELS[kind]}: adds {fixed / 1e6:.1f}M instructions a reply + {per_message / 1e6:.2f}M a stream "
            f"message; at {args.native_messages:g} messages (full speed) x{1 + share:.3f} the no-UI agent"
        )
    return results


def added_fit(runs: list[dict[str, Any]], kind: str) -> tuple[float, float] | None:
    """``(fixed, per_message)``: the least-squares line through the
    instructions each ``kind`` run adds to the no-UI run just before it,
    against the stream messages it sent; ``None`` with fewer than two
    distinct message counts."""
    points = [(float(r["messages"]), float(r["ir"] - b["ir"])) for b, r in paired(runs, kind)]
    if len({m for m, _ in points}) < 2:
        return None
    slope, intercept = statistics.linear_regression([m for m, _ in points], [d for _, d in points])
    return intercept, slope


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(main, 2400, "kernel_instructions")  # seconds, on a loaded 2-core machine
