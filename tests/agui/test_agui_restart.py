"""C19: the AG-UI server process restarts while a run is parked on interrupts.

The server runs in a subprocess (uvicorn, 127.0.0.1, a fixed token) with
``checkpoints=``; it is killed after the first run paused and started again
on the same folders. The client's resume of the interrupt ids it was given
is accepted, the tool runs once, and the thread then takes a new message.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from ag_ui.core import ResumeEntry

from nb_hitl.agui.client import AguiClient
from tests.agui_support import user

REPO = Path(__file__).resolve().parents[2]

SERVER = textwrap.dedent(
    """
    import sys, time
    from nb_hitl.agui import AguiServer, serve_in_background
    from nb_hitl.agui.demo import two_pause_factory

    root, checkpoints = sys.argv[1], sys.argv[2]
    server = AguiServer(two_pause_factory(root), token="c19-token", session_kwargs={"checkpoints": checkpoints})
    handle = serve_in_background(server, announce=False)
    print("PORT", handle.port, flush=True)
    while True:
        time.sleep(1)
    """
)


def start_server(root: Path, checkpoints: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(root), str(checkpoints)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("PORT "):
            return proc, f"http://127.0.0.1:{int(line.split()[1])}/"
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError("the server subprocess did not start")


def stop(proc: subprocess.Popen) -> None:
    proc.kill()
    proc.wait(timeout=30)


def test_C19_resume_after_a_server_restart_runs_the_tool_once(tmp_path):
    root, checkpoints = tmp_path / "sandboxes", tmp_path / "checkpoints"
    tid = "c19-thread"
    proc, url = start_server(root, checkpoints)
    try:
        client = AguiClient(url, token="c19-token")
        first = asyncio.run(_collect(client.run(tid, [user("Please tidy up.", "c19-u1")])))
    finally:
        stop(proc)
    outcome = first[-1].outcome
    assert first[-1].type.value == "RUN_FINISHED" and outcome.type == "interrupt"
    interrupts = outcome.interrupts
    assert len(interrupts) == 2
    sandbox = root / tid
    assert (sandbox / "old_log.txt").exists()

    proc, url = start_server(root, checkpoints)  # a new process: nothing in memory
    try:
        client = AguiClient(url, token="c19-token")
        entries = []
        for i in interrupts:
            if i.reason == "tool_call":
                entries.append(ResumeEntry(interrupt_id=i.id, status="resolved", payload={"approved": True}))
            else:
                answers = [{"question": "Which file should I archive?", "selected": ["draft.md"]}]
                entries.append(ResumeEntry(interrupt_id=i.id, status="resolved", payload={"answers": answers}))
        history = [user("Please tidy up.", "c19-u1")]
        resumed = asyncio.run(_collect(client.run(tid, history, resume=entries)))
        last = resumed[-1]
        assert last.type.value == "RUN_FINISHED", last
        assert last.outcome.type == "success"
        assert last.result == "You chose to archive draft.md. Deleted old_log.txt."
        assert not (sandbox / "old_log.txt").exists()
        results = [e for e in resumed if e.type.value == "TOOL_CALL_RESULT"]
        assert len([r for r in results if "Deleted" in r.content]) == 1  # the tool ran once
        # the same resume again changes nothing; a new message is taken (no thread_busy)
        again = asyncio.run(_collect(client.run(tid, history, resume=entries)))
        assert again[-1].type.value == "RUN_FINISHED"
        new = asyncio.run(_collect(client.run(tid, [*history, user("thanks", "c19-u2")])))
        assert new[-1].type.value == "RUN_FINISHED", new[-1]
    finally:
        stop(proc)


async def _collect(events):
    return [e async for e in events]
