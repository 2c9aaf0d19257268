"""Several processes append to one audit log at once (two kernels, a kernel
and the AG-UI server): every record is its own JSON line, none is lost and
no empty line appears; a torn line left by a crash is still closed.
"""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

from nb_hitl.audit import verify
from nb_hitl.store import AuditLog

WRITERS = 8
RECORDS = 60


def _writer(path: str, writer: int, start: Any) -> None:
    log = AuditLog(path)
    start.wait()  # every writer begins together
    for n in range(RECORDS):
        # some long lines: a line longer than one write is where interleaving shows
        log.append({"tool_call_id": f"w{writer}-{n}", "decision": "approve", "pad": "x" * (n * 97 % 5000)})


def test_concurrent_appends_from_many_processes_keep_one_record_per_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text('{"tool_call_id": "torn", "decis', encoding="utf-8")  # a crash mid-write before them
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(WRITERS)
    procs = [ctx.Process(target=_writer, args=(str(path), w, start)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * WRITERS

    lines = path.read_bytes().decode("utf-8").split("\n")
    assert lines[0] == '{"tool_call_id": "torn", "decis'  # closed by the first append, not glued to it
    assert lines[-1] == ""  # the file ends with a newline
    body = lines[1:-1]
    assert [i for i, line in enumerate(body) if not line.strip()] == []  # no empty line
    records = [json.loads(line) for line in body]  # every line is one JSON record
    assert len(records) == WRITERS * RECORDS
    ids = sorted(r["tool_call_id"] for r in records)
    assert ids == sorted(f"w{w}-{n}" for w in range(WRITERS) for n in range(RECORDS))
    # each writer's own records stay in its order
    for w in range(WRITERS):
        mine = [int(r["tool_call_id"].split("-")[1]) for r in records if r["tool_call_id"].startswith(f"w{w}-")]
        assert mine == list(range(RECORDS))
    assert len(AuditLog(path).records()) == WRITERS * RECORDS
    # one chain across the processes: each line names the one written before it
    verdict = verify(path)
    assert verdict.intact, verdict.message
    assert verdict.chained == WRITERS * RECORDS
    assert verdict.unchained == [1]  # the torn line, bound by the line after it
