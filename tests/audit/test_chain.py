"""A tampered audit log is named by verify(): a line edited, removed, or two
swapped; an old log written before lines were chained still reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nb_hitl.audit import audit_frame, verify
from nb_hitl.audit.chain import GENESIS, line_hash
from nb_hitl.store import AuditLog


def _log(tmp_path: Path, n: int = 5) -> Path:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    for i in range(n):
        log.append({"tool_call_id": f"c{i}", "tool_name": "touch", "decision": "approve", "decided_by": "ana"})
    return path


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _write(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_an_untouched_log_is_intact_and_each_line_names_the_one_before(tmp_path: Path) -> None:
    path = _log(tmp_path)
    verdict = verify(path)
    assert verdict.intact and verdict.chained == 5 and verdict.unchained == []
    assert "intact" in verdict.message
    lines = _lines(path)
    assert json.loads(lines[0])["prev"] == GENESIS
    assert json.loads(lines[3])["prev"] == line_hash(lines[2].encode("utf-8"))


def test_an_edited_line_is_named(tmp_path: Path) -> None:
    path = _log(tmp_path)
    lines = _lines(path)
    rec = json.loads(lines[2])
    rec["decision"] = "deny"  # the answer rewritten after the fact
    lines[2] = json.dumps(rec)
    _write(path, lines)
    verdict = verify(path)
    assert not verdict.intact
    assert (verdict.line, verdict.problem) == (3, "changed")
    assert verdict.message.startswith("line 3 was changed")


def test_a_removed_line_is_named(tmp_path: Path) -> None:
    path = _log(tmp_path)
    lines = _lines(path)
    del lines[1]
    _write(path, lines)
    verdict = verify(path)
    assert (verdict.intact, verdict.line, verdict.problem) == (False, 2, "removed or reordered")


def test_two_swapped_lines_are_named(tmp_path: Path) -> None:
    path = _log(tmp_path)
    lines = _lines(path)
    lines[2], lines[3] = lines[3], lines[2]
    _write(path, lines)
    verdict = verify(path)
    assert (verdict.intact, verdict.line, verdict.problem) == (False, 3, "removed or reordered")


def test_a_line_resealed_with_another_key_is_named(tmp_path: Path) -> None:
    path = _log(tmp_path)
    lines = _lines(path)
    _write(path, lines[:4])
    AuditLog(path, key=b"f" * 64).append({"tool_call_id": "forged", "decision": "approve"})
    verdict = verify(path)
    assert (verdict.intact, verdict.line, verdict.problem) == (False, 5, "changed")


def test_a_stripped_seal_is_named(tmp_path: Path) -> None:
    path = _log(tmp_path)
    lines = _lines(path)
    rec = json.loads(lines[1])
    del rec["hmac"], rec["prev"]
    lines[1] = json.dumps(rec)
    _write(path, lines)
    verdict = verify(path)
    assert (verdict.intact, verdict.line, verdict.problem) == (False, 2, "changed")


def test_an_old_unchained_log_still_reads_and_the_chain_starts_after_it(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    old = [  # version 1 and 2 lines, written before lines were chained or checks recorded
        {
            "time": "2026-01-01T00:00:00Z",
            "ts": 1767225600.0,
            "who": "ana",
            "tool_call_id": "o1",
            "tool_name": "touch",
            "decision": "approve",
            "decided_by": "ana",
        },
        {
            "v": 2,
            "time": "2026-01-01T00:01:00Z",
            "ts": 1767225660.0,
            "who": "ana",
            "tool_call_id": "o2",
            "tool_name": "touch",
            "decision": "deny",
            "decided_by": "ana",
            "origin": {"road": "agui"},
        },
    ]
    _write(path, [json.dumps(r) for r in old])
    AuditLog(path).append({"v": 2, "tool_call_id": "n1", "tool_name": "touch", "decision": "approve"})
    verdict = verify(path)
    assert verdict.intact and verdict.unchained == [1, 2] and verdict.chained == 1
    assert [r["tool_call_id"] for r in AuditLog(path).records("answered")] == ["o1", "o2", "n1"]
    frame = audit_frame(path)
    assert list(frame["tool_call_id"]) == ["o1", "o2", "n1"]
    assert list(frame["event"]) == ["answered"] * 3
    assert list(frame["v"]) == [1, 2, 2]
    assert list(frame["road"]) == ["kernel", "agui", "kernel"]

    # the first chained line binds the old ones: editing one of them is named at that line
    lines = _lines(path)
    lines[1] = lines[1].replace('"deny"', '"approve"')
    _write(path, lines)
    verdict = verify(path)
    assert (verdict.intact, verdict.line, verdict.problem) == (False, 3, "removed or reordered")


def test_verify_refuses_a_missing_log(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        verify(tmp_path / "none.jsonl")
