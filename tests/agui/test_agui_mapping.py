"""nb_hitl.agui.mapping and nb_hitl.agui.events: pure mappings, on pauses of
real AgentScope agents (parked through the AG-UI server in process).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import jsonschema
import pytest
from ag_ui.core import Interrupt, ResumeEntry, RunFinishedEvent, RunStartedEvent
from ag_ui_validate.pytest_plugin import assert_valid_agui
from agentscope import event as ase
from agentscope.message import ToolResultState
from agentscope.tool import AskUserAnswer, AskUserMetadata

from nb_hitl.agui.events import EventTranslator, messages_snapshot, result_message_id
from nb_hitl.agui.mapping import (
    META_KEY,
    ResumeError,
    check_resume,
    effective_schema,
    interrupt_id,
    interrupt_view,
    message_to_entry,
    our_kind,
    parse_expires_at,
    pause_to_interrupt,
    resume_to_message,
    to_iso,
    validate_payload,
)
from nb_hitl.agui.server import AguiServer
from nb_hitl.decisions import decide
from nb_hitl.errors import DecisionError
from tests.agui_support import Factory, collect, user

THREAD = "t-map"


def _park(tmp_path, thread_id: str) -> tuple[AguiServer, dict[str, Any]]:
    """Run the thread's agent until it parks; return the server and its pauses by kind."""
    server = AguiServer(Factory(tmp_path))

    async def go() -> dict[str, Any]:
        from nb_hitl.agui.client import AguiClient

        events = await collect(server, AguiClient.make_input(thread_id, [user("go", "m1")]))
        assert events[-1].outcome.type == "interrupt"
        run = server.threads[thread_id].session.current
        return {p.kind: p for p in run.pauses.values()}

    return server, asyncio.run(go())


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    return _park(tmp_path_factory.mktemp("two"), THREAD)[1]


@pytest.fixture(scope="module")
def ext(tmp_path_factory):
    return _park(tmp_path_factory.mktemp("ext"), "ext-1")[1]


def test_interrupt_ids_are_unique_and_bound_to_thread_reply_and_tool_call():
    a = interrupt_id("t1", "r1", "c1")
    assert a == interrupt_id("t1", "r1", "c1")
    assert a.startswith("nbh-") and len(a) == 36
    others = {interrupt_id("t2", "r1", "c1"), interrupt_id("t1", "r2", "c1"), interrupt_id("t1", "r1", "c2")}
    assert a not in others and len(others) == 3
    # no ambiguity from joining: ("t1r", "1") is not ("t1", "r1")
    assert interrupt_id("t1r", "1", "c1") != interrupt_id("t1", "r1", "c1")


def test_confirm_pause_becomes_a_tool_call_interrupt(two):
    pause = two["confirm"]
    i = pause_to_interrupt(pause, THREAD)
    assert i.id == interrupt_id(THREAD, pause.reply_id, pause.tool_call_id)
    assert i.reason == "tool_call" and i.tool_call_id == pause.tool_call_id
    assert "delete_file" in i.message and "old_log.txt" in i.message and "Permission required" in i.message
    assert i.expires_at is None
    schema = i.response_schema
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["required"] == ["approved"]
    # AG-UI's approve-with-edits shape; editedArgs carries the tool's own input schema
    assert schema["properties"]["editedArgs"]["properties"]["path"]["type"] == "string"
    assert schema["properties"]["acceptedRules"]["items"]["maximum"] == 0
    meta = i.metadata[META_KEY]
    assert meta["kind"] == "confirm" and meta["tool_name"] == "delete_file"
    assert meta["input"] == {"path": "old_log.txt"} and meta["reply_id"] == pause.reply_id
    assert [r["label"] for r in meta["suggested_rules"]] == ["allow delete_file"]
    assert meta["permission_message"] == pause.permission_message
    # the wire form is what ag-ui-protocol itself reads back
    again = Interrupt.model_validate_json(i.model_dump_json(by_alias=True))
    assert again == i


