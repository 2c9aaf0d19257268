"""Kernel > Interrupt ends a waiting cell at once, with one true line instead of a traceback.

ipykernel runs an async cell under its own SIGINT handler, which cancels the
cell's coroutine (``IPythonKernel._cancel_on_sigint``). But a signal may be
delivered to any of the kernel's threads, and Python runs its handler only when
the main thread next runs bytecode: a cell that awaits a reply (``await task``,
``await session.run(...)``) leaves the main thread asleep in its event loop, so
the interrupt waited for the next unrelated message and then surfaced as a bare
``CancelledError``, often in a later cell. And when it landed, IPython showed
that ``CancelledError`` as a red traceback into whatever the cell awaited
(nb_hitl's internals, asyncio's ``sleep``), read as a crash.

One watch per cell, whatever the cell awaits. :func:`watch_cell_interrupts`
follows IPython's ``pre_run_cell`` / ``post_run_cell`` events: while an async
cell runs under ipykernel's handler, SIGINT is registered with the running
loop (``loop.add_signal_handler``, which makes the signal wake the loop
through its self-pipe) and forwarded to ipykernel's handler, and the cell is
marked interrupted. :func:`interrupted_cell_error` turns the ``CancelledError``
that ends such a cell into :class:`WaitInterrupted`, which IPython shows as one
line (:func:`interrupt_note`): that the reply is still live and how to get
its end, or that no reply runs. The reply itself is not cancelled: awaiting a
reply's task does not cancel it (:class:`~nb_hitl.session.ReplyTask`).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from ._names import variable

__all__ = [
    "INTERRUPTED_NOTE",
    "STOPPED_NOTE",
    "WaitInterrupted",
    "interrupt_note",
    "interrupted_cell_error",
    "watch_cell_interrupts",
]

log = logging.getLogger(__name__)

INTERRUPTED_NOTE = (
    "nb_hitl: Kernel > Interrupt stopped this cell from waiting. The reply is still live: "
    "answer it in its card, then {waits}."
)
"""The line an interrupted cell ends with while a reply still runs (``{waits}``: :func:`interrupt_note`)."""

STOPPED_NOTE = (
    "nb_hitl: Kernel > Interrupt stopped this cell. No reply of an agent is running now "
    "(each reply's card shows how it ended)."
)
"""The line an interrupted cell ends with when no reply runs any more."""

_MARK = "_nb_hitl_cell_interrupts"


class WaitInterrupted(asyncio.CancelledError):
    """Kernel > Interrupt ended a cell's wait; what IPython shows in place of the ``CancelledError``.

    A ``CancelledError`` (``except Exception`` does not catch it). IPython
    shows an exception through its ``_render_traceback_`` when it has one:
    here the note alone, with no frames.

    Args:
        note: the line shown (:func:`interrupt_note`).
    """

    def __init__(self, note: str) -> None:
        super().__init__(note)
        self.note = note

    def _render_traceback_(self) -> list[str]:
        return [self.note]


def _how_to_wait(owner: object, namespace: Mapping[str, Any]) -> str:
    """How to await the end of ``owner``'s reply (and to stop it, when ``owner`` can), by its variable's name."""
    name = variable(owner, namespace)
    stops = callable(getattr(owner, "interrupt", None))  # a Session can stop its agent; a RemoteSession cannot
    if name is None:
        kind = type(owner).__name__
        stop = " (or awaiting its `.interrupt()` stops the agent)" if stops else ""
        return f"awaiting `.current.task` of your {kind} object gives its final reply{stop}"
    stop = f" (or `await {name}.interrupt()` to stop the agent)" if stops else ""
    return f"`reply = await {name}.current.task` gives its final reply{stop}"


def interrupt_note(owners: Sequence[object] = (), namespace: Mapping[str, Any] | None = None) -> str:
    """The line a cell stopped by Kernel > Interrupt ends with.

    Args:
        owners: the sessions (``Session``, ``RemoteSession``) whose reply still
            runs (``ReplyTask.running_owners()``); empty: no reply runs.
        namespace: the person's variables (the shell's ``user_ns``): the note
            names each session by the variable it is bound to, else by its class.

    Returns:
        :data:`INTERRUPTED_NOTE` filled in, or :data:`STOPPED_NOTE`.
    """
    if not owners:
        return STOPPED_NOTE
    waits = "; or ".join(_how_to_wait(owner, namespace or {}) for owner in owners)
    return INTERRUPTED_NOTE.format(waits=waits)


class _CellWatch:
    """Whether a SIGINT reached the running cell, and how to undo the loop's registration."""

    def __init__(self) -> None:
        self.interrupted = False
        self.undo: Callable[[], None] | None = None

    def started(self, *_: Any) -> None:
        """``pre_run_cell``: register SIGINT with the running loop, forwarding to ipykernel's handler."""
        self.ended()
        self.interrupted = False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        prior = signal.getsignal(signal.SIGINT)
        if (
            threading.current_thread() is not threading.main_thread()
            or not callable(prior)
            # a cell run synchronously: SIGINT raises KeyboardInterrupt as always, nothing to forward
            or prior is signal.default_int_handler
            or signal.SIGINT in getattr(loop, "_signal_handlers", {})
        ):
            return

        def forward() -> None:
            self.interrupted = True
            cast(Callable[[int, Any], Any], prior)(signal.SIGINT, None)

        try:
            loop.add_signal_handler(signal.SIGINT, forward)
        except (NotImplementedError, RuntimeError, ValueError):  # not a Unix selector loop
            log.debug("SIGINT cannot be registered with this loop", exc_info=True)
            return

        def undo() -> None:
            loop.remove_signal_handler(signal.SIGINT)
            signal.signal(signal.SIGINT, prior)  # ipykernel's, which it restores itself after the cell

        self.undo = undo

    def ended(self, *_: Any) -> None:
        """``post_run_cell``: put SIGINT back as it was before the cell."""
        undo, self.undo = self.undo, None
        if undo is not None:
            try:
                undo()
            except (RuntimeError, ValueError):  # the loop closed meanwhile
                log.debug("could not put SIGINT back", exc_info=True)


