"""Kernel > Interrupt while a cell awaits a pause stops the wait at once; the reply stays live.

ipykernel cancels an async cell on SIGINT, but the signal woke nobody while the
cell awaited a pause, so it landed seconds later (or in a later cell). nb_hitl
registers SIGINT with the loop while an async cell runs
(:mod:`nb_hitl.session._sigint`); the cell ends with a note alone, not a
``CancelledError`` traceback, whatever it awaits: ``await session.run(...)``,
``await task`` (a reply's task, which the interrupt does not cancel), or the
notebook's own waiting helpers (pauses_in_practice.ipynb's ``answer`` /
``until``). Real ipykernel, real SIGINT through the kernel manager, as
JupyterLab's Kernel > Interrupt sends it.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from nb_hitl.session._sigint import STOPPED_NOTE
from tests.harness import REPO_ROOT, KernelHarness
from tests.harness.kernel import ExecResult
from tests.support import kernel_json, open_pause, reply_widget
from tests.support_agents import deletion_cell

pytestmark = pytest.mark.kernel

AGENT = deletion_cell("intr")

LIVE = (
    "nb_hitl: Kernel > Interrupt stopped this cell from waiting. The reply is still live: answer it in its card, then "
)
# the note names the object the person's cells use: here a Session bound to `session`
SESSION_NOTE = (
    LIVE
    + "`reply = await session.current.task` gives its final reply (or `await session.interrupt()` to stop the agent)."
)


def _execute_after_abort_window(kernel: KernelHarness, code: str, tries: int = 20) -> ExecResult:
    for _ in range(tries):
        res = kernel.execute(code)
        if res.status != "aborted":
            return res.raise_for_error()
        time.sleep(0.25)
    raise AssertionError(f"every try was aborted: {code!r}")


def _interrupt(kernel: KernelHarness, cell: str, note: str = SESSION_NOTE) -> None:
    """Kernel > Interrupt the running ``cell``: it ends at once, its one output after what it printed is ``note``."""
    kernel.km.interrupt_kernel()
    # the cell ends now, not when some later message happens to wake the kernel
    ended = kernel._shell_reply(cell, time.monotonic() + 5.0)
    assert ended is not None, "Kernel > Interrupt did not end the waiting cell"
    assert ended["content"]["status"] == "error"
    # the cell ends with the note alone: no CancelledError traceback into nb_hitl's (or asyncio's) internals
    (error,) = kernel.messages("error", parent_msg_id=cell)
    assert error["content"]["traceback"] == [note]
    shown = json.dumps([m["content"] for m in kernel.messages(parent_msg_id=cell)])
    for raw in ("CancelledError", "Traceback", "nb_hitl/session", "asyncio/"):
        assert raw not in shown, raw
    assert note not in kernel.stream_text(cell, "stderr")  # said once
    _execute_after_abort_window(kernel, "None")  # the caller's next cell is not aborted


def test_interrupt_stops_the_wait_and_the_reply_stays_answerable() -> None:
    with KernelHarness() as kernel:
        kernel.execute("import json\n" + AGENT).raise_for_error()
        cell = kernel.execute_async_start("reply = await session.run('tidy up')")
        rec = reply_widget(kernel, "intr", require_esm=True)
        confirm = open_pause(kernel, rec.comm_id, "confirm")

        _interrupt(kernel, cell)

        # the reply is still parked on the same call, and the handler is back as it was
        # ipykernel aborts what was queued behind the interrupted cell for a moment (as in
        # JupyterLab's Run All): send the next cell once that window has passed
        res = _execute_after_abort_window(
            kernel,
            "import signal\n"
            "print('PENDING', [p.tool_call_id for p in session.pending])\n"
            "print('HANDLER', signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
            "print('EXISTS', (box / 'old_log.txt').exists())",
        )
        assert f"PENDING ['{confirm['tool_call_id']}']" in res.stdout
        assert "HANDLER True" in res.stdout
        assert "EXISTS True" in res.stdout

        # what the note says to run, interrupted in turn: the same line, the reply still live
        again = kernel.execute_async_start("reply = await session.current.task")
        time.sleep(0.5)
        _interrupt(kernel, again)
        assert kernel_json(kernel, "[p.tool_call_id for p in session.pending]") == [confirm["tool_call_id"]]

        answer = kernel.request(
            rec.comm_id, "approve", tool_call_id=confirm["tool_call_id"], reply_id=confirm["reply_id"]
        )
        assert answer["ok"] is True
        done = kernel.execute(
            "final = await session.current.task\n"
            "print('FINAL', final.get_text_content(), (box / 'old_log.txt').exists())",
            timeout=30,
        ).raise_for_error()
        assert "FINAL All done. False" in done.stdout


# ------------------------------------------------ pauses_in_practice.ipynb, as a person runs it
NOTEBOOK = REPO_ROOT / "notebooks" / "pauses_in_practice.ipynb"
FOUR_EYES = REPO_ROOT / "notebooks" / "four_eyes.ipynb"


def _code_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def _click(kernel: KernelHarness, comm_id: str, **answer: object) -> None:
    """Answer the pause of the current reply that ``answer`` names, through its widget's comm (a click)."""
    reply_id = kernel_json(kernel, "session.current.reply_id")
    assert kernel.request(comm_id, reply_id=reply_id, **answer)["ok"] is True  # type: ignore[arg-type]


