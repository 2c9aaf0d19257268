"""Stale widgets, new messages while parked, interrupts and dangling tool calls.

Cases C01 and C07 of the field cases, the widget's Interrupt
action on a parked and on a running reply, and a tool call left ``allowed``
without a result (a crash mid-tool, then a restored state).

AgentScope 2.0.11 facts these rest on (``agentscope/agent/_agent.py``):

* a new ``Msg`` while parked raises a bare ``ValueError``
  (``_check_incoming_event``); ``UserInterruptEvent`` first closes every open
  call ``interrupted`` and ends the reply (``_reply_impl``);
* cancelling the task consuming ``reply_stream`` mid-tool ends the reply
  ``interrupted``;
* a restored state with an ``allowed`` call and no result accepts a new
  message and sends the model a call without a result;
* while a reply is parked, a ``pending`` call is *meant* to wait
  (``_next_action``: "PENDING ones are blocked (e.g. deduplicated in a batch)").

Every click goes through the widget's comm handler
(``RequestWidget._on_page_message``) with its replies captured.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import TextBlock, ToolCallBlock, ToolResultBlock, ToolResultState
from agentscope.state import AgentState
from agentscope.tool import FunctionTool, ToolChunk, Toolkit

from nb_hitl import PauseNotLiveError, PendingPauseError, Session
from nb_hitl.demo import make_sandbox
from nb_hitl.models import ScriptedChatModel, Turn, tool_call, tool_results
from nb_hitl.store import AuditLog
from tests.support import InputRecorder, run_async, wait_until, widget_replies
from tests.support import parked as _parked
from tests.support_agents import sandbox_agent


# ---------------------------------------------------------------- helpers
async def parked(session: Session, resumes: int = 0) -> list[Any]:
    """:func:`tests.support.parked`, its wait named "a parked reply"."""
    return await _parked(session, resumes, what="a parked reply")


def click(widget: Any, message: dict[str, Any], sent: list[dict[str, Any]]) -> None:
    """What a click in the page does: one custom comm message to the widget."""
    widget._on_page_message(widget, {"request_id": f"r{len(sent)}-{message.get('action')}", **message}, [])


def delete_agent(
    box: Path, script: list[Any], recorder: InputRecorder | None = None, state: AgentState | None = None
) -> Agent:
    return sandbox_agent(box, script, name="tidy", recorder=recorder, state=state)


def calls_and_results(agent: Agent) -> tuple[list[ToolCallBlock], dict[str, list[ToolResultBlock]]]:
    calls: list[ToolCallBlock] = []
    results: dict[str, list[ToolResultBlock]] = {}
    for m in agent.state.context:
        if isinstance(m.content, str):
            continue
        for b in m.content:
            if isinstance(b, ToolCallBlock):
                calls.append(b)
            elif isinstance(b, ToolResultBlock):
                results.setdefault(b.id, []).append(b)
    return calls, results


def assert_every_call_has_one_result(agent: Agent) -> dict[str, ToolResultBlock]:
    calls, results = calls_and_results(agent)
    for c in calls:
        assert len(results.get(c.id, [])) == 1, f"{c.id} has {len(results.get(c.id, []))} results"
    return {k: v[0] for k, v in results.items()}


def ask_then_delete(path: str = "notes.txt", call_id: str = "del_1") -> Turn:
    return Turn("Deleting.", [tool_call("delete_file", id=call_id, path=path)])


# ------------------------------------------------------------------- C01
def test_C01_new_prompt_with_interrupt_pending_expires_the_old_widget(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path / "box")
    recorder = InputRecorder()
    agent = delete_agent(box, [ask_then_delete(), Turn("Fine, something else then.")], recorder)
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> None:
        session = Session(agent, display=True, audit_log=str(audit))
        session.start("Delete notes.")
        await parked(session)
        old_run = session.current
        old = old_run.widget
        sent = widget_replies(old)

        new_task = session.start("Actually, do something else.", interrupt_pending=True)
        await wait_until(lambda: old_run.status == "interrupted", "the old reply interrupted")
        # the old widget is visibly expired, with a reason
        assert old.status == "interrupted"
        assert old.status_reason == "Interrupted: a new message was sent to the agent."
        assert [(p["status"], p["reason"]) for p in old.pauses] == [
            ("expired", "Interrupted: a new message was sent to the agent.")
        ]
        final = await asyncio.wait_for(new_task, 10)
        assert final.get_text_content() == "Fine, something else then."

        runs_before, inputs_before, calls_before = len(session.runs), len(recorder.inputs), len(agent.model.calls)
        state_before = agent.state.model_dump_json()
        for action in (
            {"action": "approve", "tool_call_id": "del_1"},
            {"action": "deny", "tool_call_id": "del_1"},
            {"action": "interrupt"},
        ):
            click(old, action, sent)
        await asyncio.sleep(0.05)
        assert [s["ok"] for s in sent] == [False, False, False]
        assert [s["code"] for s in sent] == ["expired", "expired", "expired"]
        assert "no longer live" in sent[0]["error"] and "a new message was sent" in sent[0]["error"]
        assert "already interrupted" in sent[2]["error"]
        # no new run from the clicks, nothing reached the agent, nothing recorded as decided
        assert len(session.runs) == runs_before and len(recorder.inputs) == inputs_before
        assert len(agent.model.calls) == calls_before and agent.state.model_dump_json() == state_before
        assert (box / "notes.txt").exists()
        # on the record: the interrupt closed the pause with no answer; the late clicks add nothing
        assert [(r["decision"], r["decided_by"], r["reason"]) for r in AuditLog(audit).records("answered")] == [
            ("expired", "nb_hitl", "Interrupted: a new message was sent to the agent.")
        ]

    run_async(scenario())
    assert [type(i).__name__ for i in recorder.inputs] == ["Msg", "UserInterruptEvent", "Msg"]
    results = assert_every_call_has_one_result(agent)
    assert results["del_1"].state == ToolResultState.INTERRUPTED


def test_C01_a_new_session_for_the_agent_expires_the_old_widget(tmp_path: Path) -> None:
    """Re-running the cell that made the Session: the old widget expires, its
    clicks are refused, nothing reaches the agent and the new Session adopts
    the still parked reply."""
    box = make_sandbox(tmp_path / "box")
    recorder = InputRecorder()
    agent = delete_agent(box, [ask_then_delete(), Turn("Deleted, as approved in the new widget.")], recorder)

    async def scenario() -> None:
        first = Session(agent, display=True)
        first.start("Delete notes.")
        await parked(first)
        old_run = first.current
        old = old_run.widget
        sent = widget_replies(old)

        second = Session(agent, display=True)
        await wait_until(lambda: old_run.task.done(), "the old driving task to stop")
        assert old_run.status == "expired" and old.status == "expired"
        assert old.status_reason == "Superseded by a newer Session for this agent."
        assert [p["status"] for p in old.pauses] == ["expired"]

        click(old, {"action": "approve", "tool_call_id": "del_1"}, sent)
        click(old, {"action": "interrupt"}, sent)
        with pytest.raises(PauseNotLiveError, match="superseded"):
            first.start("again")
        with pytest.raises(PauseNotLiveError):
            first.act({"action": "approve", "tool_call_id": "del_1"})
        await asyncio.sleep(0.05)
        assert [(s["ok"], s["code"]) for s in sent] == [(False, "expired"), (False, "expired")]
        assert "Superseded" in sent[0]["error"]
        assert len(recorder.inputs) == 1 and len(agent.model.calls) == 1
        assert second.runs == [] and len(first.runs) == 1
        assert [tc.id for tc in agent.state.get_awaiting_tool_calls(agent.name)] == ["del_1"]
        assert (box / "notes.txt").exists()

        # the new Session picks the parked reply up from the agent's state
        task = second.start_resume()
        pauses = await parked(second)
        assert [p.tool_call_id for p in pauses] == ["del_1"]
        await second.act({"action": "approve", "tool_call_id": "del_1"})
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert not (box / "notes.txt").exists()
    assert [type(i).__name__ for i in recorder.inputs] == ["Msg", "UserConfirmResultEvent"]


# ------------------------------------------------------------------- C07
def test_C07_new_message_while_parked_is_refused_naming_the_pause(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path / "box")
    recorder = InputRecorder()
    agent = delete_agent(box, [ask_then_delete(), Turn("done")], recorder)

    async def scenario() -> None:
        session = Session(agent, display=True)
        task = session.start("Delete notes.")
        await parked(session)
        state = agent.state.model_dump_json()
        with pytest.raises(PendingPauseError) as err:
            session.start("Something else.")
        assert not isinstance(err.value, ValueError)  # never AgentScope's raw ValueError
        # named by its tool and input, never by its call id
        assert 'is still waiting on delete_file (path="notes.txt").' in str(err.value), str(err.value)
        assert "del_1" not in str(err.value) and "interrupt_pending=True" in str(err.value)
        with pytest.raises(PendingPauseError):
            await session.run("Something else.")
        # nothing changed: same run, same live pause, agent untouched
        assert len(session.runs) == 1 and agent.state.model_dump_json() == state
        assert session.current.pauses["del_1"].status == "open"
        assert len(recorder.inputs) == 1
        await session.act({"action": "approve", "tool_call_id": "del_1"})
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert not (box / "notes.txt").exists()


def test_C07_interrupt_pending_interrupts_the_parked_reply_first(tmp_path: Path) -> None:
    """A reply parked on two calls (AskUser + confirmation); the new message
    interrupts it with ``UserInterruptEvent``: both calls end ``interrupted``,
    the widget says so, and the new reply runs."""
    box = make_sandbox(tmp_path / "box")
    recorder = InputRecorder()
    seen: list[Any] = []

    def answer(msgs: list[Any]) -> Turn:
        seen.append([(r.id, getattr(r.state, "value", r.state)) for r in tool_results(msgs)])
        return Turn("OK, new topic.")

    q = {
        "question": "Really?",
        "header": "Check",
        "options": [{"label": "Yes", "description": "y"}, {"label": "No", "description": "n"}],
    }
    agent = delete_agent(
        box,
        [
            Turn(
                "",
                [tool_call("AskUser", id="ask", questions=[q]), tool_call("delete_file", id="del", path="notes.txt")],
            ),
            answer,
        ],
        recorder,
    )

    old_reply_ids: list[str] = []

    async def scenario() -> None:
        session = Session(agent, display=True)
        session.start("Delete notes.")
        assert sorted(p.tool_call_id for p in await parked(session)) == ["ask", "del"]
        old = session.current
        old_reply_ids.append(old.reply_id)
        final = await asyncio.wait_for(session.start("New topic.", interrupt_pending=True), 10)
        assert final.get_text_content() == "OK, new topic."
        assert old.status == "interrupted" and old.widget.status == "interrupted"
        assert {p["tool_call_id"]: p["status"] for p in old.widget.pauses} == {"ask": "expired", "del": "expired"}
        assert session.current is not old and session.current.status == "finished"

    run_async(scenario())
    kinds = [type(i).__name__ for i in recorder.inputs]
    assert kinds == ["Msg", "UserInterruptEvent", "Msg"]
    assert recorder.inputs[1].reply_id == old_reply_ids[0]
    assert sorted(seen[0]) == [("ask", "interrupted"), ("del", "interrupted")]
    assert_every_call_has_one_result(agent)
    assert (box / "notes.txt").exists()


def test_C07_new_message_while_a_reply_runs(tmp_path: Path) -> None:
    """Not parked but running (a slow tool): refused by default; with
    ``interrupt_pending=True`` the running reply is cancelled, ends
    ``interrupted``, and the new one runs."""

    async def slow_index() -> ToolChunk:
        """Index the folder (slow)."""
        await asyncio.sleep(30)
        return ToolChunk(content=[TextBlock(text="indexed")], state=ToolResultState.SUCCESS)

    agent = Agent(
        name="runner",
        system_prompt="s",
        model=ScriptedChatModel(
            [Turn("Indexing.", [tool_call("slow_index", id="slow")]), Turn("Stopped; new topic.")], on_exhausted="raise"
        ),
        toolkit=Toolkit(tools=[FunctionTool(slow_index, is_read_only=True)]),
    )

    async def scenario() -> None:
        session = Session(agent, display=True)
        session.start("Index.")
        run = session.current
        await wait_until(lambda: any(e.get("kind") == "tool_result" for e in run.transcript), "the slow tool to start")
        assert run.status == "running"
        with pytest.raises(PendingPauseError, match="running reply"):
            session.start("Other.")
        final = await asyncio.wait_for(session.start("Other.", interrupt_pending=True), 10)
        assert final.get_text_content() == "Stopped; new topic."
        assert run.status == "interrupted" and run.widget.status == "interrupted"

    run_async(scenario())
    results = assert_every_call_has_one_result(agent)
    assert results["slow"].state == ToolResultState.INTERRUPTED


def test_C01_a_new_session_while_a_reply_runs_never_overlaps_two_replies() -> None:
    """Re-running the Session cell while the reply is *running* (a slow tool)
    and sending a message at once: the old reply is cancelled (AgentScope
    closes its running call ``interrupted``), and the new reply only starts
    once the old one has unwound, so the call gets exactly one result."""
    started: list[bool] = []

    async def slow_index() -> ToolChunk:
        """Index the folder (slow)."""
        started.append(True)
        await asyncio.sleep(30)
        return ToolChunk(content=[TextBlock(text="indexed")], state=ToolResultState.SUCCESS)

    recorder = InputRecorder()
    agent = Agent(
        name="runner",
        system_prompt="s",
        model=ScriptedChatModel(
            [Turn("Indexing.", [tool_call("slow_index", id="slow")]), Turn("Next topic.")], on_exhausted="raise"
        ),
        toolkit=Toolkit(tools=[FunctionTool(slow_index, is_read_only=True)]),
        middlewares=[recorder],
    )

    async def scenario() -> None:
        first = Session(agent, display=True)
        first.start("Index.")
        old_run = first.current
        await wait_until(lambda: started, "the slow tool to start")
        second = Session(agent, display=True)
        final = await asyncio.wait_for(second.start("Next."), 10)
        assert final.get_text_content() == "Next topic."
        assert old_run.status in ("interrupted", "expired") and not old_run.live
        assert old_run.widget.status == old_run.status

    run_async(scenario())
    assert [type(i).__name__ for i in recorder.inputs] == ["Msg", "Msg"]
    assert assert_every_call_has_one_result(agent)["slow"].state == ToolResultState.INTERRUPTED
