"""Pins for the fixes of the fresh-eyes review (commit "Fixes from a fresh-eyes pass").

In-process, around real AgentScope agents on
:class:`~nb_hitl.models.ScriptedChatModel`; each test fails on the code
before that commit:

1. ``await session.run(...)`` is shielded: cancelling the coroutine that
   awaits it (Kernel > Interrupt on the cell) leaves the reply parked and
   answerable. A driving task cancelled while the agent waits (not an
   interrupt) leaves the run ``expired`` with a pointer to
   ``session.resume()``, which re-shows the open pause.
2. Modify refuses a duplicate key and a key the tool's schema does not list
   (when the schema says nothing about ``additionalProperties``); a schema
   that allows more keys still takes them.
3. The demo agent runs the whole flow again in the same Session.
4. ScriptedChatModel never lets AgentScope compress the context (which
   would consume a scripted turn).
5. CheckpointStore reads create no folder; a corrupt file is named.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import TextBlock, ToolResultState
from agentscope.tool import FunctionTool, ToolChunk, Toolkit

from nb_hitl import PendingPauseError, Session
from nb_hitl.demo import demo_agent, sandbox_tools
from nb_hitl.errors import DecisionError
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from nb_hitl.store import CheckpointStore
from tests.support import run_async, wait_until, widget_replies

QUESTION = "Which file should I delete?"
PROMPT = "Please tidy up my sandbox folder."
EXHAUSTED = "(The scripted model has no more turns.)"


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_file())


async def open_pause(session: Session, kind: str) -> Any:
    """The open pause of ``kind`` of the current reply, once there is one.

    Fails at once (with what the reply did) if the reply ends instead.
    """

    def found() -> Any:
        run = session.current
        if run is None:
            return None
        if run.task is not None and run.task.done():
            return ("ended", run)
        if run.status == "paused":
            return next((p for p in run.open_pauses() if p.kind == kind), None)
        return None

    got = await wait_until(found, f"an open {kind} pause")
    if isinstance(got, tuple):
        run = got[1]
        raise AssertionError(
            f"the reply ended ({run.status}: {run.reason!r}) instead of asking ({kind}); "
            f"final text: {run.final.get_text_content() if run.final else None!r}"
        )
    return got


def click(widget: Any, sent: list[dict[str, Any]], message: dict[str, Any]) -> None:
    """Send one page message to the widget, as the page's ``model.send`` does."""
    widget._on_page_message(widget, {"request_id": f"r{len(sent)}-{message['action']}", **message}, [])


def answer(pause: Any, choice: str) -> dict[str, Any]:
    return {
        "action": "answer",
        "tool_call_id": pause.tool_call_id,
        "reply_id": pause.reply_id,
        "answers": [{"question": QUESTION, "selected": [choice], "other": None}],
    }


# ---------------------------------------------------------------------------
# 1. run() is shielded; a cancelled driver leaves a resumable reply
# ---------------------------------------------------------------------------
def test_cancelling_the_cell_awaiting_run_leaves_the_reply_parked_and_answerable(tmp_path: Path) -> None:
    agent = demo_agent(tmp_path / "box", chunk_delay=0)

    async def scenario() -> None:
        session = Session(agent, display=True)
        # the cell's coroutine: `await session.run(...)`
        cell = asyncio.get_running_loop().create_task(session.run(PROMPT))
        ask = await open_pause(session, "ask_user")
        run = session.current
        widget = run.widget

        cell.cancel()  # what Kernel > Interrupt does to the cell
        with pytest.raises(asyncio.CancelledError):
            await cell
        # the reply goes on waiting: not cancelled, still parked, pause open
        assert run.task is not None and not run.task.done()
        assert run.status == "paused" and run.live
        assert [p.tool_call_id for p in run.open_pauses()] == [ask.tool_call_id]
        assert widget.status == "paused"
        assert [(p["tool_call_id"], p["status"]) for p in widget.pauses] == [(ask.tool_call_id, "open")]

        # and answerable from its widget, to the end of the reply
        sent = widget_replies(widget)
        click(widget, sent, answer(ask, "old_log.txt"))
        await wait_until(lambda: len(sent) == 1, "the answer's reply")
        assert sent[0]["ok"] is True, sent
        confirm = await open_pause(session, "confirm")
        assert session.current is run and confirm.input == {"path": "old_log.txt"}
        click(widget, sent, {"action": "approve", "tool_call_id": confirm.tool_call_id, "reply_id": confirm.reply_id})
        final = await asyncio.wait_for(run.task, 10)
        assert sent[1]["ok"] is True, sent
        assert final.get_text_content() == "Done. Deleted old_log.txt. The folder now holds: draft.md, notes.txt."
        assert run.status == "finished" and widget.status == "finished"
        assert [p["status"] for p in widget.pauses] == ["delivered", "delivered"]

    run_async(scenario())
    assert files(agent.sandbox) == ["draft.md", "notes.txt"]


