"""A "Dry run" of a Write or Edit confirmation: AgentScope's own tool, in a throw-away temporary copy.

Real ``agentscope.agent.Agent``s on :class:`~nb_hitl.models.ScriptedChatModel`
with AgentScope's ``Read``, ``Write``, ``Edit`` and ``Bash`` on a temporary
workspace; the dry runs and the answers go through ``Session.act`` (the path of
a click). What is checked: every byte of the workspace, what the dry run says
it did, the pause and the reply (still open and parked), the audit log, and
what the call did for real once approved.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.tool import Bash, Edit, Read, Write

from nb_hitl import Session, dry_run_shell
from nb_hitl.errors import DecisionError
from nb_hitl.models import Turn, result_text, tool_call, tool_results
from nb_hitl.store import AuditLog
from tests.support import parked_on, run_async
from tests.support_agents import scripted_agent


def msg(pause: Any, action: str, **extra: Any) -> dict[str, Any]:
    return {"action": action, "tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id, **extra}


def agent_with(calls: list[Any], tools: list[Any] | None = None) -> Agent:
    """An agent that makes ``calls`` (one turn each), then says what the results were."""
    script: list[Any] = [Turn("Working.", tool_calls=[c]) for c in calls]
    script.append(lambda msgs: Turn("done: " + " | ".join(result_text(r) for r in tool_results(msgs))))
    return scripted_agent(script, tools or [Read(), Write(), Edit()], name="editor")


def snapshot(root: Path) -> dict[str, Any]:
    """Every file's SHA-256, mode and mtime, and every directory, under ``root``."""
    seen: dict[str, Any] = {}
    for p in sorted(root.rglob("*")):
        st = p.stat()
        rel = str(p.relative_to(root))
        if p.is_dir():
            seen[rel + "/"] = st.st_mode
        else:
            seen[rel] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_mode, st.st_mtime_ns)
    return seen


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("def main():\n    return 1\n")
    (ws / "notes.md").write_text("# notes\n<script>x</script>\n")
    (ws / "bin.dat").write_bytes(bytes(range(256)))
    return ws


CASES = [
    pytest.param(
        "Edit",
        lambda ws: [
            tool_call("Read", id="call_r", file_path=str(ws / "src" / "app.py")),
            tool_call(
                "Edit", id="call_1", file_path=str(ws / "src" / "app.py"), old_string="return 1", new_string="return 2"
            ),
        ],
        "src/app.py",
        "changed",
        ["-    return 1", "+    return 2"],
        "def main():\n    return 2\n",
        id="edit",
    ),
    pytest.param(
        "Write",
        lambda ws: [tool_call("Write", id="call_1", file_path=str(ws / "new" / "dir" / "b.txt"), content="hello\n")],
        "new/dir/b.txt",
        "created",
        ["--- /dev/null", "+hello"],
        "hello\n",
        id="write-new-file",
    ),
]


@pytest.mark.parametrize(("tool", "calls", "rel", "change", "lines", "after"), CASES)
def test_ten_dry_runs_touch_nothing_then_approve_runs_once(
    tmp_path: Path, tool: str, calls: Any, rel: str, change: str, lines: list[str], after: str
) -> None:
    ws = workspace(tmp_path)
    target = ws / rel
    audit = tmp_path / "audit.jsonl"
    agent = agent_with(calls(ws))
    before = snapshot(ws)

    async def scenario() -> list[dict[str, Any]]:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("edit")
        pause = await parked_on(session, "confirm")
        assert pause.to_view()["dry_run"] is True
        cache = agent.state.tool_context.model_dump()
        lines_before = AuditLog(audit).records()
        results = []
        for _ in range(10):
            answer = await session.act(msg(pause, "dry_run"))
            results.append(answer["dry_run"])
            assert snapshot(ws) == before  # byte for byte, after every dry run
            assert pause.status == "open" and pause.decision is None
            assert session.current is not None and session.current.status == "paused"
            assert session.current.resumes == 0 and session.current.queue == []
        assert AuditLog(audit).records() == lines_before  # no line for a dry run
        assert agent.state.tool_context.model_dump() == cache  # the agent's read cache is its own
        await session.act(msg(pause, "approve"))
        await asyncio.wait_for(task, 10)
        return results

    results = run_async(scenario())
    assert all(r == results[0] for r in results)
    shown = results[0]
    assert shown["sandbox"] == "a temporary copy"
    assert shown["folder"] == ""  # only the named file was copied: the page says "a copy of" its path
    assert shown["summary"].startswith("Dry run in a temporary copy: ")
    assert (
        f"; 1 file {change}. The real files were not touched; the call still waits for your answer." in shown["summary"]
    )
    assert shown["state"] == "success"
    assert str(target) in shown["output"]
    (did,) = shown["files"]
    assert did["path"] == str(target) and did["change"] == change
    for line in lines:
        assert line in did["diff"]["diff"].splitlines()
    # Approve ran the call once, for real
    assert target.read_text() == after
    (real,) = tool_results(agent.model.calls[-1], tool)
    assert result_text(real) == shown["output"]
    answered = [(r["tool_call_id"], r["decision"]) for r in AuditLog(audit).records("answered")]
    assert answered == [("call_1", "approve")]
    assert {k: v for k, v in snapshot(ws).items() if not k.startswith(rel.split("/")[0])} == {
        k: v for k, v in before.items() if not k.startswith(rel.split("/")[0])
    }


