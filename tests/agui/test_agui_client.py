"""The AG-UI client does not trust its peer.

A small hand-written AG-UI endpoint (Starlette, served by uvicorn on
loopback) plays back event sequences that break the protocol: a run that
does not open with RUN_STARTED for its thread, a body that is not an event
stream, an HTTP error. The client must refuse each one instead of acting on
it. An outcome that repeats an interrupt id is shown: one card for that id,
which says so and can only be cancelled, beside the outcome's other cards.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from ag_ui.core import (
    Interrupt,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallChunkEvent,
)
from ag_ui.encoder import EventEncoder
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, StreamingResponse
from starlette.routing import Route

from nb_hitl.agui import AguiClient, AguiClientError, RemoteRunError, RemoteSession, serve_in_background
from nb_hitl.guard import StreamBudget, StreamLimitReached
from tests.support import wait_until, widget_replies

SCHEMA = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
RESUMES: list[list[dict]] = []


def _events(mode: str, inp: RunAgentInput) -> list:
    start = RunStartedEvent(thread_id=inp.thread_id, run_id=inp.run_id)
    text = [
        TextMessageStartEvent(message_id="m1", role="assistant"),
        TextMessageContentEvent(message_id="m1", delta="Working."),
        TextMessageEndEvent(message_id="m1"),
    ]
    twice = Interrupt(id="same", reason="confirmation", message="Delete it?", response_schema=SCHEMA)
    if mode == "duplicate-ids" and inp.resume:
        RESUMES.append([e.model_dump(mode="json", exclude_none=True) for e in inp.resume])
        return [start, RunFinishedEvent(thread_id=inp.thread_id, run_id=inp.run_id, result="resumed")]
    if mode == "duplicate-ids":
        other = Interrupt(id="other", reason="confirmation", message="Archive it?", response_schema=SCHEMA)
        interrupts = [twice, other, twice.model_copy(update={"message": "Keep it?"})]
        outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
        return [start, *text, RunFinishedEvent(thread_id=inp.thread_id, run_id=inp.run_id, outcome=outcome)]
    if mode == "other-thread":
        return [
            RunStartedEvent(thread_id="someone-else", run_id=inp.run_id),
            *text,
            RunFinishedEvent(thread_id="someone-else", run_id=inp.run_id),
        ]
    if mode == "no-terminal":
        return [start, *text]
    if mode == "chunks":
        return [
            start,
            ToolCallChunkEvent(tool_call_id="c1", tool_call_name="lookup", delta='{"who": '),
            ToolCallChunkEvent(delta='"Ana"}'),
            TextMessageChunkEvent(message_id="m2", role="assistant", delta="Found "),
            TextMessageChunkEvent(message_id="m2", delta="her."),
            RunFinishedEvent(thread_id=inp.thread_id, run_id=inp.run_id),
        ]
    return [start, *text, RunFinishedEvent(thread_id=inp.thread_id, run_id=inp.run_id, result="done")]


async def endpoint(request: Request):
    mode = request.path_params["mode"]
    if mode == "http-error":
        return JSONResponse({"error": "nope"}, status_code=500)
    if mode == "not-sse":
        return PlainTextResponse("hello")
    inp = RunAgentInput.model_validate(await request.json())
    encoder = EventEncoder()
    if mode in ("forever", "huge"):
        return StreamingResponse(_endless(mode, inp, encoder), media_type="text/event-stream")

    async def stream():
        for event in _events(mode, inp):
            yield encoder.encode(event)
        if mode == "garbage":
            yield 'data: {"type": "NOT_AN_EVENT"}\n\n'

    return StreamingResponse(stream(), media_type="text/event-stream")


async def _endless(mode: str, inp: RunAgentInput, encoder: EventEncoder):
    yield encoder.encode(RunStartedEvent(thread_id=inp.thread_id, run_id=inp.run_id))
    if mode == "forever":  # keep-alive comments only, for up to 60 s
        for _ in range(1200):
            yield ": ping\n\n"
            await asyncio.sleep(0.05)
    else:  # one 64 MB event, 1 MB at a time
        yield 'data: {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "'
        for _ in range(64):
            yield "x" * (1024 * 1024)
            await asyncio.sleep(0)
        yield '"}\n\n'


@pytest.fixture(scope="module")
def hostile():
    handle = serve_in_background(Starlette(routes=[Route("/{mode}", endpoint, methods=["POST"])]))
    yield handle.url.rstrip("/")
    handle.stop()


def test_a_well_formed_run_is_read(hostile):
    async def go():
        remote = RemoteSession(f"{hostile}/ok", display=False)
        return await remote.run("hi"), remote

    final, remote = asyncio.run(go())
    assert final == "done" and remote.current.status == "finished"
    assert [e["text"] for e in remote.current.transcript] == ["Working."]


@pytest.mark.parametrize(
    "mode, needle",
    [
        ("other-thread", "did not open with RUN_STARTED for thread"),
        ("no-terminal", "ended without RUN_FINISHED or RUN_ERROR"),
        ("garbage", "not an AG-UI event"),
        ("http-error", "HTTP 500"),
        ("not-sse", "text/event-stream"),
    ],
)
def test_a_broken_peer_is_refused(hostile, mode, needle):
    async def go():
        remote = RemoteSession(f"{hostile}/{mode}", thread_id="t-hostile", display=False)
        with pytest.raises(RemoteRunError) as err:
            await remote.run("hi")
        return remote, err.value

    remote, err = asyncio.run(go())
    assert needle in str(err)
    turn = remote.current
    assert turn.status == "error" and needle in turn.reason
    assert remote.pending == [] and turn.interrupts == {}  # nothing to answer, nothing sent
    assert turn.widget.status == "error"


def test_an_outcome_that_repeats_an_interrupt_id_gets_a_card_that_says_so_and_offers_to_cancel(hostile):
    """The peer gives id ``same`` to two interrupts (and ``other`` to a third):
    the run pauses, ``same`` has one card saying what happened that refuses an
    answer and can be cancelled through the widget's page channel, ``other`` is
    answered as usual, and one resume goes with an entry per id."""
    RESUMES.clear()

    async def go():
        remote = RemoteSession(f"{hostile}/duplicate-ids", thread_id="t-dup", display=False)
        task = remote.start("hi")
        pending = await remote.until_paused()
        widget = remote.current.widget
        shown, status = [dict(p) for p in widget.pauses], (widget.status, widget.pending)
        sent = widget_replies(widget)
        same = next(p for p in pending if p["interrupt_id"] == "same")
        approve = {"action": "submit", "tool_call_id": same["tool_call_id"], "value": {"approved": True}}
        widget._on_page_message(widget, {"request_id": "a", **approve}, [])
        await wait_until(lambda: sent, "the answer to Submit")
        cancel = {"action": "return_error", "tool_call_id": same["tool_call_id"]}
        widget._on_page_message(widget, {"request_id": "c", **cancel}, [])
        await wait_until(lambda: len(sent) == 2, "the answer to Cancel")
        other = next(p for p in pending if p["interrupt_id"] == "other")
        await remote.act({"action": "submit", "tool_call_id": other["tool_call_id"], "value": {"approved": False}})
        return shown, sent, status, await asyncio.wait_for(task, 10)

    shown, sent, status, final = asyncio.run(go())
    assert [p["interrupt_id"] for p in shown] == ["same", "other"] and status == ("paused", 2)
    card = shown[0]
    assert card["kind"] == "form" and card["unanswerable"] is True and card["status"] == "open"
    assert card["form_error"] == (
        "interrupt same cannot be answered: the server's outcome gives its id to 2 interrupts, so no answer "
        "could say which of them it is for (the server repeated an interrupt id). It can only be cancelled."
    )
    assert shown[1]["form_error"] is None and shown[1]["response_schema"] == SCHEMA
    assert sent[0]["ok"] is False and sent[0]["error"] == card["form_error"]  # an answer is refused, with why
    assert sent[1]["ok"] is True  # cancelling is offered and taken
    assert final == "resumed"
    assert RESUMES == [
        [
            {"interrupt_id": "same", "status": "cancelled"},
            {"interrupt_id": "other", "status": "resolved", "payload": {"approved": False}},
        ]
    ]


def test_the_raw_client_raises_on_transport_faults(hostile):
    async def go(mode):
        return [e async for e in AguiClient(f"{hostile}/{mode}").run("t", [])]

    with pytest.raises(AguiClientError) as http:
        asyncio.run(go("http-error"))
    assert http.value.status == 500 and json.loads(str(http.value).split(": ", 1)[1]) == {"error": "nope"}
    with pytest.raises(AguiClientError):
        asyncio.run(go("not-sse"))
    events = asyncio.run(go("ok"))
    assert [e.type.value for e in events] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]


def test_chunk_events_are_assembled(hostile):
    async def go():
        remote = RemoteSession(f"{hostile}/chunks", display=False)
        return await remote.run("hi"), remote

    final, remote = asyncio.run(go())
    entries = {e["id"]: e for e in remote.current.transcript}
    assert json.loads(entries["call:c1"]["text"]) == {"who": "Ana"} and entries["call:c1"]["name"] == "lookup"
    assert entries["m2"]["text"] == "Found her." and final == "Found her."


def test_an_endless_stream_of_keepalives_ends_at_the_deadline(hostile):
    async def go():
        client = AguiClient(f"{hostile}/forever", read_timeout=0.8, budget=StreamBudget(max_seconds=30))
        remote = RemoteSession(f"{hostile}/forever", client=client, display=False)
        started = time.monotonic()
        with pytest.raises(RemoteRunError):
            await remote.run("hi")
        idle = time.monotonic() - started
        client2 = AguiClient(f"{hostile}/forever", read_timeout=30, budget=StreamBudget(max_seconds=1.0))
        started = time.monotonic()
        with pytest.raises(StreamLimitReached) as err:
            _ = [e async for e in client2.run("t", [])]
        return remote, idle, time.monotonic() - started, err.value

    remote, idle, total, err = asyncio.run(go())
    assert idle < 5 and total < 5  # well before the server's 60 s
    assert "did not end within 1 s (the client's max_seconds cap)" in str(err) and err.cap == "max_seconds"
    turn = remote.current
    assert turn.status == "error" and "No event for 0.8 s" in turn.reason
    assert turn.widget.status == "error" and "No event for 0.8 s" in turn.widget.status_reason


def test_a_64mb_event_is_refused(hostile):
    async def go():
        remote = RemoteSession(f"{hostile}/huge", display=False)
        started = time.monotonic()
        with pytest.raises(RemoteRunError):
            await remote.run("hi")
        return remote, time.monotonic() - started

    remote, took = asyncio.run(go())
    turn = remote.current
    assert "larger than 8,388,608 bytes (the client's max_event_bytes cap)" in turn.reason
    assert turn.widget.status == "error" and turn.runs[-1].error_code == "stream_limit"
    assert took < 20
