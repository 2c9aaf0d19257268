"""Kernel > Interrupt stops a cell from waiting on a pause, at once.

ipykernel runs an async cell under its own SIGINT handler, which cancels the
cell's coroutine. But a signal may be delivered to any of the kernel's threads,
and Python runs its handler only when the main thread next runs bytecode: a
cell that awaits a pause leaves the main thread asleep in its event loop, so
the interrupt waited for the next unrelated message and then surfaced as a bare
``CancelledError``, often in a later cell.

:func:`sigint_wakes_the_loop` registers SIGINT with the running loop
(``loop.add_signal_handler``, which makes the signal wake the loop through its
self-pipe) for as long as the cell awaits, and forwards each SIGINT to the
handler that was installed before (ipykernel's). The reply itself is shielded
by the caller, so it stays live in its widget. Outside a kernel's main thread,
or when no custom handler is installed, it does nothing.

ipykernel ends the interrupted cell by cancelling it: a ``CancelledError``
that IPython would show as a red traceback into nb_hitl's internals, read as a
crash. Once a SIGINT was forwarded, that ``CancelledError`` becomes
:class:`WaitInterrupted`, still a ``CancelledError`` (``except Exception``
does not catch it, ``asyncio`` sees a cancellation), which IPython shows as
:data:`INTERRUPTED_NOTE` alone (its ``_render_traceback_``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

__all__ = ["sigint_wakes_the_loop", "wait_shielded", "INTERRUPTED_NOTE", "WaitInterrupted"]

log = logging.getLogger(__name__)

T = TypeVar("T")

INTERRUPTED_NOTE = (
    "nb_hitl: Kernel > Interrupt stopped this cell from waiting. The reply is still live: "
    "answer it in its card, then `reply = await session.current.task` gives its final message "
    "(or `await session.interrupt()` to stop the agent)."
)


class WaitInterrupted(asyncio.CancelledError):
    """Kernel > Interrupt ended a cell's wait on a reply; the reply stays live.

    A ``CancelledError``: it ends the cell as ipykernel's cancellation does.
    IPython shows an exception through its ``_render_traceback_`` when it has
    one: here :data:`INTERRUPTED_NOTE` alone, with no frames.
    """

    def __init__(self) -> None:
        super().__init__(INTERRUPTED_NOTE)

    def _render_traceback_(self) -> list[str]:
        return [INTERRUPTED_NOTE]


class _Seen:
    """Whether a SIGINT was forwarded while the cell waited."""

    def __init__(self) -> None:
        self.interrupted = False


@contextlib.contextmanager
def sigint_wakes_the_loop() -> Iterator[_Seen]:
    """While the block runs, a SIGINT wakes the running loop and reaches the prior handler.

    Yields:
        an object whose ``interrupted`` is True once a SIGINT was forwarded.

    Raises:
        RuntimeError: when called with no running event loop.
    """
    seen = _Seen()
    loop = asyncio.get_running_loop()
    prior = signal.getsignal(signal.SIGINT)
    usable = (
        threading.current_thread() is threading.main_thread()
        and callable(prior)
        and prior is not signal.default_int_handler  # nobody would cancel the cell: leave it be
        and signal.SIGINT not in getattr(loop, "_signal_handlers", {})
    )
    if not usable:
        yield seen
        return

    def forward() -> None:
        seen.interrupted = True
        cast(Callable[[int, Any], Any], prior)(signal.SIGINT, None)

    try:
        loop.add_signal_handler(signal.SIGINT, forward)
    except (NotImplementedError, RuntimeError, ValueError):  # not a Unix selector loop
        log.debug("SIGINT cannot be registered with this loop", exc_info=True)
        yield seen
        return
    noted = False
    try:
        yield seen
    except asyncio.CancelledError as exc:
        if not seen.interrupted or isinstance(exc, WaitInterrupted):
            raise
        noted = True
        raise WaitInterrupted() from None  # the note, not a traceback into nb_hitl
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, prior)
        if seen.interrupted and not noted:
            # the wait ended another way first: the cancellation lands at the cell's next await
            print(INTERRUPTED_NOTE, file=sys.stderr)


async def wait_shielded(task: asyncio.Future[T]) -> T:
    """Await a reply's ``task`` from a cell: Kernel > Interrupt ends only this wait.

    The task is shielded, so the reply stays live in its widget; the cell
    ends with :data:`INTERRUPTED_NOTE` (:class:`WaitInterrupted`).

    Args:
        task: the reply's driving task.

    Returns:
        the task's result.
    """
    with sigint_wakes_the_loop():
        return await asyncio.shield(task)