def watch_cell_interrupts(shell: Any) -> bool:
    """Follow each cell of ``shell`` so Kernel > Interrupt ends an awaiting cell at once (module docstring).

    Installed once per shell (IPython's ``pre_run_cell`` / ``post_run_cell``
    events); the cell running now is watched from its next await on.

    Args:
        shell: an IPython ``InteractiveShell``.

    Returns:
        whether the watch is installed (False: the shell has no events).
    """
    if getattr(shell, _MARK, None) is not None:
        return True
    events = getattr(shell, "events", None)
    if events is None:
        return False
    watch = _CellWatch()
    events.register("pre_run_cell", watch.started)
    events.register("post_run_cell", watch.ended)
    setattr(shell, _MARK, watch)
    watch.started()  # the cell that makes the first session
    return True


def interrupted_cell_error(shell: Any, value: BaseException, owners: Sequence[object]) -> WaitInterrupted | None:
    """What to show instead of ``value`` when it ends a cell that Kernel > Interrupt stopped.

    Args:
        shell: the IPython shell whose cell ends.
        value: the exception that ends it.
        owners: the sessions whose reply still runs (:func:`interrupt_note`).

    Returns:
        a :class:`WaitInterrupted` carrying :func:`interrupt_note`, or ``None``
        when ``value`` is not a cancellation of a cell that received SIGINT.
    """
    watch = getattr(shell, _MARK, None)
    if not isinstance(watch, _CellWatch) or not watch.interrupted or not isinstance(value, asyncio.CancelledError):
        return None
    return WaitInterrupted(interrupt_note(owners, getattr(shell, "user_ns", None)))
