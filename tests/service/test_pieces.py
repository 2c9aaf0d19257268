"""The service console's pure pieces, on frames and messages as AgentScope's
service sends them (shapes seen on its stream and ``/messages``)."""

from __future__ import annotations

import json
from pathlib import Path

from agentscope.event import ConfirmResult, UserConfirmResultEvent
from agentscope.message import ToolCallBlock

from nb_hitl.answers.outcome import applied_text
from nb_hitl.answers.record import RECORD_VERSION, road_of
from nb_hitl.pauses import Pause, build_pause
from nb_hitl.service.http import confirm_body, denied_in
from nb_hitl.service.inbox import InboxEntry, parked_calls, summary_line
from nb_hitl.service.ledger import AnswerLedger
from nb_hitl.service.outcome import OutcomeJudge, answer_mark
from nb_hitl.service.transcript import transcript_entries

CALL = {
    "type": "tool_call",
    "id": "call_1",
    "name": "write_note",
    "input": '{"text": "hello"}',
    "state": "asking",
    "suggested_rules": [{"tool_name": "write_note", "rule_content": None, "behavior": "allow", "source": "suggested"}],
}
PARKED = [
    {"role": "user", "name": "user", "id": "m1", "content": [{"type": "text", "text": "call: write_note"}]},
    {
        "role": "assistant",
        "name": "writer",
        "id": "reply-1",
        "content": [{"type": "hint", "hint": "<system-reminder>x</system-reminder>", "id": "h", "source": "{}"}, CALL],
    },
]


def test_parked_calls_reads_the_last_assistant_message() -> None:
    reply_id, calls, msg = parked_calls(PARKED)
    assert reply_id == "reply-1" and [c["id"] for c in calls] == ["call_1"] and msg is PARKED[1]
    finished = [PARKED[0], {**PARKED[1], "content": [{**CALL, "state": "finished"}]}]
    assert parked_calls(finished) == (None, [], None)
    assert parked_calls(PARKED[:1]) == (None, [], None)


def test_summary_line() -> None:
    assert summary_line(CALL) == 'text="hello"'
    ask = {"name": "AskUser", "input": json.dumps({"questions": [{"question": "Which?"}, {"question": "Why?"}]})}
    assert summary_line(ask) == "Which? (+1 more)"
    long = {"name": "x", "input": json.dumps({"text": "a" * 300})}
    assert len(summary_line(long)) == 100 and summary_line(long).endswith("…")
    assert summary_line({"name": "x", "input": "not json"}) == "not json"


def test_inbox_entry_view_marks_stranded() -> None:
    entry = InboxEntry("a", "writer", "s", "notes", "running", stranded=True)
    assert entry.to_view()["status"] == "stranded" and entry.to_view()["tool"] == ""
    parked = InboxEntry("a", "writer", "s", "notes", "awaiting_permission", "reply-1", [CALL])
    view = parked.to_view()
    assert (view["tool"], view["tool_call_id"], view["summary"]) == ("write_note", "call_1", 'text="hello"')


def test_judge_applied_only_after_its_own_echo() -> None:
    body = confirm_body("reply-1", [ConfirmResult(confirmed=True, tool_call=ToolCallBlock.model_validate(CALL))])
    assert UserConfirmResultEvent.model_validate(body).reply_id == "reply-1"
    judge = OutcomeJudge(body["id"], ["call_1"])
    # replayed frames of the parked reply come before the echo and say nothing
    assert judge.feed({"type": "TOOL_RESULT_START", "tool_call_id": "call_1"}) is None
    assert judge.feed({"type": "USER_CONFIRM_RESULT", "id": body["id"]}) is None
    assert judge.feed({"type": "REPLY_START"}) is None and judge.started
    out = judge.feed({"type": "TOOL_RESULT_START", "tool_call_id": "call_1"})
    assert out is not None and out.status == "applied"
    assert out.detail == "Applied by the service: the call started."  # a person reads no call ids


def test_a_denial_is_judged_at_its_results_end_and_said_denied_not_running() -> None:
    """A result's start carries no state: a denied call is judged at its end, so the console
    never says a denied call is running."""
    body = confirm_body("reply-1", [ConfirmResult(confirmed=False, tool_call=ToolCallBlock.model_validate(CALL))])
    assert denied_in(body) == ["call_1"]
    judge = OutcomeJudge(body["id"], ["call_1"], denied=denied_in(body))
    judge.feed({"type": "USER_CONFIRM_RESULT", "id": body["id"]})
    assert judge.feed({"type": "TOOL_RESULT_START", "tool_call_id": "call_1"}) is None
    out = judge.feed({"type": "TOOL_RESULT_END", "tool_call_id": "call_1", "state": "denied"})
    assert out is not None and out.status == "applied"
    assert out.detail == "Applied by the service: the call was denied."