def test_cancelled_driving_task_expires_the_run_and_resume_shows_the_pause_again(tmp_path: Path) -> None:
    agent = demo_agent(tmp_path / "box", chunk_delay=0)

    async def scenario() -> None:
        session = Session(agent, display=True)
        task = session.start(PROMPT)
        ask = await open_pause(session, "ask_user")
        old = session.current

        task.cancel()  # the driving task itself (not an interrupt)
        with pytest.raises(asyncio.CancelledError):
            await task
        assert old.status == "expired"
        assert "session.resume()" in old.reason
        assert old.widget.status == "expired" and "session.resume()" in old.widget.status_reason
        assert [p["status"] for p in old.widget.pauses] == ["expired"]
        # the agent itself still waits on the AskUser call
        assert [tc.id for tc in session.parked_tool_calls()] == [ask.tool_call_id]

        # a new message is refused, and says how to get the pause back
        with pytest.raises(PendingPauseError) as refused:
            session.start("Something else, please.")
        assert "`await session.resume()`" in str(refused.value)
        # the call by what it asks, never its internal id
        assert "AskUser (Which file should I delete?)" in str(refused.value)
        assert ask.tool_call_id not in str(refused.value)
        assert len(session.runs) == 1  # no run was started by the refused message

        resumed = asyncio.get_running_loop().create_task(session.resume())
        await wait_until(lambda: session.current is not old, "the resumed run")
        again = await open_pause(session, "ask_user")
        new = session.current
        assert new is not old and again.tool_call_id == ask.tool_call_id
        assert [q.question for q in again.ask_user.questions] == [QUESTION]
        assert [(p["tool_call_id"], p["status"]) for p in new.widget.pauses] == [(ask.tool_call_id, "open")]

        await session.act(answer(again, "notes.txt"))
        confirm = await open_pause(session, "confirm")
        assert confirm.input == {"path": "notes.txt"}
        await session.act({"action": "approve", "tool_call_id": confirm.tool_call_id})
        final = await asyncio.wait_for(resumed, 10)
        assert final.get_text_content() == "Done. Deleted notes.txt. The folder now holds: draft.md, old_log.txt."
        assert new.status == "finished" and old.status == "expired"

    run_async(scenario())
    assert files(agent.sandbox) == ["draft.md", "old_log.txt"]


# ---------------------------------------------------------------------------
# 2. Modify: duplicate keys and keys the schema does not list
# ---------------------------------------------------------------------------
def test_modify_refuses_a_duplicate_key_and_an_unlisted_key(tmp_path: Path) -> None:
    box = tmp_path / "box"
    agent = demo_agent(box, chunk_delay=0)
    # the demo's delete_file: properties listed, nothing said about additionalProperties
    schema = next(t for t in sandbox_tools(agent.sandbox) if t.name == "delete_file").input_schema
    assert "properties" in schema and "additionalProperties" not in schema

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start(PROMPT)
        await session.act(answer(await open_pause(session, "ask_user"), "old_log.txt"))
        confirm = await open_pause(session, "confirm")
        base = {"action": "modify", "tool_call_id": confirm.tool_call_id, "reply_id": confirm.reply_id}

        # json.loads would keep the last "path" silently and delete old_log.txt
        with pytest.raises(DecisionError) as dup:
            session.act({**base, "input": '{"path": "notes.txt", "path": "old_log.txt"}'})
        assert dup.value.field == "input" and "'path'" in str(dup.value) and "twice" in str(dup.value)

        # a key delete_file does not take (it would be passed as a keyword argument)
        with pytest.raises(DecisionError) as extra:
            session.act({**base, "input": '{"path": "x", "extra": 1}'})
        assert (
            extra.value.field == "input" and str(extra.value) == "The input has a field the tool does not take: extra."
        )

        # both refused: the pause is still open and nothing reached the agent
        assert confirm.status == "open" and session.current.resumes == 1
        assert files(agent.sandbox) == ["draft.md", "notes.txt", "old_log.txt"]
        await session.act({**base, "input": '{"path": "draft.md"}'})
        final = await asyncio.wait_for(task, 10)
        assert final.get_text_content() == "Done. Deleted draft.md. The folder now holds: notes.txt, old_log.txt."

    run_async(scenario())


