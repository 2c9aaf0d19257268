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
import json
from typing import Any

import pytest
from ag_ui.core import ResumeEntry
from agentscope.message import TextBlock, ToolResultState
from agentscope.tool import AskUser, FunctionTool, ToolChunk

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


def payment_agent(runs: list[int], state: Any = None, calls: dict[str, int] | None = None) -> Any:
    """A real agent whose ``transfer`` tool asks first and counts its runs.
    Its one scripted step reads the history, so a rebuilt model goes on from
    the restored state: no result yet -> one turn calling ``transfer`` once per
    ``calls`` entry (``{tool_call id: amount}``, default one of 5 EUR); else
    report every result (``id=state: text``)."""

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
            wanted = calls or {"call-pay": 5}
            return Turn("Paying.", [tool_call("transfer", id=i, amount=a) for i, a in wanted.items()])
        return Turn("; ".join(f"{r.id}={getattr(r.state, 'value', r.state)}: {result_text(r)}" for r in done))

    return scripted_agent([step] * 6, [FunctionTool(transfer)], name="payer", state=state)


async def _until(predicate: Any) -> None:
    for _ in range(2000):
        if predicate():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the condition was never met")


def checkpoint_at_delivery(tmp_path: Any, agent: Any, decide: Any) -> dict[str, Any]:
    """Run ``agent``, give its first pause the page message ``decide(pause)``
    and return the checkpoint as it is on disk when the first event after the
    resume arrives (the crash window: the decision is under the ``delivered``
    mark, the agent has not recorded its outcome)."""
    store = CheckpointStore(tmp_path / "made")
    session = Session(agent, display=False, checkpoints=store, session_id="c29")
    kept: dict[str, Any] = {}

    def grab(event: Any, run: Any) -> None:
        if "record" not in kept and any(p.status == "delivered" for p in run.pauses.values()):
            kept["record"] = store.load("c29")

    session.on_event(grab)

    async def go() -> None:
        task = session.start("Go.")
        await _until(lambda: bool(session.pending))
        await session.act(decide(session.pending[0]))
        await _until(lambda: "record" in kept and (task.done() or bool(session.pending)))
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    try:
        asyncio.run(go())
    finally:
        session.close()
    return kept["record"]


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


def _save(store: CheckpointStore, session_id: str, record: dict[str, Any]) -> None:
    store.save(session_id, record["agent_name"], json.dumps(record["state"]))


def _serve(tmp_path: Any, tid: str, record: dict[str, Any], factory: Any) -> AguiServer:
    """An AG-UI server whose checkpoint store holds ``record`` as thread ``tid``'s; ``factory(state)`` builds the agent."""
    store = CheckpointStore(tmp_path / "served")
    _save(store, checkpoint_id(tid), record)
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


def _restored(tmp_path: Any, record: dict[str, Any], factory: Any) -> Session:
    """``Session.restore(factory, ...)`` of ``record``, saved into a store of its own."""
    store = CheckpointStore(tmp_path / "local")
    _save(store, "c29", record)
    return Session.restore(factory, store, "c29", display=False)


@pytest.fixture(scope="module")
def delivered(tmp_path_factory):
    """One checkpoint, restored by both tests (each into its own store)."""
    runs: list[int] = []
    record, reply_id, tool_call_id = delivered_checkpoint(tmp_path_factory.mktemp("c29"), runs)
    return runs, record, reply_id, tool_call_id


def test_c29_session_restore_closes_a_delivered_call(tmp_path, delivered):
    runs, record, _, tool_call_id = delivered
    session = _restored(tmp_path, record, lambda state: payment_agent(runs, state))
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


def batch_agent(runs: list[int], state: Any = None) -> Any:
    """:func:`payment_agent` asking for ``transfer(5)`` and ``transfer(7)`` in
    one turn (ids ``p5``, ``p7``): AgentScope asks for ``p5`` first and leaves
    ``p7`` ``pending`` until ``p5`` is answered."""
    return payment_agent(runs, state, {"p5": 5, "p7": 7})


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


def _told(agent: Any) -> dict[str, tuple[str, str]]:
    return {r.id: (getattr(r.state, "value", r.state), result_text(r)) for r in tool_results(agent.state.context)}


