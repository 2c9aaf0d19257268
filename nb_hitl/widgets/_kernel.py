"""Let a reloaded page find its widgets while a cell awaits a pause.

ipykernel 7.4 runs shell messages one at a time under a lock, except comm
messages, which it dispatches even while an async cell holds the lock (so a
click can resolve what the cell awaits). A page that is reloaded while a cell
awaits ``await session.run(...)`` also needs two *read-only* shell requests:
``kernel_info_request`` (JupyterLab's kernel connection waits for it) and
``comm_info_request`` (the widget manager lists the widgets' comms with it
when restoring them). Both waited on the cell's lock, so the page showed
"Loading widget..." until the cell ended, and the cell never ended because
nobody could click.

:func:`answer_info_requests_while_busy` wraps the callback that feeds the
kernel's main shell: those two requests, arriving while the lock is held, are
dispatched the way ipykernel dispatches comm messages (``concurrent=True``);
every other message goes to ipykernel unchanged. Each answer is framed by the
iopub ``status`` messages JupyterLab waits for (``busy``/``idle`` of the request,
then ``busy`` again for the running cell). It is installed once per
kernel, by the first nb_hitl widget created in it; the event loop itself is
never patched. Outside an ipykernel (or on a layout it does not know) it does
nothing.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import threading
from typing import Any

__all__ = ["answer_info_requests_while_busy", "cell_now", "main_thread_kernel", "INFO_REQUESTS"]

log = logging.getLogger(__name__)

#: read-only shell requests answered while a cell holds the shell's lock
INFO_REQUESTS = frozenset({"kernel_info_request", "comm_info_request"})


_MARK = "_nb_hitl_info_while_busy"
#: the running cell, followed once the wrapper is installed (see :func:`cell_now`)
_followed: _RunningCell | None = None


def cell_now() -> str:
    """The ``msg_id`` of the ``execute_request`` whose cell runs now (awaiting included).

    Returns:
        ``""`` when no cell runs, or before the wrapper of
        :func:`answer_info_requests_while_busy` is installed (outside an ipykernel).
    """
    parent = _followed.parent if _followed is not None else None
    return str(((parent or {}).get("header") or {}).get("msg_id") or "")


def _main_shell_stream(kernel: Any) -> Any:
    """The ZMQStream whose callback feeds the kernel's main shell, or None."""
    if getattr(kernel, "_supports_kernel_subshells", False):
        thread = getattr(kernel, "shell_channel_thread", None)
        manager = getattr(thread, "manager", None)
        pair = getattr(manager, "_shell_channel_to_main", None)
        return getattr(pair, "to_stream", None)
    return getattr(kernel, "shell_stream", None)


def _request(kernel: Any, msg: Any) -> dict[str, Any] | None:
    """A shell message without its content (``header``, ``parent_header``, ...), usable
    as the parent of a status; None when unreadable (ipykernel reports it itself)."""
    try:
        _, frames = kernel.session.feed_identities(msg, copy=False)
        return dict(kernel.session.deserialize(frames, content=False, copy=False))
    except Exception:  # noqa: BLE001 - not ours to judge: ipykernel reports it
        return None


async def _answer_with_status(kernel: Any, msg: Any, request: dict[str, Any], cell: dict[str, Any] | None) -> None:
    """Dispatch one info request with the iopub ``status`` messages a front end waits for.

    JupyterLab's kernel connection resolves a shell request only when it has both the
    reply *and* an iopub ``status: idle`` whose parent is that request (its
    ``KernelFutureHandler``). ipykernel's concurrent dispatch (meant for comm messages)
    publishes no status, so a reloaded page waited forever on ``kernel_info_request``
    and showed "Loading widget...". Around the answer this publishes ``busy`` then
    ``idle`` for the request, then ``busy`` again for the cell that still runs, so the
    kernel's indicator (and jupyter_server's ``execution_state``) stay truthful.
    """
    kernel._publish_status("busy", "shell", parent=request)
    try:
        await kernel.dispatch_shell(msg, subshell_id=None, concurrent=True)
    finally:
        kernel._publish_status("idle", "shell", parent=request)
        if cell is not None:
            kernel._publish_status("busy", "shell", parent=cell)