def test_modify_accepts_extra_keys_when_the_schema_allows_them(tmp_path: Path) -> None:
    got: list[dict[str, Any]] = []

    def tag_file(path: str, **labels: Any) -> ToolChunk:
        """Tag a file with labels."""
        got.append({"path": path, **labels})
        return ToolChunk(
            content=[TextBlock(text=json.dumps({"path": path, **labels}, sort_keys=True))],
            state=ToolResultState.SUCCESS,
        )

    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": True,
    }
    agent = Agent(
        name="tagger",
        system_prompt="Tag files.",
        model=ScriptedChatModel(
            [
                Turn("", [tool_call("tag_file", id="tag", path="notes.txt")]),
                lambda msgs: Turn(result_text(tool_results(msgs, "tag_file")[-1])),
            ],
            on_exhausted="raise",
        ),
        toolkit=Toolkit(tools=[FunctionTool(tag_file, input_schema=schema)]),
    )

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("Tag my notes.")
        confirm = await open_pause(session, "confirm")
        assert confirm.input_schema["additionalProperties"] is True
        # still no duplicate keys, whatever the schema
        with pytest.raises(DecisionError, match="twice"):
            session.act({"action": "modify", "tool_call_id": "tag", "input": '{"path": "a", "path": "b"}'})
        out = await session.act(
            {"action": "modify", "tool_call_id": "tag", "input": '{"path": "notes.txt", "colour": "red"}'}
        )
        assert out["decision"]["edited_input"] == {"path": "notes.txt", "colour": "red"}
        final = await asyncio.wait_for(task, 10)
        assert json.loads(final.get_text_content()) == {"colour": "red", "path": "notes.txt"}

    run_async(scenario())
    assert got == [{"path": "notes.txt", "colour": "red"}]


# ---------------------------------------------------------------------------
# 3. The demo agent runs the whole flow twice in one Session
# ---------------------------------------------------------------------------
def test_demo_agent_runs_the_whole_flow_twice_in_one_session(tmp_path: Path) -> None:
    agent = demo_agent(tmp_path / "box", chunk_delay=0)
    finals: list[str] = []
    offered: list[list[str]] = []

    async def one_request(choice: str) -> None:
        calls_before = len(agent.model.calls)
        task = session.start(PROMPT)
        ask = await open_pause(session, "ask_user")
        offered.append([o.label for o in ask.ask_user.questions[0].options])
        # it listed the files again for this request (one model call, then the question)
        assert len(agent.model.calls) - calls_before == 2
        await session.act(answer(ask, choice))
        confirm = await open_pause(session, "confirm")
        assert confirm.input == {"path": choice}
        await session.act({"action": "approve", "tool_call_id": confirm.tool_call_id})
        final = await asyncio.wait_for(task, 10)
        finals.append(final.get_text_content())
        assert len(agent.model.calls) - calls_before == 4

    async def scenario() -> None:
        await one_request("old_log.txt")
        await one_request("draft.md")

    session = Session(agent, display=False)
    run_async(scenario())
    assert offered == [["draft.md", "notes.txt", "old_log.txt"], ["draft.md", "notes.txt"]]
    assert finals == [
        "Done. Deleted old_log.txt. The folder now holds: draft.md, notes.txt.",
        "Done. Deleted draft.md. The folder now holds: notes.txt.",
    ]
    assert files(agent.sandbox) == ["notes.txt"]
    assert [r.status for r in session.runs] == ["finished", "finished"]
    for run in session.runs:
        assert all(EXHAUSTED not in e.get("text", "") for e in run.transcript)
    # the second request's tool calls: listed, asked, deleted (in that order)
    history = [
        b.name
        for m in agent.state.context
        if not isinstance(m.content, str)
        for b in m.content
        if getattr(b, "type", None) == "tool_call"
    ]
    assert history == ["list_files", "AskUser", "delete_file"] * 2


