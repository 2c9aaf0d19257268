"""Reading a peer's stream costs linear time: the AG-UI client's fold and SSE decoding.

Two in-process measurements (no HTTP), each at N, 2N and 4N so the growth
shows: time per unit should stay flat (linear), not double (quadratic).

* ``fold``: N ``TEXT_MESSAGE_CONTENT`` deltas of one message through
  :class:`~nb_hitl.agui.turn.RunReader`, with a view push
  (:func:`~nb_hitl.agui.turn.view_data`) every 50 deltas, as a throttled
  widget would;
* ``sse``: one event of N KiB fed to :class:`~nb_hitl.agui.client.SSEReader`
  in 1 KiB chunks.

    python benchmarks/agui_stream_read.py          # N=20000
    python benchmarks/agui_stream_read.py 50000

Bound: it ends within 300 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from ag_ui.core import RunStartedEvent, TextMessageContentEvent, TextMessageStartEvent  # noqa: E402

from nb_hitl.agui.client import SSEReader  # noqa: E402
from nb_hitl.agui.turn import RemoteTurn, RunReader, RunRecord, view_data  # noqa: E402
from nb_hitl.guard import StreamBudget  # noqa: E402


def fold(n: int) -> float:
    """Seconds per delta for ``n`` deltas folded into a turn."""
    turn = RemoteTurn(prompt="go")
    reader = RunReader(turn, RunRecord(run_id="r"), "t")
    reader.feed(RunStartedEvent(thread_id="t", run_id="r"))
    reader.feed(TextMessageStartEvent(message_id="m", role="assistant"))
    delta = TextMessageContentEvent(message_id="m", delta="word " * 20)
    started = time.perf_counter()
    for i in range(n):
        reader.feed(delta)
        if i % 50 == 0:
            view_data(turn)
    view_data(turn)
    took = time.perf_counter() - started
    assert len(turn.transcript[0]["text"]) == n * 100
    return took / n


def sse(kib: int) -> float:
    """Seconds per KiB for one event of ``kib`` KiB fed in 1 KiB chunks."""
    reader = SSEReader(StreamBudget(max_event_bytes=(kib + 1) * 1024))
    piece = b"x" * 1024
    started = time.perf_counter()
    reader.feed(b'data: {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "')
    for _ in range(kib):
        reader.feed(piece)
    out = reader.feed(b'"}\n\n')
    took = time.perf_counter() - started
    assert len(out) == 1
    return took / kib


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    for scale in (1, 2, 4):
        print(f"fold {n * scale:>7} deltas: {fold(n * scale) * 1e6:7.2f} µs/delta")
    for scale in (1, 2, 4):
        kib = n // 4 * scale
        print(f"sse  {kib:>7} KiB event: {sse(kib) * 1e6:7.2f} µs/KiB")


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(main, 300, "agui_stream_read")  # seconds, on a loaded 2-core machine
