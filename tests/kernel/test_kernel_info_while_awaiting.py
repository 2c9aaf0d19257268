"""While a cell awaits a pause, the kernel still answers the page's info requests (C23, kernel side).

A page reloaded while ``await session.run(...)`` waits needs
``kernel_info_request`` and ``comm_info_request`` (the widget manager lists
the widgets' comms with it). ipykernel 7.4 queues both behind the cell's
lock; nb_hitl's widgets answer them while the lock is held
(:mod:`nb_hitl.widgets._kernel`). Real ipykernel, real shell messages.
"""

from __future__ import annotations

import time

import pytest

from tests.harness import KernelHarness
from tests.support import open_pause, reply_widget
from tests.support_agents import deletion_cell

pytestmark = pytest.mark.kernel

AGENT = deletion_cell("c23k")


def _reply(kernel: KernelHarness, msg_type: str, timeout: float = 10.0) -> tuple[dict, float]:
    start = time.monotonic()
    msg_id = kernel._send_shell(msg_type, {"target_name": "jupyter.widget"} if msg_type == "comm_info_request" else {})
    reply = kernel._shell_reply(msg_id, time.monotonic() + timeout)
    assert reply is not None, f"no {msg_type} reply within {timeout}s while the cell awaits"
    # JupyterLab resolves a request only on its reply AND an iopub idle status whose
    # parent is that request: without the idle, a reloaded page waits forever.
    assert kernel.wait_for(
        lambda: [m["content"]["execution_state"] for m in kernel.messages("status", msg_id)] == ["busy", "idle"],
        timeout=timeout,
    ), f"{msg_type}: statuses {[m['content'] for m in kernel.messages('status', msg_id)]}"
    return reply, time.monotonic() - start


def _last_status(kernel: KernelHarness) -> tuple[str, str | None]:
    last = kernel.messages("status")[-1]
    return last["content"]["execution_state"], (last.get("parent_header") or {}).get("msg_id")


def test_C23_info_requests_answered_while_a_cell_awaits_a_pause() -> None:
    with KernelHarness() as kernel:
        kernel.execute(AGENT).raise_for_error()
        msg_id = kernel.execute_async_start(
            "reply = await session.run('tidy up')\nprint('FINAL:', reply.get_text_content())"
        )
        rec = reply_widget(kernel, "c23k", require_esm=True)
        confirm = open_pause(kernel, rec.comm_id, "confirm")  # the cell now awaits the click

        info, _ = _reply(kernel, "kernel_info_request")
        assert info["msg_type"] == "kernel_info_reply" and info["content"]["status"] == "ok"
        comms, _ = _reply(kernel, "comm_info_request")
        assert comms["content"]["status"] == "ok"
        # the cell still runs: the kernel says busy again, for the cell
        assert kernel.wait_for(lambda: _last_status(kernel) == ("busy", msg_id), timeout=5)
        assert rec.comm_id in comms["content"]["comms"]
        # an execute_request still waits for the cell: cells stay in order
        queued = kernel.execute_async_start("print('after')")
        assert kernel._shell_reply(queued, time.monotonic() + 1.0) is None

        answer = kernel.request(
            rec.comm_id, "approve", tool_call_id=confirm["tool_call_id"], reply_id=confirm["reply_id"]
        )
        assert answer["ok"] is True
        res = kernel.wait_reply(msg_id, timeout=30).raise_for_error()
        assert "FINAL: All done." in res.stdout
        assert "after" in kernel.wait_reply(queued, timeout=30).raise_for_error().stdout


def test_C39_ping_says_whether_the_cell_that_made_the_reply_still_runs() -> None:
    """A page that finds a waiting reply with no view (reloaded without saving) asks ``ping``:
    while the cell that made the reply awaits it, cells run meanwhile wait behind it."""
    with KernelHarness() as kernel:
        kernel.execute(AGENT).raise_for_error()
        msg_id = kernel.execute_async_start("reply = await session.run('tidy up')")
        rec = reply_widget(kernel, "c23k", require_esm=True)
        confirm = open_pause(kernel, rec.comm_id, "confirm")

        ping = kernel.request(rec.comm_id, "ping")
        assert (ping["ok"], ping["live"], ping["cell"]) == (True, True, "its_cell")

        answer = kernel.request(
            rec.comm_id, "approve", tool_call_id=confirm["tool_call_id"], reply_id=confirm["reply_id"]
        )
        assert answer["ok"] is True
        kernel.wait_reply(msg_id, timeout=30).raise_for_error()
        assert kernel.request(rec.comm_id, "ping")["cell"] == ""
        # another cell that runs (awaiting a widget of its own): the reply's cell is not the one
        kernel.execute(
            "import asyncio, ipywidgets\nev = asyncio.Event()\n"
            "gate = ipywidgets.Text()\ngate.observe(lambda _: ev.set(), 'value')"
        ).raise_for_error()
        other = kernel.execute_async_start("await ev.wait()")
        assert kernel.wait_for(lambda: _last_status(kernel) == ("busy", other), timeout=10)
        assert kernel.request(rec.comm_id, "ping")["cell"] == "another"
        kernel.send_update(kernel.wait_for_comm("TextModel").comm_id, {"value": "go"})
        kernel.wait_reply(other, timeout=30).raise_for_error()
