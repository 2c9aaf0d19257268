"""C29: one checkpoint, written right after a decision was handed to the agent,
restored by ``Session.restore`` and by the AG-UI server's own restore.

The checkpoint is the real one nb_hitl writes before it sends the resume
event (the call still ``asking``, its decision under the ``delivered`` mark):
a process that stops in that window may have run the tool. Both restores go
through ``nb_hitl.session._restore``: the call is closed as interrupted, not
offered again, and the tool (which counts its runs) never runs a second time.
A call of the same turn nobody was asked about comes back as a card on both
roads, and an AskUser answer lost in the window is asked again.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from ag_ui.core import ResumeEntry
from agentscope.message import ToolResultState

from nb_hitl.agui import AguiServer
from nb_hitl.agui.client import AguiClient
from nb_hitl.agui.mapping import interrupt_id
from nb_hitl.agui.threads import checkpoint_id
from nb_hitl.errors import NbHitlError
from nb_hitl.session._run import DELIVERED_CONTEXT_KEY
from nb_hitl.store import CheckpointStore
from tests.agui_support import collect, user
from tests.restore_support import (
    answer,
    ask_agent,
    batch_agent,
    check_asked_again,
    checkpoint_at_delivery,
    payment_agent,
    restored,
    resumed,
    save,
    told,
    until,
)


def delivered_checkpoint(tmp_path: Any, runs: list[int]) -> tuple[dict[str, Any], str, str]:
    """The C29 checkpoint of one approved ``transfer``. Returns the record,
    the reply id and the tool call id."""
    record = checkpoint_at_delivery(
        tmp_path, payment_agent(runs), lambda p: {"action": "approve", "tool_call_id": p.tool_call_id}
    )
    assert runs == [5]  # approved once, ran once
    marks = record["state"]["middle_context"][DELIVERED_CONTEXT_KEY]
    (tool_call_id,) = list(marks)
    assert marks[tool_call_id]["action"] == "approve" and marks[tool_call_id]["runs"] is True
    last = record["state"]["context"][-1]
    call = next(b for b in last["content"] if b.get("type") == "tool_call" and b["id"] == tool_call_id)
    assert call["state"] == "asking"  # still parked in this state: restored naively, it is asked again
    assert not any(b.get("type") == "tool_result" for b in last["content"])
    return record, marks[tool_call_id]["reply_id"], tool_call_id


def _serve(tmp_path: Any, tid: str, record: dict[str, Any], factory: Any) -> AguiServer:
    """An AG-UI server whose checkpoint store holds ``record`` as thread ``tid``'s; ``factory(state)`` builds the agent."""
    store = CheckpointStore(tmp_path / "served")
    save(store, checkpoint_id(tid), record)
    return AguiServer(lambda thread_id, state=None: factory(state), token=False, session_kwargs={"checkpoints": store})


def _approve(tid: str, interrupt: str) -> Any:
    """The run input that resumes ``interrupt`` approved."""
    return AguiClient.make_input(
        tid, [], [ResumeEntry(interrupt_id=interrupt, status="resolved", payload={"approved": True})]
    )


def _played(server: AguiServer, go: Any) -> Any:
    """``asyncio.run(go())``, then every thread's Session closed."""
    try:
        return asyncio.run(go())
    finally:
        for thread in server.threads.values():
            thread.session.close()


@pytest.fixture(scope="module")
def delivered(tmp_path_factory):
    """One checkpoint, restored by both tests (each into its own store)."""
    runs: list[int] = []
    record, reply_id, tool_call_id = delivered_checkpoint(tmp_path_factory.mktemp("c29"), runs)
    return runs, record, reply_id, tool_call_id


def test_c29_session_restore_closes_a_delivered_call(tmp_path, delivered):
    runs, record, _, tool_call_id = delivered
    session = restored(tmp_path, record, lambda state: payment_agent(runs, state))
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
    server = _serve(tmp_path, tid, record, lambda state: payment_agent(runs, state))
    stale = interrupt_id(tid, reply_id, tool_call_id)  # the id the client was given before the crash

    async def go() -> tuple[list[Any], list[Any]]:
        again = await collect(server, _approve(tid, stale))
        later = await collect(server, AguiClient.make_input(tid, [user("Done?", "u2")]))
        return again, later

    again, later = _played(server, go)
    assert again[-1].type.value == "RUN_ERROR" and again[-1].code == "unknown_interrupt", again[-1]
    last = later[-1]
    assert last.type.value == "RUN_FINISHED" and last.outcome.type == "success", last  # no interrupt offered
    assert "interrupted" in last.result
    assert runs == [5]  # not run a second time


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """The checkpoint of C29's batch: ``p5`` approved and handed over, ``p7`` never asked."""
    runs: list[int] = []
    record = checkpoint_at_delivery(
        tmp_path_factory.mktemp("c29b"), batch_agent(runs), lambda p: {"action": "approve", "tool_call_id": "p5"}
    )
    last = record["state"]["context"][-1]
    assert [(b["id"], b["state"]) for b in last["content"] if b.get("type") == "tool_call"] == [
        ("p5", "asking"),
        ("p7", "pending"),
    ]
    return runs, record


