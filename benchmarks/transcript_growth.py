"""Benchmark: building a reply's transcript from n text deltas grows linearly, next to its floor.

The kernel side of streaming (:class:`nb_hitl.session._transcript.Transcript`):
``--deltas`` deltas of one word each go into one text block, ops taken every
250 deltas (about what a fast model streams between two page messages). The
baseline, in the same run, is the least any transcript must do: append each
delta to a Python list and join it once. Printed: seconds for n and 5n
deltas, each against the baseline, and how time grows from n to 5n (linear:
about ×5). Latest run: 12 ms for 10,000 deltas, 63 ms for 50,000 (×5.2);
with the text extended as ``d["text"] += delta``, as before, 22 ms and 250 ms
(×11.3).

Run from the repository root::

    .venv/bin/python -m benchmarks.transcript_growth [--deltas 10000]

Bound: it ends within 120 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nb_hitl.session._transcript import Transcript


def build(n: int) -> float:
    """Seconds to stream ``n`` one-word deltas into a transcript, taking ops every 250."""
    tr = Transcript()
    started = time.perf_counter()
    tr.text("b1")
    for i in range(n):
        tr.text("b1", f"w{i} ")
        if i % 250 == 249:
            tr.take_ops()
    tr.take_ops()
    return time.perf_counter() - started


def floor(n: int) -> float:
    """Seconds to collect ``n`` deltas in a list and join them once."""
    started = time.perf_counter()
    parts = [f"w{i} " for i in range(n)]
    "".join(parts)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> dict[int, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=10_000)
    args = parser.parse_args(argv)
    took: dict[int, float] = {}
    for n in (args.deltas, 5 * args.deltas):
        best = min(build(n) for _ in range(3))
        base = min(floor(n) for _ in range(3))
        took[n] = best
        print(
            f"{n:>7} deltas: transcript {best * 1000:8.1f} ms, list + join {base * 1000:6.1f} ms (x{best / base:.0f})"
        )
    small, large = took[args.deltas], took[5 * args.deltas]
    print(f"5x the deltas: x{large / small:.1f} the time (linear: about x5)")
    return took


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(main, 120, "transcript_growth")  # seconds, on a loaded 2-core machine