def test_c29_batch_session_restore_asks_again_for_the_call_never_asked(tmp_path, batch):
    runs, record = batch
    before = list(runs)
    session = _restored(tmp_path, record, lambda state: batch_agent(runs, state))

    async def go() -> Any:
        assert [tc.id for tc in session.unchecked_tool_calls()] == ["p7"] and session.parked_tool_calls() == []
        task = session.start_resume()
        await _until(lambda: bool(session.pending))
        assert [(p.tool_call_id, p.kind) for p in session.pending] == [("p7", "confirm")]  # its card comes back
        await session.act({"action": "approve", "tool_call_id": "p7"})
        return await task

    try:
        final = asyncio.run(go())
    finally:
        session.close()
    assert runs == [*before, 7]  # p5 not run again; p7 ran once, after its approval
    told = _told(session.agent)
    assert (
        told["p5"][0] == "interrupted"
        and "An approval (approve)" in told["p5"][1]
        and "may or may not" in told["p5"][1]
    )
    assert told["p7"] == ("success", "Sent 7 EUR.")
    assert "p7=success" in final.get_text_content()


def test_c29_batch_new_message_tells_the_model_the_unasked_call_did_not_run(tmp_path, batch):
    runs, record = batch
    before = list(runs)
    session = _restored(tmp_path, record, lambda state: batch_agent(runs, state))
    try:
        asyncio.run(session.run("What happened?"))
    finally:
        session.close()
    assert runs == before
    state, text = _told(session.agent)["p7"]
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


def ask_agent(state: Any = None) -> Any:
    """A real agent whose one turn asks the person a question (AgentScope's ``AskUser``)."""
    question = {
        "question": "Which colour?",
        "header": "Colour",
        "options": [{"label": "red", "description": "r"}, {"label": "blue", "description": "b"}],
    }

    def step(messages: list[Any]) -> Turn:
        done = tool_results(messages, "AskUser")
        if not done:
            return Turn("Asking.", [tool_call("AskUser", id="call-ask", questions=[question])])
        return Turn(f"AskUser ended {getattr(done[-1].state, 'value', done[-1].state)}: {result_text(done[-1])}")

    return scripted_agent([step] * 6, [AskUser()], name="asker", state=state)


def _answer(pause: Any, colour: str) -> dict[str, Any]:
    return {
        "action": "answer",
        "tool_call_id": pause.tool_call_id,
        "answers": [{"question": "Which colour?", "selected": [colour]}],
    }


@pytest.mark.parametrize("written_before_runs", [False, True])
def test_c29_askuser_answer_lost_in_a_restart_is_asked_again(tmp_path, written_before_runs):
    record = checkpoint_at_delivery(tmp_path, ask_agent(), lambda p: _answer(p, "blue"))
    marks = record["state"]["middle_context"][DELIVERED_CONTEXT_KEY]
    assert marks["call-ask"]["runs"] is False  # an answer runs nothing here
    if written_before_runs:  # a checkpoint of an nb_hitl that wrote no "runs": the call's state tells
        del marks["call-ask"]["runs"]
    session = _restored(tmp_path, record, ask_agent)

    async def go() -> Any:
        task = session.start_resume()
        await _until(lambda: bool(session.pending))
        (pause,) = session.pending
        assert pause.kind == "ask_user" and "process stopped" in (pause.message or "")
        assert "answer again" in (pause.message or "")
        await session.act(_answer(pause, "red"))
        return await task

    try:
        final = asyncio.run(go())
    finally:
        session.close()
    assert final.get_text_content() == 'AskUser ended success: The user answered:\n- "Which colour?" -> red'


def test_c29_agui_restore_asks_again_for_a_lost_askuser_answer(tmp_path):
    record = checkpoint_at_delivery(tmp_path, ask_agent(), lambda p: _answer(p, "blue"))
    tid = "c29-ask"
    server = _serve(tmp_path, tid, record, ask_agent)

    async def go() -> list[Any]:
        return await collect(server, AguiClient.make_input(tid, [user("Still there?", "u2")]))

    offered = _played(server, go)
    assert offered[-1].outcome.type == "interrupt", offered[-1]
    (interrupt,) = offered[-1].outcome.interrupts
    assert interrupt.tool_call_id == "call-ask"  # asked again, not closed as "may have taken effect"
