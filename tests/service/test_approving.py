"""The console's count of approvals by several people, without a service: the
ledger's lines folded into a call's state, the count in two processes at once
(nothing lost), a deciding answer on its way held for others, a console policy."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest
from agentscope.message import ToolCallBlock

from nb_hitl.answers.front import BatchRefused
from nb_hitl.audit import verify
from nb_hitl.decisions import decide
from nb_hitl.errors import AlreadyDecidedError, DecisionError
from nb_hitl.pauses import Pause, build_pause
from nb_hitl.policy import Policy
from nb_hitl.service.answering import Answerer
from nb_hitl.service.approving import (
    CLAIM_SECONDS,
    console_policies,
    count_answer,
    describe,
    parked_pause,
    put,
    shared,
)
from nb_hitl.service.http import ServiceHTTP
from nb_hitl.service.ledger import AnswerLedger
from nb_hitl.service.told import denial_notes, notes_metadata
from tests.service.test_pieces import CALL
from tests.support import run_async


def _pause(approvals: int = 2, tool_call_id: str = "call_1") -> Pause:
    pause = build_pause("reply-1", ToolCallBlock.model_validate({**CALL, "id": tool_call_id}), None)
    describe(pause, [Policy("notes", tools=["write_note"], approvals=approvals)])
    pause.status = "deciding"
    return pause


def _answer(ledger: AnswerLedger, by: str, action: str = "approve", needed: int = 2, **extra: str) -> Any:
    pause = _pause(needed)
    decision = decide(pause, {"action": action, "tool_call_id": pause.tool_call_id, **extra})
    return count_answer(ledger, pause, decision, by, session_id="s1", agent_id="a1", agent="writer"), pause


def test_policy_marks_the_call_and_patterns_are_refused() -> None:
    pause = _pause(3)
    assert (pause.policy, pause.approvals_needed, pause.approvals_distinct) == ("notes", 3, True)
    assert "asks for 3 approvals by different people (tool write_note)" in (pause.permission_message or "")
    with pytest.raises(ValueError, match="patterns and mcp_hints need the tool"):
        console_policies([Policy("p", patterns={"Bash": ["git push:*"]})])


def test_the_count_is_shared_and_the_same_person_is_refused(tmp_path: Path) -> None:
    one, two = AnswerLedger(tmp_path / "l.jsonl", "svc", "u"), AnswerLedger(tmp_path / "l.jsonl", "svc", "u")
    got, _ = _answer(one, "ana")
    assert got.final is None
    with pytest.raises(DecisionError, match="ana already approved this call"):
        _answer(two, "ana")  # another ledger object over the same file
    got, pause = _answer(two, "bob")
    assert got.final is not None and got.final.action == "approve"
    assert [a["by"] for a in pause.approvals] == ["ana", "bob"]
    # bob's answer is on its way: another console is told who decided
    with pytest.raises(AlreadyDecidedError, match="bob gave the last approval needed"):
        _answer(one, "carol")
    lines = one.log.records()
    assert [(r["phase"], r["decided_by"], r["origin"]["road"]) for r in lines] == [
        ("approval", "ana", "service"),
        ("counted", "bob", "service"),
    ]


def test_an_answer_that_never_reached_the_tool_leaves_the_approvals_before_it(tmp_path: Path) -> None:
    ledger = AnswerLedger(tmp_path / "l.jsonl", "svc", "u")
    _answer(ledger, "ana")
    _, pause = _answer(ledger, "bob")
    state = shared(ledger, "s1", pause.tool_call_id, now=time.time())
    assert state.claim is not None and state.claim["decided_by"] == "bob"
    later = shared(ledger, "s1", pause.tool_call_id, now=time.time() + CLAIM_SECONDS + 1)
    assert later.claim is None  # the console that counted went away
    ledger.record(pause, {"decision": "approve"}, **_ids("not_applied"))
    state = shared(ledger, "s1", pause.tool_call_id, now=time.time())
    assert state.claim is None and [a["by"] for a in state.approvals] == ["ana"]
    put(pause, state)
    assert [a["by"] for a in pause.approvals] == ["ana"]
    ledger.record(pause, {"decision": "approve"}, **_ids("counted"))
    ledger.record(pause, {"decision": "approve"}, **_ids("applied"))
    state = shared(ledger, "s1", pause.tool_call_id, now=time.time())
    assert state.approvals == [] and state.claim is None  # asking again after it ran: counted afresh


def _ids(phase: str) -> dict[str, str]:
    return {"service_session_id": "s1", "agent_id": "a1", "agent": "writer", "event_id": "e1", "phase": phase}


def test_a_modify_restarts_the_count_and_a_denial_carries_who_and_why(tmp_path: Path) -> None:
    ledger = AnswerLedger(tmp_path / "l.jsonl", "svc", "u")
    _answer(ledger, "ana")
    got, pause = _answer(ledger, "bob", "modify", input='{"text": "edited"}')
    assert got.final is None and [(a["by"], a["action"]) for a in pause.approvals] == [("bob", "modify")]
    fresh = _pause()
    put(fresh, shared(ledger, "s1", fresh.tool_call_id, now=time.time()))
    assert '"edited"' in fresh.to_view()["input_text"]
    got, _ = _answer(ledger, "carol", "deny", reason="wrong account")
    final = got.final
    assert final.action == "deny" and "carol denied your call" in final.note and "wrong account" in final.note
    assert "approved before by bob" in final.note
    meta = notes_metadata([final])
    body_notes = denial_notes(_confirm_event(fresh, meta))
    assert body_notes == {fresh.tool_call_id: final.note}


def _confirm_event(pause: Pause, metadata: dict[str, Any]) -> Any:
    from agentscope.event import ConfirmResult, UserConfirmResultEvent

    result = ConfirmResult(confirmed=False, tool_call=pause.tool_call)
    return UserConfirmResultEvent(reply_id="reply-1", confirm_results=[result], metadata=metadata)


def _approve_in_process(path: str, by: str, start_at: float, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    ledger = AnswerLedger(path, "svc", "u")
    time.sleep(max(0.0, start_at - time.time()))
    try:
        got, _ = _answer(ledger, by, needed=3)
        out.put((by, "final" if got.final is not None else "recorded"))
    except Exception as exc:
        out.put((by, f"{type(exc).__name__}: {exc}"))


def test_processes_approving_at_once_lose_nothing(tmp_path: Path) -> None:
    """Three processes approve a call that needs three at the same moment: every
    approval is counted, exactly one decides."""
    path = str(tmp_path / "l.jsonl")
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    at = time.time() + 10.0  # after every process imported nb_hitl
    people = [f"p{n}" for n in range(3)]
    procs = [ctx.Process(target=_approve_in_process, args=(path, by, at, out)) for by in people]
    for p in procs:
        p.start()
    got = dict(out.get(timeout=60) for _ in people)
    for p in procs:
        p.join(30)
    assert sorted(got.values()) == ["final", "recorded", "recorded"], got
    ledger = AnswerLedger(path, "svc", "u")
    (counted,) = [r for r in ledger.log.records() if r["phase"] == "counted"]
    assert sorted(a["by"] for a in counted["approvals"]) == people


class _View:
    """The console an Answerer reads (its ConsoleView protocol): two parked calls."""

    def __init__(self) -> None:
        self.cursor: str | None = None
        self.pauses: dict[str, Pause] = {}
        for n in (1, 2):
            block = {**CALL, "id": f"call_{n}"}
            self.pauses[block["id"]] = parked_pause(
                "reply-1", block, [Policy("notes", tools=["write_note"], approvals=2)]
            )

    def push(self) -> None:
        pass

    async def refresh(self) -> None:
        pass

    async def answered(self) -> None:
        pass


def test_approve_all_records_each_approval_and_a_second_one_by_the_same_person_sends_nothing(tmp_path: Path) -> None:
    ledger = AnswerLedger(tmp_path / "l.jsonl", "svc", "u")
    view = _View()
    answerer = Answerer(
        view, ServiceHTTP("http://127.0.0.1:9", "u"), ledger, "a1", "s1", console_id="c", decided_by="ana"
    )
    batch = [{"action": "approve", "tool_call_id": t} for t in view.pauses]
    got = run_async(answerer.act_all(batch))
    assert got["status"] == "approval_recorded"
    assert [(r["ok"], r["status"], r["approvals_needed"]) for r in got["results"]] == [
        (True, "approval_recorded", 2)
    ] * 2
    assert [p.status for p in view.pauses.values()] == ["open", "open"]
    with pytest.raises(BatchRefused, match="ana already approved this call"):
        run_async(answerer.act_all(batch))
    assert [r["phase"] for r in ledger.log.records()] == ["approval", "approval"]  # nothing more written
    assert [p.status for p in view.pauses.values()] == ["open", "open"]


def _approve_many(path: str, by: str, calls: int, start_at: float, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """One console process: approves ``calls`` calls (each needs two people), with a
    sending line of its own between them, as fast as it can."""
    ledger = AnswerLedger(path, "svc", "u")
    time.sleep(max(0.0, start_at - time.time()))
    finals = 0
    for n in range(calls):
        pause = _pause(tool_call_id=f"x{n}")
        decision = decide(pause, {"action": "approve", "tool_call_id": pause.tool_call_id})
        got = count_answer(ledger, pause, decision, by, session_id="s1", agent_id="a1", agent="writer")
        finals += got.final is not None
        ledger.record(pause, {"decision": "approve"}, **{**_ids("sending"), "event_id": f"{by}-{n}"})
    out.put((by, finals, ledger.tail.lines_read))


def test_the_index_reads_each_line_once_while_two_processes_append(tmp_path: Path) -> None:
    """Two console processes count 40 calls that need two approvals each, at once, while
    this process's ledger follows the file: every call is counted once by each (one
    ``approval``, one ``counted``: neither missed the other's line), and the ledger that
    followed holds what a ledger reading the whole file holds, each line read once."""
    path = str(tmp_path / "l.jsonl")
    watching = AnswerLedger(path, "svc", "u")
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    at = time.time() + 10.0  # after both processes imported nb_hitl
    procs = [ctx.Process(target=_approve_many, args=(path, by, 40, at, out)) for by in ("p0", "p1")]
    for p in procs:
        p.start()
    caught = 0
    while any(p.is_alive() for p in procs) and time.time() < at + 120:
        caught += watching.catch_up()
        time.sleep(0.01)
    got = {by: (finals, read) for by, finals, read in (out.get(timeout=60) for _ in procs)}
    for p in procs:
        p.join(30)
    caught += watching.catch_up()
    assert sum(finals for finals, _ in got.values()) == 40, got  # each call decided once
    fresh = AnswerLedger(path, "svc", "u")
    total = len(fresh.log.records())
    assert total == 40 * 2 + 80 and caught == total and watching.tail.lines_read == total
    for n in range(40):
        lines = watching.call_records("s1", f"x{n}")
        assert lines == fresh.call_records("s1", f"x{n}")
        assert sorted(r["phase"] for r in lines) == ["approval", "counted", "sending", "sending"]
    assert watching.tail.resets == 0 and verify(path, key=watching.log.key).intact


def test_the_index_reads_a_rewritten_ledger_again_and_waits_for_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    ledger = AnswerLedger(path, "svc", "u")
    _answer(ledger, "ana")
    with path.open("ab") as f:  # a line still being written (or torn by a crash)
        f.write(b'{"v": 2, "phase": "appr')
    assert ledger.catch_up() == 0 and ledger.tail.lines_read == 1
    _answer(AnswerLedger(path, "svc", "u"), "bob")  # closes the torn line, then writes its own
    assert ledger.catch_up() == 2 and [r["decided_by"] for r in ledger.call_records("s1", "call_1")] == ["ana", "bob"]
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[2])  # the log rewritten: the torn line cut out
    assert ledger.catch_up() == 2 and ledger.tail.resets == 1
    assert [r["phase"] for r in ledger.call_records("s1", "call_1")] == ["approval", "counted"]
    assert not verify(path, key=ledger.log.key).intact  # the index only reads: verify still names the cut
