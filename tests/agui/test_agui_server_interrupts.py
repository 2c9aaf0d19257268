"""The served agent's interrupts of each kind (an external tool's output, forms, reviews), two interrupts answered in one resume, answers the server refused reopened, and an async agent factory; through the real AG-UI server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ag_ui.core import ResumeEntry
from agentscope.message import Msg

from nb_hitl.agui import AguiServer, RemoteSession, ResumeError, serve_in_background
from nb_hitl.agui.mapping import META_KEY
from nb_hitl.errors import DecisionError
from tests.agui.test_agui_server import (  # helpers shared with that module
    answers,
    assert_conformant,
    assert_interrupted,
    assert_resumed_once,
    error_of,
    make,
    parked,
    run,
)
from tests.agui_support import RAW, REDACTED, REFUND, post_run, user


def test_external_tool_interrupt_takes_the_output(served):
    handle, server, factory, _ = served
    tid = "ext-server"
    first = run(post_run(handle, make(tid, [user("query", "e1")])))
    assert_conformant(first)
    (interrupt,) = assert_interrupted(first, tid)
    assert interrupt.metadata[META_KEY]["kind"] == "external" and interrupt.reason == "input_required"
    resume = [ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"output": "42 rows"})]
    second = run(post_run(handle, make(tid, [user("query", "e1")], resume)))
    assert_conformant(second)
    assert_resumed_once(resume, [interrupt], second)
    assert second.last().result == "The query came back success: 42 rows"


def test_remote_session_answers_two_interrupts_in_one_resume(served):
    handle, server, factory, _ = served

    async def go():
        remote = RemoteSession(handle.url, token=handle.token, thread_id="two-remote", display=False)
        task = remote.start("Tidy up")
        views = await remote.until_paused()
        assert sorted(v["kind"] for v in views) == ["ask_user", "confirm"]
        widget = remote.current.widget
        assert sorted(p["kind"] for p in widget.pauses) == ["ask_user", "confirm"]
        assert any(e["kind"] == "tool_call" and e["name"] == "delete_file" for e in widget.transcript)
        ask = next(v for v in views if v["kind"] == "ask_user")
        confirm = next(v for v in views if v["kind"] == "confirm")
        posts = remote.client.posts
        # a wrong answer is refused where it is given, nothing is sent
        with pytest.raises(Exception) as bad:
            await remote.act({"action": "modify", "tool_call_id": confirm["tool_call_id"], "input": '{"path": 5}'})
        assert getattr(bad.value, "field", None) == "input.path"
        # the diff of an edit before it is sent is not offered on a remote card: said, nothing sent
        with pytest.raises(DecisionError, match="A remote agent's card shows no diff of an edit before it is sent"):
            await remote.act({"action": "preview", "tool_call_id": confirm["tool_call_id"], "input": "{}"})
        assert remote.client.posts == posts and all(p["status"] == "open" for p in widget.pauses)
        # a hand-written resume with a wrong id is refused before any POST
        with pytest.raises(ResumeError) as wrong:
            remote.resume([ResumeEntry(interrupt_id="nbh-nope", status="cancelled")])
        assert wrong.value.code == "unknown_interrupt"
        first = await remote.act(
            {
                "action": "answer",
                "tool_call_id": ask["tool_call_id"],
                "answers": [{"question": "Which file should I archive?", "selected": ["draft.md"]}],
            }
        )
        assert first["sent"] is False and remote.client.posts == posts
        # the widget's own handler is the same path as act()
        second = await widget._handler({"action": "approve", "tool_call_id": confirm["tool_call_id"], "rules": [0]})
        assert second["sent"] is True
        final = await task
        turn = remote.current
        assert remote.client.posts == posts + 1
        assert [r.outcome for r in turn.runs] == ["interrupt", "success"]
        sent = turn.runs[1].resume
        assert sorted(e.interrupt_id for e in sent) == sorted(v["interrupt_id"] for v in views)
        assert {e.status for e in sent} == {"resolved"}
        assert widget.status == "finished" and widget.final_text == final
        assert all(p["status"] == "delivered" for p in widget.pauses)
        return final

    assert run(go()) == "You chose to archive draft.md. Deleted old_log.txt."
    agent = factory.agents["two-remote"]
    # "Always allow" went through: the suggested rule is now an allow rule of the agent
    allowed = [r for rules in agent.state.permission_context.allow_rules.values() for r in rules]
    assert [(r.tool_name, r.rule_content) for r in allowed] == [("delete_file", None)]


def test_remote_session_reopens_answers_the_server_refused(served):
    handle, server, factory, clock = served

    async def go():
        remote = RemoteSession(handle.url, token=handle.token, thread_id="two-refused", display=False)
        task = remote.start("Tidy up")
        views = await remote.until_paused()
        clock.offset = 3600  # the server's clock says the interrupts expired; the client's does not
        try:
            for v in views:
                page = (
                    {"action": "approve"}
                    if v["kind"] == "confirm"
                    else {
                        "action": "answer",
                        "answers": [{"question": "Which file should I archive?", "selected": ["notes.txt"]}],
                    }
                )
                last = await remote.act({**page, "tool_call_id": v["tool_call_id"]})
            again = await remote.until_paused()
            # the answer that sent the resume is kept: the refusal is about the other card, and said there
            assert last["sent"] is False and again[0]["tool_call_id"] != views[-1]["tool_call_id"]
        finally:
            clock.offset = 0
        turn = remote.current
        assert turn.status == "paused" and turn.reason.startswith("The server refused your answer to ")
        assert [r.outcome for r in turn.runs] == ["interrupt", "error"]
        assert turn.runs[-1].error_code == "interrupt_expired"  # for programs; the person reads words
        # the interrupt the server named reopens with its reason; the other answer is kept
        assert len(again) == 1 and "expired" in again[0]["refused"] and "interrupt_expired" not in again[0]["refused"]
        await remote.act({"action": "interrupt"})  # cancel all: one resume of cancelled entries
        final = await task
        assert [r.outcome for r in turn.runs] == ["interrupt", "error", "success"]
        assert {e.status for e in turn.runs[-1].resume} == {"cancelled"}
        return final

    assert run(go()) == "No file was chosen (error). You denied the deletion, so nothing was deleted."


def test_form_interrupt_carries_the_forms_schema(served):
    handle, server, factory, _ = served
    tid = "form-server"
    first = run(post_run(handle, make(tid, [user("refund", "f1")])))
    assert_conformant(first)
    (interrupt,) = assert_interrupted(first, tid)
    meta = interrupt.metadata[META_KEY]
    assert meta["kind"] == "form" and meta["title"] == "Refund details" and interrupt.reason == "input_required"
    assert interrupt.response_schema == REFUND and interrupt.message == "Refund details - For the refund."
    bad = [ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"amount": 900})]
    cap = run(post_run(handle, make(tid, [user("refund", "f1")], bad)))
    assert_conformant(cap)
    assert error_of(cap).code == "invalid_payload" and parked(server, tid) == [interrupt.tool_call_id]
    good = [ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"amount": 42.5, "date": "2026-03-01"})]
    done = run(post_run(handle, make(tid, [user("refund", "f1")], good)))
    assert_conformant(done)
    assert_resumed_once(good, [interrupt], done)
    assert done.last().result == 'Form success: {"amount": 42.5, "date": "2026-03-01"}'


def test_review_interrupt_shows_the_result_only_to_the_reviewer(served):
    handle, server, factory, _ = served
    tid = "review-server"
    first = run(post_run(handle, make(tid, [user("look up Ana", "r1")])))
    assert_conformant(first)
    (interrupt,) = assert_interrupted(first, tid)
    meta = interrupt.metadata[META_KEY]
    assert interrupt.reason == "nb_hitl:review" and meta["kind"] == "review"
    assert meta["review_output"] == RAW  # the reviewer sees the raw result...
    streamed = [e for e in first.dicts if e["type"] not in ("RUN_FINISHED",)]
    assert RAW not in json.dumps(streamed)  # ...and nothing else in the stream carries it
    assert interrupt.response_schema["properties"]["action"]["enum"] == ["accept", "edit", "reject"]
    edit = [ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"action": "edit", "output": REDACTED})]
    done = run(post_run(handle, make(tid, [user("look up Ana", "r1")], edit)))
    assert_conformant(done)
    assert_resumed_once(edit, [interrupt], done)
    assert RAW not in done.body.decode("utf-8")
    results = [e.content for e in done.events if e.type.value == "TOOL_CALL_RESULT"]
    assert results == [REDACTED] and done.last().result == f"I read: {REDACTED}"
    assert factory.tool_runs == ["Ana"]  # the reviewed tool ran exactly once


def test_async_factory_streams_what_the_session_consumes_in_order(tmp_path):
    """The factory is ``(thread_id) -> Agent`` (here async) and wires nothing
    into the agent: the stream comes from ``Session.on_event``. Over HTTP, on
    a slowly streaming agent, each run is conformant, its agent events are
    exactly the translation of what the Session consumed, in order, and they
    all come between ``RUN_STARTED`` (and a resume's history snapshot) and
    the closing snapshots."""
    from nb_hitl.agui.demo import two_pause_agent
    from nb_hitl.agui.events import EventTranslator

    consumed: list[Any] = []
    agents: dict[str, Any] = {}

    async def factory(thread_id: str) -> Any:
        await asyncio.sleep(0)
        agents[thread_id] = agent = two_pause_agent(tmp_path / thread_id, chunk_delay=0.002)
        return agent

    server = AguiServer(factory, interrupt_ttl=600)
    tid = "async-order"
    with serve_in_background(server) as handle:
        first = run(post_run(handle, make(tid, [user("tidy", "o1")])))
        server.threads[tid].session.on_event(lambda ev, run_: consumed.append(ev))
        interrupts = assert_interrupted(first, tid)
        second = run(post_run(handle, make(tid, [user("tidy", "o1")], answers(interrupts))))

    assert_conformant(first)
    assert_conformant(second)
    assert first.chunks > 3  # streamed while the agent ran, not in one piece
    streamed = first.types[1:-3]
    assert streamed and "MESSAGES_SNAPSHOT" not in streamed and "STATE_SNAPSHOT" not in streamed
    assert streamed.count("TEXT_MESSAGE_CONTENT") > 5 and streamed.count("TOOL_CALL_START") == 2
    text = "".join(e.delta for e in first.events if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert text == "Two things: which file to archive, and may I delete old_log.txt?"

    assert_resumed_once(answers(interrupts), interrupts, second)
    assert second.types[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    assert second.types[-3:] == ["MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"]
    translator = EventTranslator()
    expected = [e.type.value for ev in consumed for e in translator.feed(ev)]
    assert expected and second.types[2:-3] == expected
    assert isinstance(consumed[-1], Msg)  # the final Msg ends the stream
    assert second.last().result == "You chose to archive notes.txt. Deleted old_log.txt."
    assert not (agents[tid].sandbox / "old_log.txt").exists()