def test_c29_batch_session_restore_asks_again_for_the_call_never_asked(tmp_path, batch):
    runs, record = batch
    before = list(runs)
    session = restored(tmp_path, record, lambda state: batch_agent(runs, state))

    async def go() -> Any:
        assert [tc.id for tc in session.unchecked_tool_calls()] == ["p7"] and session.parked_tool_calls() == []
        task = session.start_resume()
        await until(lambda: bool(session.pending))
        assert [(p.tool_call_id, p.kind) for p in session.pending] == [("p7", "confirm")]  # its card comes back
        await session.act({"action": "approve", "tool_call_id": "p7"})
        return await task

    final = resumed(session, go)
    assert runs == [*before, 7]  # p5 not run again; p7 ran once, after its approval
    said = told(session.agent)
    assert (
        said["p5"][0] == "interrupted"
        and "An approval (approve)" in said["p5"][1]
        and "may or may not" in said["p5"][1]
    )
    assert said["p7"] == ("success", "Sent 7 EUR.")
    assert "p7=success" in final.get_text_content()


def test_c29_batch_new_message_tells_the_model_the_unasked_call_did_not_run(tmp_path, batch):
    runs, record = batch
    before = list(runs)
    session = restored(tmp_path, record, lambda state: batch_agent(runs, state))
    try:
        asyncio.run(session.run("What happened?"))
    finally:
        session.close()
    assert runs == before
    state, text = told(session.agent)["p7"]
    assert state == "interrupted" and "did not run" in text and "may or may not" not in text


def test_c29_batch_agui_restore_asks_again_for_the_call_never_asked(tmp_path, batch):
    runs, record = batch
    tid = "c29-batch"
    before = list(runs)
    server = _serve(tmp_path, tid, record, lambda state: batch_agent(runs, state))

    async def go() -> tuple[list[Any], list[Any]]:
        offered = await collect(server, AguiClient.make_input(tid, [user("Go on.", "u2")]))
        (interrupt,) = offered[-1].outcome.interrupts
        return offered, await collect(server, _approve(tid, interrupt.id))

    offered, done = _played(server, go)
    assert offered[-1].outcome.type == "interrupt", offered[-1]
    assert offered[-1].outcome.interrupts[0].tool_call_id == "p7"
    assert done[-1].type.value == "RUN_FINISHED" and done[-1].outcome.type == "success", done[-1]
    assert "p7=success" in done[-1].result and "p5=interrupted" in done[-1].result
    assert runs == [*before, 7]


@pytest.mark.parametrize("written_before_runs", [False, True])
def test_c29_askuser_answer_lost_in_a_restart_is_asked_again(tmp_path, written_before_runs):
    record = checkpoint_at_delivery(tmp_path, ask_agent(), lambda p: answer(p, "blue"))
    marks = record["state"]["middle_context"][DELIVERED_CONTEXT_KEY]
    assert marks["call-ask"]["runs"] is False  # an answer runs nothing here
    if written_before_runs:  # a checkpoint of an nb_hitl that wrote no "runs": the call's state tells
        del marks["call-ask"]["runs"]
    session = restored(tmp_path, record, ask_agent)

    async def go() -> Any:
        task = session.start_resume()
        await until(lambda: bool(session.pending))
        (pause,) = session.pending
        check_asked_again(pause)
        await session.act(answer(pause, "red"))
        return await task

    final = resumed(session, go)
    assert final.get_text_content() == 'AskUser ended success: The user answered:\n- "Which colour?" -> red'


def test_c29_agui_restore_asks_again_for_a_lost_askuseranswer(tmp_path):
    record = checkpoint_at_delivery(tmp_path, ask_agent(), lambda p: answer(p, "blue"))
    tid = "c29-ask"
    server = _serve(tmp_path, tid, record, ask_agent)

    async def go() -> list[Any]:
        return await collect(server, AguiClient.make_input(tid, [user("Still there?", "u2")]))

    offered = _played(server, go)
    assert offered[-1].outcome.type == "interrupt", offered[-1]
    (interrupt,) = offered[-1].outcome.interrupts
    assert interrupt.tool_call_id == "call-ask"  # asked again, not closed as "may have taken effect"
