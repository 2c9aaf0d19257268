"""See what you approve: a file edit's card shows its diff, and the approval is bound to the file seen (C42).

Real ``agentscope.agent.Agent``s on :class:`~nb_hitl.models.ScriptedChatModel`
with AgentScope's own ``Read``, ``Write`` and ``Edit`` tools on a temporary
workspace; decisions go through ``Session.act`` (the path of a click). What is
checked is the diff on the pause, what is on disk, and what the model read next.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.tool import Edit, Read, ToolMiddlewareBase, Write

from nb_hitl import Session
from nb_hitl.agui.mapping import interrupt_view, pause_to_interrupt
from nb_hitl.audit import audit_frame, replay
from nb_hitl.audit.charts import call_outcomes
from nb_hitl.models import Turn, result_text, tool_call, tool_results
from nb_hitl.store import AuditLog
from tests.support import parked, parked_on, run_async
from tests.support_agents import scripted_agent


def msg(pause: Any, action: str, **extra: Any) -> dict[str, Any]:
    return {"action": action, "tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id, **extra}


def file_agent(calls: list[Any]) -> Agent:
    """An agent that makes ``calls`` (one turn each), then says what the results were."""
    script: list[Any] = [Turn("Working.", tool_calls=[c]) for c in calls]
    script.append(lambda msgs: Turn("done: " + " | ".join(result_text(r) for r in tool_results(msgs))))
    return scripted_agent(script, [Read(), Write(), Edit()], name="editor")


def hints(agent: Agent) -> list[str]:
    """nb_hitl's ``HintBlock`` texts the model read in its last call."""
    return [
        str(b.hint)
        for m in agent.model.calls[-1]
        if not isinstance(m.content, str)
        for b in m.content
        if getattr(b, "type", None) == "hint" and b.source == "nb_hitl"
    ]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


TEN = "".join(f"line {i}\n" for i in range(1, 11))


@pytest.mark.parametrize(
    ("before", "call", "diff", "note"),
    [
        pytest.param(None, {"content": "a\nb\n"}, "--- /dev/null\n+++ {p}\n@@ -0,0 +1,2 @@\n+a\n+b\n", None, id="new"),
        pytest.param(
            TEN,
            {"old_string": "line 5\n", "new_string": "line five\n"},
            "--- {p}\n+++ {p}\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n"
            " line 6\n line 7\n line 8\n",
            None,
            id="edit-middle",
        ),
        pytest.param(
            "old\ntext\n",
            {"content": "new\n"},
            "--- {p}\n+++ {p}\n@@ -1,2 +1 @@\n-old\n-text\n+new\n",
            None,
            id="rewrite",
        ),
        pytest.param(
            "café\n",
            {"old_string": "café", "new_string": "naïve ☕"},
            "--- {p}\n+++ {p}\n@@ -1 +1 @@\n-café\n+naïve ☕\n",
            None,
            id="unicode",
        ),
        pytest.param(
            "one\r\ntwo\r\n",
            {"old_string": "two", "new_string": "2"},
            "--- {p}\n+++ {p}\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n",
            "Line endings change from CRLF to LF",
            id="crlf",
        ),
        pytest.param(
            "end",
            {"content": "end\nmore"},
            "--- {p}\n+++ {p}\n@@ -1 +1,2 @@\n-end\n\\ No newline at end of file\n+end\n+more\n"
            "\\ No newline at end of file\n",
            None,
            id="no-trailing-newline",
        ),
    ],
)
def test_the_diff_on_the_pause(tmp_path: Path, before: str | None, call: dict[str, Any], diff: str, note: Any) -> None:
    """The card's diff is the file now against the file as the call would leave it."""
    path = tmp_path / "f.txt"
    if before is not None:
        path.write_bytes(before.encode("utf-8"))
    tool = "Write" if "content" in call else "Edit"
    agent = file_agent([tool_call(tool, id="call_1", file_path=str(path), **call)])

    async def scenario() -> Any:
        session = Session(agent, display=False)
        task = session.start("edit")
        pause = await parked_on(session, "confirm")
        view = pause.to_view()
        await session.act(msg(pause, "deny"))
        await asyncio.wait_for(task, 10)
        return view

    view = run_async(scenario())
    change = view["file_change"]
    assert change is not None and change["path"] == str(path)
    assert change["diff"] == diff.format(p=path)
    assert change["sha256_before"] == (None if before is None else sha(before.encode("utf-8")))
    if note is None:
        assert change["note"] is None
    else:
        assert note in change["note"]
    assert path.exists() == (before is not None)  # denied: nothing written
    if before is not None:
        assert path.read_bytes() == before.encode("utf-8")


