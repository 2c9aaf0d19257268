"""Structured questions (nb_hitl.kinds.form: the ``AskForm`` external tool), in-process.

Real AgentScope ``Agent`` s call ``AskForm`` with a JSON Schema; the Session
turns the parked call into a ``form`` pause; answers go through
``Session.act`` (the same path as the widget's Submit). Checked: the pause
view the renderer draws from, validation with ``jsonschema`` (field paths,
``format: date``), what the model reads, the metadata AgentScope keeps, and
invalid schemas.
"""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jsonschema
import pytest
from agentscope.agent import Agent
from agentscope.message import ToolResultBlock, ToolResultState
from agentscope.tool import Toolkit

from nb_hitl import DecisionError, Session
from nb_hitl.kinds.form import FORM_INPUT_SCHEMA, FormTool, check_form_value, form_output, schema_problem
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from tests.support import record_events, run_async, wait_until, widget_replies

REFUND = {
    "type": "object",
    "properties": {
        "amount": {"type": "number", "title": "Amount (EUR)", "minimum": 0, "maximum": 500},
        "date": {"type": "string", "format": "date", "title": "Purchase date"},
        "reason": {"type": "string", "enum": ["damaged", "late", "wrong item"], "title": "Reason"},
        "note": {"type": "string", "title": "Note"},
    },
    "required": ["amount", "date", "reason"],
}
GOOD = {"amount": 42.5, "date": "2025-03-01", "reason": "damaged", "note": "box was crushed"}


def form_agent(schema: Any, events: list[Any] | None = None) -> Agent:
    def answer(msgs: list[Any]) -> Turn:
        r = tool_results(msgs, "AskForm")[-1]
        value = (r.metadata or {}).get("value")
        return Turn(f"[{r.state}] value={json.dumps(value, sort_keys=True)} text={result_text(r)}")

    agent = Agent(
        name="refunds",
        system_prompt="Handle refunds.",
        model=ScriptedChatModel(
            [
                Turn(
                    "I need details.",
                    [tool_call("AskForm", title="Refund details", message="For the refund request.", schema=schema)],
                ),
                answer,
            ],
            on_exhausted="raise",
        ),
        toolkit=Toolkit(tools=[FormTool()]),
    )
    if events is not None:
        record_events(agent, events)
    return agent


# -- the schema and the value ---------------------------------------------------
@pytest.mark.parametrize(
    "schema, problem",
    [
        (REFUND, None),
        ("not a dict", "The schema is not a JSON object."),
        (
            {"type": "nonsense", "properties": {"a": {}}},
            "The schema cannot be used: it is not a valid JSON Schema at $.type",
        ),
        (
            {"type": "object", "properties": {"a": {"minimum": "zero"}}},
            "The schema cannot be used: it is not a valid JSON Schema at $.properties.a.minimum",
        ),
        ({"type": "array", "items": {}}, 'A form schema must have "type": "object".'),
        ({"type": "object"}, 'A form schema needs "properties"'),
    ],
)
def test_schema_problem(schema: Any, problem: str | None) -> None:
    got = schema_problem(schema)
    if problem is None:
        assert got is None
    else:
        assert got is not None and got.startswith(problem), got


@pytest.mark.parametrize(
    "value, field, text",
    [
        ({**GOOD, "amount": 900}, "value.amount", "Amount (EUR): 900 is greater than the maximum of 500"),
        ({**GOOD, "amount": "ten"}, "value.amount", "Amount (EUR): 'ten' is not of type 'number'"),
        ({**GOOD, "date": "2025-02-30"}, "value.date", "Purchase date: '2025-02-30' is not a 'date'"),
        ({**GOOD, "date": "1 March"}, "value.date", "Purchase date: '1 March' is not a 'date'"),
        (
            {**GOOD, "reason": "bored"},
            "value.reason",
            "Reason: 'bored' is not one of ['damaged', 'late', 'wrong item']",
        ),
        ({"amount": 1, "date": "2025-03-01"}, "value.reason", "Reason: this field is required."),
        ([1, 2], "value", "The answer: [1, 2] is not of type 'object'"),
    ],
)
def test_values_are_checked_with_jsonschema(value: Any, field: str, text: str) -> None:
    with pytest.raises(DecisionError) as err:
        check_form_value(REFUND, value)
    assert err.value.field == field
    assert str(err.value) == text
    check_form_value(REFUND, GOOD)  # fits