def test_ask_user_pause_uses_the_askuser_metadata_schema(two):
    pause = two["ask_user"]
    i = pause_to_interrupt(pause, THREAD)
    assert i.reason == "input_required" and i.tool_call_id == pause.tool_call_id
    assert i.message == "Which file should I archive?"
    assert i.metadata[META_KEY]["ask_user"]["questions"][0]["header"] == "Archive"
    good = AskUserMetadata(answers=[AskUserAnswer(question="Which file should I archive?", selected=["notes.txt"])])
    validate_payload(i.response_schema, good.model_dump(mode="json"))
    with pytest.raises(DecisionError) as bad:
        validate_payload(
            i.response_schema, {"answers": [{"question": "Which file should I archive?", "selected": ["nope.txt"]}]}
        )
    assert bad.value.field == "answers.0.selected.0"
    with pytest.raises(DecisionError):
        validate_payload(i.response_schema, {"answers": []})


def test_external_pause_asks_for_the_tools_output(ext):
    pause = ext["external"]
    i = pause_to_interrupt(pause, "ext-1")
    assert i.reason == "input_required" and "run_query" in i.message
    validate_payload(i.response_schema, {"output": "1 row", "state": "success"})
    with pytest.raises(DecisionError) as bad:
        validate_payload(i.response_schema, {"output": "x", "state": "maybe"})
    assert bad.value.field == "state"


def test_expires_at_comes_from_the_deadline_and_the_earlier_bound_wins(two):
    pause = two["confirm"]
    saved = pause.deadline
    try:
        pause.deadline = 2_000_000_000.25
        i = pause_to_interrupt(pause, THREAD)
        assert i.expires_at == "2033-05-18T03:33:20.250Z"
        assert parse_expires_at(i.expires_at) == pytest.approx(2_000_000_000.25)
        assert pause_to_interrupt(pause, THREAD, expires_at=1_900_000_000).expires_at == to_iso(1_900_000_000)
        assert pause_to_interrupt(pause, THREAD, expires_at=2_100_000_000).expires_at == i.expires_at
    finally:
        pause.deadline = saved
    assert parse_expires_at("not a date") is None
    assert parse_expires_at("2030-01-01T00:00:00") == parse_expires_at("2030-01-01T00:00:00Z")


def _entry(pause, payload=None, status="resolved"):
    return ResumeEntry(
        interrupt_id=interrupt_id(THREAD, pause.reply_id, pause.tool_call_id), status=status, payload=payload
    )


def test_resolved_entries_become_the_page_messages_decide_accepts(two):
    confirm, ask = two["confirm"], two["ask_user"]
    msg = resume_to_message(confirm, _entry(confirm, {"approved": True}), thread_id=THREAD)
    assert msg == {"tool_call_id": confirm.tool_call_id, "reply_id": confirm.reply_id, "action": "approve", "rules": []}
    d = decide(confirm, msg)
    assert d.confirm_result.confirmed and d.confirm_result.rules is None

    d = decide(
        confirm, resume_to_message(confirm, _entry(confirm, {"approved": True, "acceptedRules": [0]}), thread_id=THREAD)
    )
    assert [r.tool_name for r in d.confirm_result.rules] == ["delete_file"]

    d = decide(confirm, resume_to_message(confirm, _entry(confirm, {"approved": False}), thread_id=THREAD))
    assert d.confirm_result.confirmed is False

    msg = resume_to_message(
        confirm, _entry(confirm, {"approved": True, "editedArgs": {"path": "draft.md"}}), thread_id=THREAD
    )
    assert msg["action"] == "modify"
    d = decide(confirm, msg)
    assert d.edited_input == {"path": "draft.md"} and json.loads(d.confirm_result.tool_call.input) == {
        "path": "draft.md"
    }
    assert json.loads(confirm.tool_call.input) == {"path": "old_log.txt"}  # the pause's copy is untouched

    payload = {"answers": [{"question": "Which file should I archive?", "selected": ["draft.md"], "other": None}]}
    d = decide(ask, resume_to_message(ask, _entry(ask, payload), thread_id=THREAD))
    assert d.tool_result.state == ToolResultState.SUCCESS
    assert d.tool_result.metadata == payload


