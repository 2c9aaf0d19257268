"""The AG-UI server in a real uvicorn on loopback, driven over HTTP with httpx.

Every event stream (plain, interrupted, resumed, refused) is checked twice:
by ag-ui-validate's conformance validator on the live SSE body (framing,
Content-Type, event grammar) and by this project's own semantic checks of
the interrupt / resume rules, which the validator does not look at.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from ag_ui.core import ResumeEntry

from nb_hitl.agui import AguiServer, interrupt_id, serve_in_background
from nb_hitl.agui.client import AguiClient
from nb_hitl.agui.mapping import META_KEY
from tests.agui_support import Captured, post_run, user


def run(coro):
    return asyncio.run(coro)


def make(thread_id: str, messages, resume=None) -> Any:
    return AguiClient.make_input(thread_id, messages, resume)


# -- our own semantic checks --------------------------------------------------
def assert_conformant(cap: Captured) -> None:
    assert cap.status == 200 and cap.content_type.startswith("text/event-stream")
    assert cap.report is not None and cap.report.summary.errors == 0, cap.findings()
    assert cap.report.summary.warnings == 0, cap.findings()
    assert not cap.report.internal_errors
    assert cap.report.event_count == len(cap.events) > 1
    assert cap.types[0] == "RUN_STARTED" and cap.types[-1] in ("RUN_FINISHED", "RUN_ERROR")
    assert sum(t in ("RUN_FINISHED", "RUN_ERROR") for t in cap.types) == 1


def interrupts_of(cap: Captured) -> list[Any]:
    last = cap.last()
    assert last.type.value == "RUN_FINISHED" and last.outcome is not None and last.outcome.type == "interrupt"
    return list(last.outcome.interrupts)


def assert_interrupted(cap: Captured, thread_id: str) -> list[Any]:
    interrupts = interrupts_of(cap)
    ids = [i.id for i in interrupts]
    assert len(ids) == len(set(ids)), "interrupt ids are unique within the run"
    # the state and messages a client needs come before the interrupt outcome
    assert cap.types[-3:] == ["MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"]
    state = cap.events[-2].snapshot[META_KEY]
    assert state["status"] == "paused" and state["open_interrupts"] == ids
    snapshot_calls = {c.id for m in cap.events[-3].messages if m.role == "assistant" for c in (m.tool_calls or [])}
    for i in interrupts:
        meta = i.metadata[META_KEY]
        assert i.tool_call_id and i.tool_call_id in snapshot_calls
        assert i.id == interrupt_id(thread_id, meta["reply_id"], i.tool_call_id)
        assert i.response_schema and i.expires_at
    return interrupts


def assert_resumed_once(resume: list[ResumeEntry], interrupts: list[Any], cap: Captured) -> None:
    """Every interrupt answered exactly once by the resume, and the resumed run
    ends without an interrupt outcome, with one result per resumed tool call."""
    assert sorted(e.interrupt_id for e in resume) == sorted(i.id for i in interrupts)
    assert len({e.interrupt_id for e in resume}) == len(resume)
    last = cap.last()
    assert last.type.value == "RUN_FINISHED"
    assert last.outcome is None or last.outcome.type == "success"
    results = [e.tool_call_id for e in cap.events if e.type.value == "TOOL_CALL_RESULT"]
    assert sorted(results) == sorted(i.tool_call_id for i in interrupts)


def error_of(cap: Captured) -> Any:
    last = cap.last()
    assert last.type.value == "RUN_ERROR", cap.types
    return last


def answers(
    interrupts, *, delete: dict | None = None, pick: str = "notes.txt", status: str = "resolved"
) -> list[ResumeEntry]:
    out = []
    for i in interrupts:
        kind = i.metadata[META_KEY]["kind"]
        if status == "cancelled":
            out.append(ResumeEntry(interrupt_id=i.id, status="cancelled"))
        elif kind == "confirm":
            out.append(ResumeEntry(interrupt_id=i.id, status="resolved", payload=delete or {"approved": True}))
        else:
            out.append(
                ResumeEntry(
                    interrupt_id=i.id,
                    status="resolved",
                    payload={"answers": [{"question": "Which file should I archive?", "selected": [pick]}]},
                )
            )
    return out


def parked(server: AguiServer, thread_id: str) -> list[str]:
    run_ = server.threads[thread_id].session.current
    return sorted(p.tool_call_id for p in run_.pauses.values() if p.status == "open")


# -- the tests ----------------------------------------------------------------
def test_health_and_bad_requests(served):
    handle, *_ = served

    async def go():
        async with httpx.AsyncClient() as http:
            health = await http.get(handle.url.rstrip("/") + "/health")
            bad = await http.post(
                handle.url, json={"threadId": "x"}, headers={"Authorization": f"Bearer {handle.token}"}
            )
            return health, bad

    health, bad = run(go())
    assert health.json()["status"] == "ok"
    assert bad.status_code == 422 and "RunAgentInput" in bad.json()["error"]
    assert handle.url.startswith("http://127.0.0.1:")
    with pytest.raises(ValueError):
        serve_in_background(served[1], host="0.0.0.0")


def test_plain_run_is_conformant_and_ends_with_success(served):
    handle, server, factory, _ = served
    cap = run(post_run(handle, make("plain-1", [user("hi", "p1")])))
    assert_conformant(cap)
    assert cap.types[:2] == ["RUN_STARTED", "TEXT_MESSAGE_START"]
    text = "".join(e.delta for e in cap.events if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert text == "Hello there, nothing to do."
    last = cap.last()
    assert last.outcome.type == "success" and last.result == text
    assert cap.events[-3].messages[0].id == "p1"  # MESSAGES_SNAPSHOT keeps the client's ids


def test_interrupted_then_resumed_runs_are_conformant_and_answered_once(served):
    handle, server, factory, _ = served
    tid = "two-resume"
    first = run(post_run(handle, make(tid, [user("tidy", "u1")])))
    assert_conformant(first)
    interrupts = assert_interrupted(first, tid)
    assert sorted(i.metadata[META_KEY]["kind"] for i in interrupts) == ["ask_user", "confirm"]
    started = [e.tool_call_id for e in first.events if e.type.value == "TOOL_CALL_START"]
    assert sorted(started) == sorted(i.tool_call_id for i in interrupts)
    sandbox = factory.agents[tid].sandbox
    assert (sandbox / "old_log.txt").exists()

    resume = answers(interrupts)
    second = run(post_run(handle, make(tid, [user("tidy", "u1")], resume)))
    assert_conformant(second)
    assert_resumed_once(resume, interrupts, second)
    assert second.types[1] == "MESSAGES_SNAPSHOT"  # the resumed calls' history first
    assert second.last().result == "You chose to archive notes.txt. Deleted old_log.txt."
    assert not (sandbox / "old_log.txt").exists()
    assert parked(server, tid) == []


def test_partial_resume_is_refused_and_nothing_is_resumed(served):
    handle, server, factory, _ = served
    tid = "two-partial"
    interrupts = interrupts_of(run(post_run(handle, make(tid, [user("tidy", "u1")]))))
    before = parked(server, tid)
    model = factory.agents[tid].model
    calls_before = len(model.calls)
    confirm_only = [e for e in answers(interrupts) if e.payload.get("approved")]
    cap = run(post_run(handle, make(tid, [user("tidy", "u1")], confirm_only)))
    assert_conformant(cap)
    err = error_of(cap)
    assert err.code == "missing_interrupt"
    assert parked(server, tid) == before and len(model.calls) == calls_before
    assert (factory.agents[tid].sandbox / "old_log.txt").exists()
    # the same answers, complete, go through
    full = run(post_run(handle, make(tid, [user("tidy", "u1")], answers(interrupts))))
    assert_conformant(full)
    assert_resumed_once(answers(interrupts), interrupts, full)


def test_new_input_on_a_thread_with_open_interrupts_runs_nothing_and_repeats_the_interrupts(served):
    """AG-UI 1.0 ("Interrupts and Resume", an uncovered interrupt): the server
    keeps the interrupts open, runs nothing and ends with the interrupt
    outcome again, so a client that missed the pause learns it from the run."""
    handle, server, factory, _ = served
    tid = "two-newinput"
    interrupts = interrupts_of(run(post_run(handle, make(tid, [user("tidy", "u1")]))))
    before = parked(server, tid)
    agent = factory.agents[tid]
    calls_before, context_before = len(agent.model.calls), len(agent.state.context)
    cap = run(post_run(handle, make(tid, [user("tidy", "u1"), user("something else", "u2")])))
    assert_conformant(cap)
    assert cap.types == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "RUN_FINISHED"]
    repeated = assert_interrupted(cap, tid)
    assert [i.model_dump() for i in repeated] == [i.model_dump() for i in interrupts]  # same ids, same expiry
    note = cap.last().metadata[META_KEY]["refused_input"]
    assert note["code"] == "interrupts_pending" and note["message_ids"] == ["u2"]
    assert note["message"].startswith("Your message was not given to the agent")
    assert all(i.id in note["message"] for i in interrupts)
    # the new message is not in the history the client is given, nor in the agent's
    assert "u2" not in [m.id for m in cap.events[1].messages]
    assert len(agent.state.context) == context_before and len(agent.model.calls) == calls_before
    assert parked(server, tid) == before
    # no resume and no new message: the same outcome (a client catching up)
    again = run(post_run(handle, make(tid, [user("tidy", "u1")])))
    assert_conformant(again)
    assert [i.id for i in interrupts_of(again)] == [i.id for i in interrupts]
    assert again.last().metadata[META_KEY]["refused_input"]["message_ids"] == []
    # a resume that smuggles in a new user message is refused, nothing resumed
    mixed = run(post_run(handle, make(tid, [user("tidy", "u1"), user("and this", "u3")], answers(interrupts))))
    assert error_of(mixed).code == "input_with_resume"
    assert parked(server, tid) == before
    # the message held back is new input once the interrupts are answered
    done = run(post_run(handle, make(tid, [user("tidy", "u1")], answers(interrupts))))
    assert_resumed_once(answers(interrupts), interrupts, done)
    later = run(post_run(handle, make(tid, [user("tidy", "u1"), user("something else", "u2")])))
    assert_conformant(later)
    assert "u2" in [m.id for m in agent.state.context]


def test_wrong_interrupt_ids_are_refused(served):
    handle, server, factory, _ = served
    tid = "two-wrongid"
    interrupts = interrupts_of(run(post_run(handle, make(tid, [user("tidy", "u1")]))))
    other = interrupts_of(run(post_run(handle, make("two-other", [user("tidy", "o1")]))))
    before = parked(server, tid)
    good = answers(interrupts)
    cases = {
        "unknown_interrupt": [good[0], ResumeEntry(interrupt_id="nbh-0000", status="cancelled"), good[1]],
        "duplicate_interrupt": [good[0], good[0], good[1]],
    }
    # another thread's interrupts (bound to their thread) do not answer these
    cases["unknown_interrupt_other_thread"] = answers(other)
    for name, entries in cases.items():
        cap = run(post_run(handle, make(tid, [user("tidy", "u1")], entries)))
        assert_conformant(cap)
        assert error_of(cap).code == name.replace("_other_thread", ""), name
        assert parked(server, tid) == before, name
    # an id that is right but its payload is not: refused, nothing resumed
    bad = [good[0] if good[0].payload.get("approved") else good[1]]
    bad.append(
        ResumeEntry(
            interrupt_id=next(i.id for i in interrupts if i.metadata[META_KEY]["kind"] == "ask_user"),
            status="resolved",
            payload={"answers": [{"question": "Which file should I archive?", "selected": ["secrets.txt"]}]},
        )
    )
    cap = run(post_run(handle, make(tid, [user("tidy", "u1")], bad)))
    assert error_of(cap).code == "invalid_payload" and "secrets.txt" in error_of(cap).message
    assert parked(server, tid) == before
    assert (factory.agents[tid].sandbox / "old_log.txt").exists()


def test_replaying_the_same_resume_is_harmless(served):
    handle, server, factory, _ = served
    tid = "two-replay"
    interrupts = interrupts_of(run(post_run(handle, make(tid, [user("tidy", "u1")]))))
    resume = answers(interrupts, delete={"approved": True, "editedArgs": {"path": "draft.md"}})
    first = run(post_run(handle, make(tid, [user("tidy", "u1")], resume)))
    assert_resumed_once(resume, interrupts, first)
    agent = factory.agents[tid]
    assert (agent.sandbox / "old_log.txt").exists() and not (agent.sandbox / "draft.md").exists()
    calls, context = len(agent.model.calls), agent.state.model_dump_json()
    replay = run(post_run(handle, make(tid, [user("tidy", "u1")], resume)))
    assert_conformant(replay)
    last = replay.last()
    assert last.type.value == "RUN_FINISHED" and last.metadata == {META_KEY: {"replayed": True}}
    assert last.outcome.type == "success"
    assert "TOOL_CALL_RESULT" not in replay.types
    assert len(agent.model.calls) == calls and agent.state.model_dump_json() == context
    # the same ids with another answer are not a replay: refused
    other = answers(interrupts, delete={"approved": False})
    cap = run(post_run(handle, make(tid, [user("tidy", "u1")], other)))
    assert error_of(cap).code == "conflicting_replay"
    assert len(agent.model.calls) == calls


def test_a_resume_of_an_interrupt_answered_in_the_servers_process_says_it_was_answered_elsewhere(served):
    """An operator's ``session.act`` in the server's process denied the deletion; the client's
    resume of it is refused, and its message is the sentence a card reads for such an answer."""
    handle, server, _, _ = served
    tid = "two-answered-in-process"
    interrupts = interrupts_of(run(post_run(handle, make(tid, [user("tidy", "u1")]))))
    (confirm,) = [i for i in interrupts if i.metadata[META_KEY]["kind"] == "confirm"]
    thread = server.threads[tid]
    act = thread.session.act({"action": "deny", "tool_call_id": confirm.tool_call_id})
    asyncio.run_coroutine_threadsafe(act, thread.loop).result(10)
    cap = run(post_run(handle, make(tid, [user("tidy", "u1")], answers([confirm]))))
    assert_conformant(cap)
    err = error_of(cap)
    assert err.code == "interrupt_closed"
    assert err.message.endswith(" is no longer open. Answered elsewhere: deny."), err.message


def test_expired_interrupts_refuse_answers_but_take_cancellation(served):
    handle, server, factory, clock = served
    tid = "two-expired"
    interrupts = interrupts_of(run(post_run(handle, make(tid, [user("tidy", "u1")]))))
    before = parked(server, tid)
    clock.offset = 3600  # an hour later; interrupt_ttl is 10 minutes
    try:
        cap = run(post_run(handle, make(tid, [user("tidy", "u1")], answers(interrupts))))
        assert_conformant(cap)
        assert error_of(cap).code == "interrupt_expired"
        assert parked(server, tid) == before
        cancelled = answers(interrupts, status="cancelled")
        done = run(post_run(handle, make(tid, [user("tidy", "u1")], cancelled)))
        assert_conformant(done)
        assert_resumed_once(cancelled, interrupts, done)
        # cancelled: the deletion was denied, the question came back as an error
        assert done.last().result == "No file was chosen (error). You denied the deletion, so nothing was deleted."
        assert (factory.agents[tid].sandbox / "old_log.txt").exists()
    finally:
        clock.offset = 0
