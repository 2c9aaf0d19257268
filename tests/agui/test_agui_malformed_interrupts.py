"""C35: interrupts whose ``metadata.nb_hitl`` is malformed, from a real peer.

A small AG-UI server (Starlette + ``ag_ui.core`` events + ``EventEncoder``,
uvicorn on 127.0.0.1) pauses on interrupts that claim to be nb_hitl's but
are not drawable as such: an unknown kind, AskUser options of the wrong type
or missing, a form without its schema, metadata that is not an object,
fields of the wrong type. Each one becomes a card (view data the page can
draw) that says what is wrong and offers only to cancel it; cancelling them
all sends one resume of ``cancelled`` entries and the run goes on.
"""

from __future__ import annotations

import asyncio
from typing import Any

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
from starlette.responses import StreamingResponse
from starlette.routing import Route

from nb_hitl.agui import RemoteSession, serve_in_background
from nb_hitl.agui.cards import view_problem
from nb_hitl.agui.mapping import META_KEY, META_VERSION
from nb_hitl.errors import DecisionError


def _meta(kind: str, **fields: Any) -> dict[str, Any]:
    return {META_KEY: {"version": META_VERSION, "kind": kind, "tool_name": "tool", "input_text": "{}", **fields}}


CONFIRM = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
QUESTION = {"question": "Which file?", "header": "File"}

# interrupt id -> (metadata, response_schema, what the card must say)
MALFORMED: dict[str, tuple[Any, Any, str]] = {
    "unknown-kind": (_meta("teleport"), CONFIRM, "kind 'teleport' is not one of"),
    "options-wrong-type": (
        _meta("ask_user", ask_user={"questions": [{**QUESTION, "options": "notes.txt, draft.md"}]}),
        {"type": "object"},
        "options",
    ),
    "options-missing": (_meta("ask_user", ask_user={"questions": [QUESTION]}), {"type": "object"}, "options"),
    "questions-wrong-type": (_meta("ask_user", ask_user={"questions": "Which file?"}), {"type": "object"}, "ask_user"),
    "form-without-schema": (_meta("form", title="Refund"), None, "no response schema"),
    "confirm-without-schema": (_meta("confirm"), None, "no response schema"),
    "metadata-not-object": ({META_KEY: ["confirm"]}, CONFIRM, "is not an object"),
    "rules-wrong-type": (
        _meta("confirm", suggested_rules=[{"index": "first", "label": 3}]),
        CONFIRM,
        "suggested_rules",
    ),
    "text-wrong-type": (_meta("confirm", permission_message={"html": "<b>x</b>"}), CONFIRM, "permission_message"),
    "schema-wrong-type": (_meta("confirm", input_schema="an object"), CONFIRM, "input_schema"),
    "review-output-wrong-type": (
        _meta("review", review_output=["a", "b"]),
        {"type": "object", "properties": {"action": {"enum": ["accept"]}}},
        "review_output",
    ),
    "tool-name-wrong-type": (_meta("confirm", tool_name=["rm"]), CONFIRM, "tool_name"),
    "approvals-needed-negative": (
        _meta("confirm", approvals_needed=-5),
        CONFIRM,
        "approvals_needed is -5, not a positive integer",
    ),
}

received: list[RunAgentInput] = []


async def endpoint(request: Request) -> StreamingResponse:
    inp = RunAgentInput.model_validate(await request.json())
    received.append(inp)
    encoder = EventEncoder()

    async def stream():
        yield encoder.encode(RunStartedEvent(thread_id=inp.thread_id, run_id=inp.run_id))
        if inp.resume:
            yield encoder.encode(RunFinishedEvent(thread_id=inp.thread_id, run_id=inp.run_id, result="cancelled all"))
            return
        interrupts = [
            Interrupt(
                id=iid, reason="input_required", tool_call_id=f"call-{iid}", response_schema=schema, metadata=meta
            )
            for iid, (meta, schema, _) in MALFORMED.items()
        ]
        outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
        yield encoder.encode(RunFinishedEvent(thread_id=inp.thread_id, run_id=inp.run_id, outcome=outcome))

    return StreamingResponse(stream(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def peer():
    handle = serve_in_background(Starlette(routes=[Route("/", endpoint, methods=["POST"])]), announce=False)
    yield handle.url
    handle.stop()


def test_c35_every_malformed_interrupt_is_a_card_that_says_why_and_can_be_cancelled(peer):
    received.clear()

    async def go() -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]], str]:
        remote = RemoteSession(peer, thread_id="c35", display=False)
        task = remote.start("go")
        pending = await remote.until_paused()
        shown = [dict(p) for p in remote.current.widget.pauses]
        # an answer is refused at the card; cancelling is offered
        with pytest.raises(DecisionError, match="can only be cancelled"):
            await remote.act({"action": "approve", "tool_call_id": pending[0]["tool_call_id"]})
        for view in pending:
            await remote.act({"action": "return_error", "tool_call_id": view["tool_call_id"]})
        return remote, pending, shown, await task

    remote, pending, shown, final = asyncio.run(go())
    assert len(pending) == len(shown) == len(MALFORMED)  # never "waiting for you" over zero cards
    by_id = {v["interrupt_id"]: v for v in pending}
    for iid, (_, _, why) in MALFORMED.items():
        view = by_id[iid]
        assert view["kind"] == "form" and view["unanswerable"] is True, iid
        assert why in view["form_error"] and "can only be cancelled" in view["form_error"], (iid, view["form_error"])
        assert view_problem(view) is None, iid  # the card itself is drawable
    assert {v["interrupt_id"]: view_problem(v) for v in shown} == dict.fromkeys(MALFORMED)
    resume = received[-1].resume
    assert [(e.interrupt_id, e.status, e.payload) for e in resume] == [(i, "cancelled", None) for i in MALFORMED]
    assert final == "cancelled all" and remote.current.status == "finished"
