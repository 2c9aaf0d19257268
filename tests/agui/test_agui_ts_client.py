"""C28: the official AG-UI TypeScript client (``@ag-ui/client``) runs the server.

``tests/agui/ts_client/scenario.mjs`` drives the two-pause demo agent with
the client's own API (``HttpAgent.runAgent``, ``resume``,
``buildResumeArray``, ``pendingInterrupts``): a first run ending in two
interrupts, a resume, the same resume replayed, a cancel, then a new message
while interrupts are open (the same client refuses it by itself; for a client
that did not see the pause the server runs nothing and ends the run with the
open interrupts again, which the client keeps as ``pendingInterrupts`` and
resumes, denying the deletion with a reason). It prints one JSON line per step.

The test installs the script's pinned packages with ``npm ci`` into its own
folder (skipped when ``node_modules`` is newer than the lock file).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from agentscope.message import ToolResultBlock

from nb_hitl.agui import AguiServer, serve_in_background
from nb_hitl.agui.demo import two_pause_factory
from nb_hitl.models import result_text, tool_results

CLIENT_DIR = Path(__file__).parent / "ts_client"


def _npm_ci() -> None:
    """``npm ci`` in the client's folder unless its install is up to date."""
    lock = CLIENT_DIR / "package-lock.json"
    installed = CLIENT_DIR / "node_modules" / ".package-lock.json"
    if installed.exists() and installed.stat().st_mtime >= lock.stat().st_mtime:
        return
    npm = shutil.which("npm")
    assert npm, "npm is needed to install @ag-ui/client for this test"
    subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=CLIENT_DIR,
        check=True,
        timeout=300,
    )


def _run_scenario(url: str, token: str) -> dict[str, dict[str, Any]]:
    node = shutil.which("node")
    assert node, "node (20+) is needed to run @ag-ui/client"
    env = {k: v for k, v in os.environ.items() if k not in ("NODE_ENV", "NODE_OPTIONS")}
    done = subprocess.run(
        [node, "scenario.mjs", url, token],
        cwd=CLIENT_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, f"scenario failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    steps = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {s["step"]: s for s in steps}


def agents_of(factory: Any) -> dict[str, Any]:
    return factory.agents  # type: ignore[no-any-return]


def _deletions(agent: Any) -> list[ToolResultBlock]:
    return [
        r for r in tool_results(agent.state.context, "delete_file") if getattr(r.state, "value", r.state) == "success"
    ]


def test_C28_official_ts_client_runs_resumes_replays_cancels(tmp_path):
    _npm_ci()
    factory = two_pause_factory(tmp_path)
    with serve_in_background(AguiServer(factory), announce=False) as handle:
        assert handle.token
        steps = _run_scenario(handle.url, handle.token)
    assert list(steps) == [
        "first_run",
        "resume",
        "replay",
        "cancel",
        "new_message_same_client",
        "new_message_refused",
        "resume_after_refusal",
    ]

    first = steps["first_run"]
    assert first["outcome"] == "interrupt" and first["protocolVersion"] == "1.0"
    assert len(first["interruptIds"]) == 2 and first["pending"] == first["interruptIds"]
    assert first["tools"] == ["AskUser", "delete_file"]
    assert (first["first"], first["last"]) == ("RUN_STARTED", "RUN_FINISHED")

    resumed = steps["resume"]
    assert resumed["outcome"] == "success" and resumed["pending"] == []
    assert resumed["result"] == "You chose to archive draft.md. Deleted old_log.txt."
    assert not resumed["replayed"]

    replay = steps["replay"]  # answered from the ledger, nothing runs again
    assert replay["outcome"] == "success" and replay["replayed"]
    assert replay["result"] == resumed["result"] and replay["error"] is None

    cancel = steps["cancel"]
    assert cancel["interruptsBefore"] == 2 and cancel["outcome"] == "success"
    assert "nothing was deleted" in cancel["result"]

    local = steps["new_message_same_client"]  # the client itself refuses to send
    assert local["interruptsBefore"] == 2 and local["first"] is None
    assert "2 pending interrupt(s) not addressed by resume" in local["thrown"]

    refused = steps["new_message_refused"]  # AG-UI 1.0: nothing runs, the interrupts are repeated
    assert (refused["first"], refused["last"]) == ("RUN_STARTED", "RUN_FINISHED")
    assert refused["outcome"] == "interrupt" and refused["error"] is None and refused["thrown"] is None
    assert len(refused["pending"]) == 2 and refused["sameAsAnnounced"]  # filled by the client itself
    assert refused["note"]["code"] == "interrupts_pending" and len(refused["note"]["message_ids"]) == 1
    assert refused["note"]["message"].startswith("Your message was not given to the agent")
    assert not refused["refusedMessageKept"]  # the server's MESSAGES_SNAPSHOT replaced the client's list

    after = steps["resume_after_refusal"]
    assert after["outcome"] == "success" and after["pending"] == []
    assert after["toolNames"] == ["AskUser", "delete_file"]
    assert after["result"] == "You chose to archive notes.txt. You denied the deletion, so nothing was deleted."
    # the deny reason the client sent is what the model reads in the tool result
    (denied,) = tool_results(agents_of(factory)["ts-c28-c"].state.context, "delete_file")
    assert result_text(denied) == "The user denied your call to delete_file, saying: Keep the log until Friday."
    assert "Never mind" not in str([m.content for m in agents_of(factory)["ts-c28-c"].state.context])

    # the approved deletion ran exactly once (the replay did not run it again)
    agents = agents_of(factory)
    assert len(_deletions(agents["ts-c28-a"])) == 1
    assert not (agents["ts-c28-a"].sandbox / "old_log.txt").exists()
    for thread in ("ts-c28-b", "ts-c28-c"):  # cancelled, denied: nothing deleted
        assert _deletions(agents[thread]) == []
        assert (agents[thread].sandbox / "old_log.txt").exists()
