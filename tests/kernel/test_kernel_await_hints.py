"""``asyncio.run(...)`` / ``loop.run_until_complete(...)`` in a cell get a note naming ``await``.

Both fail before nb_hitl code runs (the kernel's loop is already running);
``install_kernel_hints`` adds :data:`AWAIT_HINT` to the error IPython shows.
Real ipykernel: with a custom exception handler an IPython extension set
before nb_hitl (kept: its errors still reach it), with one set after (the
next ``Session`` installs the hint again), and for a ``RemoteSession``.
"""

from __future__ import annotations

import pytest

from nb_hitl.session._calls import AWAIT_HINT
from tests.harness import KernelHarness
from tests.harness.kernel import ExecResult
from tests.support_agents import deletion_cell

pytestmark = pytest.mark.kernel

#: What an IPython extension does: its own handler, for its own errors.
OTHER_HANDLER = """
def other_handler(shell, etype, value, tb, tb_offset=None):
    print("OTHER HANDLER SAW", etype.__name__)
    return shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
get_ipython().set_custom_exc(({types}), other_handler)
"""

WRONG_WAYS = (
    "import asyncio\nasyncio.run(session.run('tidy up'))",
    "import asyncio\nloop = asyncio.get_event_loop()\nloop.run_until_complete(session.run('tidy up'))",
)


def _told_to_await(res: ExecResult) -> str:
    assert res.error is not None and res.error["ename"] == "RuntimeError", res.describe()
    shown = "\n".join(res.error["traceback"])
    assert shown.rstrip().endswith(AWAIT_HINT), shown[-600:]
    return shown


def test_the_hint_keeps_a_handler_set_before_nb_hitl() -> None:
    with KernelHarness() as kernel:
        kernel.execute(OTHER_HANDLER.format(types="ValueError,")).raise_for_error()
        kernel.execute(deletion_cell("hint")).raise_for_error()
        for code in WRONG_WAYS:
            _told_to_await(kernel.execute(code))
        # the extension's errors still reach the extension's handler
        res = kernel.execute("raise ValueError('its own error')")
        assert "OTHER HANDLER SAW ValueError" in res.stdout
        assert AWAIT_HINT not in "\n".join(res.error["traceback"])
        # nothing was sent: the agent was never called
        assert "CALLS 0" in kernel.execute("print('CALLS', len(agent.model.calls))").raise_for_error().stdout


def test_a_handler_for_runtime_errors_too_sees_the_error_with_the_hint() -> None:
    with KernelHarness() as kernel:
        kernel.execute(OTHER_HANDLER.format(types="Exception,")).raise_for_error()
        kernel.execute(deletion_cell("hint")).raise_for_error()
        res = kernel.execute(WRONG_WAYS[1])
        _told_to_await(res)
        assert "OTHER HANDLER SAW RuntimeError" in res.stdout


def test_a_handler_set_after_nb_hitl_gets_the_hint_back_with_the_next_session() -> None:
    with KernelHarness() as kernel:
        kernel.execute(deletion_cell("hint")).raise_for_error()
        kernel.execute(OTHER_HANDLER.format(types="ValueError,")).raise_for_error()
        kernel.execute("session = Session(agent)").raise_for_error()
        for code in WRONG_WAYS:
            _told_to_await(kernel.execute(code))
        assert "OTHER HANDLER SAW ValueError" in kernel.execute("raise ValueError('x')").stdout


def test_a_remote_session_gets_the_hint() -> None:
    with KernelHarness() as kernel:
        kernel.execute(
            "from nb_hitl.agui import RemoteSession\nremote = RemoteSession('http://127.0.0.1:9/agui', token='t')"
        ).raise_for_error()
        _told_to_await(kernel.execute("import asyncio\nasyncio.run(remote.run('hello'))"))


def test_what_to_type_names_the_session_by_the_persons_own_variable() -> None:
    """A reply call left un-awaited, and the refusal of a second message while a
    reply waits, tell the person what to type with the name their cells use
    (``tidy``), not the docs' ``session``."""
    with KernelHarness() as kernel:
        kernel.execute(
            deletion_cell("named").replace("session = Session(agent)", "tidy = Session(agent)")
        ).raise_for_error()
        res = kernel.execute("tidy.run('tidy up')").raise_for_error()
        shown = " ".join(str(o.get("data", {}).get("text/plain", "")) for o in res.outputs)
        assert "<tidy.run(...) was not started: write `await tidy.run(...)`" in shown, shown
        assert "`tidy.start(...)`" in shown, shown
        kernel.execute("task = tidy.start('tidy up')\nimport asyncio\nawait asyncio.sleep(1.0)").raise_for_error()
        # the driving task cancelled while the agent waits: the run expires, saying how to show the pause again
        kernel.execute("task.cancel()\nawait asyncio.sleep(0.5)\nprint('REASON', tidy.runs[-1].reason)")
        reason = kernel.execute("print('REASON', tidy.runs[-1].reason)").raise_for_error().stdout
        assert "`await tidy.resume()` shows its open pauses again" in reason, reason
        refused = kernel.execute("tidy.start('and again')")
        assert refused.error is not None and refused.error["ename"] == "PendingPauseError", refused.describe()
        assert "`await tidy.resume()` shows them again" in refused.error["evalue"], refused.error["evalue"]
        # nothing was sent for the refused message: the agent was asked once
        assert "CALLS 1" in kernel.execute("print('CALLS', len(agent.model.calls))").raise_for_error().stdout
