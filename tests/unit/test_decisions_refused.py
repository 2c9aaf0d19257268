"""decide() refusing what does not fit (the wrong action for the kind, unknown ids, bad shapes), the permission re-check of an edit, and C05 / C08 through a Session with a real Agent."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import ToolResultState
from agentscope.permission import (
    PermissionBehavior,
    PermissionContext,
    PermissionEngine,
    PermissionRule,
)
from agentscope.tool import AskUser, AskUserMetadata, Toolkit, Write

from nb_hitl import Session
from nb_hitl.decisions import decide, recheck_permission
from nb_hitl.demo import make_sandbox, sandbox_tools
from nb_hitl.errors import DecisionError
from nb_hitl.messages import parse_message
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from tests.support import run_async, wait_until
from tests.unit.test_decisions import (  # helpers shared with that module
    ask_pause,
    confirm_pause,
    external_pause,
    msg,
    refused,
)


# ---------------------------------------------------------------------------
# wrong action for the kind (C06-like), unknown ids, shapes
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "action, payload", [("external_result", {"output": "x"}), ("answer", {"answers": []}), ("return_error", {})]
)
def test_external_actions_on_a_confirmation_refused(action: str, payload: dict[str, Any]) -> None:
    pause = confirm_pause()
    err = refused(pause, msg(pause, action, **payload))
    assert err.field == "action" and "waits for a confirmation" in str(err)


@pytest.mark.parametrize("action, payload", [("approve", {}), ("deny", {}), ("modify", {"input": "{}"})])
def test_confirm_actions_on_external_calls_refused(action: str, payload: dict[str, Any]) -> None:
    for pause in (ask_pause(), external_pause()):
        err = refused(pause, msg(pause, action, **payload))
        assert err.field == "action" and "waits for an external result" in str(err)


def test_unknown_tool_call_id_refused() -> None:
    pause = confirm_pause()
    err = refused(pause, {**msg(pause, "approve"), "tool_call_id": "call_other"})
    assert err.field == "tool_call_id" and "call_other" in str(err)


@pytest.mark.parametrize(
    "message, field",
    [
        ({"action": "launch", "tool_call_id": "call_del"}, None),
        ({"tool_call_id": "call_del"}, None),
        ({"action": "approve"}, "tool_call_id"),
        ({"action": "approve", "tool_call_id": ""}, "tool_call_id"),
        ({"action": "approve", "tool_call_id": 7}, "tool_call_id"),
        ({"action": "approve", "tool_call_id": "x" * 513}, "tool_call_id"),
        ({"action": "approve", "tool_call_id": "call_del", "reply_id": 3}, "reply_id"),
        ({"action": "modify", "tool_call_id": "call_del"}, "input"),
    ],
)
def test_bad_shapes_refused(message: dict[str, Any], field: str | None) -> None:
    with pytest.raises(DecisionError) as info:
        parse_message(message)
    assert info.value.field == field
    with pytest.raises(DecisionError):
        decide(confirm_pause(), message)


@pytest.mark.parametrize("message", [None, "approve", ["approve"], 3])
def test_non_object_refused(message: Any) -> None:
    with pytest.raises(DecisionError, match="JSON object"):
        decide(confirm_pause(), message)


# ---------------------------------------------------------------------------
# the permission re-check of an edit (C05 b), without an agent
# ---------------------------------------------------------------------------
def test_C05b_recheck_permission_names_the_deny_rule(tmp_path: Path) -> None:
    secret = f"{tmp_path}/secret/*"
    engine = PermissionEngine(PermissionContext())
    engine.add_rule(
        PermissionRule(tool_name="Write", rule_content=secret, behavior=PermissionBehavior.DENY, source="test")
    )
    write = Write()
    ok = run_async(recheck_permission(engine, write, {"file_path": f"{tmp_path}/out.txt", "content": "x"}))
    assert ok.behavior == PermissionBehavior.ASK
    with pytest.raises(DecisionError) as info:
        run_async(recheck_permission(engine, write, {"file_path": f"{tmp_path}/secret/key", "content": "x"}))
    assert info.value.field == "input"
    assert f"deny Write({secret})" in str(info.value)


# ---------------------------------------------------------------------------
# C05 and C08 through a Session with a real Agent
# ---------------------------------------------------------------------------
def _open(session: Session, kind: str) -> Any:
    return next((p for p in session.pending if p.kind == kind), None)


def test_C05_refused_edits_never_resume_the_agent(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    model = ScriptedChatModel(
        [
            Turn("Deleting notes.", [tool_call("delete_file", path="notes.txt")]),
            lambda msgs: Turn("Result: " + result_text(tool_results(msgs, "delete_file")[-1])),
        ],
        on_exhausted="raise",
    )
    agent = Agent(name="c05", system_prompt="tidy", model=model, toolkit=Toolkit(tools=sandbox_tools(folder)))

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("delete notes.txt")
        pause = await wait_until(lambda: _open(session, "confirm"), "the confirmation")
        await wait_until(lambda: session.current.status == "paused", "the reply to park")
        calls_before = len(model.calls)
        base = {"tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id}
        attempts = [
            ({"action": "modify", "input": '{"path": "draft.md"}', "name": "list_files"}, "name", "cannot be changed"),
            ({"action": "modify", "input": '{"path": ["draft.md"]}'}, "input.path", "is not of type 'string'"),
            ({"action": "modify", "input": '{"path": "draft.md",}'}, "input", "(line 1, column 21)"),
        ]
        for payload, field, words in attempts:
            with pytest.raises(DecisionError) as info:
                result = session.act({**base, **payload})
                if asyncio.iscoroutine(result):
                    await result
            assert info.value.field == field and words in str(info.value)
            assert pause.status == "open"
        await asyncio.sleep(0.05)
        assert len(model.calls) == calls_before
        assert session.current.resumes == 0 and session.current.status == "paused"
        assert sorted(p.name for p in folder.iterdir()) == ["draft.md", "notes.txt", "old_log.txt"]
        # the pause is still live: a valid edit now goes through, exactly once
        out = await session.act({**base, "action": "modify", "input": '{"path": "draft.md"}'})
        assert out["decision"]["edited_input"] == {"path": "draft.md"}
        final = await asyncio.wait_for(task, 10)
        assert final.get_text_content() == "Result: Deleted draft.md."
        assert session.current.resumes == 1
        assert sorted(p.name for p in folder.iterdir()) == ["notes.txt", "old_log.txt"]

    run_async(scenario())


def test_C05b_deny_rule_edit_refused_through_session(tmp_path: Path) -> None:
    ok_path = f"{tmp_path}/out.txt"
    secret_rule = f"{tmp_path}/secret/*"
    model = ScriptedChatModel(
        [
            Turn("Writing a file.", [tool_call("Write", file_path=ok_path, content="hello")]),
            lambda msgs: Turn("Write said: " + str(tool_results(msgs, "Write")[-1].state)),
        ],
        on_exhausted="raise",
    )
    agent = Agent(name="c05b", system_prompt="write", model=model, toolkit=Toolkit(tools=[Write()]))
    agent._engine.add_rule(
        PermissionRule(tool_name="Write", rule_content=secret_rule, behavior=PermissionBehavior.DENY, source="policy")
    )
    (tmp_path / "secret").mkdir()

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("write it")
        pause = await wait_until(lambda: _open(session, "confirm"), "the Write confirmation")
        await wait_until(lambda: session.current.status == "paused", "the reply to park")
        calls_before = len(model.calls)
        edited = json.dumps({"file_path": f"{tmp_path}/secret/key.txt", "content": "hello"})
        with pytest.raises(DecisionError) as info:
            await session.act({"action": "modify", "tool_call_id": pause.tool_call_id, "input": edited})
        assert info.value.field == "input"
        assert f"deny Write({secret_rule})" in str(info.value)
        assert pause.status == "open"  # back to open, still answerable
        await asyncio.sleep(0.05)
        assert len(model.calls) == calls_before and session.current.resumes == 0
        assert not (tmp_path / "secret" / "key.txt").exists() and not Path(ok_path).exists()
        # a denial closes it; the secret file was never written
        await session.act({"action": "deny", "tool_call_id": pause.tool_call_id})
        final = await asyncio.wait_for(task, 10)
        assert final.get_text_content() == "Write said: denied"
        assert not (tmp_path / "secret" / "key.txt").exists()

    run_async(scenario())


def test_C08_ask_user_single_select_through_session(tmp_path: Path) -> None:
    question = {
        "question": "Keep or drop the log?",
        "header": "Log",
        "options": [{"label": "keep", "description": "leave it"}, {"label": "drop", "description": "delete it"}],
    }
    model = ScriptedChatModel(
        [
            Turn("One question.", [tool_call("AskUser", questions=[question])]),
            lambda msgs: Turn("You said: " + result_text(tool_results(msgs, "AskUser")[-1])),
        ],
        on_exhausted="raise",
    )
    agent = Agent(name="c08", system_prompt="ask", model=model, toolkit=Toolkit(tools=[AskUser()]))

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("ask me")
        pause = await wait_until(lambda: _open(session, "ask_user"), "the AskUser pause")
        assert pause.ask_user.questions[0].multi_select is False
        base = {"action": "answer", "tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id}
        with pytest.raises(DecisionError) as info:
            session.act({**base, "answers": [{"question": question["question"], "selected": ["keep", "drop"]}]})
        assert info.value.field == "answers.0.selected"
        assert pause.status == "open"
        await session.act({**base, "answers": [{"question": question["question"], "selected": ["drop"]}]})
        final = await asyncio.wait_for(task, 10)
        assert final.get_text_content() == 'You said: The user answered:\n- "Keep or drop the log?" -> drop'
        # the answer is kept in the history's metadata, what the model saw is the text
        seen = tool_results(model.calls[-1], "AskUser")[-1]
        assert seen.state == ToolResultState.SUCCESS
        assert AskUserMetadata.model_validate(seen.metadata).answers[0].selected == ["drop"]
        assert session.current.resumes == 1

    run_async(scenario())


@pytest.mark.parametrize(
    ("message", "said"),
    [
        ({"action": "modify", "input": "x" * 1_000_001}, "The edited input is too long: 1,000,001 characters"),
        ({"action": "deny", "reason": "y" * 20_001}, "The reason is too long: 20,001 characters"),
    ],
)
def test_a_text_past_its_limit_is_refused_in_a_persons_words(message: dict[str, Any], said: str) -> None:
    """pydantic's "String should have at most 1000000 characters" is not what the card says."""
    with pytest.raises(DecisionError) as err:
        parse_message({"tool_call_id": "c1", **message})
    assert str(err.value).startswith(said), str(err.value)
    assert "Nothing reached the agent; shorten it in the card." in str(err.value)
    assert err.value.field == next(k for k in message if k != "action")
