"""Helpers shared by the tests: async runners, a resume-counting middleware,
waits on a ``Session`` or on a widget in a real kernel, and notebooks run
headless with nbclient.

Import it as ``tests.support`` (``pythonpath = ["."]`` in pyproject.toml).
Its ``assert`` s are rewritten by pytest (``tests/conftest.py`` registers it).
``StreamRecorder`` rebuilds what the page holds from a ReplyWidget's
transcript stream. The shared agents are in :mod:`tests.support_agents`,
the AG-UI pieces in :mod:`tests.agui_support`; kernels and JupyterLab are
driven by :mod:`tests.harness`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from agentscope.middleware import MiddlewareBase

from nb_hitl.walkthrough import ANSWER_FROM_CODE_ENV
from tests.harness.kernel import apply_ops, kernel_env

if TYPE_CHECKING:
    import nbformat

    from nb_hitl import Session
    from tests.harness.kernel import CommRecord, KernelHarness


# ----------------------------------------------------------- async helpers
def run_async(coro: Any) -> Any:
    """``asyncio.run`` on a fresh loop in a worker thread.

    Safe whatever loop the main thread has: Playwright's sync API (the
    session-scoped ``browser`` fixture of tests/browser) keeps an event loop
    running in the main thread for the rest of the session, and
    ``asyncio.run`` refuses to start there.
    """
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def wait_until(predicate: Any, what: str, timeout: float = 10.0) -> Any:
    """Poll ``predicate`` on the running loop until it returns something truthy; that value."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


# ------------------------------------------------------- Session in-process
class LoopTicker:
    """An ``async with`` ticker on the running loop: ``largest_gap`` is the
    longest time, in seconds, the loop went without running it (a stalled
    kernel loop shows as a large gap)."""

    def __init__(self, every: float = 0.01) -> None:
        self.every = every
        self.largest_gap = 0.0
        self.ticks = 0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(self.every)
            now = time.monotonic()
            self.largest_gap = max(self.largest_gap, now - last)
            self.ticks += 1
            last = now

    async def __aenter__(self) -> LoopTicker:
        self._task = asyncio.create_task(self._tick())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await asyncio.sleep(self.every * 2)  # a tick after the last blocking call
        assert self._task is not None
        self._task.cancel()


async def parked(
    session: Session, resumes: int = 0, what: str = "the reply parked after {resumes} resume(s)"
) -> list[Any]:
    """Wait until the current reply is parked after ``resumes`` resumes; its open pauses.

    ``what`` (formatted with ``resumes``) names the wait in the timeout message.
    """
    run = await wait_until(
        lambda: (
            session.current is not None
            and session.current.status == "paused"
            and session.current.resumes == resumes
            and session.current
        ),
        what.format(resumes=resumes),
    )
    return run.open_pauses()


async def parked_on(session: Session, kind: str) -> Any:
    """Wait until the current reply is parked with an open pause of ``kind``."""
    return await wait_until(
        lambda: (
            session.current is not None
            and session.current.status == "paused"
            and next((p for p in session.pending if p.kind == kind), None)
        ),
        f"an open {kind} pause",
    )


class InputRecorder(MiddlewareBase):
    """AgentScope ``on_reply`` middleware: records what each ``reply_stream`` call got."""

    def __init__(self) -> None:
        self.inputs: list[Any] = []

    async def on_reply(self, agent: Any, input_kwargs: dict[str, Any], next_handler: Any) -> Any:
        self.inputs.append(input_kwargs.get("inputs"))
        async for item in next_handler():
            yield item

    def kinds(self) -> list[str]:
        return [type(i).__name__ for i in self.inputs]


