"""The model hears the truth about what a person did (or did not do).

Real agents on :class:`~nb_hitl.models.ScriptedChatModel`; what is checked is
what the model was sent next (``ScriptedChatModel.calls``), the agent's
history, the audit log and the transcript the person sees.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agentscope.agent import Agent
from agentscope.message import ToolResultState

from nb_hitl import Session
from nb_hitl.demo import make_sandbox
from nb_hitl.kinds import kind_spec
from nb_hitl.models import Turn, result_text, tool_call, tool_results
from nb_hitl.store import AuditLog
from tests.support import parked_on, run_async
from tests.support_agents import sandbox_agent


def delete_agent(folder: Path) -> Agent:
    return sandbox_agent(
        folder, [Turn("Deleting.", [tool_call("delete_file", id="call_del", path="old_log.txt")]), Turn("ok")]
    )


def told(agent: Agent) -> Any:
    """The delete_file result the model read in its last call."""
    results = tool_results(agent.model.calls[-1], "delete_file")
    assert len(results) == 1
    return results[0]


def hints(agent: Agent) -> list[str]:
    """nb_hitl's ``HintBlock`` texts the model read in its last call (AgentScope sends hints as user messages)."""
    out = []
    for m in agent.model.calls[-1]:
        if not isinstance(m.content, str):
            out.extend(str(b.hint) for b in m.content if getattr(b, "type", None) == "hint" and b.source == "nb_hitl")
    return out