def test_an_unchanged_file_runs_as_approved(tmp_path: Path) -> None:
    path = tmp_path / "new.txt"
    agent = file_agent([tool_call("Write", id="call_1", file_path=str(path), content="hello\n")])

    async def scenario() -> Any:
        session = Session(agent, display=False)
        task = session.start("write")
        pause = await parked_on(session, "confirm")
        await session.act(msg(pause, "approve"))
        await asyncio.wait_for(task, 10)
        return pause

    pause = run_async(scenario())
    assert pause.decision["file_shown"] == str(path)  # the card's diff: what the audit line says was shown
    assert path.read_text() == "hello\n"
    (result,) = tool_results(agent.model.calls[-1], "Write")
    assert "written successfully" in result_text(result)
    assert hints(agent) == []
    assert agent.state.middle_context.get("nb_hitl.approved") == {}


class RunsOn(ToolMiddlewareBase):
    """AgentScope tool middleware: the SHA-256 of the file each run of the tool found on disk."""

    def __init__(self) -> None:
        self.runs: list[str] = []

    async def on_tool_call(self, tool: Any, input_kwargs: dict[str, Any], next_handler: Any) -> Any:
        self.runs.append(sha(Path(input_kwargs["file_path"]).read_bytes()))
        async for chunk in next_handler(**input_kwargs):
            yield chunk