def test_applied_text_counts_the_calls_by_what_happened() -> None:
    assert applied_text({"a": "success"}) == "Applied by the service: the call ran."
    assert applied_text({"a": "running", "b": "running", "c": "denied"}) == (
        "Applied by the service: 2 calls started, 1 denied."
    )


def test_judge_refusals() -> None:
    judge = OutcomeJudge("ev", ["call_1"])
    judge.feed({"type": "USER_CONFIRM_RESULT", "id": "ev"})
    out = judge.feed({"type": "REPLY_END", "finished_reason": "error", "error": {"message": "bad metadata"}})
    assert out is not None and out.status == "not_applied" and "bad metadata" in out.detail
    judge = OutcomeJudge("ev", ["call_1"])
    judge.feed({"type": "USER_CONFIRM_RESULT", "id": "ev"})
    again = judge.feed({"type": "REQUIRE_USER_CONFIRM", "tool_calls": [CALL]})
    assert again is not None and again.status == "not_applied"
    assert judge.feed({"type": "TOOL_RESULT_END", "tool_call_id": "call_other"}) is None


def test_judge_attributes_results_to_the_answer_echoed_before_them() -> None:
    """C30: a result that follows another answer's echo is that answer's;
    this answer is applied only by results after its own echo."""
    other = {
        "type": "USER_CONFIRM_RESULT",
        "id": "ev-a",
        "created_at": "2026-12-02T06:37:53",
        "metadata": answer_mark("ana", "host:1:abc"),
    }
    judge = OutcomeJudge("ev-b", ["call_1"])
    assert judge.feed(other) is None
    assert judge.feed({"type": "TOOL_RESULT_START", "tool_call_id": "call_1"}) is None
    assert judge.feed({"type": "USER_CONFIRM_RESULT", "id": "ev-b"}) is None and judge.echoed
    assert judge.feed({"type": "REPLY_START"}) is None
    out = judge.closed()
    assert out.status == "answered_elsewhere" and out.by == "ana (host:1:abc)" and out.at == other["created_at"]
    assert "ev-a" not in out.detail and "not applied" in out.detail  # a person reads no event ids
    assert judge.closed(ours=lambda e: e == "ev-a").by == "this console"
    # a run that died after another answer's side effect, then this answer's own result
    judge = OutcomeJudge("ev-b", ["call_1"])
    judge.feed(other)
    judge.feed({"type": "TOOL_RESULT_START", "tool_call_id": "call_1"})
    judge.feed({"type": "USER_CONFIRM_RESULT", "id": "ev-b"})
    out = judge.feed({"type": "TOOL_RESULT_END", "tool_call_id": "call_1", "state": "success"})
    assert out is not None and out.status == "applied"
    # a run that failed before it took the answer (storage down)
    judge = OutcomeJudge("ev-b", ["call_1"])
    judge.feed({"type": "REPLY_START", "reply_id": "r2"})
    assert judge.feed({"type": "REPLY_END", "finished_reason": "error", "error": "connection closed"}) is None
    assert judge.failed_before == "connection closed" and not judge.echoed


def test_transcript_shows_background_output_where_it_arrived() -> None:
    late = {
        "role": "assistant",
        "id": "reply-2",
        "content": [
            {
                "type": "hint",
                "id": "h2",
                "hint": [{"type": "text", "text": "<system-notification>Result: done</system-notification>"}],
                "source": json.dumps({"label": "tool_output", "sublabel": "slow_job · call_9"}),
            },
            {"type": "text", "id": "t", "text": "All done."},
        ],
    }
    entries = transcript_entries([*PARKED, late])
    kinds = [(e["kind"], e.get("name")) for e in entries]
    assert kinds == [("note", None), ("tool_call", "write_note"), ("tool_result", "slow_job"), ("text", None)]
    assert entries[2]["tool_call_id"] == "call_9" and "Result: done" in entries[2]["text"]
    assert "<system-notification>" not in entries[2]["text"]


def _pause(tcid: str = "call_1") -> Pause:
    return build_pause("reply-1", ToolCallBlock.model_validate({**CALL, "id": tcid}), None)