def test_the_tool_is_an_always_allowed_external_tool() -> None:
    tool = FormTool()
    assert tool.name == "AskForm" and tool.is_external_tool and tool.is_read_only
    assert tool.input_schema == FORM_INPUT_SCHEMA
    jsonschema.Draft202012Validator.check_schema(tool.input_schema)
    # AgentScope's own check of an external result: metadata must carry the value
    ok = ToolResultBlock(id="c", name="AskForm", output="x", state=ToolResultState.SUCCESS, metadata={"value": GOOD})
    bad = ToolResultBlock(id="c", name="AskForm", output="x", state=ToolResultState.SUCCESS, metadata={})
    run_async(tool.check_external_result(ok))
    with pytest.raises(jsonschema.ValidationError):
        run_async(tool.check_external_result(bad))
    assert FormTool(name="Ask").name == "Ask"


# -- the whole round trip --------------------------------------------------------
def test_invalid_answer_refused_then_valid_answer_reaches_the_agent() -> None:
    events: list[Any] = []
    agent = form_agent(REFUND, events)

    async def scenario() -> Any:
        session = Session(agent, display=False)
        task = session.start("I want a refund")
        pause = await wait_until(lambda: session.pending and session.pending[0], "the form")
        assert pause.kind == "form"
        view = pause.to_view()
        assert (view["title"], view["message"], view["response_schema"], view["form_error"]) == (
            "Refund details",
            "For the refund request.",
            REFUND,
            None,
        )
        # an invalid value: refused with its field, the pause stays open, nothing reaches the agent
        with pytest.raises(DecisionError) as err:
            session.act(
                {"action": "submit", "tool_call_id": pause.tool_call_id, "value": {**GOOD, "date": "2025-13-01"}}
            )
        assert err.value.field == "value.date"
        assert pause.status == "open" and len(agent.model.calls) == 1
        # actions of other kinds do not fit a form (C06)
        for action, extra in (
            ("answer", {"answers": []}),
            ("external_result", {"output": "x"}),
            ("accept", {}),
            ("approve", {}),
        ):
            with pytest.raises(DecisionError) as wrong:
                session.act({"action": action, "tool_call_id": pause.tool_call_id, **extra})
            assert wrong.value.field == "action"
        out = await session.act({"action": "submit", "tool_call_id": pause.tool_call_id, "value": GOOD})
        assert out["decision"]["action"] == "submit"
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario()).get_text_content()
    text = form_output("Refund details", GOOD)
    assert text.startswith('The user filled in the form "Refund details":\n{\n  "amount": 42.5,')
    assert final == f"[success] value={json.dumps(GOOD, sort_keys=True)} text={text}"
    seen = tool_results(agent.model.calls[-1], "AskForm")[-1]
    assert seen.state == ToolResultState.SUCCESS and seen.metadata == {"value": GOOD}
    ends = [e for e in events if type(e).__name__ == "ToolResultEndEvent"]
    assert [e.metadata for e in ends] == [{"value": GOOD}]


def test_an_invalid_schema_can_only_be_returned_as_an_error() -> None:
    agent = form_agent({"type": "object", "properties": {"n": {"type": "numbr"}}})

    async def scenario() -> Any:
        session = Session(agent, display=False)
        task = session.start("go")
        pause = await wait_until(lambda: session.pending and session.pending[0], "the form")
        assert pause.kind == "form" and pause.form_error.startswith(
            "The schema cannot be used: it is not a valid JSON Schema at $.properties.n.type"
        )
        with pytest.raises(DecisionError, match="cannot be answered"):
            session.act({"action": "submit", "tool_call_id": pause.tool_call_id, "value": {"n": 1}})
        await session.act({"action": "return_error", "tool_call_id": pause.tool_call_id})
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario()).get_text_content()
    assert final.startswith(
        "[error] value=null text=The form could not be shown to the user: The schema cannot be used"
    )


