"""Counting one call's approvals in the console's ledger, as the ledger grows.

The service console counts the approvals of a call that needs several
(``Policy(approvals=N)``) in its ledger file, shared by every console
(:mod:`nb_hitl.service.approving`). For ledgers of 1,000, 10,000 and 50,000
sealed lines (other calls' approvals, sendings and outcomes; by default) it
prints, in the same run, the median of 15 of:

* indexed: :func:`~nb_hitl.service.approving.count_answer` of one approval
  of a new call on an :class:`~nb_hitl.service.ledger.AnswerLedger` already
  open (its index reads only the lines appended since it last read: here its
  own last line and 3 lines another ledger object appended in between, as
  another console would), the line written and ``fsync``-ed;
* baseline: the way before the index: under the same lock, read the whole
  file, parse every line and fold the call's lines (what
  ``AuditLog.append_checked`` handed its ``build`` then), then append the same
  line; the ratio baseline / indexed;
* what opening a ledger costs once (it reads the whole file), and the lines
  the index read in all of the indexed runs.

Target: indexed flat as the ledger grows (50,000 lines within 2× of 1,000);
the baseline grows with the file.

Run: ``.venv/bin/python -m benchmarks.ledger_count [LINES ...]``. Not a test.

Bound: it ends within 300 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_REPO = Path(__file__).resolve().parents[1]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

from agentscope.message import ToolCallBlock  # noqa: E402

from nb_hitl.audit.chain import GENESIS, line_hash, seal  # noqa: E402
from nb_hitl.decisions import decide  # noqa: E402
from nb_hitl.pauses import Pause, build_pause  # noqa: E402
from nb_hitl.policy import Policy  # noqa: E402
from nb_hitl.service.approving import count_answer, describe  # noqa: E402
from nb_hitl.service.ledger import AnswerLedger  # noqa: E402
from nb_hitl.store import parse_lines  # noqa: E402

RUNS = 15
CALL = {"type": "tool_call", "id": "call_0", "name": "write_note", "input": '{"text": "hello"}', "state": "asking"}
POLICY = Policy("notes", tools=["write_note"], approvals=2)


def pause_of(tool_call_id: str) -> Pause:
    """A parked ``write_note`` call that needs two approvals, ``deciding``."""
    pause = build_pause("reply-1", ToolCallBlock.model_validate({**CALL, "id": tool_call_id}), None)
    describe(pause, [POLICY])
    pause.status = "deciding"
    return pause


def fill(path: Path, lines: int, ledger: AnswerLedger) -> None:
    """Write ``lines`` sealed lines of other calls (approval, sending, applied), chained as AuditLog writes them."""
    key = ledger.log.key
    prev, out = GENESIS, []
    phases = ("approval", "sending", "applied")
    for n in range(lines):
        sid, tcid = f"s{n // 30}", f"c{n // 3}"
        rec = ledger.line(
            pause_of(tcid),
            {"decision": "approve"},
            service_session_id=sid,
            agent_id="a1",
            agent="writer",
            event_id=None if n % 3 == 0 else f"e{n}",
            phase=phases[n % 3],
            decided_by="ana",
        )
        rec = {"time": "2026-12-03T00:00:00Z", "ts": time.time(), "who": "bench", **rec}
        raw = json.dumps(seal(key, rec, prev), ensure_ascii=False).encode("utf-8")
        out.append(raw)
        prev = line_hash(raw)
    path.write_bytes(b"\n".join(out) + b"\n")


def others(other: AnswerLedger, n: int) -> None:
    """Another console's 3 lines (one call's approval, sending, outcome) between two counts."""
    pause = pause_of(f"other-{n}")
    for phase in ("approval", "sending", "applied"):
        other.record(
            pause,
            {"decision": "approve"},
            service_session_id="s-o",
            agent_id="a1",
            agent="w",
            event_id=f"o{n}",
            phase=phase,
        )


def indexed(ledger: AnswerLedger, other: AnswerLedger, n: int) -> float:
    others(other, n)
    pause = pause_of(f"new-{n}")
    decision = decide(pause, {"action": "approve", "tool_call_id": pause.tool_call_id})
    t0 = time.perf_counter()
    got = count_answer(ledger, pause, decision, "ana", session_id="s-new", agent_id="a1", agent="writer")
    took = time.perf_counter() - t0
    assert got.final is None and [a["by"] for a in pause.approvals] == ["ana"]
    return took


def baseline(ledger: AnswerLedger, other: AnswerLedger, n: int) -> float:
    """The count as it was before the index: the whole file read and folded under the lock."""
    others(other, n)
    pause = pause_of(f"base-{n}")
    t0 = time.perf_counter()

    def build(fd: int) -> dict[str, Any]:
        records = parse_lines(os.pread(fd, os.fstat(fd).st_size, 0))
        mine = [r for r in records if (ledger.ids(r) or ())[:2] == ("s-base", pause.tool_call_id)]
        assert mine == []
        return ledger.line(
            pause,
            {"decision": "approve"},
            service_session_id="s-base",
            agent_id="a1",
            agent="writer",
            event_id=None,
            phase="approval",
            decided_by="ana",
        )

    ledger.log._write(build)
    return time.perf_counter() - t0


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [1_000, 10_000, 50_000]
    folder = Path(tempfile.mkdtemp(prefix="nbh-ledger-bench-"))
    os.environ.setdefault("NB_HITL_CHECKPOINT_KEY", str(folder / "key"))
    print(f"counting one approval; median of {RUNS}; another console appends 3 lines between counts")
    print(f"{'lines':>7} {'open (once)':>12} {'indexed':>10} {'baseline':>10} {'ratio':>7} {'lines read':>11}")
    first: float | None = None
    for lines in sizes:
        path = folder / f"ledger-{lines}.jsonl"
        fill(path, lines, AnswerLedger(folder / "scratch.jsonl", "svc", "u"))
        t0 = time.perf_counter()
        ledger = AnswerLedger(path, "svc", "u")
        opened = time.perf_counter() - t0
        other = AnswerLedger(path, "svc", "u")
        read_before = ledger.tail.lines_read
        fast = statistics.median(indexed(ledger, other, n) for n in range(RUNS))
        read = ledger.tail.lines_read - read_before
        slow = statistics.median(baseline(ledger, other, n) for n in range(RUNS))
        first = fast if first is None else first
        print(
            f"{lines:>7} {opened * 1e3:>10.1f}ms {fast * 1e3:>8.2f}ms {slow * 1e3:>8.2f}ms "
            f"{slow / fast:>6.1f}x {read:>11}"
        )
    assert first is not None
    print(f"indexed at {sizes[-1]} lines / at {sizes[0]}: {fast / first:.2f}x (target <= 2x)")


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(main, 300, "ledger_count")  # seconds, on a loaded 2-core machine
