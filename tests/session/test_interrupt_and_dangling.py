"""The Interrupt button, and tool calls left dangling by an interrupted or crashed reply: closed once, never run again (real Agents on the scripted model)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agentscope.agent import Agent
from agentscope.message import TextBlock, ToolCallBlock, ToolResultBlock, ToolResultState, UserMsg
from agentscope.state import AgentState
from agentscope.tool import FunctionTool, ToolChunk, Toolkit

from nb_hitl import Session
from nb_hitl.audit.calls import recorded_calls
from nb_hitl.demo import make_sandbox
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from nb_hitl.session import close_dangling_tool_calls
from nb_hitl.store import AuditLog, CheckpointStore
from tests.session.test_stale import (  # helpers shared with that module
    ask_then_delete,
    assert_every_call_has_one_result,
    click,
    delete_agent,
    parked,
)
from tests.support import InputRecorder, run_async, wait_until, widget_replies


# --------------------------------------------------------- Interrupt button
def test_interrupt_from_the_widget_on_a_parked_reply(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path / "box")
    recorder = InputRecorder()
    agent = delete_agent(box, [ask_then_delete()], recorder)

    audit = tmp_path / "audit.jsonl"

    async def scenario() -> None:
        session = Session(agent, display=True, audit_log=audit)
        task = session.start("Delete notes.")
        await parked(session)
        run = session.current
        sent = widget_replies(run.widget)
        click(run.widget, {"action": "interrupt"}, sent)
        await wait_until(lambda: len(sent) == 1, "the interrupt to be answered")  # answered on the loop
        assert sent[-1]["ok"] is True and sent[-1]["status"] == "interrupting"
        await asyncio.wait_for(task, 10)
        assert run.status == "interrupted" and run.widget.status == "interrupted"
        assert run.widget.pauses[0]["status"] == "expired"
        assert run.widget.pauses[0]["reason"] == "Interrupted from the widget."
        # the interrupted widget refuses every later click, with a reason
        click(run.widget, {"action": "approve", "tool_call_id": "del_1"}, sent)
        click(run.widget, {"action": "interrupt"}, sent)
        await wait_until(lambda: len(sent) == 3, "both late clicks to be answered")
        assert [(s["ok"], s.get("code")) for s in sent[1:]] == [(False, "expired"), (False, "expired")]
        assert "Interrupted from the widget." in sent[1]["error"]
        # the agent accepts new input again
        assert not agent.state.has_awaiting_tool_calls(agent.name)

    run_async(scenario())
    assert [type(i).__name__ for i in recorder.inputs] == ["Msg", "UserInterruptEvent"]
    assert recorder.inputs[1].reply_id == agent.state.reply_id
    assert assert_every_call_has_one_result(agent)["del_1"].state == ToolResultState.INTERRUPTED
    assert (box / "notes.txt").exists()
    # the pause that opened ends on the record: closed with no answer, and why (one line, not an answer)
    closed = [
        (r["tool_call_id"], r["decision"], r["decided_by"], r["reason"]) for r in AuditLog(audit).records("answered")
    ]
    assert closed == [("del_1", "expired", "nb_hitl", "Interrupted from the widget.")]
    assert recorded_calls(AuditLog(audit).records())[0]["person"] is None  # nobody's answer


def test_interrupt_from_the_widget_on_a_running_reply() -> None:
    started = []

    async def slow_index() -> ToolChunk:
        """Index the folder (slow)."""
        started.append(True)
        await asyncio.sleep(30)
        return ToolChunk(content=[TextBlock(text="indexed")], state=ToolResultState.SUCCESS)

    agent = Agent(
        name="runner",
        system_prompt="s",
        model=ScriptedChatModel([Turn("Indexing.", [tool_call("slow_index", id="slow")])], on_exhausted="raise"),
        toolkit=Toolkit(tools=[FunctionTool(slow_index, is_read_only=True)]),
    )

    async def scenario() -> None:
        session = Session(agent, display=True)
        task = session.start("Index.")
        run = session.current
        await wait_until(lambda: started, "the slow tool to start")
        sent = widget_replies(run.widget)
        click(run.widget, {"action": "interrupt"}, sent)
        await wait_until(lambda: len(sent) == 1, "the interrupt to be answered")
        assert sent[-1]["ok"] is True
        await asyncio.wait_for(task, 10)  # ends within seconds, not after the tool's 30 s
        assert run.status == "interrupted" and run.widget.status == "interrupted"
        assert [e.get("state") for e in run.transcript if e["kind"] == "tool_result"] == ["interrupted"]

    run_async(scenario())
    assert assert_every_call_has_one_result(agent)["slow"].state == ToolResultState.INTERRUPTED


# ------------------------------------------------------ dangling tool calls
def _crashed_state() -> str:
    """An ``AgentState`` saved while a tool ran: its call is ``allowed`` with no result."""
    snapshot: list[str] = []

    async def slow_index() -> ToolChunk:
        """Index the folder (slow)."""
        snapshot.append(agent.state.model_dump_json())  # the process "crashes" here
        await asyncio.sleep(30)
        return ToolChunk(content=[TextBlock(text="indexed")], state=ToolResultState.SUCCESS)

    agent = Agent(
        name="runner",
        system_prompt="s",
        model=ScriptedChatModel([Turn("Indexing.", [tool_call("slow_index", id="slow")])]),
        toolkit=Toolkit(tools=[FunctionTool(slow_index, is_read_only=True)]),
    )

    async def crash() -> None:
        task = asyncio.create_task(agent.reply(UserMsg(name="user", content="Index.")))
        await wait_until(lambda: snapshot, "the tool to start")
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, Exception):
            pass

    run_async(crash())
    return snapshot[0]


def _restored_agent(state_json: str, seen: list[Any]) -> Agent:
    def look(msgs: list[Any]) -> Turn:
        seen.append([m.model_copy(deep=True) for m in msgs])
        return Turn("Continuing.")

    async def slow_index() -> ToolChunk:
        """Index the folder (slow)."""
        return ToolChunk(content=[TextBlock(text="indexed")], state=ToolResultState.SUCCESS)

    return Agent(
        name="runner",
        system_prompt="s",
        model=ScriptedChatModel([look]),
        toolkit=Toolkit(tools=[FunctionTool(slow_index, is_read_only=True)]),
        state=AgentState.model_validate_json(state_json),
    )


def _model_saw(msgs: list[Any], call_id: str) -> tuple[bool, list[ToolResultBlock]]:
    has_call = any(
        isinstance(b, ToolCallBlock) and b.id == call_id
        for m in msgs
        if not isinstance(m.content, str)
        for b in m.content
    )
    results = [
        b
        for m in msgs
        if not isinstance(m.content, str)
        for b in m.content
        if isinstance(b, ToolResultBlock) and b.id == call_id
    ]
    return has_call, results


def test_dangling_allowed_call_is_closed_before_new_input() -> None:
    state_json = _crashed_state()
    state = AgentState.model_validate_json(state_json)
    last = state.context[-1]
    assert [(b.id, getattr(b.state, "value", b.state)) for b in last.get_content_blocks("tool_call")] == [
        ("slow", "allowed")
    ]
    assert last.get_content_blocks("tool_result") == []
    assert not state.has_awaiting_tool_calls("runner")  # AgentScope sees nothing waiting

    # what AgentScope alone does with it: the model gets a call without a result
    raw_seen: list[Any] = []
    raw = _restored_agent(state_json, raw_seen)
    run_async(raw.reply(UserMsg(name="user", content="Go on.")))
    assert _model_saw(raw_seen[0], "slow") == (True, [])

    # through the Session: the call is closed `interrupted` before the new message
    seen: list[Any] = []
    agent = _restored_agent(state_json, seen)

    async def scenario() -> None:
        session = Session(agent, display=False)
        final = await asyncio.wait_for(session.run("Go on."), 10)
        assert final.get_text_content() == "Continuing."

    run_async(scenario())
    has_call, results = _model_saw(seen[0], "slow")
    assert has_call and len(results) == 1 and results[0].state == ToolResultState.INTERRUPTED
    assert "interrupted" in result_text(results[0])
    assert assert_every_call_has_one_result(agent)["slow"].state == ToolResultState.INTERRUPTED


def test_dangling_allowed_call_is_closed_on_restore(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "ckpt")
    store.save("crashed", "runner", _crashed_state())
    seen: list[Any] = []
    session = Session.restore(lambda state: _restored_agent(state.model_dump_json(), seen), store, display=False)
    assert session.session_id == "crashed"
    assert assert_every_call_has_one_result(session.agent)["slow"].state == ToolResultState.INTERRUPTED
    run_async(asyncio.wait_for(session.run("Go on."), 10))
    has_call, results = _model_saw(seen[0], "slow")
    assert has_call and [r.state for r in results] == [ToolResultState.INTERRUPTED]


def test_restore_keeps_a_pending_call_of_a_parked_reply(tmp_path: Path) -> None:
    """Not every call without a result is dangling: while the reply is parked,
    AgentScope keeps a call ``pending`` on purpose (here: de-duplicated in a
    concurrent batch) and asks it once the first is answered. A restore must
    not close it."""
    box = make_sandbox(tmp_path / "box")
    ckpt = tmp_path / "ckpt"

    def script() -> list[Any]:
        return [
            Turn(
                "",
                [
                    tool_call("delete_file", id="d1", path="notes.txt"),
                    tool_call("delete_file", id="d2", path="draft.md"),
                ],
            ),
            lambda msgs: Turn(" | ".join(f"{r.id}={getattr(r.state, 'value', r.state)}" for r in tool_results(msgs))),
        ]

    agent = delete_agent(box, script())

    async def first_kernel() -> None:
        session = Session(agent, display=False, checkpoints=str(ckpt), session_id="s1")
        session.start("Delete two.")
        assert [p.tool_call_id for p in await parked(session)] == ["d1"]

    run_async(first_kernel())
    states = {b.id: getattr(b.state, "value", b.state) for b in agent.state.context[-1].get_content_blocks("tool_call")}
    assert states == {"d1": "asking", "d2": "pending"}
    assert close_dangling_tool_calls(agent) == []

    async def second_kernel() -> str:
        session = Session.restore(lambda state: delete_agent(box, script()[1:], state=state), str(ckpt), display=False)
        restored = {
            b.id: getattr(b.state, "value", b.state)
            for b in session.agent.state.context[-1].get_content_blocks("tool_call")
        }
        assert restored == {"d1": "asking", "d2": "pending"}
        task = session.start_resume()
        assert [p.tool_call_id for p in await parked(session)] == ["d1"]
        await session.act({"action": "approve", "tool_call_id": "d1"})
        assert [p.tool_call_id for p in await parked(session, resumes=1)] == ["d2"]
        await session.act({"action": "deny", "tool_call_id": "d2"})
        return (await asyncio.wait_for(task, 10)).get_text_content()

    assert run_async(second_kernel()) == "d1=success | d2=denied"
    assert not (box / "notes.txt").exists() and (box / "draft.md").exists()