def test_cancelled_is_a_denial_for_a_confirmation_and_an_error_result_otherwise(two, ext):
    confirm, ask = two["confirm"], two["ask_user"]
    d = decide(confirm, resume_to_message(confirm, _entry(confirm, status="cancelled"), thread_id=THREAD))
    assert d.action == "deny" and d.confirm_result.confirmed is False
    d = decide(ask, resume_to_message(ask, _entry(ask, status="cancelled"), thread_id=THREAD))
    assert d.action == "return_error" and d.tool_result.state == ToolResultState.ERROR
    assert "cancelled" in d.tool_result.output
    pause = ext["external"]
    entry = ResumeEntry(interrupt_id=interrupt_id("ext-1", pause.reply_id, pause.tool_call_id), status="cancelled")
    d = decide(pause, resume_to_message(pause, entry, thread_id="ext-1"))
    assert d.tool_result.state == ToolResultState.ERROR and "run_query produced no result" in d.tool_result.output
    entry = ResumeEntry(
        interrupt_id=entry.interrupt_id, status="resolved", payload={"output": "boom", "state": "error"}
    )
    d = decide(pause, resume_to_message(pause, entry, thread_id="ext-1"))
    assert d.tool_result.state == ToolResultState.ERROR and d.tool_result.output == "boom"


def test_c34_a_cancelled_entry_carries_the_persons_error_text_both_ways(two):
    confirm, ask = two["confirm"], two["ask_user"]
    interrupt = pause_to_interrupt(ask, THREAD)
    typed = "Not now: the folder is locked."
    entry = message_to_entry(interrupt, {"action": "return_error", "tool_call_id": "k", "message": typed})
    assert (entry.status, entry.payload) == ("cancelled", {"message": typed})
    d = decide(ask, resume_to_message(ask, entry, thread_id=THREAD))
    assert (d.action, d.cause, d.tool_result.output) == ("return_error", "person", typed)
    blank = message_to_entry(interrupt, {"action": "return_error", "tool_call_id": "k", "message": "  "})
    assert (blank.status, blank.payload) == ("cancelled", None)  # nothing typed: AG-UI's plain cancel
    with pytest.raises(DecisionError):  # too long for a message, refused before it is sent
        message_to_entry(interrupt, {"action": "return_error", "tool_call_id": "k", "message": "x" * 100_000})
    for bad in ({"message": 3}, {"message": typed, "extra": 1}):
        with pytest.raises(DecisionError):
            resume_to_message(ask, _entry(ask, bad, status="cancelled"), thread_id=THREAD)
    with pytest.raises(DecisionError, match="reason"):  # a confirmation's no goes with a reason
        resume_to_message(confirm, _entry(confirm, {"message": typed}, status="cancelled"), thread_id=THREAD)


def test_resume_entries_that_do_not_fit_are_refused(two):
    confirm = two["confirm"]
    with pytest.raises(ResumeError) as wrong:
        resume_to_message(
            confirm,
            ResumeEntry(interrupt_id="nbh-other", status="resolved", payload={"approved": True}),
            thread_id=THREAD,
        )
    assert wrong.value.code == "unknown_interrupt"
    with pytest.raises(ResumeError):  # the right triple in another thread is another id
        resume_to_message(confirm, _entry(confirm, {"approved": True}), thread_id="another-thread")
    with pytest.raises(DecisionError) as bad:
        resume_to_message(confirm, _entry(confirm, {"approved": "yes"}), thread_id=THREAD)
    assert bad.value.field == "approved"
    with pytest.raises(DecisionError) as extra:
        resume_to_message(confirm, _entry(confirm, {"approved": True, "run": "rm -rf /"}), thread_id=THREAD)
    assert "Additional properties" in str(extra.value)
    with pytest.raises(DecisionError) as mixed:
        resume_to_message(confirm, _entry(confirm, {"approved": False, "editedArgs": {"path": "x"}}), thread_id=THREAD)
    assert mixed.value.field == "approved"
    with pytest.raises(DecisionError) as typed:
        resume_to_message(confirm, _entry(confirm, {"approved": True, "editedArgs": {"path": 5}}), thread_id=THREAD)
    assert typed.value.field == "editedArgs.path"


def test_one_resume_must_answer_every_interrupt_exactly_once(two):
    confirm, ask = two["confirm"], two["ask_user"]
    i1, i2 = pause_to_interrupt(confirm, THREAD), pause_to_interrupt(ask, THREAD)
    ok1 = ResumeEntry(interrupt_id=i1.id, status="resolved", payload={"approved": True})
    ok2 = ResumeEntry(interrupt_id=i2.id, status="cancelled")
    check_resume([i1, i2], [ok2, ok1])
    cases = {
        "missing_interrupt": [ok1],
        "unknown_interrupt": [ok1, ok2, ResumeEntry(interrupt_id="nbh-x", status="cancelled")],
        "duplicate_interrupt": [ok1, ok2, ok1],
        "invalid_payload": [ResumeEntry(interrupt_id=i1.id, status="resolved", payload={}), ok2],
    }
    for code, entries in cases.items():
        with pytest.raises(ResumeError) as err:
            check_resume([i1, i2], entries)
        assert err.value.code == code, code
    # past expires_at: a resolved entry is refused, a cancelled one is not
    late = i1.model_copy(update={"expires_at": to_iso(time.time() - 60)})
    with pytest.raises(ResumeError) as err:
        check_resume([late, i2], [ok1, ok2])
    assert err.value.code == "interrupt_expired"
    check_resume([late, i2], [ResumeEntry(interrupt_id=i1.id, status="cancelled"), ok2])


