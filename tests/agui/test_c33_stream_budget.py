"""C33: a peer's stream that never ends, or one event that never stops growing.

A hand-written AG-UI endpoint (Starlette, served by uvicorn on 127.0.0.1)
streams a run that never finishes (a text delta every few milliseconds,
bounded by the test) or one huge event. The notebook's client
(:class:`~nb_hitl.agui.RemoteSession`, with a small
:class:`~nb_hitl.guard.StreamBudget`) must stop at the stated cap, close the
HTTP stream (the server sees it go), end the turn with the cap, its value
and what to do in the view's reason, and keep the event loop running
meanwhile: a second coroutine keeps ticking while the run is read.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from ag_ui.core import RunAgentInput, RunStartedEvent, TextMessageContentEvent, TextMessageStartEvent
from ag_ui.encoder import EventEncoder
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from nb_hitl.agui import RemoteRunError, RemoteSession, serve_in_background
from nb_hitl.guard import StreamBudget

ENDLESS_DELTAS = 30_000
"""The endless run's bound: 30,000 deltas, 2 ms apart (a minute), far past every cap below."""

HUGE_MB = 64
"""The huge event's size, sent 1 MB at a time."""

SERVED: dict[str, dict[str, Any]] = {}
"""What the server streamed per run id: ``pieces`` sent and whether the stream was ``closed`` early."""


async def _endless(inp: RunAgentInput, mode: str):
    encoder = EventEncoder()
    seen = SERVED.setdefault(inp.run_id, {"pieces": 0, "closed": False})
    try:
        yield encoder.encode(RunStartedEvent(thread_id=inp.thread_id, run_id=inp.run_id))
        if mode == "endless":
            yield encoder.encode(TextMessageStartEvent(message_id="m1", role="assistant"))
            for _ in range(ENDLESS_DELTAS):
                yield encoder.encode(TextMessageContentEvent(message_id="m1", delta="tick "))
                seen["pieces"] += 1
                await asyncio.sleep(0.002)
        else:  # one huge event
            yield 'data: {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "'
            for _ in range(HUGE_MB):
                yield "x" * (1024 * 1024)
                seen["pieces"] += 1
                await asyncio.sleep(0)
            yield '"}\n\n'
    finally:
        seen["closed"] = seen["pieces"] < (ENDLESS_DELTAS if mode == "endless" else HUGE_MB)


async def endpoint(request: Request) -> StreamingResponse:
    inp = RunAgentInput.model_validate(await request.json())
    return StreamingResponse(_endless(inp, request.path_params["mode"]), media_type="text/event-stream")


@pytest.fixture(scope="module")
def peer() -> Any:
    handle = serve_in_background(Starlette(routes=[Route("/{mode}", endpoint, methods=["POST"])]), announce=False)
    yield handle.url.rstrip("/")
    handle.stop()


async def _read_with_ticker(remote: RemoteSession) -> tuple[RemoteRunError, list[int]]:
    """Run one turn while another coroutine ticks; each tick records how many
    events the turn's run had received by then."""
    seen: list[int] = []

    async def ticker() -> None:
        while True:
            turn = remote.current
            seen.append(len(turn.runs[-1].events) if turn and turn.runs else 0)
            await asyncio.sleep(0.001)

    ticking = asyncio.create_task(ticker())
    try:
        with pytest.raises(RemoteRunError) as err:
            await remote.run("go")
    finally:
        ticking.cancel()
    return err.value, seen


async def _closed(run_id: str) -> dict[str, Any]:
    """The server's record of the run once it saw the stream closed (it notices on its next write)."""
    for _ in range(1000):
        if SERVED.get(run_id, {}).get("closed"):
            break
        await asyncio.sleep(0.01)
    return SERVED[run_id]


@pytest.mark.parametrize(
    "budget, needle",
    [
        (StreamBudget(max_events=300), "it sent more than 300 events (the client's max_events cap)"),
        (StreamBudget(max_bytes=40_000), "it sent more than 40,000 bytes (the client's max_bytes cap)"),
        (StreamBudget(max_seconds=0.4), "it did not end within 0.4 s (the client's max_seconds cap)"),
    ],
    ids=["max_events", "max_bytes", "max_seconds"],
)
def test_c33_a_run_that_never_ends_stops_at_the_stated_cap(peer: str, budget: StreamBudget, needle: str) -> None:
    async def go() -> tuple[RemoteSession, RemoteRunError, list[int], dict[str, Any]]:
        remote = RemoteSession(f"{peer}/endless", display=False, budget=budget)
        err, ticks = await _read_with_ticker(remote)
        return remote, err, ticks, await _closed(remote.current.runs[-1].run_id)

    remote, err, ticks, served = asyncio.run(go())
    turn, run = remote.current, remote.current.runs[-1]
    # stopped at the cap, and said so where the person looks
    assert err.code == "stream_limit" and needle in str(err)
    assert turn.status == "error" and needle in turn.reason and run.error_code == "stream_limit"
    assert turn.widget.status == "error" and needle in turn.widget.status_reason
    assert "StreamBudget" in turn.widget.status_reason and "may still be working" in turn.widget.status_reason
    if budget.max_events < StreamBudget().max_events:
        assert len(run.events) == budget.max_events  # the event past the cap was never read
    # the HTTP stream was closed: the server stopped long before its bound
    assert served["closed"] and served["pieces"] < ENDLESS_DELTAS
    # what was read is shown, joined once: every delta received, in order
    deltas = [e.delta for e in run.events if e.type.value == "TEXT_MESSAGE_CONTENT"]
    assert deltas and [e["text"] for e in turn.transcript] == ["".join(deltas)]
    # the loop kept running while the run was read: the ticker saw it grow
    assert len({n for n in ticks if 0 < n < len(run.events)}) >= 3


def test_c33_one_huge_event_stops_at_max_event_bytes(peer: str) -> None:
    budget = StreamBudget(max_event_bytes=1024 * 1024)

    async def go() -> tuple[RemoteSession, RemoteRunError, list[int], dict[str, Any]]:
        remote = RemoteSession(f"{peer}/huge", display=False, budget=budget)
        err, ticks = await _read_with_ticker(remote)
        return remote, err, ticks, await _closed(remote.current.runs[-1].run_id)

    remote, err, ticks, served = asyncio.run(go())
    turn = remote.current
    needle = "the server sent an event larger than 1,048,576 bytes (the client's max_event_bytes cap)"
    assert err.code == "stream_limit" and needle in str(err)
    assert turn.status == "error" and turn.widget.status == "error" and needle in turn.widget.status_reason
    assert [e.type.value for e in turn.runs[-1].events] == ["RUN_STARTED"]  # the huge one was never parsed
    assert served["closed"] and served["pieces"] < HUGE_MB
    assert len(ticks) >= 3  # the loop ran while the event arrived


def test_c33_a_budget_is_given_once() -> None:
    from nb_hitl.agui import AguiClient

    with pytest.raises(ValueError, match="not to both"):
        RemoteSession("http://127.0.0.1:9", client=AguiClient("http://127.0.0.1:9"), budget=StreamBudget())
    with pytest.raises(ValueError, match="max_events must be positive"):
        StreamBudget(max_events=0)
