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
every other message goes to ipykernel unchanged. It is installed once per
kernel, by the first nb_hitl widget created in it; the event loop itself is
never patched. Outside an ipykernel (or on a layout it does not know) it does
nothing.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from typing import Any

__all__ = ["answer_info_requests_while_busy", "INFO_REQUESTS"]

log = logging.getLogger(__name__)

#: read-only shell requests answered while a cell holds the shell's lock
INFO_REQUESTS = frozenset({"kernel_info_request", "comm_info_request"})

_MARK = "_nb_hitl_info_while_busy"


def _main_shell_stream(kernel: Any) -> Any:
    """The ZMQStream whose callback feeds the kernel's main shell, or None."""
    if getattr(kernel, "_supports_kernel_subshells", False):
        thread = getattr(kernel, "shell_channel_thread", None)
        manager = getattr(thread, "manager", None)
        pair = getattr(manager, "_shell_channel_to_main", None)
        return getattr(pair, "to_stream", None)
    return getattr(kernel, "shell_stream", None)


def _msg_type(kernel: Any, msg: Any) -> str | None:
    try:
        _, frames = kernel.session.feed_identities(msg, copy=False)
        header = kernel.session.deserialize(frames, content=False, copy=False)["header"]
        return str(header.get("msg_type"))
    except Exception:  # noqa: BLE001 - not ours to judge: ipykernel reports it
        return None


def answer_info_requests_while_busy(kernel: Any = None) -> bool:
    """Answer ``kernel_info_request`` / ``comm_info_request`` while a cell awaits.

    Args:
        kernel: an ipykernel ``Kernel``; the running one when omitted.

    Returns:
        whether the wrapper is installed (now or before). False outside an
        ipykernel, or when its shell is not laid out as in ipykernel 7.
    """
    if threading.current_thread() is not threading.main_thread():
        return False  # the shell's stream belongs to the main thread's loop
    if kernel is None:
        try:
            from ipykernel.kernelbase import Kernel
        except ImportError:
            return False
        if not Kernel.initialized():
            return False
        kernel = Kernel.instance()
    stream = _main_shell_stream(kernel)
    lock = getattr(kernel, "_main_asyncio_lock", None)
    original = getattr(stream, "_recv_callback", None)
    if stream is None or original is None or not isinstance(lock, asyncio.Lock) or kernel.session is None:
        return False
    if getattr(original, _MARK, False):
        return True

    async def dispatch_concurrently(msg: Any) -> None:
        # what ipykernel's shell_main does for a comm message while locked
        shell_parent = kernel.get_parent("shell")
        shell_ident = kernel._get_shell_context_var(kernel._shell_parent_ident)
        try:
            await asyncio.create_task(
                kernel.dispatch_shell(msg, subshell_id=None, concurrent=True),
                context=contextvars.copy_context(),
            )
        finally:
            kernel.set_parent(shell_ident, shell_parent, channel="shell")

    def on_recv(msg: Any) -> Any:
        if lock.locked() and _msg_type(kernel, msg) in INFO_REQUESTS:
            return dispatch_concurrently(msg)
        return original(msg)

    setattr(on_recv, _MARK, True)
    stream.on_recv(on_recv, copy=getattr(stream, "_recv_copy", False))
    return True