@pytest.mark.parametrize(
    ("tool", "call", "words"),
    [
        pytest.param(
            "Edit",
            {"old_string": "beta", "new_string": "BETA"},
            "To edit a file, you must first read it using the Read tool.",
            id="Edit",
        ),
        pytest.param(
            "Write",
            {"content": "alpha\nBETA\ngamma\n"},
            "You must read the file first before writing to it.",
            id="Write",
        ),
    ],
)
def test_c42_file_changed_between_card_and_approval_is_not_run_and_read_again(
    tmp_path: Path, tool: str, call: dict[str, Any], words: str
) -> None:
    """Another write changes the file after the card was drawn. AgentScope's own Edit and Write
    refuse a file that changed since the model read it, so a second card for the call could not
    succeed: Approve runs nothing, the file keeps the other write, the card and the transcript say
    the call did not run and that the agent was told to read the file again, the model reads that
    in the tool's own words, the audit log says it; the model reads the file and asks again, that
    card shows the diff against the file as it is now, and the tool runs once, on that content."""
    path = tmp_path / "notes.md"
    path.write_text("alpha\nbeta\ngamma\n")
    runs_on = RunsOn()
    asks = tool_call(tool, id="call_1", file_path=str(path), **call)
    read_again = tool_call("Read", id="call_r2", file_path=str(path))
    script: list[Any] = [
        Turn("Reading.", tool_calls=[tool_call("Read", id="call_r", file_path=str(path))]),
        Turn("Changing it.", tool_calls=[asks]),
        lambda msgs: Turn("Reading it again.", [read_again]) if words in result_text(tool_results(msgs)[-1]) else "?",
        Turn("Changing it.", tool_calls=[tool_call(tool, id="call_2", file_path=str(path), **call)]),
        lambda msgs: Turn("done: " + result_text(tool_results(msgs)[-1])),
    ]
    tools = {"Edit": Edit, "Write": Write}
    agent = scripted_agent(script, [Read(), tools[tool](middlewares=[runs_on])], name="editor")
    other = "alpha\nbeta\ngamma\ndelta (written by someone else)\n"
    audit = tmp_path / "audit.jsonl"
    not_run = f"Not run: the file {path} changed after its card was drawn. The agent was told to read it again."

    async def scenario() -> str:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("change notes.md")
        first = await parked_on(session, "confirm")
        seen = first.to_view()["file_change"]
        assert seen is not None and "-beta\n+BETA\n" in seen["diff"] and "delta" not in seen["diff"]
        path.write_text(other)  # another write, between the card and the click
        await session.act(msg(first, "approve"))
        (second,) = await parked(session, resumes=1)
        assert path.read_text() == other and runs_on.runs == []  # nothing ran: the other write is kept
        assert first.status == "expired" and first.reason == not_run  # the approved card says what happened
        assert second.tool_call_id == "call_2" and second.message is None  # the model's own new call
        change = second.to_view()["file_change"]
        assert change is not None and change["sha256_before"] == sha(other.encode())
        assert "-beta\n+BETA\n" in change["diff"] and " gamma\n" in change["diff"]
        assert ("-" if tool == "Write" else " ") + "delta (written by someone else)\n" in change["diff"]
        remote = interrupt_view(pause_to_interrupt(second, "t1"), key="k", run_id="r")
        assert remote["file_change"] == change  # an AG-UI client draws the same diff from the interrupt
        await session.act(msg(second, "approve"))
        await asyncio.wait_for(task, 10)
        entries = [(e["kind"], e.get("tool_call_id"), e.get("state")) for e in session.runs[-1].transcript]
        calls = [e for e in entries if e[0] in ("tool_call", "tool_result")]
        assert calls == [
            ("tool_call", "call_r", None),
            ("tool_result", "call_r", "success"),
            ("tool_call", "call_1", None),
            ("tool_result", "call_1", "not run"),
            ("tool_call", "call_r2", None),
            ("tool_result", "call_r2", "success"),
            ("tool_call", "call_2", None),
            ("tool_result", "call_2", "success"),
        ]
        assert session.runs[-1].transcript.by_id("result:call_1")["text"] == not_run
        return change["sha256_before"]

    shown = run_async(scenario())
    assert runs_on.runs == [shown]  # the tool ran once, on the content the second card showed
    assert path.read_text() == ("alpha\nBETA\ngamma\n" if tool == "Write" else other.replace("beta", "BETA"))
    refused, _, done = tool_results(agent.model.calls[-1])[1:]
    assert (refused.id, done.id) == ("call_1", "call_2")
    told = result_text(refused)  # what the model read of the approved call
    assert told.startswith(f"nb_hitl did not run {tool}: the file {path} changed after the person was shown it")
    assert "Nothing ran." in told and told.endswith(
        f"refuses to change a file that changed since you last read it. {words}"
    )
    assert hints(agent) == []  # the result says it all: no second question to explain
    rows = [
        (r["tool_call_id"], r["decision"], r["decided_by"], r.get("reason"))
        for r in AuditLog(audit).records("answered")
    ]
    assert rows == [
        ("call_1", "approve", rows[0][2], None),
        ("call_1", "file_changed", "nb_hitl", not_run),
        ("call_2", "approve", rows[0][2], None),
    ]


