"""Let a comm message's handling end after what it set going, not before.

ipykernel 7.4 handles a shell message between two iopub ``status`` messages:
``busy``, the handler, ``idle`` (``Kernel.dispatch_shell``). A widget's comm
handler is synchronous (``comm.base_comm.CommManager.comm_msg`` drops what the
callback returns), so a click whose work runs as a task afterwards (the answer's
checks, then the agent's resumed stream) has its ``idle`` published before that
work sends anything: the page handles ``busy`` and ``idle`` first, and the
agent's next event comes after them. A plain ``ipywidgets`` ``on_click`` that
sets a ``Label`` sends its update between the two.

``dispatch_shell`` awaits a shell handler that returns an awaitable. While a
comm message is handled, :func:`hold_dispatch` lets the code it reaches (a
widget's handler) name what the message's handling is waiting for; the comm
handler installed by :func:`hold_comm_dispatch` then returns an awaitable that
waits for it, at most :data:`HOLD_LIMIT` seconds, so ``idle`` follows it. The
loop is never blocked: the agent and every other task run meanwhile, and an
interrupt meanwhile does what it does when the kernel is idle (ipykernel's
SIGINT handler of the idle kernel is put back for the wait).

It holds only a message ipykernel frames with its own ``busy``/``idle``, i.e.
when no cell runs: while a cell runs (or awaits), ipykernel dispatches comm
messages at once and without status messages (``concurrent=True``), and there
is nothing to put in order. A held message keeps the shell's lock for at most
:data:`HOLD_LIMIT`: comm messages arriving meanwhile are dispatched at once (as
above), a cell run meanwhile starts at most that much later. Outside an
ipykernel nothing is installed and :func:`hold_dispatch` declines.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from ._kernel import cell_now, main_thread_kernel

__all__ = ["HOLD_LIMIT", "hold_comm_dispatch", "hold_dispatch"]

log = logging.getLogger(__name__)

#: longest a comm message's ``idle`` waits for what it set going, in seconds
HOLD_LIMIT = 0.25

_MARK = "_nb_hitl_held_comm_msg"
#: what the comm message being handled now waits for (None: not inside a held handler)
_holds: contextvars.ContextVar[list[Callable[[], Awaitable[Any]]] | None] = contextvars.ContextVar(
    "nb_hitl_comm_holds", default=None
)


def hold_dispatch(waiter: Callable[[], Awaitable[Any]]) -> bool:
    """Have the comm message being handled end (ipykernel's ``idle``) after ``waiter()``.

    Args:
        waiter: called once the handler returned; what it returns is awaited
            (its exceptions are logged, never raised), at most :data:`HOLD_LIMIT`
            seconds for all the waiters of one message together.

    Returns:
        whether it will be awaited: ``False`` outside a comm handler installed by
        :func:`hold_comm_dispatch`, or while a cell runs (see the module
        docstring); ``waiter`` is then never called.
    """
    holds = _holds.get()
    if holds is None:
        return False
    holds.append(waiter)
    return True


def _sigint_as_idle(kernel: Any) -> Any:
    """Put back the SIGINT handler ipykernel saved before the handler ran (ignored while
    the kernel is idle), so an interrupt during the wait does what it does when the kernel
    is idle, not raise ``KeyboardInterrupt`` in whatever task runs; returns the handler to
    restore afterwards (None: nothing changed)."""
    saved = getattr(kernel, "saved_sigint_handler", None)
    if saved is None:
        return None
    try:
        during = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, saved)
    except (ValueError, TypeError):  # not the main thread, or not a handler
        return None
    return during


async def _wait(waiters: list[Callable[[], Awaitable[Any]]], kernel: Any) -> None:
    """Await each waiter in turn, :data:`HOLD_LIMIT` seconds for all of them."""

    async def each() -> None:
        for waiter in waiters:
            try:
                await waiter()
            except Exception:
                log.debug("a comm message's waiter failed", exc_info=True)

    during = _sigint_as_idle(kernel)
    try:
        await asyncio.wait_for(each(), HOLD_LIMIT)
    except TimeoutError:
        pass
    finally:
        if during is not None:  # ipykernel's post_handler_hook restores from there
            signal.signal(signal.SIGINT, during)


def hold_comm_dispatch(kernel: Any = None) -> bool:
    """Wrap the kernel's ``comm_msg`` shell handler so :func:`hold_dispatch` works.

    Args:
        kernel: an ipykernel ``Kernel``; the running one when omitted.

    Returns:
        whether the wrapper is installed (now or before); False outside an
        ipykernel, or when it has no ``comm_msg`` shell handler.
    """
    kernel = main_thread_kernel(kernel)
    handlers: Any = getattr(kernel, "shell_handlers", None)
    original: Any = handlers.get("comm_msg") if isinstance(handlers, dict) else None
    if original is None:
        return False
    if getattr(original, _MARK, False):
        return True

    def comm_msg(stream: Any, ident: Any, msg: Any) -> Awaitable[None] | None:
        if cell_now():  # dispatched without status messages: nothing to hold (module docstring)
            return original(stream, ident, msg)
        waiters: list[Callable[[], Awaitable[Any]]] = []
        token = _holds.set(waiters)
        try:
            original(stream, ident, msg)
        finally:
            _holds.reset(token)
        return _wait(waiters, kernel) if waiters else None

    setattr(comm_msg, _MARK, True)
    handlers["comm_msg"] = comm_msg
    return True
