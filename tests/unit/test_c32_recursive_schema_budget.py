"""C32, the recursive edge: a model-written form schema whose recursion branches.

``node = anyOf[{k: node}, {k: node}]`` passes :func:`nb_hitl.guard.check_schema`
(it is small, it reads deeper into the answer at each reference), yet
``jsonschema`` tries both branches at every level of a failing answer: the
work doubles per level (16 levels: seconds; 30: hours). A real agent (the
scripted model) calls ``AskForm`` with it; the person's Submit goes through
the real ReplyWidget's page channel. Checked: the kernel's loop keeps
running (a ticker on it), the refusal reaches the card with why, nothing is
resumed with the unchecked answer, and a shallow answer is still accepted.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from nb_hitl import DecisionError, Session
from nb_hitl.guard import MAX_VALIDATION_SECONDS, check_schema, validation_errors
from tests.support import LoopTicker, run_async, wait_until, widget_replies
from tests.unit.test_c32_form_schema_guard import form_agent

BRANCHING = {
    "type": "object",
    "properties": {"root": {"$ref": "#/$defs/node"}},
    "required": ["root"],
    "$defs": {
        "node": {
            "anyOf": [
                {"type": "object", "properties": {"k": {"$ref": "#/$defs/node"}}, "required": ["k"]},
                {"type": "object", "properties": {"k": {"$ref": "#/$defs/node"}}, "title": "again"},
            ]
        }
    },
}
"""A recursive schema reaching its node through two branches at one place."""

STOPPED = "checking it against its schema was stopped after"
WHY = "a recursive reference reached through two branches at one place doubles the work"


def nested(levels: int, leaf: Any = 5) -> dict[str, Any]:
    """``{"root": {"k": {"k": ... leaf}}}`` with ``levels`` objects under root;
    a leaf that is not an object fails both branches at the bottom."""
    value: Any = leaf
    for _ in range(levels):
        value = {"k": value}
    return {"root": value}


def test_c32_the_budget_refuses_a_branching_recursion_whatever_the_depth() -> None:
    """The guard alone: bounded time at any depth, the shallow answer checked as usual."""
    check_schema(BRANCHING)  # accepted: the schema is not the problem, the answer's depth is
    assert validation_errors(BRANCHING, nested(3, leaf={"k": {}})) == []
    assert validation_errors(BRANCHING, nested(3))  # wrong, and said so
    for levels in (16, 30, 60):
        with pytest.raises(DecisionError, match=STOPPED) as refused:
            validation_errors(BRANCHING, nested(levels))
        assert WHY in str(refused.value) and refused.value.field == "value"
    with pytest.raises(DecisionError, match="after 50 keyword checks \\(at most 50\\)"):
        validation_errors(BRANCHING, nested(8), max_steps=50)


@pytest.mark.parametrize("levels", [16, 30])
def test_c32_a_branching_recursive_form_is_refused_in_the_card_and_the_loop_keeps_running(levels: int) -> None:
    agent = form_agent(BRANCHING)

    async def scenario() -> tuple[dict[str, Any], float, int, str]:
        session = Session(agent, display=True)
        task = session.start("go")
        pause = await wait_until(lambda: session.pending and session.pending[0], "the form")
        widget = session.current.widget
        assert widget.pauses[0]["form_error"] is None  # the form is drawn: its schema is fine
        sent = widget_replies(widget)
        submit = {"action": "submit", "tool_call_id": pause.tool_call_id, "value": nested(levels)}
        async with LoopTicker() as ticker:
            widget._on_page_message(widget, {"request_id": "deep", **submit}, [])
            await wait_until(lambda: sent, "the answer to Submit", timeout=30)
        assert pause.status == "open" and len(agent.model.calls) == 1  # nothing resumed
        refused = sent[0]
        shallow = {**submit, "value": nested(2, leaf={"k": {}})}
        widget._on_page_message(widget, {"request_id": "ok", **shallow}, [])
        final = await asyncio.wait_for(task, 10)
        return refused, ticker.largest_gap, ticker.ticks, final.get_text_content()

    refused, gap, ticks, final = run_async(scenario())
    assert refused["ok"] is False and refused["field"] == "value"
    assert STOPPED in refused["error"] and WHY in refused["error"]
    # unbudgeted, 16 levels held the loop for seconds and 30 for hours
    # stopped by the budget (a sanity bound, not a timing target: benchmarks hold those; a loaded machine
    # stretches the gap, and unbudgeted the check ran for seconds at 16 levels and hours at 30)
    assert ticks > 0 and gap < MAX_VALIDATION_SECONDS + 5.0, f"the loop stalled {gap:.2f} s"
    assert final.startswith("[success]") and '"k": {}' in final  # the shallow answer, checked and sent
