"""A reply parked on several calls at once: batches, partial answers, wrong decisions.

Cases C03, C04 and C06 of the field cases, plus the two
AgentScope 2.0.11 behaviours a batch depends on (``agentscope/agent/_agent.py``):

* after a partial answer the reply parks again and **no event is re-sent**
  for the calls left open, so the open calls must come from
  ``AgentState.get_awaiting_tool_calls``;
* a second call of the same tool is asked only after the first is answered
  (a sequential batch stops at the first ASK; a concurrent batch leaves a call
  covered by an earlier call's suggested rule ``pending``).

Every agent is a real ``agentscope.agent.Agent`` on
:class:`~nb_hitl.models.ScriptedChatModel`; decisions go through the same
handler a click reaches (``Session.act`` or the widget's comm handler).
Resumes are counted by a real AgentScope ``MiddlewareBase.on_reply``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import TextBlock, ToolCallBlock, ToolResultBlock, ToolResultState
from agentscope.tool import AskUser, FunctionTool, ToolChunk

from nb_hitl import Session
from nb_hitl.demo import make_sandbox
from nb_hitl.models import Turn, result_text, tool_call, tool_results
from nb_hitl.store import AuditLog
from tests.support import InputRecorder, parked, run_async, wait_until, widget_replies
from tests.support_agents import Lookup, scripted_agent


# ---------------------------------------------------------------- helpers
def file_tools(box: Path, *, concurrent: bool = True) -> list[Any]:
    """``delete_file`` and ``archive_file`` over ``box`` (both ask: not read-only)."""

    def delete_file(path: str) -> ToolChunk:
        """Delete one file.

        Args:
            path (str): file name inside the folder.
        """
        (box / path).unlink()
        return ToolChunk(content=[TextBlock(text=f"Deleted {path}.")], state=ToolResultState.SUCCESS)

    def archive_file(path: str) -> ToolChunk:
        """Move one file into the archive/ subfolder.

        Args:
            path (str): file name inside the folder.
        """
        (box / "archive").mkdir(exist_ok=True)
        (box / path).rename(box / "archive" / path)
        return ToolChunk(content=[TextBlock(text=f"Archived {path}.")], state=ToolResultState.SUCCESS)

    return [
        FunctionTool(delete_file, is_concurrency_safe=concurrent),
        FunctionTool(archive_file, is_concurrency_safe=concurrent),
    ]


def make_agent(script: list[Any], tools: list[Any], recorder: InputRecorder | None = None) -> Agent:
    return scripted_agent(script, tools, name="batcher", system_prompt="Work through the batch.", recorder=recorder)


def delete_and_archive(box: Path, say: str = "", recorder: InputRecorder | None = None) -> Agent:
    """One reply asks to confirm ``del`` (delete notes.txt) and ``arc`` (archive draft.md) at once."""
    batch = [tool_call("delete_file", id="del", path="notes.txt"), tool_call("archive_file", id="arc", path="draft.md")]
    return make_agent([Turn(say, batch), report], file_tools(box), recorder)


def delete_twice(box: Path, *, concurrent: bool) -> Agent:
    """One reply calls ``delete_file`` twice: ``d1`` (notes.txt) and ``d2`` (draft.md)."""
    batch = [tool_call("delete_file", id="d1", path="notes.txt"), tool_call("delete_file", id="d2", path="draft.md")]
    return make_agent([Turn("", batch), report], file_tools(box, concurrent=concurrent))


def three_kinds(box: Path, recorder: InputRecorder, say: str = "") -> Agent:
    """One reply parked on a confirmation ``c1``, an AskUser ``q1`` and an external call ``x1``."""
    batch = [
        tool_call("delete_file", id="c1", path="notes.txt"),
        tool_call("AskUser", id="q1", questions=[question("Keep the draft?", ["Yes", "No"])]),
        tool_call("lookup", id="x1", word="tidy"),
    ]
    return make_agent([Turn(say, batch), report], [*file_tools(box), AskUser(), Lookup()], recorder)


def history_calls_and_results(agent: Agent) -> tuple[list[ToolCallBlock], list[ToolResultBlock]]:
    calls, results = [], []
    for m in agent.state.context:
        if isinstance(m.content, str):
            continue
        calls.extend(b for b in m.content if isinstance(b, ToolCallBlock))
        results.extend(b for b in m.content if isinstance(b, ToolResultBlock))
    return calls, results


def assert_every_call_has_one_result(agent: Agent) -> dict[str, ToolResultBlock]:
    calls, results = history_calls_and_results(agent)
    by_id: dict[str, list[ToolResultBlock]] = {}
    for r in results:
        by_id.setdefault(r.id, []).append(r)
    for c in calls:
        assert len(by_id.get(c.id, [])) == 1, f"tool call {c.id} ({c.name}) has {len(by_id.get(c.id, []))} results"
    assert set(by_id) == {c.id for c in calls}
    return {k: v[0] for k, v in by_id.items()}


def report(msgs: list[Any]) -> Turn:
    return Turn(" | ".join(f"{r.id}={getattr(r.state, 'value', r.state)}:{result_text(r)}" for r in tool_results(msgs)))


def question(text: str, labels: list[str], header: str = "Pick") -> dict[str, Any]:
    return {
        "question": text,
        "header": header,
        "options": [{"label": label, "description": f"option {label}"} for label in labels],
    }


# ------------------------------------------------------------------- C03
@pytest.mark.parametrize("timing", ["one_at_a_time", "both_before_resume"])
def test_C03_two_askuser_calls_keep_their_answers_apart(tmp_path: Path, timing: str) -> None:
    """Two AskUser calls in one reply, with the *same* question text and options
    (the hardest case: nothing but the tool_call id tells them apart)."""
    seen: list[list[tuple[str, str, Any]]] = []

    def final(msgs: list[Any]) -> Turn:
        seen.append([(r.id, result_text(r), r.metadata) for r in tool_results(msgs, "AskUser")])
        return Turn("thanks")

    same = question("Which letter?", ["A", "B"])
    recorder = InputRecorder()
    agent = make_agent(
        [
            Turn(
                "Two questions.",
                [
                    tool_call("AskUser", id="ask_1", questions=[same]),
                    tool_call("AskUser", id="ask_2", questions=[same]),
                ],
            ),
            final,
        ],
        [AskUser()],
        recorder,
    )
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> None:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("Ask me twice.")
        pauses = await parked(session)
        assert [(p.tool_call_id, p.kind) for p in pauses] == [("ask_1", "ask_user"), ("ask_2", "ask_user")]
        first = {
            "action": "answer",
            "tool_call_id": "ask_1",
            "answers": [{"question": "Which letter?", "selected": ["A"]}],
        }
        second = {
            "action": "answer",
            "tool_call_id": "ask_2",
            "answers": [{"question": "Which letter?", "selected": ["B"]}],
        }
        if timing == "one_at_a_time":
            await session.act(first)
            still = await parked(session, resumes=1)
            # partial answer: the other call stays open, as the agent's state says
            assert [p.tool_call_id for p in still] == ["ask_2"]
            assert [tc.id for tc in agent.state.get_awaiting_tool_calls(agent.name)] == ["ask_2"]
            assert len(agent.model.calls) == 1  # the model waits for every answer
            await session.act(second)
        else:
            await asyncio.gather(session.act(first), session.act(second))
        final_msg = await asyncio.wait_for(task, 10)
        assert final_msg.get_text_content() == "thanks"

    run_async(scenario())

    # what the model saw, by tool_call id
    assert len(seen) == 1
    by_id = {i: (text, meta) for i, text, meta in seen[0]}
    assert by_id["ask_1"][0].endswith('"Which letter?" -> A')
    assert by_id["ask_2"][0].endswith('"Which letter?" -> B')
    assert by_id["ask_1"][1] == {"answers": [{"question": "Which letter?", "selected": ["A"], "other": None}]}
    assert by_id["ask_2"][1] == {"answers": [{"question": "Which letter?", "selected": ["B"], "other": None}]}
    results = assert_every_call_has_one_result(agent)
    assert results["ask_1"].state == ToolResultState.SUCCESS and results["ask_2"].state == ToolResultState.SUCCESS
    # one audit line per answer, on its own id
    lines = [(r["tool_call_id"], r["answers"][0]["selected"]) for r in AuditLog(audit).records("answered")]
    assert sorted(lines) == [("ask_1", ["A"]), ("ask_2", ["B"])]
    # resumed once per event: the first Msg, then one ExternalExecutionResultEvent per batch sent
    kinds = recorder.kinds()
    assert kinds[0] == "Msg" and set(kinds[1:]) == {"ExternalExecutionResultEvent"}
    sent_ids = [[r.id for r in ev.execution_results] for ev in recorder.inputs[1:]]
    assert sorted(i for ids in sent_ids for i in ids) == ["ask_1", "ask_2"]


# ------------------------------------------------------------------- C04
@pytest.mark.parametrize("order", ["deny_then_approve", "approve_then_deny"])
def test_C04_deny_first_approve_second(tmp_path: Path, order: str) -> None:
    box = make_sandbox(tmp_path / "box")
    recorder = InputRecorder()
    agent = delete_and_archive(box, "Cleaning up.", recorder)

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("Tidy up.")
        pauses = await parked(session)
        # one reply asks to confirm both calls at once (concurrent batch, two tools)
        assert [(p.tool_call_id, p.kind) for p in pauses] == [("del", "confirm"), ("arc", "confirm")]
        if order == "deny_then_approve":
            await session.act({"action": "deny", "tool_call_id": "del"})
            left = await parked(session, resumes=1)
            assert [p.tool_call_id for p in left] == ["arc"]
            assert (box / "notes.txt").exists() and (box / "draft.md").exists()
            await session.act({"action": "approve", "tool_call_id": "arc"})
        else:
            await session.act({"action": "approve", "tool_call_id": "arc"})
            left = await parked(session, resumes=1)
            assert [p.tool_call_id for p in left] == ["del"]
            assert (box / "archive" / "draft.md").exists()  # approved call already ran
            await session.act({"action": "deny", "tool_call_id": "del"})
        final = await asyncio.wait_for(task, 10)
        assert session.current.status == "finished" and session.current.resumes == 2
        text = final.get_text_content()
        assert "del=denied" in text and "arc=success:Archived draft.md." in text

    run_async(scenario())
    assert (box / "notes.txt").exists(), "the denied deletion must not run"
    assert (box / "archive" / "draft.md").exists() and not (box / "draft.md").exists()
    results = assert_every_call_has_one_result(agent)
    assert results["del"].state == ToolResultState.DENIED
    assert results["arc"].state == ToolResultState.SUCCESS
    # each confirmation reached the agent in its own event, exactly once
    confirms = [[(c.tool_call.id, c.confirmed) for c in ev.confirm_results] for ev in recorder.inputs[1:]]
    assert sorted(x for ids in confirms for x in ids) == [("arc", True), ("del", False)]


def test_C04_both_decided_before_the_agent_resumes(tmp_path: Path) -> None:
    """ "Submit all": both decisions land before the driving task wakes; each
    reaches the agent once and every call gets a result."""
    box = make_sandbox(tmp_path / "box")
    recorder = InputRecorder()
    agent = delete_and_archive(box, recorder=recorder)

    async def scenario() -> None:
        session = Session(agent, display=True)
        task = session.start("Tidy up.")
        await parked(session)
        widget = session.current.widget
        sent = widget_replies(widget)
        widget._on_page_message(widget, {"request_id": "r1", "action": "deny", "tool_call_id": "del"}, [])
        widget._on_page_message(widget, {"request_id": "r2", "action": "approve", "tool_call_id": "arc"}, [])
        await wait_until(lambda: len(sent) == 2, "two replies")
        assert {s["request_id"]: s["ok"] for s in sent} == {"r1": True, "r2": True}
        await asyncio.wait_for(task, 10)
        run = session.current
        assert run.resumes == len(recorder.inputs) - 1
        assert [p["status"] for p in widget.pauses] == ["delivered", "delivered"]

    run_async(scenario())
    results = assert_every_call_has_one_result(agent)
    assert results["del"].state == ToolResultState.DENIED and results["arc"].state == ToolResultState.SUCCESS
    assert (box / "notes.txt").exists() and (box / "archive" / "draft.md").exists()


# ---------------------------------------------- same tool asked twice
def test_same_tool_twice_sequential_second_asked_after_first_answered(tmp_path: Path) -> None:
    """A tool that is not concurrency-safe: AgentScope's sequential batch stops
    at the first ASK; the second call is asked in the resumed stream."""
    box = make_sandbox(tmp_path / "box")
    agent = delete_twice(box, concurrent=False)

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("Delete two files.")
        first = await parked(session)
        assert [p.tool_call_id for p in first] == ["d1"]
        assert "d2" not in session.current.pauses
        await session.act({"action": "approve", "tool_call_id": "d1"})
        second = await parked(session, resumes=1)
        assert [p.tool_call_id for p in second] == ["d2"]
        assert not (box / "notes.txt").exists() and (box / "draft.md").exists()
        await session.act({"action": "approve", "tool_call_id": "d2"})
        await asyncio.wait_for(task, 10)
        assert session.current.resumes == 2

    run_async(scenario())
    assert not (box / "notes.txt").exists() and not (box / "draft.md").exists()
    results = assert_every_call_has_one_result(agent)
    assert {k: v.state for k, v in results.items()} == {"d1": ToolResultState.SUCCESS, "d2": ToolResultState.SUCCESS}


@pytest.mark.parametrize("accept_rule", [False, True])
def test_same_tool_twice_concurrent_dedup(tmp_path: Path, accept_rule: bool) -> None:
    """A concurrency-safe tool: AgentScope asks the first call only and leaves
    the second ``pending`` (covered by the first's suggested rule). Approving
    without the rule asks the second; accepting the rule runs it unasked."""
    box = make_sandbox(tmp_path / "box")
    agent = delete_twice(box, concurrent=True)

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("Delete two files.")
        first = await parked(session)
        assert [p.tool_call_id for p in first] == ["d1"]
        states = {
            b.id: getattr(b.state, "value", b.state) for b in agent.state.context[-1].get_content_blocks("tool_call")
        }
        assert states == {"d1": "asking", "d2": "pending"}
        await session.act({"action": "approve", "tool_call_id": "d1", "rules": [0] if accept_rule else []})
        if not accept_rule:
            second = await parked(session, resumes=1)
            assert [p.tool_call_id for p in second] == ["d2"]
            await session.act({"action": "approve", "tool_call_id": "d2"})
        await asyncio.wait_for(task, 10)
        assert session.current.resumes == (1 if accept_rule else 2)
        assert list(session.current.pauses) == (["d1"] if accept_rule else ["d1", "d2"])

    run_async(scenario())
    assert not (box / "notes.txt").exists() and not (box / "draft.md").exists()
    assert_every_call_has_one_result(agent)
