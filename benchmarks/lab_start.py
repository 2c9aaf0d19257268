"""A second ``./run lab`` with nothing changed: how long until JupyterLab answers.

``./run lab`` sets up what the lab needs, then starts JupyterLab; a step whose
inputs did not change since it last ran is skipped (its stamp in ``.venv``).
This starts ``./run lab`` once (so the stamps are there), then ``--repeat``
times more, each until ``GET /lab`` answers 200 on a free loopback port, next
to ``jupyter lab`` started straight from the venv in the same run (the
baseline: the server alone, no set-up). Prints each side's median, the
difference (what the skipped set-up steps cost) and the ratio.

Target: the second start under 15 s on a loaded 2-core machine.

Run: ``.venv/bin/python -m benchmarks.lab_start [--repeat 3]``. Not a test.

Bound: it ends within 600 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from benchmarks._bound import run_bounded
from nb_hitl.service.embedded import free_port

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "lab-start-benchmark"


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token={TOKEN}", timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def time_start(command: list[str], limit: float = 240.0) -> float:
    """Seconds from starting ``command`` (with a free port and a token added)
    until ``GET /lab`` answers 200; the process group is then stopped.

    Raises:
        TimeoutError: it did not answer within ``limit`` seconds.
    """
    port = free_port()
    args = [*command, "--no-browser", f"--ServerApp.port={port}", f"--ServerApp.token={TOKEN}"]
    if os.geteuid() == 0:
        args.append("--allow-root")
    t0 = time.monotonic()
    proc = subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        while not _answers(port):
            if proc.poll() is not None:
                raise RuntimeError(f"{command[0]} ended with status {proc.returncode} before answering")
            if time.monotonic() - t0 > limit:
                raise TimeoutError(f"{command[0]} did not answer within {limit:.0f} s")
            time.sleep(0.1)
        return time.monotonic() - t0
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed starts of each side (default 3)")
    args = parser.parse_args()
    run_lab = ["./run", "lab"]
    plain = [str(ROOT / ".venv" / "bin" / "jupyter"), "lab", "notebooks/quickstart.ipynb", "--ServerApp.ip=127.0.0.1"]
    print(f"load average {os.getloadavg()[0]:.1f} (2 cores)")
    first = time_start(run_lab, limit=540.0)
    print(f"first ./run lab of this run (set-up done or checked): {first:.1f} s")
    ours, base = [], []
    for _ in range(args.repeat):  # alternated, so the load's swings fall on both sides
        ours.append(time_start(run_lab))
        base.append(time_start(plain))
    o, b = statistics.median(ours), statistics.median(base)
    print(f"./run lab, nothing changed: {o:5.1f} s (median of {', '.join(f'{x:.1f}' for x in ours)})")
    print(f"jupyter lab alone:          {b:5.1f} s (median of {', '.join(f'{x:.1f}' for x in base)})")
    print(f"set-up checks cost {o - b:+.1f} s, ratio {o / b:.2f}; goal: under 15 s: {'met' if o < 15 else 'missed'}")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    run_bounded(main, 600, "lab_start")
