"""Used the wrong way in a notebook cell, told the right way.

A kernel's cell already runs on an asyncio loop, so a reply is awaited with
``await``. :class:`ReplyCall` is what ``session.run(...)`` returns: nothing
starts until it is awaited, and shown as a cell's value it says to write
``await``. :class:`ReplyTask` is the task ``session.start(...)`` returns;
``.result()`` on it while the reply runs says the same, and awaiting it never
cancels the reply; :class:`PendingAction`
(``session.act(...)``) carries an action through even when not awaited. For
``asyncio.run(...)`` / ``loop.run_until_complete(...)`` in a cell, which fail
before nb_hitl code runs, :func:`install_kernel_hints` adds a note to the
error IPython shows (an IPython custom exception handler that keeps any
handler set before it; the event loop itself is never patched). The same
handler shows a cell ended by Kernel > Interrupt as one line
(:mod:`nb_hitl.session._sigint`).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, ClassVar, TypeVar

from ._names import called
from ._sigint import interrupted_cell_error, watch_cell_interrupts

__all__ = ["ReplyCall", "ReplyTask", "PendingAction", "install_kernel_hints", "AWAIT_HINT"]

log = logging.getLogger("nb_hitl.session")

T = TypeVar("T")

AWAIT_HINT = (
    "In a notebook cell the kernel's event loop is already running: write `await session.run(...)` "
    "(or `await task` for a task from `session.start(...)`) instead of asyncio.run(...), "
    "loop.run_until_complete(...) or task.result()."
)


class ReplyCall(Coroutine[Any, Any, T]):
    """A reply not started yet: ``await`` it (``await session.run("...")``).

    A coroutine object (``asyncio.create_task`` / ``wait_for`` accept it)
    whose body is created when it is first awaited; one never awaited does
    nothing and leaves no "never awaited" warning, and its ``repr`` (what a
    cell shows) says how to run it, naming the session by the person's
    variable (:func:`~nb_hitl.session._names.called`).

    Args:
        factory: makes the reply's coroutine when first awaited.
        call: the method call as written after the session's name (``"run(...)"``).
        owner: the session the call belongs to.
    """

    def __init__(self, factory: Callable[[], Coroutine[Any, Any, T]], call: str, owner: object) -> None:
        self._factory = factory
        self._method = call
        self._owner = owner
        self._coro: Coroutine[Any, Any, T] | None = None

    def _inner(self) -> Coroutine[Any, Any, T]:
        if self._coro is None:
            self._coro = self._factory()
        return self._coro

    def __await__(self) -> Generator[Any, None, T]:
        return self._inner().__await__()

    def send(self, value: Any) -> Any:
        return self._inner().send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        if val is None and tb is None:
            return self._inner().throw(typ)
        return self._inner().throw(typ, val, tb)

    def close(self) -> None:
        if self._coro is not None:
            self._coro.close()

    @property
    def _call(self) -> str:
        return f"{called(self._owner)}.{self._method}"

    def __repr__(self) -> str:
        if self._coro is not None:
            return f"<{self._call}: started>"
        return (
            f"<{self._call} was not started: write `await {self._call}` in the cell "
            f"(or `{called(self._owner)}.start(...)` to run it in the background)>"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


class PendingAction(Awaitable[T]):
    """The async part of an action (``session.act(...)``): ``await`` it for the answer.

    Awaited at once (``await session.act(...)``), it runs in the awaiting
    task as a plain coroutine would. Not awaited before the loop's next
    step, it is started as a task by itself, so an action is always carried
    through (a pause never stays ``deciding``); awaiting it later gives that
    task's answer or refusal. A refusal nobody awaits is logged.
    """

    def __init__(self, coro: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop) -> None:
        self._coro = coro
        self._loop = loop
        self._task: asyncio.Task[T] | None = None
        self._claimed = False
        loop.call_soon(self._start_unclaimed)

    def _start_unclaimed(self) -> None:
        if self._claimed:
            return
        self._claimed = True
        self._task = self._loop.create_task(self._coro)
        self._task.add_done_callback(_log_unseen_failure)

    def __await__(self) -> Generator[Any, None, T]:
        if self._task is not None:
            return self._task.__await__()
        if self._claimed:
            raise RuntimeError("this action is already being awaited")
        self._claimed = True
        return self._coro.__await__()

    def __repr__(self) -> str:
        state = "running" if self._task is not None and not self._task.done() else "pending"
        if self._task is not None and self._task.done():
            state = "done"
        return f"<nb_hitl action ({state}): `await` it to see the answer>"


def _log_unseen_failure(task: asyncio.Task[Any]) -> None:
    if task.cancelled():
        return
    exc = task.exception()  # retrieved: no "never retrieved" warning
    if exc is not None:
        log.warning("an action that was not awaited was refused: %s", exc)


class ReplyTask(asyncio.Task):
    """The driving task of a reply (``session.start(...)``); ``await`` it.

    ``result()`` before the reply ended raises ``InvalidStateError`` with a
    message that says to ``await`` the task (a cell cannot block the loop
    the reply runs on). Awaiting it never cancels the reply: a cell stopped
    by Kernel > Interrupt (or any awaiter cancelled) stops waiting, and the
    reply stays live in its widget; ``task.cancel()`` or
    ``session.interrupt()`` end the reply itself.

    Args:
        coro: the coroutine that drives the reply.
        owner: the :class:`~nb_hitl.session.Session` or
            :class:`~nb_hitl.agui.RemoteSession` whose reply it drives (named
            in the note of a cell stopped by Kernel > Interrupt).
        **kwargs: ``asyncio.Task``'s (``loop``, ``name``, ``context``).
    """

    _all: ClassVar[weakref.WeakSet[ReplyTask]] = weakref.WeakSet()

    def __init__(self, coro: Coroutine[Any, Any, Any], *, owner: object, **kwargs: Any) -> None:
        super().__init__(coro, **kwargs)
        self.owner = owner
        ReplyTask._all.add(self)

    @classmethod
    def running_owners(cls, loop: asyncio.AbstractEventLoop | None = None) -> list[object]:
        """The owners of the replies' driving tasks not ended, each once.

        Args:
            loop: only the tasks on this loop (a cell can await only those: not
                the replies an ``AguiServer`` in a thread of the kernel drives);
                ``None``: every session's in this process.
        """
        owners: list[object] = []
        for task in list(cls._all):
            mine = loop is None or task.get_loop() is loop
            if mine and not task.done() and not any(task.owner is o for o in owners):
                owners.append(task.owner)
        return owners

    def __await__(self) -> Generator[Any, None, Any]:
        if self.done():
            return super().__await__()
        # the awaiter's cancellation ends the wait, not the reply
        return asyncio.shield(self).__await__()

    def result(self) -> Any:
        if not self.done():
            raise asyncio.InvalidStateError(
                "The reply is still running: write `await task` in a cell (or `await session.run(...)`) to wait "
                "for it; a cell cannot block the kernel's event loop that runs the reply."
            )
        return super().result()


_RUNNING_LOOP_ERRORS = (
    "cannot be called from a running event loop",
    "This event loop is already running",
    "Cannot run the event loop while another loop is running",
)


def _add_hint(value: BaseException) -> None:
    """Add :data:`AWAIT_HINT` to a running-loop ``RuntimeError`` (once)."""
    if isinstance(value, RuntimeError) and any(s in str(value) for s in _RUNNING_LOOP_ERRORS):
        if AWAIT_HINT not in getattr(value, "__notes__", []):
            value.add_note(AWAIT_HINT)


def _hint_handler(prior: tuple[tuple[type, ...], Any]) -> Callable[..., Any]:
    """An IPython custom exception handler: a cell stopped by Kernel > Interrupt ends with
    one line (:func:`~nb_hitl.session._sigint.interrupted_cell_error`); any other error gets
    the hint added, then is shown as the handler installed before (``prior``: its types
    and bound ``CustomTB``) or as IPython does."""
    prior_types, prior_tb = prior

    def handler(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> Any:
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        stopped = interrupted_cell_error(shell, value, ReplyTask.running_owners(loop))
        if stopped is not None:
            return shell.showtraceback((type(stopped), stopped, None))
        _add_hint(value)
        if prior_types and isinstance(value, prior_types):
            return prior_tb(etype, value, tb, tb_offset=tb_offset)
        return shell.showtraceback((etype, value, tb), tb_offset=tb_offset)

    return handler


def install_kernel_hints() -> bool:
    """In IPython, add :data:`AWAIT_HINT` to the error of ``asyncio.run`` /
    ``run_until_complete`` called in a cell (they fail because the kernel's
    loop runs), and end a cell stopped by Kernel > Interrupt with one line
    (:func:`~nb_hitl.session._sigint.watch_cell_interrupts`). Installed once per shell (``InteractiveShell.set_custom_exc``),
    again when another handler replaced it; a custom exception handler set
    before (an IPython extension's) is kept:
    its exceptions still reach it, with the hint added when it is one of
    these errors. Called by :class:`~nb_hitl.session.Session` and
    :class:`~nb_hitl.agui.RemoteSession`.

    Returns:
        whether the hint handler is installed.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    installed = getattr(shell, "_nb_hitl_hints", None)
    watch_cell_interrupts(shell)
    if installed is not None and installed is getattr(shell, "CustomTB", None):
        return True  # still ours (another handler set since then is kept when we install again)
    prior_types = tuple(getattr(shell, "custom_exceptions", ()) or ())
    prior = (prior_types, shell.CustomTB if prior_types else None)
    try:
        shell.set_custom_exc((*prior_types, RuntimeError, asyncio.CancelledError), _hint_handler(prior))
    except Exception:
        log.debug("could not install the await hint", exc_info=True)
        return False
    shell._nb_hitl_hints = shell.CustomTB
    return True
