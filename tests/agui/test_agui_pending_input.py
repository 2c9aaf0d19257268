"""New input on a thread with open interrupts, and a denial's reason, over AG-UI.

AG-UI 1.0 ("Interrupts and Resume"): a run that does not answer the open
interrupts runs nothing; the server ends it with the interrupt outcome again
and says why in ``RUN_FINISHED.metadata.nb_hitl.refused_input``. The
notebook client (:class:`~nb_hitl.agui.RemoteSession`) shows those
interrupts as cards with the reason, and the person answers them. A denial
may carry a ``reason`` (in the confirmation's ``response_schema``): the
model reads it in the call's result and the audit line records it.
"""

from __future__ import annotations

import asyncio

import pytest
from agentscope.message import ToolCallBlock, ToolResultState
from agentscope.tool import FunctionTool, ToolChunk

from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
from nb_hitl.agui.demo import two_pause_factory
from nb_hitl.agui.mapping import message_to_entry, pause_to_interrupt, resume_to_message, validate_payload
from nb_hitl.decisions import decide
from nb_hitl.errors import DecisionError
from nb_hitl.kinds import kind_spec
from nb_hitl.messages import MAX_SHORT
from nb_hitl.models import result_text, tool_results
from nb_hitl.pauses import build_pause
from nb_hitl.store import AuditLog

QUESTION = "Which file should I archive?"
REASON = "Keep the log until Friday."


def _answer(pause: dict) -> dict:
    if pause["kind"] == "ask_user":
        return {
            "action": "answer",
            "tool_call_id": pause["tool_call_id"],
            "answers": [{"question": QUESTION, "selected": ["notes.txt"]}],
        }
    return {"action": "deny", "tool_call_id": pause["tool_call_id"], "reason": REASON}


def test_a_second_notebook_on_a_paused_thread_gets_its_interrupts_and_a_denial_reason_reaches_the_model(tmp_path):
    factory = two_pause_factory(tmp_path / "boxes")
    audit = tmp_path / "audit.jsonl"
    server = AguiServer(factory, session_kwargs={"audit_log": str(audit)})
    with serve_in_background(server, announce=False) as handle:

        async def go():
            first = RemoteSession(handle.url, token=handle.token, thread_id="held-1", display=False)
            first_task = first.start("Please tidy up.")
            announced = sorted(p["interrupt_id"] for p in await first.until_paused())
            # another notebook (or the same one after a kernel restart) on the same thread
            second = RemoteSession(handle.url, token=handle.token, thread_id="held-1", display=False)
            task = second.start("Never mind, what time is it?")
            pending = await second.until_paused()
            turn = second.current
            schema = next(p for p in pending if p["kind"] == "confirm")["response_schema"]
            for pause in sorted(pending, key=lambda p: p["kind"] == "confirm"):
                await second.act(_answer(pause))
            final = await task
            first_task.cancel()
            return announced, pending, turn, schema, second.messages, final

        announced, pending, turn, schema, history, final = asyncio.run(go())

    assert sorted(p["interrupt_id"] for p in pending) == announced  # learned from the run itself
    assert {p["kind"] for p in pending} == {"ask_user", "confirm"}
    held = turn.runs[0]
    assert held.outcome == "interrupt" and held.refused_input["code"] == "interrupts_pending"
    assert len(held.refused_input["message_ids"]) == 1
    notes = [e["text"] for e in turn.transcript if e["kind"] == "note"]
    assert notes and notes[0].startswith("Your message was not given to the agent")
    assert [r.outcome for r in turn.runs] == ["interrupt", "success"]
    assert final == "You chose to archive notes.txt. You denied the deletion, so nothing was deleted."
    # the refused message never reached the agent, nor the history the client sends next
    agent = factory.agents["held-1"]  # type: ignore[attr-defined]
    assert "what time is it" not in str([m.content for m in agent.state.context])
    assert "what time is it" not in str([m.content for m in history])
    # the deny reason: offered in the schema, read by the model, recorded in the audit line
    assert schema["properties"]["reason"]["type"] == "string"
    (denied,) = tool_results(agent.state.context, "delete_file")
    assert denied.state == ToolResultState.DENIED
    assert result_text(denied).endswith(f"to delete_file, saying: {REASON}")
    assert "denied" in result_text(denied)
    (row,) = [r for r in AuditLog(audit).records("answered") if r.get("tool_name") == "delete_file"]
    assert row["decision"] == "deny" and row["reason"] == REASON
    assert (agent.sandbox / "old_log.txt").exists()


def send_payment(amount: int) -> ToolChunk:
    """Send a payment.

    Args:
        amount (int): cents.
    """
    raise AssertionError("never run here")


def test_a_reason_goes_only_with_a_denial_and_only_to_a_server_that_takes_it():
    call = ToolCallBlock(id="call_1", name="send_payment", input='{"amount": 5}', state="asking")
    pause = build_pause("reply_1", call, FunctionTool(send_payment))
    interrupt = pause_to_interrupt(pause, "t-1")
    spec = kind_spec("confirm")
    # client side: the widget's deny with a reason becomes the payload
    entry = message_to_entry(interrupt, {"action": "deny", "tool_call_id": "call_1", "reason": "  Too much. "})
    assert entry.payload == {"approved": False, "reason": "Too much."}
    assert message_to_entry(interrupt, {"action": "deny", "reason": " "}).payload == {"approved": False}
    # server side: the payload becomes the deny message, and the decision's note replaces AgentScope's text
    message = resume_to_message(pause, entry, thread_id="t-1")
    assert message["action"] == "deny" and message["reason"] == "Too much."
    decision = decide(pause, message)
    assert decision.confirm_result.confirmed is False and decision.note_replaces
    assert decision.note == "The user denied your call to send_payment, saying: Too much."
    assert decision.reason == "Too much."
    with pytest.raises(DecisionError) as with_approval:
        spec.resume_message(pause, {"approved": True, "reason": "why"})
    assert with_approval.value.field == "reason"
    with pytest.raises(DecisionError) as too_long:
        validate_payload(interrupt.response_schema, {"approved": False, "reason": "x" * (MAX_SHORT + 1)})
    assert too_long.value.field == "reason"
    # a server whose schema has no reason: the client says so instead of dropping the words
    older = interrupt.model_copy(
        update={"response_schema": {**interrupt.response_schema, "properties": {"approved": {"type": "boolean"}}}}
    )
    with pytest.raises(DecisionError) as not_taken:
        message_to_entry(older, {"action": "deny", "reason": "Too much."})
    assert not_taken.value.field == "reason"