def test_declining_a_valid_form_needs_a_message() -> None:
    agent = form_agent(REFUND)

    async def scenario() -> Any:
        session = Session(agent, display=False)
        task = session.start("go")
        pause = await wait_until(lambda: session.pending and session.pending[0], "the form")
        with pytest.raises(DecisionError) as err:
            session.act({"action": "return_error", "tool_call_id": pause.tool_call_id})
        assert err.value.field == "message"
        await session.act(
            {"action": "return_error", "tool_call_id": pause.tool_call_id, "message": "I'd rather call you."}
        )
        return await asyncio.wait_for(task, 10)

    assert run_async(scenario()).get_text_content() == "[error] value=null text=I'd rather call you."


def test_a_form_too_large_to_draw_is_refused_in_the_kernel() -> None:
    """A 20,000-field form: refused before any front end draws it, its schema
    not sent; even a value that fits cannot be submitted, and the model reads why."""
    huge = {"type": "object", "properties": {f"field_{i}": {"type": "string"} for i in range(20_000)}}
    agent = form_agent(huge)

    async def scenario() -> Any:
        session = Session(agent, display=False)
        task = session.start("go")
        pause = await wait_until(lambda: session.pending and session.pending[0], "the form")
        assert pause.kind == "form" and "it has 20000 fields (at most 200 are drawn)" in pause.form_error
        assert pause.to_view()["response_schema"] is None
        with pytest.raises(DecisionError, match="cannot be answered"):
            session.act({"action": "submit", "tool_call_id": pause.tool_call_id, "value": {"field_0": "x"}})
        await session.act({"action": "return_error", "tool_call_id": pause.tool_call_id})
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario()).get_text_content()
    assert final.startswith("[error] value=null text=The form could not be shown to the user: The form is too large")
    assert final.endswith("Ask in smaller parts.")


# -- C32: a hostile schema from the model ------------------------------------------
class _Counting(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


def test_c32_a_hostile_form_schema_shows_its_error_on_the_card() -> None:
    """The model's AskForm schema names a URL (a real server on a loopback port)
    and loops on itself: the card says why it cannot be answered, a Submit
    from the page is refused there, nothing is fetched, and only the error
    can be returned to the agent."""
    hits: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Counting,), {"hits": hits}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/leak?x=1"
    hostile = {
        "type": "object",
        "properties": {"x": {"$ref": url}, "y": {"$ref": "#/$defs/y"}},
        "$defs": {"y": {"$ref": "#/$defs/y"}},
    }
    agent = form_agent(hostile)

    async def scenario() -> Any:
        session = Session(agent, display=True)
        task = session.start("go")
        pause = await wait_until(lambda: session.pending and session.pending[0], "the form")
        widget = session.current.widget
        card = widget.pauses[0]
        assert card["kind"] == "form" and card["response_schema"] is None
        assert (
            card["form_error"] == pause.form_error and url in card["form_error"] and "not fetched" in card["form_error"]
        )
        sent = widget_replies(widget)
        submit = {"action": "submit", "tool_call_id": pause.tool_call_id, "value": {"x": "a", "y": "b"}}
        widget._on_page_message(widget, {"request_id": "s1", **submit}, [])
        await wait_until(lambda: sent, "the answer to Submit")
        assert sent[0]["ok"] is False and "cannot be answered" in sent[0]["error"]
        assert pause.status == "open" and len(agent.model.calls) == 1  # nothing resumed
        ret = {"action": "return_error", "tool_call_id": pause.tool_call_id}
        widget._on_page_message(widget, {"request_id": "r1", **ret}, [])
        return await asyncio.wait_for(task, 10)

    try:
        final = run_async(scenario()).get_text_content()
    finally:
        server.shutdown()
        server.server_close()
    assert final.startswith(
        "[error] value=null text=The form could not be shown to the user: The schema cannot be used"
    )
    assert hits == []
