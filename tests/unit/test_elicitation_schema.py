"""Kind ``elicitation``: the MCP server's schema is untrusted (C41).

Checked once when the pause is built: a schema that reaches outside itself,
uses a pattern RE2 cannot run, is not a flat form of primitive fields, or is
not a JSON Schema cannot be drawn (only decline / cancel remain); content is
checked with the no-fetch, RE2 validator.
"""

from __future__ import annotations

from typing import Any

import pytest
from agentscope.message import ToolCallBlock

from nb_hitl import DecisionError
from nb_hitl.decisions import decide
from nb_hitl.kinds import kind_spec
from nb_hitl.kinds.elicitation import check_content, elicitation_schema_problem
from nb_hitl.pauses import Pause

CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Confirm"}},
    "required": ["confirm"],
}


@pytest.mark.parametrize(
    "schema, problem",
    [
        (CONFIRM, None),
        ({"type": "object", "properties": {"n": {"$ref": "https://example.com/s.json"}}}, "points outside the schema"),
        ({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)\\1$"}}}, "RE2"),
        ({"type": "object", "properties": {"o": {"type": "object", "properties": {"x": {}}}}}, "flat forms"),
        ({"type": "object", "properties": {"n": {"type": "numbr"}}}, "not a valid JSON Schema"),
        ({"type": "object", "properties": {}}, 'A form schema needs "properties"'),
        ("yes", "not a JSON object"),
    ],
)
def test_schema_problems(schema: Any, problem: str | None) -> None:
    got = elicitation_schema_problem(schema)
    if problem is None:
        assert got is None
    else:
        assert got is not None and problem in got, got


def _pause(schema: Any) -> Pause:
    call = ToolCallBlock(id="c1~elicitation-1", name="mcp__db__delete_rows", input='{"table": "customers"}')
    pause = Pause(reply_id="r1", tool_call=call, kind="elicitation", message="Delete?", response_schema=schema)
    kind_spec("elicitation").complete(pause)
    return pause


def test_a_schema_that_cannot_be_drawn_leaves_decline_and_cancel() -> None:
    pause = _pause({"type": "object", "properties": {"n": {"$ref": "http://127.0.0.1:9/x"}}})
    assert pause.response_schema is None and "not fetched" in (pause.form_error or "")
    with pytest.raises(DecisionError, match="cannot be answered") as err:
        decide(pause, {"action": "accept", "tool_call_id": pause.tool_call_id, "content": {"n": 1}})
    assert err.value.field == "action"
    assert decide(pause, {"action": "decline", "tool_call_id": pause.tool_call_id}).action == "decline"


def test_content_is_checked_without_fetching_and_with_re2() -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}}
    check_content(schema, {"code": "ABC"})
    with pytest.raises(DecisionError) as err:
        check_content(schema, {"code": "abcd"})
    assert err.value.field == "value.code"
    with pytest.raises(DecisionError, match="JSON object"):
        check_content(schema, ["ABC"])
    # a field the server did not ask for is refused: the SDK's server would drop it, the record would not
    with pytest.raises(DecisionError) as extra:
        check_content(schema, {"code": "ABC", "extra": 1})
    assert extra.value.field == "value.extra"
    assert (
        str(extra.value) == "The answer has fields the server did not ask for ('extra'); send only the form's fields."
    )
    pause = _pause(CONFIRM)
    decision = decide(pause, {"action": "accept", "tool_call_id": pause.tool_call_id, "content": {"confirm": True}})
    assert (decision.action, decision.content) == ("accept", {"confirm": True})
    assert decision.summary() == {"action": "accept", "content": {"confirm": True}}


def _url_pause(url: str) -> Pause:
    call = ToolCallBlock(id="c1~elicitation-1", name="mcp__db__sign_in", input='{"account": "alice"}')
    pause = Pause(reply_id="r1", tool_call=call, kind="elicitation", message="Sign in.", elicitation_url=url)
    kind_spec("elicitation").complete(pause)
    return pause


def test_url_mode_over_ag_ui_carries_the_address_and_done_takes_no_content() -> None:
    """A URL-mode pause as an AG-UI interrupt: the remote card gets the address (and no schema),
    "Done" maps to accept without content both ways, content is refused."""
    from ag_ui.core import ResumeEntry

    from nb_hitl.agui.mapping import interrupt_view, message_to_entry, pause_to_interrupt, resume_to_message

    url = "https://console.db.example/sign-in?session=7f3a"
    pause = _url_pause(url)
    interrupt = pause_to_interrupt(pause, "t1")
    view = interrupt_view(interrupt, key="k", run_id="run1")
    assert view["kind"] == "elicitation" and view["elicitation_url"] == url and view["response_schema"] is not None
    entry = message_to_entry(interrupt, {"action": "accept"})
    assert entry.payload == {"action": "accept"}
    message = resume_to_message(
        pause, ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"action": "accept"}), thread_id="t1"
    )
    assert message["action"] == "accept" and "content" not in message
    assert decide(pause, message).content is None
    with pytest.raises(DecisionError):  # a page takes no values, on this road too
        message_to_entry(interrupt, {"action": "accept", "content": {"token": "x"}})


def test_a_url_that_must_not_be_offered_is_kept_out_of_the_view() -> None:
    pause = _url_pause("javascript:alert(1)")
    assert pause.elicitation_url is None and "not a web address" in (pause.form_error or "")
    assert pause.to_view()["elicitation_url"] is None
    with pytest.raises(DecisionError, match="Decline or cancel it instead"):
        decide(pause, {"action": "accept", "tool_call_id": pause.tool_call_id})
