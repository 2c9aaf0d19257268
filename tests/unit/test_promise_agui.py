"""AG-UI: a denial may carry a reason the agent reads (confirm kind's resume payload)."""

from __future__ import annotations

import pytest
from agentscope.message import ToolCallBlock
from agentscope.tool import FunctionTool, ToolChunk

from nb_hitl import DecisionError
from nb_hitl.decisions import decide
from nb_hitl.kinds import kind_spec
from nb_hitl.kinds._schema import validate_payload
from nb_hitl.pauses import build_pause


def send_payment(amount: int) -> ToolChunk:
    """Send a payment.

    Args:
        amount (int): cents.
    """
    raise AssertionError("never run here")


def _pause():  # type: ignore[no-untyped-def]
    call = ToolCallBlock(id="call_1", name="send_payment", input='{"amount": 5}', state="asking")
    return build_pause("reply_1", call, FunctionTool(send_payment))


def test_agui_deny_with_a_reason_reaches_the_decision() -> None:
    pause = _pause()
    spec = kind_spec("confirm")
    schema = spec.response_schema(pause)
    assert schema["properties"]["reason"]["type"] == "string"
    payload = {"approved": False, "reason": "Too much."}
    validate_payload(schema, payload)
    msg = spec.resume_message(pause, payload)
    assert msg["action"] == "deny" and msg["reason"] == "Too much."
    decision = decide(pause, msg)
    assert (
        decision.confirm_result.confirmed is False
        and decision.note == "The user denied your call call_1 to send_payment, saying: Too much."
    )
    assert spec.resume_message(pause, {"approved": False}) == {
        "tool_call_id": "call_1",
        "reply_id": "reply_1",
        "action": "deny",
    }
    with pytest.raises(DecisionError) as err:
        spec.resume_message(pause, {"approved": True, "reason": "why"})
    assert err.value.field == "reason"