def _pending(kernel: KernelHarness) -> dict[str, str]:
    """The open pauses: ``{tool name or path: tool_call id}``."""
    return kernel_json(kernel, "{p.input.get('path', p.tool_name): p.tool_call_id for p in session.pending}")  # type: ignore[no-any-return]


def test_interrupting_the_notebooks_waits_ends_each_with_the_note(tmp_path: Path) -> None:
    """pauses_in_practice.ipynb: Kernel > Interrupt while ``answer(...)`` waits for a click (the notebook's
    own helper), then while ``await task`` waits, then while ``asyncio.gather(task)`` waits; each cell
    ends with one line, the card still answers and the next cell goes on."""
    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)
    cells = _code_cells(NOTEBOOK)
    with KernelHarness(cwd=tmp_path) as kernel:
        kernel.execute("import json").raise_for_error()
        for source in cells[:4]:  # set-up, then the reply parked on old_log.txt and the question
            kernel.execute(source, timeout=60).raise_for_error()
        rec = reply_widget(kernel, "tidy")

        # 1. the notebook's `answer(...)` waits for a click
        waiting = kernel.execute_async_start(cells[4])
        kernel.wait_for(lambda: "Waiting for you" in kernel.stream_text(waiting) or None, 30, what="the wait")
        _interrupt(kernel, waiting)
        assert _pending(kernel).keys() == {"old_log.txt", "AskUser"}  # nothing was decided or cancelled
        _click(
            kernel,
            rec.comm_id,
            action="answer",
            tool_call_id=_pending(kernel)["AskUser"],
            answers=[{"question": "What should the summary file be called?", "selected": ["summary.md"]}],
        )
        again = _execute_after_abort_window(kernel, cells[4])  # run again: the answer is seen, the cell goes on
        assert "the question: answer" in again.stdout

        # 2. `await task`: the reply's task is not cancelled by the interrupt
        waiting = kernel.execute_async_start("final = await task")
        time.sleep(0.5)
        _interrupt(kernel, waiting)
        assert kernel_json(kernel, "[task.done(), session.current.status]") == [False, "paused"]
        _click(kernel, rec.comm_id, action="deny", tool_call_id=_pending(kernel)["old_log.txt"])
        kernel.wait_for(lambda: "draft.md" in _pending(kernel) or None, 30, what="the draft.md pause")
        _click(kernel, rec.comm_id, action="approve", tool_call_id=_pending(kernel)["draft.md"])
        done = _execute_after_abort_window(
            kernel, "final = await task\nprint('FILES', sorted(p.name for p in SANDBOX.iterdir()))"
        )
        assert "FILES ['notes.txt', 'old_log.txt']" in done.stdout

        # 3. the interrupt section waits for the reply to end (`asyncio.wait`, which never cancels it)
        kernel.execute(cells[7], timeout=60).raise_for_error()  # parked on notes.txt
        rec = reply_widget(kernel, "tidy")
        waiting = kernel.execute_async_start(cells[8])
        kernel.wait_for(lambda: "Waiting for you" in kernel.stream_text(waiting) or None, 30, what="the wait")
        _interrupt(kernel, waiting)
        assert _pending(kernel).keys() == {"notes.txt"}
        _click(kernel, rec.comm_id, action="interrupt")  # the widget's Interrupt, as the cell asks
        after = _execute_after_abort_window(kernel, cells[8])
        assert "reply: interrupted - Interrupted from the widget." in after.stdout
        assert "notes.txt still there: True" in after.stdout
        # the widget's Interrupt settled the parked call in the agent's state too: a next start is not refused
        assert kernel_json(kernel, "[len(session.pending), len(session.parked_tool_calls())]") == [0, 0]

        # 4. nothing runs now: an interrupted wait says so, not that a reply is live
        waiting = kernel.execute_async_start("await asyncio.sleep(30)")
        time.sleep(0.5)
        _interrupt(kernel, waiting, STOPPED_NOTE)


def test_interrupting_four_eyes_names_its_remote_session(tmp_path: Path) -> None:
    """four_eyes.ipynb has no `session`: its reply is a RemoteSession bound to `remote`. Kernel > Interrupt
    while the cell waits for alice's click names `remote` and offers no `interrupt()` it does not have; bound
    to no variable, the note names the class."""
    cells = _code_cells(FOUR_EYES)
    with KernelHarness(cwd=tmp_path) as kernel:
        for source in cells[:2]:  # the AG-UI server, then alice's turn paused on send_payment
            kernel.execute(source, timeout=60).raise_for_error()
        waiting = kernel.execute_async_start(cells[2])  # waits for alice's click on the card
        kernel.wait_for(lambda: "Waiting for you" in kernel.stream_text(waiting) or None, 30, what="the wait")
        _interrupt(kernel, waiting, LIVE + "`reply = await remote.current.task` gives its final reply.")

        _execute_after_abort_window(kernel, "sessions = [remote]\ndel remote")
        waiting = kernel.execute_async_start("await sessions[0].current.task")
        time.sleep(0.5)
        _interrupt(
            kernel, waiting, LIVE + "awaiting `.current.task` of your RemoteSession object gives its final reply."
        )
        _execute_after_abort_window(kernel, "handle.stop()")