def base(pause: Any) -> dict[str, Any]:
    return {"tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id}


def run_with(folder: Path, decide: Any, **session_kw: Any) -> tuple[Agent, Session]:
    agent = delete_agent(folder)

    async def scenario() -> Session:
        session = Session(agent, display=False, **session_kw)
        task = session.start("tidy")
        pause = await parked_on(session, "confirm")
        await decide(session, pause)
        await asyncio.wait_for(task, 10)
        return session

    return agent, run_async(scenario())


def audit_rows(path: Path) -> list[dict[str, Any]]:
    return [r for r in AuditLog(path).records("answered") if r.get("tool_call_id") == "call_del"]


# ---------------------------------------------------------------------------
def test_C16_after_modify_the_model_reads_that_a_person_changed_the_call(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")

    async def modify(session: Session, pause: Any) -> None:
        await session.act({**base(pause), "action": "modify", "input": '{"path": "draft.md"}'})

    agent, session = run_with(folder, modify)
    result = told(agent)
    assert result.state == ToolResultState.SUCCESS and result_text(result) == "Deleted draft.md."
    # a hint right before the next model call, after the round's results
    (hint,) = hints(agent)
    assert hint.startswith("A person edited your tool call. You asked for delete_file(")
    assert 'delete_file({"path": "old_log.txt"})' in hint and 'delete_file({"path": "draft.md"})' in hint
    last = agent.model.calls[-1][-1]
    assert [getattr(b, "type", None) for b in last.content][-2:] == ["tool_result", "hint"]
    # the history keeps it (later model calls read it too), and the person sees it
    entry = next(e for e in session.runs[-1].transcript if e["kind"] == "tool_result")
    assert entry["text"] == "Deleted draft.md.\n\n" + hint
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt", "old_log.txt"]


def test_deny_with_a_reason_the_model_reads_it_in_the_result_and_the_audit_keeps_it(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    audit = tmp_path / "audit.jsonl"

    async def deny(session: Session, pause: Any) -> None:
        out = await session.act({**base(pause), "action": "deny", "reason": "Keep the logs until Friday."})
        assert out["decision"]["note"].endswith("saying: Keep the logs until Friday.")

    agent, session = run_with(folder, deny, audit_log=str(audit))
    result = told(agent)
    assert result.state == ToolResultState.DENIED
    # the ToolResultBlock says who denied the call and why, instead of AgentScope's bare "denied by user!"
    told_text = "The user denied your call to delete_file, saying: Keep the logs until Friday."
    assert result_text(result) == told_text
    assert hints(agent) == []
    entry = next(e for e in session.runs[-1].transcript if e["kind"] == "tool_result")
    assert entry["text"] == told_text
    (row,) = [r for r in audit_rows(audit) if r["decision"] == "deny"]
    assert row["reason"] == "Keep the logs until Friday." and row["confirmed"] is False
    assert "old_log.txt" in [p.name for p in folder.iterdir()]


def test_deny_without_a_reason_keeps_agentscopes_text_and_the_transcript_has_no_reminder_tags(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")

    async def deny(session: Session, pause: Any) -> None:
        await session.act({**base(pause), "action": "deny"})

    agent, session = run_with(folder, deny)
    assert (
        result_text(told(agent))
        == '<system-reminder>The execution of tool "delete_file" is denied by user!</system-reminder>'
    )
    assert hints(agent) == []
    entry = next(e for e in session.runs[-1].transcript if e["kind"] == "tool_result")
    assert entry["text"] == 'The execution of tool "delete_file" is denied by user!'
    assert entry["state"] == "denied"


def test_C17_a_deadline_is_not_reported_as_the_users_denial(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    audit = tmp_path / "audit.jsonl"

    async def wait(session: Session, pause: Any) -> None:
        return None  # nobody answers: the deadline decides

    agent, session = run_with(folder, wait, deadline=0.3, audit_log=str(audit))
    result = told(agent)
    text = result_text(result)
    assert "nobody answered the confirmation before the deadline" in text
    assert "denied by user" not in text and "The user did not deny it" in text
    assert [r["decision"] for r in audit_rows(audit)] == ["timeout"]
    assert session.runs[-1].pauses["call_del"].decision == {"action": "timeout", "applied": "denied"}
    entry = next(e for e in session.runs[-1].transcript if e["kind"] == "tool_result")
    assert "nobody answered" in entry["text"] and "denied by user" not in entry["text"]


def test_C17_an_agui_cancelled_entry_is_not_reported_as_the_users_denial(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    audit = tmp_path / "audit.jsonl"

    async def cancel(session: Session, pause: Any) -> None:
        out = await session.act(kind_spec("confirm").cancel_message(pause))
        assert out["decision"]["cause"] == "cancelled"

    agent, _ = run_with(folder, cancel, audit_log=str(audit))
    text = result_text(told(agent))
    assert "cancelled without an answer" in text and "The user did not deny it" in text
    assert "denied by user" not in text
    assert [r["decision"] for r in audit_rows(audit)] == ["cancelled"]
    assert "old_log.txt" in [p.name for p in folder.iterdir()]


def test_notes_survive_in_the_history_for_later_model_calls(tmp_path: Path) -> None:
    """The note is in the agent's history (a HintBlock after the result), not only in one model call."""
    folder = make_sandbox(tmp_path / "box")

    async def modify(session: Session, pause: Any) -> None:
        await session.act({**base(pause), "action": "modify", "input": '{"path": "draft.md"}'})

    agent, _ = run_with(folder, modify)
    saved = [b for m in agent.state.context if not isinstance(m.content, str) for b in m.content]
    ours = [b for b in saved if b.type == "tool_result" or (b.type == "hint" and b.source == "nb_hitl")]
    assert [b.type for b in ours] == ["tool_result", "hint"]
    assert str(ours[1].hint).startswith("A person edited your tool call. You asked for")
    assert json.loads(agent.state.model_dump_json())["middle_context"].get("nb_hitl.notes") == {}


def test_a_modify_that_changes_nothing_is_refused_and_the_model_is_not_told_of_an_edit(tmp_path: Path) -> None:
    """Modify pressed with the input as it was (or rewritten as the same value: ``1250`` for
    ``1250.0``) is not an edit: the model must not read that a person changed its call, and the
    audit log must not record a ``modify``. The card says why; Approve then runs the call."""
    from nb_hitl import DecisionError

    folder = make_sandbox(tmp_path / "box")
    audit = tmp_path / "audit.jsonl"
    refused: list[str] = []

    async def modify_unchanged(session: Session, pause: Any) -> None:
        for same in ('{"path": "old_log.txt"}', '{ "path" : "old_log.txt" }'):
            try:
                await session.act({**base(pause), "action": "modify", "input": same})
            except DecisionError as exc:
                assert exc.field == "input"
                refused.append(str(exc))
        assert pause.status == "open"
        await session.act({**base(pause), "action": "approve"})

    agent, _ = run_with(folder, modify_unchanged, audit_log=str(audit))
    assert len(refused) == 2 and refused[0].startswith("Your edit changes nothing: press Approve")
    assert hints(agent) == []  # no "A person edited your tool call" for an edit that changed nothing
    assert [r["decision"] for r in audit_rows(audit)] == ["approve"]
    assert "old_log.txt" not in [p.name for p in folder.iterdir()]


def test_an_unchanged_number_written_another_way_is_no_edit_but_another_value_is(tmp_path: Path) -> None:
    from agentscope.message import ToolCallBlock

    from nb_hitl.edit_preview import refuse_unchanged_edit
    from nb_hitl.errors import DecisionError
    from nb_hitl.pauses import Pause

    call = ToolCallBlock(id="call_pay", name="send_payment", input='{"to": "ACME", "amount": 1250.0}')
    pause = Pause(reply_id="r1", tool_call=call, kind="confirm")
    for same in ({"to": "ACME", "amount": 1250}, {"to": "ACME", "amount": 1250.0}):
        try:
            refuse_unchanged_edit(pause, same)
        except DecisionError:
            continue
        raise AssertionError(f"{same} was taken as an edit")
    for other in ({"to": "ACME", "amount": 125}, {"to": "ACME", "amount": True}, {"to": "ACMe", "amount": 1250}):
        assert refuse_unchanged_edit(pause, other) == other
