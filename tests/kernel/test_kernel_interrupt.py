"""Kernel > Interrupt while a cell awaits a pause stops the wait at once; the reply stays live.

ipykernel cancels an async cell on SIGINT, but the signal woke nobody while the
cell awaited a pause, so it landed seconds later (or in a later cell). nb_hitl
registers SIGINT with the loop while ``await session.run(...)`` waits
(:mod:`nb_hitl.session._sigint`). Real ipykernel, real SIGINT through the
kernel manager, as JupyterLab's Kernel > Interrupt sends it.
"""

from __future__ import annotations

import textwrap
import time

import pytest

from nb_hitl.session._sigint import INTERRUPTED_NOTE
from tests.harness import KernelHarness
from tests.support import open_pause, reply_widget

pytestmark = pytest.mark.kernel

AGENT = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call
    box = make_sandbox()
    agent = Agent(
        name="intr", system_prompt="x",
        model=ScriptedChatModel([
            Turn("Deleting it.", [tool_call("delete_file", path="old_log.txt")]),
            Turn("All done."),
        ], on_exhausted="raise"),
        toolkit=Toolkit(tools=sandbox_tools(box)),
    )
    session = Session(agent)
    """
)


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
        assert INTERRUPTED_NOTE in kernel.stream_text(cell, "stderr")

        # the reply is still parked on the same call, and the handler is back as it was
        res = kernel.execute(
            "import signal\n"
            "print('PENDING', [p.tool_call_id for p in session.pending])\n"
            "print('HANDLER', signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
            "print('EXISTS', (box / 'old_log.txt').exists())"
        ).raise_for_error()
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
