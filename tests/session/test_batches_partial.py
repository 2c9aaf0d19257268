"""Batches answered in part (the others stay open, from the agent's state) and C06: wrong decisions refused while the pause stays live (real Agents on the scripted model)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agentscope.message import ToolResultState

from nb_hitl import DecisionError, PauseNotLiveError, Session
from nb_hitl.demo import make_sandbox
from nb_hitl.models import Turn, tool_call
from nb_hitl.store import AuditLog
from tests.session.test_batches import (  # helpers shared with that module
    assert_every_call_has_one_result,
    file_tools,
    make_agent,
    three_kinds,
)
from tests.support import InputRecorder, parked, run_async, widget_replies


# --------------------------------------------------------- partial answers
def test_partial_answers_group_keeps_the_others_open_from_agent_state(tmp_path: Path) -> None:
    """A confirmation, an AskUser and an external call in one reply. Answer
    them one by one: after each partial answer AgentScope re-sends no event,
    yet the group shows exactly the calls the agent's state still awaits; a
    new Session adopting the reply (no events at all) shows the same."""
    box = make_sandbox(tmp_path / "box")
    recorder = InputRecorder()
    agent = three_kinds(box, recorder, "Three things.")

    def awaiting() -> list[str]:
        return sorted(tc.id for tc in agent.state.get_awaiting_tool_calls(agent.name))

    async def scenario() -> None:
        session = Session(agent, display=True)
        session.start("Do three things.")
        pauses = await parked(session)
        assert sorted(p.tool_call_id for p in pauses) == awaiting() == ["c1", "q1", "x1"]
        assert {p.tool_call_id: p.kind for p in pauses} == {"c1": "confirm", "q1": "ask_user", "x1": "external"}
        widget = session.current.widget
        events_before = len(recorder.inputs)

        await session.act(
            {
                "action": "answer",
                "tool_call_id": "q1",
                "answers": [{"question": "Keep the draft?", "selected": ["Yes"]}],
            }
        )
        left = await parked(session, resumes=1)
        assert sorted(p.tool_call_id for p in left) == awaiting() == ["c1", "x1"]
        assert {p["tool_call_id"]: p["status"] for p in widget.pauses} == {
            "c1": "open",
            "q1": "delivered",
            "x1": "open",
        }
        assert len(agent.model.calls) == 1

        # a re-run cell makes a new Session: it adopts the parked reply from the
        # agent's state alone and shows the same open calls
        adopter = Session(agent, display=True)
        assert session.superseded_by is adopter
        task2 = adopter.start_resume()
        adopted = await parked(adopter)
        assert sorted(p.tool_call_id for p in adopted) == awaiting() == ["c1", "x1"]
        with pytest.raises(PauseNotLiveError):
            session.act({"action": "approve", "tool_call_id": "c1"})

        await adopter.act({"action": "approve", "tool_call_id": "c1"})
        left = await parked(adopter, resumes=1)
        assert [p.tool_call_id for p in left] == awaiting() == ["x1"]
        assert not (box / "notes.txt").exists()
        await adopter.act({"action": "external_result", "tool_call_id": "x1", "output": "tidy: arranged neatly"})
        final = await asyncio.wait_for(task2, 10)
        assert "x1=success:tidy: arranged neatly" in final.get_text_content()
        assert len(recorder.inputs) - events_before == 3  # one resume per decision, nothing more

    run_async(scenario())
    results = assert_every_call_has_one_result(agent)
    assert {k: v.state for k, v in results.items()} == {
        "c1": ToolResultState.SUCCESS,
        "q1": ToolResultState.SUCCESS,
        "x1": ToolResultState.SUCCESS,
    }


# ------------------------------------------------------------------- C06
def test_C06_wrong_decisions_are_refused_and_the_pause_stays_live(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path / "box")
    recorder = InputRecorder()
    agent = three_kinds(box, recorder)
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> None:
        session = Session(agent, display=True, audit_log=str(audit))
        task = session.start("Do three things.")
        pauses = await parked(session)
        reply_id = pauses[0].reply_id
        assert reply_id == agent.state.reply_id
        widget = session.current.widget
        sent = widget_replies(widget)
        snapshot = agent.state.model_dump_json()

        wrong = [
            # an external result for a call waiting for confirmation
            ({"action": "external_result", "tool_call_id": "c1", "output": "I ran it myself"}, "action"),
            (
                {
                    "action": "answer",
                    "tool_call_id": "c1",
                    "answers": [{"question": "Keep the draft?", "selected": ["Yes"]}],
                },
                "action",
            ),
            # a confirmation for an external call / an AskUser
            ({"action": "approve", "tool_call_id": "x1"}, "action"),
            ({"action": "deny", "tool_call_id": "q1"}, "action"),
            # an external result for an AskUser
            ({"action": "external_result", "tool_call_id": "q1", "output": "Yes"}, "action"),
            # ids the reply does not have
            ({"action": "approve", "tool_call_id": "call_not_in_this_reply"}, "tool_call_id"),
            ({"action": "external_result", "tool_call_id": "nope", "output": "x"}, "tool_call_id"),
            ({"action": "approve", "tool_call_id": ""}, "tool_call_id"),
            ({"action": "approve"}, "tool_call_id"),
            # the right id under the wrong reply_id (AgentScope does not check it)
            ({"action": "approve", "tool_call_id": "c1", "reply_id": "another-reply"}, "reply_id"),
            (
                {"action": "external_result", "tool_call_id": "x1", "reply_id": reply_id + "x", "output": "x"},
                "reply_id",
            ),
        ]
        for i, (message, field) in enumerate(wrong):
            widget._on_page_message(widget, {"request_id": f"w{i}", **message}, [])
            with pytest.raises(DecisionError) as err:
                session.act(message)
            assert err.value.field == field, (message, err.value)
        await asyncio.sleep(0.05)
        assert [s["request_id"] for s in sent] == [f"w{i}" for i in range(len(wrong))]
        for s, (message, field) in zip(sent, wrong, strict=True):
            assert s["ok"] is False and s["code"] == "invalid" and s["field"] == field, (message, s)
            assert s["error"]
        # the messages are clear about what is wrong
        assert "waits for a confirmation" in sent[0]["error"]
        assert "no open tool call 'call_not_in_this_reply'" in sent[5]["error"]
        assert "another-reply" in sent[9]["error"] and reply_id in sent[9]["error"]

        # nothing reached the agent; every pause is still live
        assert agent.state.model_dump_json() == snapshot
        assert len(recorder.inputs) == 1 and session.current.resumes == 0 and len(agent.model.calls) == 1
        assert session.current.status == "paused"
        assert [p.status for p in session.current.pauses.values()] == ["open", "open", "open"]
        assert [p["status"] for p in widget.pauses] == ["open", "open", "open"]
        assert not audit.exists() or AuditLog(audit).records("answered") == []

        # and the right decisions still work
        await session.act({"action": "approve", "tool_call_id": "c1", "reply_id": reply_id})
        await session.act(
            {
                "action": "answer",
                "tool_call_id": "q1",
                "reply_id": reply_id,
                "answers": [{"question": "Keep the draft?", "selected": ["No"]}],
            }
        )
        await session.act({"action": "external_result", "tool_call_id": "x1", "reply_id": reply_id, "output": "ok"})
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    results = assert_every_call_has_one_result(agent)
    assert all(r.state == ToolResultState.SUCCESS for r in results.values())
    assert sorted(r["tool_call_id"] for r in AuditLog(audit).records("answered")) == ["c1", "q1", "x1"]


def test_C06_tool_call_of_a_finished_reply_is_refused_on_the_next_one(tmp_path: Path) -> None:
    """An id that belonged to the previous reply is not a call of this one."""
    box = make_sandbox(tmp_path / "box")
    agent = make_agent(
        [
            Turn("", [tool_call("delete_file", id="old", path="notes.txt")]),
            Turn("first done"),
            Turn("", [tool_call("delete_file", id="new", path="draft.md")]),
            Turn("second done"),
        ],
        file_tools(box),
    )

    async def scenario() -> None:
        session = Session(agent, display=True)
        task = session.start("one")
        await parked(session)
        old_run = session.current
        await session.act({"action": "deny", "tool_call_id": "old"})
        await asyncio.wait_for(task, 10)
        task = session.start("two")
        await parked(session)
        with pytest.raises(DecisionError, match="no open tool call 'old'"):
            session.act({"action": "approve", "tool_call_id": "old"})
        # and the old widget refuses too: its reply finished
        with pytest.raises(PauseNotLiveError):
            session.desk.on_action(old_run, {"action": "interrupt"})
        from nb_hitl import AlreadyDecidedError

        with pytest.raises(AlreadyDecidedError):
            session.desk.on_action(old_run, {"action": "approve", "tool_call_id": "old"})
        assert session.current.pauses["new"].status == "open"
        await session.act({"action": "approve", "tool_call_id": "new"})
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert (box / "notes.txt").exists() and not (box / "draft.md").exists()
    assert_every_call_has_one_result(agent)
