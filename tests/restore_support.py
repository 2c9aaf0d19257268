"""Shared pieces of the C29 restore tests: agents that count what ran, and the
checkpoints a crash leaves right after a decision was handed to the agent.

Every agent is a real ``agentscope.agent.Agent`` on
:class:`~nb_hitl.models.ScriptedChatModel`; the checkpoints are the real ones
a :class:`~nb_hitl.session.Session` writes (:func:`delivery_checkpoints`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from agentscope.message import TextBlock, ToolResultState
from agentscope.tool import AskUser, FunctionTool, ToolChunk

from nb_hitl.models import Turn, result_text, tool_call, tool_results
from nb_hitl.session import Session
from nb_hitl.store import CheckpointStore
from tests.support_agents import scripted_agent

__all__ = [
    "answer",
    "ask_agent",
    "batch_agent",
    "check_asked_again",
    "checkpoint_at_delivery",
    "delivery_checkpoints",
    "payment_agent",
    "restored",
    "resumed",
    "save",
    "told",
    "until",
]


def payment_agent(
    runs: list[int], state: Any = None, calls: dict[str, int] | None = None, *, name: str = "payer"
) -> Any:
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

    return scripted_agent([step] * 6, [FunctionTool(transfer)], name=name, state=state)


def batch_agent(runs: list[int], state: Any = None) -> Any:
    """:func:`payment_agent` asking for ``transfer(5)`` and ``transfer(7)`` in
    one turn (ids ``p5``, ``p7``): AgentScope asks for ``p5`` first and leaves
    ``p7`` ``pending`` until ``p5`` is answered."""
    return payment_agent(runs, state, {"p5": 5, "p7": 7})


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


def answer(pause: Any, colour: str) -> dict[str, Any]:
    """The page message answering :func:`ask_agent`'s question with ``colour``."""
    return {
        "action": "answer",
        "tool_call_id": pause.tool_call_id,
        "answers": [{"question": "Which colour?", "selected": [colour]}],
    }


async def until(predicate: Any) -> None:
    """Poll ``predicate`` on the running loop (10 s at most)."""
    for _ in range(2000):
        if predicate():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the condition was never met")


def delivery_checkpoints(
    tmp_path: Any, agent: Any, decisions: Sequence[Callable[[list[Any]], dict[str, Any]]]
) -> dict[str, dict[str, Any]]:
    """Run ``agent`` (an ``Agent`` or a pipeline) in a checkpointing Session and
    answer its pauses in turn: each ``decisions`` entry gets the open pauses
    and returns a page message; the next one is given once the reply waits
    again. Returns, by tool call id, the checkpoint as it was on disk when the
    first event after that call's resume arrived (the crash window: the
    decision is under the ``delivered`` mark, the agent has not recorded its
    outcome)."""
    store = CheckpointStore(tmp_path / "made")
    session = Session(agent, display=False, checkpoints=store, session_id="c29")
    kept: dict[str, dict[str, Any]] = {}

    def grab(event: Any, run: Any) -> None:
        for pause in run.pauses.values():
            if pause.status == "delivered" and pause.tool_call_id not in kept:
                kept[pause.tool_call_id] = store.load("c29")

    session.on_event(grab)

    async def go() -> None:
        task = session.start("Go.")
        for decide in decisions:
            await until(lambda: bool(session.pending) and session.current.status == "paused")
            await _decided(session, task, kept, decide)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    try:
        asyncio.run(go())
    finally:
        session.close()
    return kept


async def _decided(session: Session, task: Any, kept: dict[str, Any], decide: Any) -> None:
    """Give ``session`` the page message ``decide(pending pauses)`` and wait until
    the checkpoint of its delivery is kept and the reply ended or waits again."""
    message = decide(session.pending)
    await session.act(message)
    await until(lambda: message["tool_call_id"] in kept and (task.done() or bool(session.pending)))


def checkpoint_at_delivery(tmp_path: Any, agent: Any, decide: Any) -> dict[str, Any]:
    """The checkpoint of :func:`delivery_checkpoints` when the first pause gets
    the page message ``decide(pause)``."""
    (record,) = delivery_checkpoints(tmp_path, agent, [lambda pending: decide(pending[0])]).values()
    return record


def save(store: CheckpointStore, session_id: str, record: dict[str, Any]) -> None:
    """Write ``record`` (a loaded checkpoint) into ``store`` as ``session_id``'s."""
    store.save(session_id, record["agent_name"], json.dumps(record["state"]))


def restored(tmp_path: Any, record: dict[str, Any], factory: Any) -> Session:
    """``Session.restore(factory, ...)`` of ``record``, saved into a store of its own."""
    store = CheckpointStore(tmp_path / "local")
    save(store, "c29", record)
    return Session.restore(factory, store, "c29", display=False)


def resumed(session: Session, go: Callable[[], Any]) -> Any:
    """``asyncio.run(go())`` (what the coroutine returns), then ``session`` closed."""
    try:
        return asyncio.run(go())
    finally:
        session.close()


def check_asked_again(pause: Any) -> None:
    """``pause`` is a question whose answer was lost in a restart, and its card says so."""
    assert pause.kind == "ask_user", pause.kind
    assert "process stopped" in (pause.message or "") and "answer again" in (pause.message or ""), pause.message


def told(agent: Any) -> dict[str, tuple[str, str]]:
    """What the agent's history says of each tool call: ``{id: (result state, text)}``."""
    return {r.id: (getattr(r.state, "value", r.state), result_text(r)) for r in tool_results(agent.state.context)}