class _RunningCell:
    """The ``execute_request`` of the cell that runs now (as a status parent), or None.

    Read from IPython's ``pre_run_cell`` / ``post_run_cell`` events, which run in the
    cell's own context, where ``kernel.get_parent("shell")`` is its request; seeded
    with the installing cell, since the first widget is usually made inside one.

    When a cell ends, an iopub ``status: idle`` with the cell's own request as parent
    is published. JupyterLab completes a cell (its ``[n]``) only on its reply *and* an
    idle whose parent is its request. With widget comm messages dispatched while cells
    run, ipykernel 7.4 was seen to publish a cell's closing idle with the *previous*
    cell's request as parent, leaving the cell at ``[*]`` with the kernel idle; this
    idle, sent as the cell's code ends (before ipykernel's reply and idle), keeps it
    true. A second idle for the same request changes nothing on the page.
    """

    def __init__(self) -> None:
        self.parent: dict[str, Any] | None = None

    @classmethod
    def follow(cls, kernel: Any) -> _RunningCell:
        cell = cls()
        shell = getattr(kernel, "shell", None)
        events = getattr(shell, "events", None)
        if events is None:
            return cell

        def started(*_: Any) -> None:
            parent = kernel.get_parent("shell")
            is_cell = (parent or {}).get("header", {}).get("msg_type") == "execute_request"
            cell.parent = parent if is_cell else None

        def ended(*_: Any) -> None:
            parent, cell.parent = cell.parent, None
            if parent is not None:  # the cell's own idle, with its own request as parent (class docstring)
                _flush_output()  # what the cell printed goes before its idle, or a front end drops it
                kernel._publish_status("idle", "shell", parent=parent)

        started()
        events.register("pre_run_cell", started)
        events.register("post_run_cell", ended)
        return cell


def _flush_output() -> None:
    """Send what the cell wrote to stdout/stderr now (ipykernel's ``OutStream`` buffers it)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            log.debug("could not flush %r", stream, exc_info=True)


def main_thread_kernel(kernel: Any = None) -> Any:
    """``kernel``, or the running ipykernel ``Kernel`` when omitted, if called on the main
    thread (the shell's streams belong to the main thread's loop); None otherwise or
    outside an ipykernel."""
    if threading.current_thread() is not threading.main_thread():
        return None
    if kernel is None:
        try:
            from ipykernel.kernelbase import Kernel
        except ImportError:
            return None
        if not Kernel.initialized():
            return None
        kernel = Kernel.instance()
    return kernel


def answer_info_requests_while_busy(kernel: Any = None) -> bool:
    """Answer ``kernel_info_request`` / ``comm_info_request`` while a cell awaits.

    Args:
        kernel: an ipykernel ``Kernel``; the running one when omitted.

    Returns:
        whether the wrapper is installed (now or before). False outside an
        ipykernel, or when its shell is not laid out as in ipykernel 7.
    """
    kernel = main_thread_kernel(kernel)
    if kernel is None:
        return False
    stream = _main_shell_stream(kernel)
    lock = getattr(kernel, "_main_asyncio_lock", None)
    original = getattr(stream, "_recv_callback", None)
    if stream is None or original is None or not isinstance(lock, asyncio.Lock) or kernel.session is None:
        return False
    if getattr(original, _MARK, False):
        return True

    global _followed
    cell = _followed = _RunningCell.follow(kernel)

    async def dispatch_concurrently(msg: Any, request: dict[str, Any]) -> None:
        # what ipykernel's shell_main does for a comm message while locked, plus the
        # busy/idle status of the request (see _answer_with_status)
        shell_parent = kernel.get_parent("shell")
        shell_ident = kernel._get_shell_context_var(kernel._shell_parent_ident)
        try:
            await asyncio.create_task(
                _answer_with_status(kernel, msg, request, cell.parent),
                context=contextvars.copy_context(),
            )
        finally:
            kernel.set_parent(shell_ident, shell_parent, channel="shell")

    def on_recv(msg: Any) -> Any:
        if lock.locked():
            request = _request(kernel, msg)
            if request is not None and request["header"].get("msg_type") in INFO_REQUESTS:
                return dispatch_concurrently(msg, request)
        return original(msg)

    setattr(on_recv, _MARK, True)
    stream.on_recv(on_recv, copy=getattr(stream, "_recv_copy", False))
    return True
