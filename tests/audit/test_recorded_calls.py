"""The calls of a recorded log, read into columns (``nb_hitl.audit.calls``)."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

from nb_hitl.audit.calls import CALL_FIELDS, held_checks, read_calls, recorded_calls


def _check(call_id: str, decision: str, command: str, how: str | None = "rule", **extra: Any) -> dict[str, Any]:
    return {"event": "checked", "agent": "a", "tool_call_id": call_id, "tool_name": "Bash",
            "original_input": {"command": command}, "decision": decision, "decided_how": how, **extra}  # fmt: skip


def _answer(call_id: str, decision: str, command: str = "ls") -> dict[str, Any]:
    return {"agent": "a", "tool_call_id": call_id, "tool_name": "Bash", "original_input": {"command": command},
            "decision": decision}  # fmt: skip


def test_each_call_is_its_last_check_before_its_first_answer() -> None:
    records = [
        _check("c1", "ask", "ls", rule="Bash(ls:*)"),
        _answer("c1", "discarded"),  # left out
        _answer("c1", "approve"),
        _answer("c1", "deny"),  # a later answer does not replace the first
        _check("c1", "allow", "rm x"),  # the id reused: still the first check's call
        _answer("c2", "deny", "rm -rf /"),  # an answer with no check: the call asked
        {"event": "checked", "agent": "a", "tool_call_id": "", "tool_name": "Bash"},  # no call id
        _check("c3", "ask", "git status", how="mode"),  # held back in its batch: asked nobody
        _check("c3", "allow", "git status", rule="Bash(git status:*)"),  # checked again: the call's
        {**_check("c1", "deny", "ls"), "agent": "b"},  # another agent's call of the same id
    ]
    rows = recorded_calls(records)
    assert [(r["agent"], r["tool_call_id"], r["recorded"], r["person"], r["input"]["command"]) for r in rows] == [
        ("a", "c1", "ask", "approve", "ls"),
        ("a", "c2", "ask", "deny", "rm -rf /"),
        ("a", "c3", "allow", None, "git status"),
        ("b", "c1", "deny", None, "ls"),
    ]
    assert (rows[0]["recorded_how"], rows[0]["recorded_rule"]) == ("rule", "Bash(ls:*)")
    assert (rows[1]["recorded_how"], rows[1]["recorded_rule"]) == (None, None)
    assert rows[2]["recorded_rule"] == "Bash(git status:*)"
    assert all(list(r) == CALL_FIELDS for r in rows)
    assert held_checks(records) == {7}  # c3's first check; c1's check after its answer is not held


def test_equal_inputs_are_held_once_and_a_long_log_leaves_few_containers(tmp_path: Path) -> None:
    n = 20_000
    log = tmp_path / "audit.jsonl"
    lines = [_check(f"c{i}", "ask", f"make job{i % 50}") for i in range(n)]
    lines += [_answer(f"c{i}", "approve", f"make job{i % 50}") for i in range(0, n, 2)]
    log.write_text("".join(json.dumps(r) + "\n" for r in lines) + "not json\n")
    gc.collect()
    before = len(gc.get_objects())
    calls = read_calls(log)
    gc.collect()
    grown = len(gc.get_objects()) - before
    assert len(calls) == n
    assert calls.columns["person"][:3] == ["approve", None, "approve"]
    assert len({id(i) for i in calls.columns["input"]}) == 50  # one dict per distinct input
    assert calls.keys[0] == '{"command":"make job0"}'
    # a list of records would have left a dict per line (30,000) for the collector to walk
    assert grown < 500, grown
