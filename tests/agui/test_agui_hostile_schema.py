"""C27 and malformed interrupts: a hostile AG-UI server's interrupts.

A hand-written AG-UI endpoint on 127.0.0.1 raises interrupts whose
``responseSchema`` names a URL on the same server (``$ref``) or a
catastrophic-backtracking ``pattern``, or whose ``metadata.nb_hitl`` is
malformed. The client must never fetch the URL (the server counts hits),
end every check in bounded time (C32: also a recursive schema whose
recursion branches, against a deeply nested answer), and draw a card that
says what is wrong.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from ag_ui.core import (
    Interrupt,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
)
from ag_ui.encoder import EventEncoder
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from nb_hitl.agui import RemoteSession, ResumeError, serve_in_background
from nb_hitl.errors import DecisionError
from nb_hitl.guard import MAX_VALIDATION_SECONDS
from tests.support import LoopTicker, wait_until, widget_replies
from tests.unit.test_c32_recursive_schema_budget import BRANCHING, STOPPED, WHY, nested

HITS: list[str] = []
RESUMES: list[list[dict]] = []


def _interrupt(mode: str, base: str) -> Interrupt:
    if mode == "ref":
        schema = {
            "type": "object",
            "properties": {"x": {"$ref": f"{base}/leak?x=secret"}},
            "required": ["x"],
        }
        return Interrupt(id="i-ref", reason="input_required", message="Fill x", response_schema=schema)
    if mode == "redos":
        schema = {
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": "^(a+)+$"}},
            "required": ["code"],
        }
        return Interrupt(id="i-redos", reason="input_required", message="A code", response_schema=schema)
    if mode == "backref":
        schema = {"type": "object", "properties": {"w": {"type": "string", "pattern": "^(a)\\1$"}}}
        return Interrupt(id="i-backref", reason="input_required", response_schema=schema)
    if mode == "recursive":
        return Interrupt(id="i-rec", reason="input_required", message="A tree", response_schema=BRANCHING)
    if mode == "badmeta":
        meta = {"nb_hitl": {"version": 1, "kind": "confirm", "tool_name": "rm", "suggested_rules": [{"index": "x"}]}}
        return Interrupt(id="i-meta", reason="tool_call", tool_call_id="c1", metadata=meta)
    meta = {"nb_hitl": {"version": 99, "kind": "confirm"}}
    return Interrupt(id="i-version", reason="tool_call", tool_call_id="c1", metadata=meta)


async def endpoint(request: Request):
    mode = request.path_params["mode"]
    inp = RunAgentInput.model_validate(await request.json())
    base = str(request.base_url).rstrip("/")
    encoder = EventEncoder()
    start = RunStartedEvent(thread_id=inp.thread_id, run_id=inp.run_id)
    if inp.resume:
        RESUMES.append([e.model_dump(mode="json") for e in inp.resume])
        end = RunFinishedEvent(thread_id=inp.thread_id, run_id=inp.run_id, result="resumed")
    else:
        outcome = RunFinishedInterruptOutcome(interrupts=[_interrupt(mode, base)])
        end = RunFinishedEvent(thread_id=inp.thread_id, run_id=inp.run_id, outcome=outcome)

    async def stream():
        for event in (start, end):
            yield encoder.encode(event)

    return StreamingResponse(stream(), media_type="text/event-stream")


async def leak(request: Request):
    HITS.append(str(request.url))
    return JSONResponse({"type": "string"})


@pytest.fixture(scope="module")
def hostile():
    app = Starlette(
        routes=[Route("/leak", leak, methods=["GET", "POST"]), Route("/{mode}", endpoint, methods=["POST"])]
    )
    handle = serve_in_background(app, announce=False)
    yield handle.url.rstrip("/")
    handle.stop()


async def _paused(url: str) -> tuple[RemoteSession, asyncio.Task, dict]:
    remote = RemoteSession(url, display=False)
    task = remote.start("hi")
    pending = await remote.until_paused()
    assert len(pending) == 1
    return remote, task, pending[0]


def test_C27_a_remote_ref_is_never_fetched(hostile):
    HITS.clear()

    async def go():
        remote, task, card = await _paused(f"{hostile}/ref")
        with pytest.raises(DecisionError) as refused:
            await remote.act({"action": "submit", "tool_call_id": card["tool_call_id"], "value": {"x": "y"}})
        with pytest.raises(ResumeError):
            from ag_ui.core import ResumeEntry

            remote.resume([ResumeEntry(interrupt_id="i-ref", status="resolved", payload={"x": "y"})])
        answer = await remote.act({"action": "return_error", "tool_call_id": card["tool_call_id"]})
        return card, refused.value, answer, await task

    card, refused, answer, final = asyncio.run(go())
    assert card["kind"] == "form" and "not fetched" in card["form_error"] and "only be cancelled" in card["form_error"]
    assert "/leak" in card["form_error"] and "not fetched" in str(refused)
    assert answer["sent"] and final == "resumed"
    assert RESUMES[-1] == [{"interrupt_id": "i-ref", "status": "cancelled"}]
    assert HITS == []  # the URL was never fetched


def test_C27_a_catastrophic_pattern_ends_in_bounded_time(hostile):
    async def go():
        remote, task, card = await _paused(f"{hostile}/redos")
        assert "pattern" not in str(card["response_schema"])  # the page never evaluates it
        started = time.monotonic()
        with pytest.raises(DecisionError) as refused:
            await remote.act(
                {"action": "submit", "tool_call_id": card["tool_call_id"], "value": {"code": "a" * 30 + "!"}}
            )
        took = time.monotonic() - started
        sent = await remote.act({"action": "submit", "tool_call_id": card["tool_call_id"], "value": {"code": "aaaa"}})
        return refused.value, took, sent, await task

    refused, took, sent, final = asyncio.run(go())
    assert took < 0.5 and refused.field == "code" and "does not match" in str(refused)
    assert sent["sent"] and final == "resumed"
    assert RESUMES[-1][0]["payload"] == {"code": "aaaa"}


def test_C32_a_branching_recursive_schema_is_checked_in_bounded_time_and_refused_in_the_card(hostile):
    async def go():
        remote, task, card = await _paused(f"{hostile}/recursive")
        widget = remote.current.widget
        sent = widget_replies(widget)
        deep = {"action": "submit", "tool_call_id": card["tool_call_id"], "value": nested(30)}
        async with LoopTicker() as ticker:
            widget._on_page_message(widget, {"request_id": "deep", **deep}, [])
            await wait_until(lambda: sent, "the answer to Submit", timeout=30)
        refused, resumes = sent[0], len(RESUMES)
        shallow = {**deep, "value": nested(2, leaf={"k": {}})}
        widget._on_page_message(widget, {"request_id": "ok", **shallow}, [])
        return card, refused, resumes, ticker, await asyncio.wait_for(task, 10)

    resumes_before = len(RESUMES)
    card, refused, resumes, ticker, final = asyncio.run(go())
    assert card["kind"] == "form" and card["form_error"] is None
    assert refused["ok"] is False and STOPPED in refused["error"] and WHY in refused["error"]
    assert resumes == resumes_before  # nothing was sent with the unchecked answer
    assert ticker.ticks > 0 and ticker.largest_gap < MAX_VALIDATION_SECONDS + 5.0, ticker.largest_gap
    assert final == "resumed" and RESUMES[-1][0]["payload"] == nested(2, leaf={"k": {}})


def test_C27_a_pattern_re2_cannot_compile_is_refused_clearly(hostile):
    async def go():
        remote, task, card = await _paused(f"{hostile}/backref")
        await remote.act({"action": "cancel", "tool_call_id": card["tool_call_id"]})
        return card, await task

    card, final = asyncio.run(go())
    assert (
        "RE2" in card["form_error"]
        and "uses a backreference, which RE2 does not have" in card["form_error"]
        and final == "resumed"
    )


@pytest.mark.parametrize(
    "mode, needle", [("badmeta", "carries no response schema"), ("version", "version is '99', not 1")]
)
def test_malformed_interrupt_metadata_gives_a_card_that_says_why_and_offers_cancel(hostile, mode, needle):
    async def go():
        remote, task, card = await _paused(f"{hostile}/{mode}")
        with pytest.raises(DecisionError):
            await remote.act({"action": "approve", "tool_call_id": card["tool_call_id"]})
        answer = await remote.act({"action": "return_error", "tool_call_id": card["tool_call_id"]})
        return card, answer, await task, remote

    card, answer, final, remote = asyncio.run(go())
    assert card["kind"] == "form" and needle in card["form_error"] and "only be cancelled" in card["form_error"]
    assert answer["sent"] and final == "resumed" and RESUMES[-1][0]["status"] == "cancelled"
    assert remote.current.widget.pauses[0]["form_error"] == card["form_error"]