def test_client_views_and_entries_round_trip_to_the_server_mapping(two):
    confirm, ask = two["confirm"], two["ask_user"]
    i1, i2 = pause_to_interrupt(confirm, THREAD), pause_to_interrupt(ask, THREAD)
    v1 = interrupt_view(i1, key=confirm.tool_call_id, run_id="run-1")
    assert v1["kind"] == "confirm" and v1["tool_name"] == "delete_file" and v1["interrupt_id"] == i1.id
    assert v1["suggested_rules"] == [{"index": 0, "label": "allow delete_file"}]
    assert json.loads(v1["input_text"]) == {"path": "old_log.txt"}
    # the remote card shows the input as the local one does (one key a line), not the model's one-line JSON
    assert v1["input_text"] == confirm.to_view()["input_text"] == '{\n  "path": "old_log.txt"\n}'
    assert (v1["sent_text"], v1["input_changes"]) == (None, [])
    v2 = interrupt_view(i2, key=ask.tool_call_id, run_id="run-1")
    assert v2["kind"] == "ask_user" and v2["ask_user"]["questions"][0]["question"] == "Which file should I archive?"
    assert v2["input_text"] == "" == ask.to_view()["input_text"]  # the questions reach the page once, as ask_user
    pages = [
        (i1, confirm, {"action": "approve", "rules": [0]}),
        (i1, confirm, {"action": "deny"}),
        (i1, confirm, {"action": "modify", "input": '{"path": "draft.md"}'}),
        (
            i2,
            ask,
            {
                "action": "answer",
                "answers": [{"question": "Which file should I archive?", "selected": [], "other": " my notes "}],
            },
        ),
        (i2, ask, {"action": "return_error"}),
    ]
    for interrupt, pause, page in pages:
        entry = message_to_entry(interrupt, {**page, "tool_call_id": pause.tool_call_id})
        server_msg = resume_to_message(pause, entry, thread_id=THREAD)
        d = decide(pause, server_msg)
        if page["action"] == "modify":
            assert d.edited_input == {"path": "draft.md"}
        if page["action"] == "answer":
            assert d.answers.answers[0].other == "my notes"
        if page["action"] in ("approve", "deny"):
            assert server_msg["action"] == page["action"]


def test_client_refuses_answers_before_they_are_sent(two):
    confirm, ask = two["confirm"], two["ask_user"]
    i1, i2 = pause_to_interrupt(confirm, THREAD), pause_to_interrupt(ask, THREAD)
    with pytest.raises(DecisionError) as bad_json:
        message_to_entry(i1, {"action": "modify", "input": "{path: x}"})
    assert bad_json.value.field == "input" and "line 1" in str(bad_json.value)
    with pytest.raises(DecisionError) as bad_type:
        message_to_entry(i1, {"action": "modify", "input": '{"path": 5}'})
    assert bad_type.value.field == "input.path"
    with pytest.raises(DecisionError) as renamed:
        message_to_entry(i1, {"action": "modify", "input": '{"path": "a"}', "name": "Bash"})
    assert renamed.value.field == "name"
    with pytest.raises(DecisionError) as wrong_kind:
        message_to_entry(i1, {"action": "answer", "answers": []})
    assert wrong_kind.value.field == "action"
    with pytest.raises(DecisionError):
        message_to_entry(
            i2, {"action": "answer", "answers": [{"question": "Which file should I archive?", "selected": ["x"]}]}
        )