def test_ledger_remembers_approvals_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    ledger = AnswerLedger(path, "svc", "ana")
    where = {"service_session_id": "s", "agent_id": "a", "agent": "writer"}
    approve = {"decision": "approve"}
    ledger.record(_pause(), approve, **where, event_id="e1", phase="sending")
    assert ledger.approved("s", "call_1") is not None and ledger.sent("e1")
    ledger.record(_pause(), approve, **where, event_id="e1", phase="not_applied")
    assert ledger.approved("s", "call_1") is None  # a refused approval never reached the tool
    ledger.record(_pause(), approve, **where, event_id="e2", phase="sending")
    ledger.record(_pause(), approve, **where, event_id="e2", phase="unknown")
    again = AnswerLedger(path, "svc", "ana")
    assert again.ids(again.approved("s", "call_1")) == ("s", "call_1", "e2")  # type: ignore[arg-type]
    assert AnswerLedger(path, "svc", "bob").approved("s", "call_1") is None
    assert AnswerLedger(path, "other", "ana").approved("s", "call_1") is None
    ledger.record(_pause("call_2"), {"decision": "deny"}, **where, event_id="e3", phase="applied")
    assert again.approved("s", "call_2") is None
    # one audit record: the shape of nb_hitl.answers.record, road "service"
    rec = ledger.records("s")[-1]
    assert rec["v"] == RECORD_VERSION and road_of(rec) == "service"
    assert rec["origin"] == {
        "road": "service",
        "service_url": "svc",
        "service_session_id": "s",
        "agent_id": "a",
        "user": "ana",
        "event_id": "e3",
    }
    assert "session_id" not in rec and rec["tool_name"] == "write_note" and rec["decided_by"] == "ana"


def test_ledger_reads_lines_written_before_the_record_version(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    old = {"service": "svc", "user_id": "ana", "session_id": "s", "tool_call_id": "call_1", "event_id": "e0"}
    path.write_text(json.dumps({**old, "decision": "approve", "phase": "sending"}) + "\n")
    ledger = AnswerLedger(path, "svc", "ana")
    assert ledger.approved("s", "call_1") is not None and ledger.sent("e0")
    assert [r["phase"] for r in ledger.records("s")] == ["sending"]
    path.write_text(path.read_text() + json.dumps({**old, "decision": "approve", "phase": "refused"}) + "\n")
    assert AnswerLedger(path, "svc", "ana").approved("s", "call_1") is None


def test_bus_channels_name_their_session() -> None:
    """The pattern is AgentScope's own channel name with ``*`` for the
    session; a published event's channel gives its session back."""
    from agentscope.app.message_bus import MessageBusKeys

    from nb_hitl.service.events import channel_pattern, event_type, session_of

    pattern = channel_pattern()
    assert session_of(MessageBusKeys.session_events("abc-123"), pattern) == "abc-123"
    assert session_of("agentscope:wakeups", pattern) is None
    assert event_type(json.dumps({"type": "REPLY_START", "_entry_id": "1-0"}).encode()) == "REPLY_START"
    assert event_type(b"not json") == "" and event_type(b"[1]") == ""


def test_pushed_events_drop_rows_and_mark_sessions_for_one_check() -> None:
    """An echoed answer or a run's start drops the row at once (listeners
    told); a pause or a reply's end marks the session for one check; a
    session a listing showed is not this user's is ignored."""
    from nb_hitl.service.http import ServiceHTTP
    from nb_hitl.service.inbox import InboxState

    state = InboxState(ServiceHTTP("http://127.0.0.1:1", "ana"))
    told: list[int] = []
    state.on_change(lambda s: told.append(len(s.entries)))
    state.entries["s1"] = InboxEntry("a1", "writer", "s1", "notes", "awaiting_permission", "r1", [CALL])
    state.entries["s2"] = InboxEntry("a1", "writer", "s2", "more", "awaiting_permission", "r2", [CALL])
    state.on_event("s1", "USER_CONFIRM_RESULT")
    assert list(state.entries) == ["s2"] and told == [1]
    state.on_event("s2", "TEXT_BLOCK_DELTA")  # a run's chatter changes nothing
    assert list(state.entries) == ["s2"] and told == [1] and not state._dirty
    state.on_event("s3", "REQUIRE_USER_CONFIRM")
    state.on_event("s2", "REPLY_END")
    assert set(state._dirty) == {"s2", "s3"}
    state._foreign.add("s9")
    state.on_event("s9", "REQUIRE_USER_CONFIRM")
    assert "s9" not in state._dirty