def test_an_edit_without_a_read_fails_in_the_dry_run_as_it_would_for_real(tmp_path: Path) -> None:
    """AgentScope's Edit refuses a file the agent has not read: the dry run says so, and so does the real call."""
    ws = workspace(tmp_path)
    path = ws / "notes.md"
    agent = agent_with([tool_call("Edit", id="call_1", file_path=str(path), old_string="notes", new_string="NOTES")])
    before = snapshot(ws)

    async def scenario() -> dict[str, Any]:
        session = Session(agent, display=False)
        task = session.start("edit")
        pause = await parked_on(session, "confirm")
        shown = (await session.act(msg(pause, "dry_run")))["dry_run"]
        await session.act(msg(pause, "approve"))
        await asyncio.wait_for(task, 10)
        return shown

    shown = run_async(scenario())
    assert shown["state"] == "error" and shown["files"] == []
    assert "you must first read it" in shown["output"]
    assert "no file changed" in shown["summary"]
    (real,) = tool_results(agent.model.calls[-1], "Edit")
    assert result_text(real) == shown["output"]
    assert snapshot(ws) == before


def test_a_tool_that_cannot_be_dry_run_has_no_button(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Bash is dry-run only in a bubblewrap sandbox: here bwrap is missing, so the copy alone is not offered
    monkeypatch.setattr(dry_run_shell, "BWRAP", "nb-hitl-no-such-bwrap")
    ws = workspace(tmp_path)
    out = ws / "out.txt"
    agent = agent_with([tool_call("Bash", id="call_1", command=f"echo hi > {out}")], [Bash()])
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> None:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("run")
        pause = await parked_on(session, "confirm")
        assert pause.to_view()["dry_run"] is False
        with pytest.raises(
            DecisionError,
            match=r"Bash \(command=\"echo hi > \S+\) cannot be dry-run: a shell command is dry-run only in a bubblewrap sandbox, "
            r"and bubblewrap \('nb-hitl-no-such-bwrap'\) is not installed\.",
        ):
            await session.act(msg(pause, "dry_run"))
        assert pause.status == "open" and AuditLog(audit).records("answered") == []
        await session.act(msg(pause, "deny"))
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert not out.exists()


def test_a_relative_path_and_a_decided_call_are_refused(tmp_path: Path) -> None:
    agent = agent_with([tool_call("Write", id="call_1", file_path="rel.txt", content="x")])

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("write")
        pause = await parked_on(session, "confirm")
        assert pause.to_view()["dry_run"] is False
        with pytest.raises(DecisionError, match="the call names no absolute file_path"):
            await session.act(msg(pause, "dry_run"))
        await session.act(msg(pause, "deny"))
        await asyncio.wait_for(task, 10)
        with pytest.raises(Exception, match="Already decided|no longer live"):
            await session.act(msg(pause, "dry_run"))

    run_async(scenario())
    assert not Path("rel.txt").exists()


def test_a_tool_that_raises_ends_in_error_and_the_workspace_is_kept(tmp_path: Path) -> None:
    """Write under a path that is a file: the tool raises in the copy as it would for real; the
    dry run says so and touches nothing."""
    ws = workspace(tmp_path)
    agent = agent_with([tool_call("Write", id="call_1", file_path=str(ws / "notes.md" / "x.txt"), content="x")])
    before = snapshot(ws)

    async def scenario() -> dict[str, Any]:
        session = Session(agent, display=False)
        task = session.start("write")
        pause = await parked_on(session, "confirm")
        shown = (await session.act(msg(pause, "dry_run")))["dry_run"]
        assert pause.status == "open"
        await session.act(msg(pause, "deny"))
        await asyncio.wait_for(task, 10)
        return shown

    shown = run_async(scenario())
    assert shown["state"] == "error" and shown["files"] == []
    assert shown["output"].startswith("The tool raised FileExistsError")
    assert "ended with state error; no file changed." in shown["summary"]
    assert snapshot(ws) == before