def test_foreign_interrupts_are_forms_checked_against_their_schema():
    schema = {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}, "when": {"type": "string", "format": "date"}},
        "required": ["approved"],
    }
    foreign = Interrupt(
        id="lg-1",
        reason="tool_call",
        message="Delete a.txt?",
        tool_call_id="call_1",
        response_schema=schema,
        metadata={"langgraph": {"raw": {}}},
    )
    assert our_kind(foreign) is None
    view = interrupt_view(
        foreign, key="call_1", run_id="r", tool_call_name="delete_file", tool_call_text='{"path": "a.txt"}'
    )
    assert view["kind"] == "form" and view["response_schema"] == schema and view["message"] == "Delete a.txt?"
    assert view["tool_name"] == "delete_file" and view["input_text"] == '{\n  "path": "a.txt"\n}'
    entry = message_to_entry(foreign, {"action": "submit", "value": {"approved": True, "when": "2026-03-01"}})
    assert entry.status == "resolved" and entry.payload == {"approved": True, "when": "2026-03-01"}
    with pytest.raises(DecisionError) as bad:
        message_to_entry(foreign, {"action": "submit", "value": {"approved": True, "when": "March"}})
    assert bad.value.field == "when"
    with pytest.raises(DecisionError):
        message_to_entry(foreign, {"action": "approve"})  # our views only for our interrupts
    assert message_to_entry(foreign, {"action": "cancel"}).status == "cancelled"
    # no schema: AG-UI's boolean default for tool_call / confirmation reasons
    bare = Interrupt(id="x", reason="confirmation")
    assert effective_schema(bare)["required"] == ["approved"]
    # metadata of another layout version is not ours: drawn as a form
    odd = Interrupt(id="y", reason="tool_call", metadata={META_KEY: {"version": 99, "kind": "confirm"}})
    assert our_kind(odd) is None


def _ev(cls, **kw):
    return cls(reply_id="reply1", **kw)


def test_translator_maps_agentscope_events_to_a_valid_ag_ui_run():
    t = EventTranslator()
    stream = [
        _ev(ase.TextBlockStartEvent, block_id="b1"),
        _ev(ase.TextBlockDeltaEvent, block_id="b1", delta="Hi "),
        _ev(ase.TextBlockDeltaEvent, block_id="b1", delta=""),
        _ev(ase.TextBlockDeltaEvent, block_id="b1", delta="there"),
        _ev(ase.TextBlockEndEvent, block_id="b1"),
        _ev(ase.ThinkingBlockStartEvent, block_id="th"),
        _ev(ase.ThinkingBlockDeltaEvent, block_id="th", delta="hmm"),
        _ev(ase.ThinkingBlockEndEvent, block_id="th"),
        _ev(ase.ToolCallStartEvent, tool_call_id="c1", tool_call_name="delete_file"),
        _ev(ase.ToolCallDeltaEvent, tool_call_id="c1", delta=""),
        _ev(ase.ToolCallDeltaEvent, tool_call_id="c1", delta='{"path": "a"}'),
        _ev(ase.ToolCallEndEvent, tool_call_id="c1"),
        _ev(ase.ToolResultStartEvent, tool_call_id="c1", tool_call_name="delete_file"),
        _ev(ase.ToolResultTextDeltaEvent, tool_call_id="c1", delta="Deleted a."),
        _ev(ase.ToolResultEndEvent, tool_call_id="c1", state=ToolResultState.SUCCESS),
        _ev(ase.ToolResultStartEvent, tool_call_id="c1", tool_call_name="delete_file"),
        _ev(ase.TextBlockStartEvent, block_id="b2"),  # cut short: closed by close()
        _ev(ase.TextBlockDeltaEvent, block_id="b2", delta="and"),
    ]
    out = [e for ev in stream for e in t.feed(ev)] + t.close()
    types = [e.type.value for e in out]
    assert types == [
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
        "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END",
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
    ]  # fmt: skip
    result = out[12]
    assert result.content == "Deleted a." and result.message_id == result_message_id("reply1", "c1")
    assert all(e.timestamp for e in out)
    wire = [RunStartedEvent(thread_id="t", run_id="r").model_dump(mode="json", by_alias=True)]
    wire += [e.model_dump(mode="json", by_alias=True) for e in out]
    wire.append(RunFinishedEvent(thread_id="t", run_id="r").model_dump(mode="json", by_alias=True))
    assert_valid_agui(wire, max_warnings=0)


def deny_and_pick_notes(interrupts: Any) -> list[ResumeEntry]:
    """Resume entries for the demo reply's interrupts: every confirmation denied, the AskUser
    question answered with notes.txt."""
    entries = []
    for interrupt in interrupts:
        kind = interrupt.metadata[META_KEY]["kind"]
        payload = (
            {"approved": False}
            if kind == "confirm"
            else {"answers": [{"question": "Which file should I archive?", "selected": ["notes.txt"]}]}
        )
        entries.append(ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=payload))
    return entries