def test_c42_file_removed_since_approval_shows_a_new_file_and_runs_once(tmp_path: Path) -> None:
    """The file the card showed is gone when Approve arrives: AgentScope's Write needs no read of a
    file that does not exist, so the call is asked again honestly: the fresh card shows the write as
    a new file; approving it writes the file once. Rule replay and the outcome chart read the fresh
    call's answer as the person's, not nb_hitl's ``file_changed`` line about it."""
    path = tmp_path / "notes.txt"
    path.write_text("old\n")
    agent = file_agent(
        [
            tool_call("Read", id="call_r", file_path=str(path)),
            tool_call("Write", id="call_1", file_path=str(path), content="new\n"),
        ]
    )
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> None:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("write")
        first = await parked_on(session, "confirm")
        assert first.file_change is not None and "-old\n+new\n" in first.file_change["diff"]
        path.unlink()
        await session.act(msg(first, "approve"))
        (again,) = await parked(session, resumes=1)
        assert not path.exists()
        change = again.to_view()["file_change"]
        assert change is not None and change["sha256_before"] is None
        assert change["diff"].startswith("--- /dev/null\n") and "+new\n" in change["diff"]
        await session.act(msg(again, "approve"))
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert path.read_text() == "new\n"
    (result,) = tool_results(agent.model.calls[-1], "Write")
    assert result.id == "call_1_r2" and "written successfully" in result_text(result)
    (hint,) = hints(agent)
    assert "was not run" in hint and "changed after the person was shown it" in hint
    records = AuditLog(audit).records()
    assert [(r["tool_call_id"], r["decision"]) for r in records if r["tool_call_id"] == "call_1_r2"] == [
        ("call_1_r2", "file_changed"),
        ("call_1_r2", "approve"),
    ]
    person = run_async(replay(records, [], agent.toolkit)).set_index("tool_call_id")["person"]
    assert person.dropna().to_dict() == {"call_1": "approve", "call_1_r2": "approve"}  # call_r: nobody asked
    outcomes = call_outcomes(audit_frame(records)).set_index("tool_call_id")["outcome"]
    assert outcomes["call_1_r2"] == "approved"


def test_c42_edit_of_a_file_removed_since_approval_is_not_asked_again(tmp_path: Path) -> None:
    """An Edit of a file removed after its card was drawn would fail on a second card too (AgentScope's
    Edit needs the file, read): not run, and the model is told to read the file again."""
    path = tmp_path / "notes.txt"
    path.write_text("old\n")
    runs_on = RunsOn()
    script: list[Any] = [
        Turn("Reading.", tool_calls=[tool_call("Read", id="call_r", file_path=str(path))]),
        Turn(
            "Editing.",
            tool_calls=[tool_call("Edit", id="call_1", file_path=str(path), old_string="old", new_string="new")],
        ),
        lambda msgs: Turn("done: " + result_text(tool_results(msgs)[-1])),
    ]
    agent = scripted_agent(script, [Read(), Edit(middlewares=[runs_on])], name="editor")

    async def scenario() -> Any:
        session = Session(agent, display=False)
        task = session.start("edit")
        first = await parked_on(session, "confirm")
        path.unlink()
        await session.act(msg(first, "approve"))
        await asyncio.wait_for(task, 10)  # no second card: the reply ends
        return first

    first = run_async(scenario())
    assert (
        first.reason
        == f"Not run: the file {path} changed after its card was drawn. The agent was told to read it again."
    )
    assert not path.exists() and runs_on.runs == []
    (result,) = tool_results(agent.model.calls[-1], "Edit")
    assert result_text(result).endswith("To edit a file, you must first read it using the Read tool.")


def test_modify_shows_the_diff_of_the_inputs(tmp_path: Path) -> None:
    path = tmp_path / "m.txt"
    agent = file_agent([tool_call("Write", id="call_1", file_path=str(path), content="a\n")])

    async def scenario() -> Any:
        session = Session(agent, display=False)
        task = session.start("write")
        pause = await parked_on(session, "confirm")
        edited = json.dumps({"file_path": str(path), "content": "b\n"})
        await session.act(msg(pause, "modify", input=edited))
        await asyncio.wait_for(task, 10)
        return pause

    pause = run_async(scenario())
    assert path.read_text() == "b\n"
    diff = pause.decision["input_diff"]
    assert '-  "content": "a\\n",\n+  "content": "b\\n",\n' in diff
