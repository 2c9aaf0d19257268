"""The kernel harness against a real ipykernel: comm traffic both ways.

Proves what nb_hitl relies on (see docs/design.md):
a page message reaches the widget's ``on_msg`` and its answer reaches the
page; and on ipykernel 7.4 comm messages are dispatched while a cell is
suspended in a top-level ``await``.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.harness import KernelHarness

pytestmark = pytest.mark.kernel

ECHO_WIDGET = textwrap.dedent(
    """
    import asyncio
    import anywidget
    import traitlets

    class Echo(anywidget.AnyWidget):
        _esm = "export default { render({ model, el }) { el.textContent = model.get('label'); } }"
        label = traitlets.Unicode("echo").tag(sync=True)

        def __init__(self, **kw):
            super().__init__(**kw)
            self.fut = None
            self.on_msg(self._answer)

        def _answer(self, _w, content, _buffers):
            self.send({"request_id": content.get("request_id"), "ok": True,
                       "echo": content.get("text")})
            if self.fut is not None and not self.fut.done():
                self.fut.set_result(content.get("text"))

    w = Echo(label="hello")
    w
    """
)


@pytest.fixture
def kernel():
    with KernelHarness() as k:
        yield k


def test_request_reply_roundtrip(kernel: KernelHarness) -> None:
    res = kernel.execute(ECHO_WIDGET).raise_for_error()
    assert any("application/vnd.jupyter.widget-view+json" in d for d in res.data), res.describe()

    rec = kernel.wait_for_comm("AnyModel")
    assert rec.target_name == "jupyter.widget"
    assert rec.state["label"] == "hello"
    assert "export default" in rec.state["_esm"]
    view = next(d for d in res.data if "application/vnd.jupyter.widget-view+json" in d)
    assert view["application/vnd.jupyter.widget-view+json"]["model_id"] == rec.comm_id

    reply = kernel.request(rec.comm_id, "say", text="ciao")
    assert reply["ok"] is True
    assert reply["echo"] == "ciao"
    assert reply["request_id"].startswith("test-")
    assert kernel.comm(rec.comm_id).custom == [reply]

    # A kernel-side trait change arrives as a merged `update`.
    kernel.execute("w.label = 'changed'").raise_for_error()
    kernel.wait_for(lambda: kernel.comm(rec.comm_id).state["label"] == "changed", 10)

    # A page-side update (model.save_changes) reaches the kernel's trait.
    kernel.send_update(rec.comm_id, {"label": "from page"})
    kernel.wait_for(lambda: "from page" in kernel.execute("w.label").text, 10)


def test_comm_message_resolves_top_level_await(kernel: KernelHarness) -> None:
    kernel.execute(ECHO_WIDGET).raise_for_error()
    rec = kernel.wait_for_comm("AnyModel")

    msg_id = kernel.execute_async_start(
        "w.fut = asyncio.get_running_loop().create_future()\n"
        "print('waiting')\n"
        "value = await w.fut\n"
        "print('got', value)\n"
        "value.upper()"
    )
    # The cell is suspended in `await` once it printed (its reply has not come).
    kernel.wait_for(lambda: "waiting" in kernel.stream_text(msg_id), 30, what="cell to start awaiting")
    reply = kernel.request(rec.comm_id, "approve", text="approved")
    assert reply == {"request_id": reply["request_id"], "ok": True, "echo": "approved"}

    res = kernel.wait_reply(msg_id, timeout=30).raise_for_error()
    assert "got approved" in res.stdout
    assert res.text == "'APPROVED'"


def test_background_task_output_and_errors(kernel: KernelHarness) -> None:
    res = kernel.execute(
        "import asyncio\n"
        "async def later():\n"
        "    await asyncio.sleep(0.2)\n"
        "    print('late line')\n"
        "task = asyncio.ensure_future(later())\n"
        "'returned'"
    ).raise_for_error()
    assert res.text == "'returned'"
    # Printed after the cell's idle: recorded under the old cell's msg_id.
    kernel.wait_for(lambda: "late line" in kernel.stream_text(res.msg_id), 10)

    bad = kernel.execute("1/0")
    assert not bad.ok
    assert bad.error is not None and bad.error["ename"] == "ZeroDivisionError"


def test_kill_and_restart(kernel: KernelHarness) -> None:
    kernel.execute("x = 41").raise_for_error()
    kernel.kill()
    assert not kernel.is_alive()
    kernel.restart()
    assert kernel.is_alive()
    res = kernel.execute("'x' in globals()").raise_for_error()
    assert res.text == "False"
    assert kernel.execute("import nb_hitl; nb_hitl.__name__").raise_for_error().text == "'nb_hitl'"
