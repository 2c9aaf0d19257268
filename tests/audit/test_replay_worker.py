"""A replay judged in a worker process decides as the kernel does, and the kernel matches nothing itself.

The same recorded calls are replayed twice, once in the process
(``replay(...)``) and once with ``in_worker=True``: the frames (every row,
every rule's counts) are equal, on the recorded scripted session of
:mod:`tests.audit.test_record_and_replay` (its function tools are local
functions, which no other process could import) and on random logs of
:mod:`tests.audit.test_replay_reference` over ``Bash`` (its shell parser
made anew in the worker), ``Read``, ``Write`` and a function tool, with a
pathological rule reported from the worker. A tool that cannot be sent is
judged in the kernel; a worker past its time is stopped and said so; a log
read in the worker comes back as the kernel would have read it.
"""

from __future__ import annotations

import json
import os
import random
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from agentscope.permission import PermissionMode
from agentscope.tool import FunctionTool

from nb_hitl.audit import replay
from nb_hitl.audit.calls import read_calls
from nb_hitl.audit.judge import Judge
from nb_hitl.audit.worker import open_worker
from nb_hitl.errors import DecisionError
from nb_hitl.store import AuditLog
from tests.audit.test_record_and_replay import _recorded_session
from tests.audit.test_replay_reference import _log, _rules, _tools, lookup
from tests.support import run_async

WILD = {"tool_name": "Bash", "rule_content": "*a*a*a*a*a*b", "behavior": "deny", "source": "candidate"}


def workers(parent: int | None = None) -> set[int]:
    """Pids of the replay workers of ``parent`` (default: this process) still
    running (their command line names their parent's pid)."""
    mine = f"nb_hitl.audit.worker\0{parent or os.getpid()}\0"
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mine in (entry / "cmdline").read_text():
                found.add(int(entry.name))
        except OSError:
            continue
    return found


@pytest.fixture
def kernel_judged(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tool of each call this process's :class:`Judge` decides (the worker's are not seen)."""
    seen: list[str] = []
    judge = Judge.judge

    async def counted(self: Judge, tool: Any, tool_input: dict[str, Any]) -> Any:
        seen.append(tool.name)
        return await judge(self, tool, tool_input)

    monkeypatch.setattr(Judge, "judge", counted)
    return seen


def _same(here: pd.DataFrame, there: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(here, there)
    pd.testing.assert_frame_equal(here.attrs["rules"], there.attrs["rules"])
    assert here.attrs["mode"] == there.attrs["mode"]


def test_the_worker_decides_the_recorded_session_as_the_kernel_does(tmp_path: Path, kernel_judged: list[str]) -> None:
    audit = tmp_path / "audit.jsonl"
    agent, _ = _recorded_session(audit)
    candidate = [
        {"tool_name": "lookup", "rule_content": None, "behavior": "ask", "source": "candidate"},
        {"tool_name": "send_mail", "rule_content": None, "behavior": "allow", "source": "candidate"},
    ]
    there = run_async(replay(audit, candidate, agent.toolkit, in_worker=True))
    assert kernel_judged == [] and workers() == set()  # all three calls judged in the worker, which ended
    here = run_async(replay(audit, candidate, agent.toolkit))
    assert len(kernel_judged) == 3
    _same(here, there)
    assert there.set_index("tool_call_id")["change"].to_dict() == {"l1": "allow -> ask", "m1": "ask -> allow", "d1": ""}


@pytest.mark.parametrize("seed", range(3))
def test_the_worker_decides_random_logs_as_the_kernel_does(seed: int, kernel_judged: list[str]) -> None:
    rng = random.Random(seed)
    records, rules = _log(rng, 200), [*_rules(rng, 14), WILD]
    long_line = {
        "agent": "a",
        "tool_call_id": "long",
        "tool_name": "Bash",
        "original_input": {"command": "mkdir " + "a" * 4000},
    }
    records.append({**long_line, "event": "checked", "decision": "ask"})
    mode = [m.value for m in PermissionMode][seed * 2 % len(PermissionMode)]
    for shell in (False, True):
        kernel_judged.clear()
        there = run_async(replay(records, rules, _tools(), mode=mode, shell_rules=shell, in_worker=True))
        assert kernel_judged == []
        _same(run_async(replay(records, rules, _tools(), mode=mode, shell_rules=shell)), there)
        row = there.set_index("tool_call_id").loc["long"]
        assert row["candidate"] == "unknown" and "too many wildcards" in row["problem"]  # reported by the worker
        assert there.attrs["rules"].set_index("rule").loc["deny Bash(*a*a*a*a*a*b)", "pathological"] >= 1


class _Guarded(FunctionTool):
    """A function tool holding a lock: it cannot be pickled, so it is not sent to the worker."""

    def __init__(self) -> None:
        super().__init__(lookup, name="guarded")
        self.lock = threading.Lock()


def test_a_tool_that_cannot_be_sent_is_judged_in_the_kernel(kernel_judged: list[str]) -> None:
    records = _log(random.Random(7), 120)
    for i, topic in enumerate(["tides", "moon", "tides"]):
        call = {"agent": "a", "tool_call_id": f"g{i}", "tool_name": "guarded", "original_input": {"topic": topic}}
        records.append({**call, "event": "checked", "decision": "ask"})
    rules = [
        {"tool_name": "guarded", "rule_content": None, "behavior": "allow", "source": "candidate"},
        {"tool_name": "Bash", "rule_content": "git:*", "behavior": "deny", "source": "candidate"},
    ]
    tools = {**_tools(), "guarded": _Guarded()}
    there = run_async(replay(records, rules, tools, in_worker=True))
    assert kernel_judged == ["guarded", "guarded"]  # its two distinct inputs; every other call in the worker
    _same(run_async(replay(records, rules, tools)), there)
    assert there.set_index("tool_call_id").loc["g0", "candidate"] == "allow"


def test_a_worker_past_its_time_is_stopped_and_said_so() -> None:
    records = _log(random.Random(1), 50)
    with pytest.raises(DecisionError, match=r"ran past 0\.5 s in its worker process") as raised:
        run_async(replay(records, _rules(random.Random(1), 5), _tools(), in_worker=True, timeout=0.5))
    assert raised.value.field == "replay"
    assert workers() == set()


async def _read_in_worker(path: Path) -> Any:
    async with open_worker() as worker:
        return await worker.read(path)


def test_a_log_read_in_the_worker_is_the_log_read_here(tmp_path: Path) -> None:
    records = _log(random.Random(3), 25_000)  # more than one piece of each column
    log = AuditLog(tmp_path / "day.jsonl")
    log.path.write_text("".join(json.dumps(r) + "\n" for r in records))
    there = run_async(_read_in_worker(log.path))
    here = read_calls(log)
    assert there.columns == here.columns and there.keys == here.keys
    given = there.columns["input"]
    assert len({id(d) for d in given}) == len({id(d) for d in here.columns["input"]}) < 100  # inputs held once
    (tmp_path / "link.jsonl").symlink_to(log.path)
    with pytest.raises(DecisionError, match="worker process failed") as raised:
        run_async(_read_in_worker(tmp_path / "link.jsonl"))
    assert raised.value.field == "replay" and workers() == set()
