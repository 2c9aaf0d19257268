"""Kernel > Interrupt while a cell awaits a pause stops the wait at once; the reply stays live.

ipykernel cancels an async cell on SIGINT, but the signal woke nobody while the
cell awaited a pause, so it landed seconds later (or in a later cell). nb_hitl
registers SIGINT with the loop while ``await session.run(...)`` waits
(:mod:`nb_hitl.session._sigint`); the cell ends with a note alone, not a
``CancelledError`` traceback into nb_hitl. Real ipykernel, real SIGINT through
the kernel manager, as JupyterLab's Kernel > Interrupt sends it.
"""

from __future__ import annotations

import time

import pytest

from nb_hitl.session._sigint import INTERRUPTED_NOTE
from tests.harness import KernelHarness
from tests.harness.kernel import ExecResult
from tests.support import open_pause, reply_widget
from tests.support_agents import deletion_cell

pytestmark = pytest.mark.kernel

AGENT = deletion_cell("intr")


def _execute_after_abort_window(kernel: KernelHarness, code: str, tries: int = 20) -> ExecResult:
    for _ in range(tries):
        res = kernel.execute(code)
        if res.status != "aborted":
            return res.raise_for_error()
        time.sleep(0.25)
    raise AssertionError(f"every try was aborted: {code!r}")


def test_interrupt_stops_the_wait_and_the_reply_stays_answerable() -> None:
    with KernelHarness() as kernel:
        kernel.execute(AGENT).raise_for_error()
        cell = kernel.execute_async_start("reply = await session.run('tidy up')")
        rec = reply_widget(kernel, "intr", require_esm=True)
        confirm = open_pause(kernel, rec.comm_id, "confirm")

        kernel.km.interrupt_kernel()
        # the cell ends now, not when some later message happens to wake the kernel
        ended = kernel._shell_reply(cell, time.monotonic() + 5.0)
        assert ended is not None, "Kernel > Interrupt did not end the waiting cell"
        assert ended["content"]["status"] == "error"
        # the cell ends with the note alone: no CancelledError traceback into nb_hitl's internals
        (error,) = kernel.messages("error", parent_msg_id=cell)
        assert error["content"]["traceback"] == [INTERRUPTED_NOTE]
        assert "nb_hitl/session" not in str(error["content"]) and "CancelledError" not in str(error["content"])
        assert INTERRUPTED_NOTE not in kernel.stream_text(cell, "stderr")  # said once

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