# ---------------------------------------------------------------------------
# 4. ScriptedChatModel: no context compression, one model call per turn
# ---------------------------------------------------------------------------
def test_a_huge_tool_input_does_not_make_agentscope_compress_the_context(tmp_path: Path) -> None:
    # 100 000 characters; two UTF-8 bytes each, so AgentScope's estimate
    # (bytes / 4, ChatModelBase.count_tokens) is ~50 000 tokens: far above
    # 0.8 x 32 768 (ContextConfig.trigger_ratio x the base class's context_size)
    big = "é" * 100_000
    seen: list[int] = []

    def save_note(text: str) -> ToolChunk:
        """Save a note.

        Args:
            text (str): the note.
        """
        seen.append(len(text))
        return ToolChunk(content=[TextBlock(text=f"Saved {len(text)} characters.")], state=ToolResultState.SUCCESS)

    script = [
        Turn("Saving it.", [tool_call("save_note", text=big)]),
        lambda msgs: Turn("Done: " + result_text(tool_results(msgs, "save_note")[-1])),
    ]
    model = ScriptedChatModel(script, on_exhausted="raise")
    agent = Agent(
        name="noter",
        system_prompt="Save notes.",
        model=model,
        toolkit=Toolkit(tools=[FunctionTool(save_note, is_read_only=True)]),
    )
    estimated: list[int] = []

    async def scenario() -> None:
        session = Session(agent, display=False)
        final = await session.run("Save this long note.")
        assert final.get_text_content() == "Done: Saved 100000 characters."
        assert session.current.status == "finished"
        kwargs = await agent._prepare_model_input()
        estimated.append(await model.count_tokens(**kwargs))

    run_async(scenario())
    # the input is big enough that AgentScope's default context window would compress
    assert estimated[0] > agent.context_config.trigger_ratio * 32_768
    assert seen == [100_000]
    assert len(model.calls) == len(script) == 2  # no compression call ate a scripted turn
    assert model.remaining == 0
    assert not agent.state.summary
    assert EXHAUSTED not in json.dumps([m.get_text_content() for m in agent.state.context], ensure_ascii=False)


# ---------------------------------------------------------------------------
# 5. CheckpointStore: no folder created by reads; corrupt files named
# ---------------------------------------------------------------------------
def test_checkpoint_store_reads_do_not_create_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "nowhere" / "checkpoints"
    store = CheckpointStore(folder)
    assert not folder.exists()
    assert store.sessions() == []
    with pytest.raises(FileNotFoundError):
        store.load("session-x")
    assert not (tmp_path / "nowhere").exists()


def test_checkpoint_store_load_of_a_corrupt_file_names_it(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    bad = tmp_path / "torn.json"
    bad.write_text('{"session_id": "torn", "state": {"context"', encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(str(bad))):
        store.load("torn")
    stateless = tmp_path / "stateless.json"
    stateless.write_text(json.dumps({"session_id": "stateless", "agent_name": "tidy"}), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(str(stateless))) as exc:
        store.load("stateless")
    assert "state" in str(exc.value)
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(str(listed))):
        store.load("list")


@pytest.mark.parametrize("exists", [False, True], ids=["missing-folder", "empty-folder"])
def test_session_restore_without_a_checkpoint_raises_and_creates_nothing(tmp_path: Path, exists: bool) -> None:
    folder = tmp_path / "ckpts"
    if exists:
        folder.mkdir()
    built: list[Any] = []

    def factory(state: Any) -> Agent:
        built.append(state)
        return demo_agent(tmp_path / "box", chunk_delay=0, state=state)

    with pytest.raises(FileNotFoundError, match=re.escape(str(folder))):
        Session.restore(factory, str(folder), display=False)
    assert folder.exists() is exists
    if exists:
        assert list(folder.iterdir()) == []
    assert built == []


def test_checkpoints_are_still_written_into_a_missing_folder_and_restore(tmp_path: Path) -> None:
    """Saving still creates the folder (the fix moved ``mkdir`` from the
    constructor to :meth:`CheckpointStore.save`), and the checkpoint restores."""
    folder = tmp_path / "later" / "ckpts"
    agent = demo_agent(tmp_path / "box", chunk_delay=0)

    async def first() -> str:
        session = Session(agent, display=False, checkpoints=str(folder), session_id="tidy-1")
        assert not folder.exists()
        session.start(PROMPT)
        ask = await open_pause(session, "ask_user")
        return ask.tool_call_id

    ask_id = run_async(first())
    assert [p.name for p in folder.iterdir()] == ["tidy-1.json"]

    async def second() -> str:
        session = Session.restore(
            lambda state: demo_agent(agent.sandbox, chunk_delay=0, state=state), str(folder), display=False
        )
        assert session.session_id == "tidy-1"
        task = session.start_resume()
        ask = await open_pause(session, "ask_user")
        assert ask.tool_call_id == ask_id
        await session.act(answer(ask, "draft.md"))
        confirm = await open_pause(session, "confirm")
        await session.act({"action": "deny", "tool_call_id": confirm.tool_call_id})
        return (await asyncio.wait_for(task, 10)).get_text_content()

    assert run_async(second()).startswith("Understood: you denied the deletion")
    assert files(agent.sandbox) == ["draft.md", "notes.txt", "old_log.txt"]
