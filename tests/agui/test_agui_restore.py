"""C29: one checkpoint, written right after a decision was handed to the agent,
restored by ``Session.restore`` and by the AG-UI server's own restore.

The checkpoint is the real one nb_hitl writes before it sends the resume
event (the call still ``asking``, its decision under the ``delivered`` mark):
a process that stops in that window may have run the tool. Both restores go
through ``nb_hitl.session._restore``: the call is closed as interrupted, not
offered again, and the tool (which counts its runs) never runs a second time.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ag_ui.core import ResumeEntry
from agentscope.message import TextBlock, ToolResultState
from agentscope.tool import FunctionTool, ToolChunk

from nb_hitl.agui import AguiServer
from nb_hitl.agui.client import AguiClient
from nb_hitl.agui.mapping import interrupt_id
from nb_hitl.agui.threads import checkpoint_id
from nb_hitl.errors import NbHitlError
from nb_hitl.models import Turn, result_text, tool_call, tool_results
from nb_hitl.session import Session
from nb_hitl.session._run import DELIVERED_CONTEXT_KEY
from nb_hitl.store import CheckpointStore
from tests.agui_support import collect, user
from tests.support_agents import scripted_agent


def payment_agent(runs: list[int], state: Any = None) -> Any:
    """A real agent whose ``transfer`` tool asks first and counts its runs.
    Its one scripted step reads the history, so a rebuilt model goes on from
    the restored state: no result yet -> call ``transfer``; else report it."""

    def transfer(amount: int) -> ToolChunk:
        """Transfer money.

        Args:
            amount (int): the amount in EUR.
        """
        runs.append(amount)
        return ToolChunk(content=[TextBlock(text=f"Sent {amount} EUR.")], state=ToolResultState.SUCCESS)

    def step(messages: list[Any]) -> Turn:
        done = tool_results(messages, "transfer")
        if not done:
            return Turn("Paying.", [tool_call("transfer", id="call-pay", amount=5)])
        state = getattr(done[-1].state, "value", done[-1].state)
        return Turn(f"The transfer ended {state}: {result_text(done[-1])}")

    return scripted_agent([step] * 6, [FunctionTool(transfer)], name="payer", state=state)


async def _until(predicate: Any) -> None:
    for _ in range(2000):
        if predicate():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the condition was never met")


def delivered_checkpoint(tmp_path: Any, runs: list[int]) -> tuple[dict[str, Any], str, str]:
    """Run the agent, approve, and keep the checkpoint as it is on disk when
    the first event after the resume arrives (the crash window). Returns the
    record, the reply id and the tool call id."""
    store = CheckpointStore(tmp_path / "made")
    session = Session(payment_agent(runs), display=False, checkpoints=store, session_id="c29")
    kept: dict[str, Any] = {}

    def grab(event: Any, run: Any) -> None:
        if "record" not in kept and any(p.status == "delivered" for p in run.pauses.values()):
            kept["record"] = store.load("c29")

    session.on_event(grab)

    async def go() -> tuple[str, str]:
        task = session.start("Pay 5 EUR.")
        await _until(lambda: bool(session.pending))
        (pause,) = session.pending
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        await task
        return pause.reply_id, pause.tool_call_id

    try:
        reply_id, tool_call_id = asyncio.run(go())
    finally:
        session.close()
    assert runs == [5]  # approved once, ran once
    record = kept["record"]
    marks = record["state"]["middle_context"][DELIVERED_CONTEXT_KEY]
    assert list(marks) == [tool_call_id] and marks[tool_call_id]["action"] == "approve"
    last = record["state"]["context"][-1]
    call = next(b for b in last["content"] if b.get("type") == "tool_call" and b["id"] == tool_call_id)
    assert call["state"] == "asking"  # still parked in this state: restored naively, it is asked again
    assert not any(b.get("type") == "tool_result" for b in last["content"])
    return record, reply_id, tool_call_id


def _save(store: CheckpointStore, session_id: str, record: dict[str, Any]) -> None:
    store.save(session_id, record["agent_name"], json.dumps(record["state"]))


@pytest.fixture(scope="module")
def delivered(tmp_path_factory):
    """One checkpoint, restored by both tests (each into its own store)."""
    runs: list[int] = []
    record, reply_id, tool_call_id = delivered_checkpoint(tmp_path_factory.mktemp("c29"), runs)
    return runs, record, reply_id, tool_call_id


def test_c29_session_restore_closes_a_delivered_call(tmp_path, delivered):
    runs, record, _, tool_call_id = delivered
    store = CheckpointStore(tmp_path / "local")
    _save(store, "c29", record)
    session = Session.restore(lambda state: payment_agent(runs, state), store, "c29", display=False)
    try:
        assert session.parked_tool_calls() == [] and session.pending == []
        with pytest.raises(NbHitlError, match="no parked reply"):
            session.start_resume()
        final = asyncio.run(session.run("Did it go through?"))
    finally:
        session.close()
    assert runs == [5]  # not run a second time
    assert "interrupted" in final.get_text_content()
    closed = [m for m in session.agent.state.context if not isinstance(m.content, str)]
    result = next(
        b for m in closed for b in m.content if getattr(b, "id", None) == tool_call_id and b.type == "tool_result"
    )
    assert result.state == ToolResultState.INTERRUPTED


def test_c29_agui_restore_closes_a_delivered_call(tmp_path, delivered):
    runs, record, reply_id, tool_call_id = delivered
    tid = "c29-thread"
    store = CheckpointStore(tmp_path / "served")
    _save(store, checkpoint_id(tid), record)
    server = AguiServer(
        lambda thread_id, state=None: payment_agent(runs, state), token=False, session_kwargs={"checkpoints": store}
    )
    stale = interrupt_id(tid, reply_id, tool_call_id)  # the id the client was given before the crash

    async def go() -> tuple[list[Any], list[Any]]:
        again = await collect(
            server,
            AguiClient.make_input(
                tid,
                [],
                [ResumeEntry(interrupt_id=stale, status="resolved", payload={"approved": True})],
            ),
        )
        later = await collect(server, AguiClient.make_input(tid, [user("Done?", "u2")]))
        return again, later

    try:
        again, later = asyncio.run(go())
    finally:
        for thread in server.threads.values():
            thread.session.close()
    assert again[-1].type.value == "RUN_ERROR" and again[-1].code == "unknown_interrupt", again[-1]
    last = later[-1]
    assert last.type.value == "RUN_FINISHED" and last.outcome.type == "success", last  # no interrupt offered
    assert "interrupted" in last.result
    assert runs == [5]  # not run a second time