def record_events(agent: Any, events: list[Any] | None = None) -> list[Any]:
    """Wrap the agent's ``reply_stream`` so every event it yields is kept (in ``events``, or a new list); the list."""
    if events is None:
        events = []
    original = agent.reply_stream

    async def recording(*args: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        async for ev in original(*args, **kwargs):
            events.append(ev)
            yield ev

    agent.reply_stream = recording  # type: ignore[method-assign]
    return events


def widget_replies(widget: Any) -> list[dict[str, Any]]:
    """Capture what the widget sends back to the page (``RequestWidget.send``): the
    answers to page messages; transcript and card stream messages still go out as usual."""
    sent: list[dict[str, Any]] = []
    real_send = widget.send

    def send(content: Any, buffers: Any = None) -> None:
        if isinstance(content, dict) and content.get("type") in ("nbh_transcript", "nbh_cards"):
            real_send(content, buffers)
        else:
            sent.append(content)

    widget.send = send  # type: ignore[method-assign]
    return sent


# ------------------------------------------- the transcript stream to the page
class StreamRecorder:
    """Stream messages and ``transcript`` trait sets of a ReplyWidget, with their times.

    Attach it before the reply streams (right after ``Session.start``: the
    widget exists, nothing is sent yet); :meth:`rebuilt` is then what the page
    holds.
    """

    def __init__(self, widget: Any) -> None:
        self.stream: list[tuple[float, dict[str, Any]]] = []
        self.replies: list[dict[str, Any]] = []
        self.trait_sets = 0
        real_send = widget.send

        def send(content: Any, buffers: Any = None) -> None:
            if isinstance(content, dict) and content.get("type") == "nbh_transcript":
                self.stream.append((time.monotonic(), content))
            else:
                self.replies.append(content)
            real_send(content, buffers)

        widget.send = send
        widget.observe(self._trait, names="transcript")

    def _trait(self, _change: Any) -> None:
        self.trait_sets += 1

    def rebuilt(self) -> list[dict[str, Any]]:
        """The entries the page built from every stream message, in order."""
        entries: list[dict[str, Any]] = []
        for n, (_, msg) in enumerate(self.stream):
            assert msg["seq"] == n + 1, "stream messages are numbered 1, 2, 3... in order"
            apply_ops(entries, msg["ops"])
        return entries


# ------------------------------------------------ a ReplyWidget in a kernel
def reply_widget(k: KernelHarness, agent_name: str, timeout: float = 30.0, *, require_esm: bool = False) -> CommRecord:
    """The latest ``ReplyWidget`` comm (an anywidget: ``_model_name`` AnyModel) of ``agent_name``.

    ``require_esm`` also checks that the widget state carries its ES module.
    """

    def find() -> CommRecord | None:
        found = [c for c in k.comms("AnyModel") if c.state.get("agent_name") == agent_name]
        return found[-1] if found else None

    rec = k.wait_for(find, timeout, what=f"the ReplyWidget of {agent_name!r}")
    if require_esm:
        assert "reply" in rec.state.get("_esm", "") or rec.state.get("_esm"), "the widget carries its ES module"
    return rec


def open_pause(k: KernelHarness, comm_id: str, kind: str, timeout: float = 30.0) -> dict[str, Any]:
    """Wait until the widget state shows the reply parked on an open pause of ``kind``."""

    def find() -> dict[str, Any] | None:
        state = k.comm(comm_id).state
        if state.get("status") != "paused":
            return None
        return next((p for p in state.get("pauses", []) if p["kind"] == kind and p["status"] == "open"), None)

    return k.wait_for(find, timeout, what=f"an open {kind} pause in the widget state")


def wait_status(k: KernelHarness, comm_id: str, status: str, timeout: float = 30.0) -> dict[str, Any]:
    """Wait until the widget's ``status`` is ``status``; its state."""
    return k.wait_for(
        lambda: k.comm(comm_id).state if k.comm(comm_id).state.get("status") == status else None,
        timeout,
        what=f"widget status {status!r}",
    )


def kernel_json(k: KernelHarness, expr: str) -> Any:
    """Evaluate ``expr`` in the kernel and return it (printed as JSON; the kernel must have ``json`` imported)."""
    res = k.execute(f"print(json.dumps({expr}))").raise_for_error()
    return json.loads(res.stdout.strip().splitlines()[-1])


# ------------------------------------------------- notebooks run headless
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _output_texts(cell: nbformat.NotebookNode) -> list[str]:
    """A cell's stream outputs, and its errors as ``ERROR name: value``. Consecutive outputs of
    one stream are one text, as a front end shows them: the kernel flushes a stream on a timer,
    so one ``print`` may arrive as two stream messages (split anywhere, e.g. between its words)."""
    out: list[str] = []
    last_stream = None
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            if o.get("name") == last_stream:
                out[-1] += o.get("text", "")
            else:
                out.append(o.get("text", ""))
            last_stream = o.get("name")
            continue
        last_stream = None
        if o.get("output_type") == "error":
            out.append(f"ERROR {o.get('ename')}: {o.get('evalue')}")
    return out


def cell_text(cell: nbformat.NotebookNode) -> str:
    """A cell's stream outputs and errors, joined as they came."""
    return "".join(_output_texts(cell))


def notebook_text(nb: nbformat.NotebookNode) -> str:
    """Every stream output and error of the notebook, one per line."""
    return "\n".join(t for cell in nb.cells for t in _output_texts(cell))


def widget_views(nb: nbformat.NotebookNode) -> list[Any]:
    """Every output that displays a widget (a ``widget-view+json`` bundle)."""
    return [o for c in nb.cells for o in c.get("outputs", []) if WIDGET_VIEW in o.get("data", {})]


IOPUB_WAIT = 60
"""Seconds nbclient waits, after a cell's reply, for the rest of its output. Its default (4 s, then
only a warning) drops whatever output it has not read yet, which on a loaded machine can be a
cell's printed line; waiting longer costs nothing when the output is there, and a wait that runs
out fails the test instead of dropping output."""


def run_notebook(path: Path, timeout: int = 180) -> tuple[nbformat.NotebookNode, str]:
    """Execute the notebook top to bottom with nbclient; ``(nb, notebook_text(nb))``.

    It runs on the venv's ``python3`` kernel with a fresh temporary folder as
    working directory (notebooks write next to themselves, and the suite's
    processes may run the same notebook at once) and the environment of
    :func:`tests.harness.kernel.kernel_env` (the repository on
    ``PYTHONPATH``) plus ``NB_HITL_ANSWER_FROM_CODE=1``: nobody clicks, so
    the notebook answers its own pauses (``nb_hitl.answer_from_code``);
    ``timeout`` is per cell. Raises ``CellExecutionError`` on the first
    failing cell. The text is printed too: pytest shows it in full when a
    test's assertion on it fails (its assertion message cuts it).
    """
    import nbformat
    from nbclient import NotebookClient

    with pytest.MonkeyPatch.context() as mp:
        for key, value in kernel_env({ANSWER_FROM_CODE_ENV: "1"}).items():
            mp.setenv(key, value)
        nb = nbformat.read(path, as_version=4)
        with tempfile.TemporaryDirectory(prefix="nbh-notebook-") as folder:
            client = NotebookClient(
                nb,
                kernel_name="python3",
                timeout=timeout,
                resources={"metadata": {"path": folder}},
                iopub_timeout=IOPUB_WAIT,
                raise_on_iopub_timeout=True,
            )
            client.execute()
    text = notebook_text(nb)
    print(f"--- what {path.name} printed ---\n{text}")  # pytest shows it when an assertion on it fails
    return nb, text