def test_messages_snapshot_cuts_a_reply_at_its_tool_results(tmp_path):
    from nb_hitl.agui.client import AguiClient

    server = AguiServer(Factory(tmp_path))

    async def go():
        first = await collect(server, AguiClient.make_input(THREAD, [user("go", "m1")]))
        entries = deny_and_pick_notes(first[-1].outcome.interrupts)
        second = await collect(server, AguiClient.make_input(THREAD, [user("go", "m1")], entries))
        assert second[-1].outcome.type == "success"
        return server.threads[THREAD].agent.state.context

    context = asyncio.run(go())
    snap = messages_snapshot(context)
    assert [m.role for m in snap] == ["user", "assistant", "tool", "tool", "assistant"]
    assert snap[0].id == "m1"  # the client's message id is the agent's Msg id
    calls = {c.function.name: c for c in snap[1].tool_calls}
    assert set(calls) == {"AskUser", "delete_file"}
    assert json.loads(calls["delete_file"].function.arguments) == {"path": "old_log.txt"}
    tools = {m.tool_call_id: m for m in snap[2:4]}
    denied = tools[calls["delete_file"].id]
    assert denied.error == "denied" and denied.id == result_message_id(context[1].id, calls["delete_file"].id)
    assert tools[calls["AskUser"].id].error is None
    assert "You denied the deletion" in snap[4].content


def test_form_and_review_pauses_map_both_ways(tmp_path):
    from nb_hitl.agui.client import AguiClient
    from tests.agui_support import RAW, REDACTED, REFUND

    server = AguiServer(Factory(tmp_path))

    async def parked() -> tuple[Any, Any, Interrupt, Interrupt]:
        # map while the pauses are open (a review shows its result only then)
        pauses = []
        for thread_id in ("form-map", "review-map"):
            await collect(server, AguiClient.make_input(thread_id, [user("go", "m1")]))
            pauses.append(next(iter(server.threads[thread_id].session.current.pauses.values())))
        return (*pauses, pause_to_interrupt(pauses[0], "form-map"), pause_to_interrupt(pauses[1], "review-map"))

    form, review, fi, ri = asyncio.run(parked())
    assert (form.kind, review.kind) == ("form", "review")
    assert fi.response_schema == REFUND and fi.reason == "input_required"
    assert ri.reason == "nb_hitl:review" and ri.metadata[META_KEY]["review_output"] == RAW
    jsonschema.Draft202012Validator.check_schema(ri.response_schema)

    fv = interrupt_view(fi, key=form.tool_call_id, run_id="r")
    assert fv["kind"] == "form" and fv["title"] == "Refund details" and fv["message"] == "For the refund."
    entry = message_to_entry(fi, {"action": "submit", "value": {"amount": 10}})
    d = decide(form, resume_to_message(form, entry, thread_id="form-map"))
    assert d.tool_result.metadata == {"value": {"amount": 10}}
    with pytest.raises(DecisionError) as bad:
        message_to_entry(fi, {"action": "submit", "value": {"amount": 501}})
    assert bad.value.field == "amount"
    d = decide(form, resume_to_message(form, message_to_entry(fi, {"action": "cancel"}), thread_id="form-map"))
    assert d.tool_result.state == ToolResultState.ERROR and "cancelled this form" in d.tool_result.output

    rv = interrupt_view(ri, key=review.tool_call_id, run_id="r")
    assert rv["kind"] == "review" and rv["review_output"] == RAW
    for page, action in (
        ({"action": "accept"}, "accept"),
        ({"action": "edit", "output": REDACTED}, "edit"),
        ({"action": "reject", "reason": "private"}, "reject"),
        ({"action": "cancel"}, "return_error"),
    ):
        entry = message_to_entry(ri, page)
        d = decide(review, resume_to_message(review, entry, thread_id="review-map"))
        assert d.action == action
        if action == "edit":
            assert d.tool_result.output == REDACTED
        if action == "return_error":
            assert RAW not in str(d.tool_result.output)
    with pytest.raises(DecisionError):  # edit needs its output (the schema's if/then)
        validate_payload(ri.response_schema, {"action": "edit"})
