"""A "Dry run" of a ``Bash`` confirmation: AgentScope's ``Bash`` in its own ``BubblewrapBackend``,
on a throw-away copy of the workspace (nb_hitl.dry_run_shell).

Real ``agentscope.agent.Agent``s on :class:`~nb_hitl.models.ScriptedChatModel`
with AgentScope's ``Bash`` on a temporary workspace, Debian's ``bwrap`` (installed
by ``.ci/install-services``); the dry runs and the answers go through
``Session.act``. Checked: every byte of the workspace (and of a file beside it)
after ten dry runs, what the dry run says it did and where, and that Approve
then runs the command once, for real.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from agentscope.tool import Bash

from nb_hitl import Session, dry_run_shell
from nb_hitl.models import result_text, tool_call, tool_results
from nb_hitl.store import AuditLog
from tests.session.test_dry_run import agent_with, msg, snapshot, workspace
from tests.support import parked_on, run_async


def test_bwrap_runs_here() -> None:
    """The sandbox the dry runs below rely on: Debian's bubblewrap, and namespaces it can make."""
    assert shutil.which("bwrap"), "bubblewrap is not installed (.ci/install-services installs it)"
    assert dry_run_shell.bwrap_problem() is None


def test_ten_sandboxed_dry_runs_touch_nothing_then_approve_runs_once(tmp_path: Path) -> None:
    area = tmp_path / "area"  # the workspace and a file beside it (the audit log is elsewhere)
    ws = workspace(area)
    beside = area / "beside.txt"  # outside the workspace: not even there in the sandbox
    beside.write_text("keep\n")
    command = (
        "echo 'return 3' >> src/app.py && rm notes.md && mkdir -p out && echo built > out/log.txt"
        f" && echo hi > /tmp/scratch.txt; echo changed > {beside} 2>/dev/null; ls ~; echo finished"
    )
    agent = agent_with([tool_call("Bash", id="call_1", command=command)], [Bash(cwd=str(ws))])
    audit = tmp_path / "audit.jsonl"
    before = snapshot(area)

    async def scenario() -> list[dict[str, Any]]:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("build")
        pause = await parked_on(session, "confirm")
        assert pause.to_view()["dry_run"] is True
        lines_before = AuditLog(audit).records()
        results = []
        for _ in range(10):
            answer = await session.act(msg(pause, "dry_run"))
            results.append(answer["dry_run"])
            assert snapshot(area) == before  # byte for byte, after every dry run
            assert pause.status == "open" and pause.decision is None
            assert session.current is not None and session.current.resumes == 0
        assert AuditLog(audit).records() == lines_before
        await session.act(msg(pause, "approve"))
        await asyncio.wait_for(task, 20)
        return results

    results = run_async(scenario())
    assert all(r == results[0] for r in results)
    shown = results[0]
    assert shown["sandbox"].startswith("a bubblewrap sandbox (bubblewrap ")
    assert shown["folder"] == str(ws.resolve())  # the copied working directory
    assert shown["summary"].startswith(
        f"Dry run in {shown['sandbox']} on a throw-away copy of its working directory (network cut, nothing else "
        "writable): Bash ran with the input Approve would run and ended with state success; "
        "1 file created, 1 changed, 1 deleted. The real files were not touched"
    )
    assert shown["output"].splitlines()[-1] == "finished"
    assert {"out", "src", "bin.dat"} <= set(shown["output"].split())  # ~ is the copy
    files = {f["path"]: f for f in shown["files"]}
    assert {p: f["change"] for p, f in files.items()} == {
        str(ws / "out" / "log.txt"): "created",
        str(ws / "src" / "app.py"): "changed",
        str(ws / "notes.md"): "deleted",
    }
    assert "+return 3" in files[str(ws / "src" / "app.py")]["diff"]["diff"].splitlines()
    # Approve ran the command once, for real
    assert (ws / "src" / "app.py").read_text().endswith("return 3\n")
    assert not (ws / "notes.md").exists() and (ws / "out" / "log.txt").read_text() == "built\n"
    assert beside.read_text() == "changed\n"
    (real,) = tool_results(agent.model.calls[-1], "Bash")
    assert result_text(real).splitlines()[-1] == "finished"
    assert [r["decision"] for r in AuditLog(audit).records("answered")] == ["approve"]
