"""The server's per-thread state: one AG-UI ``threadId``, its agent and Session.

:class:`ThreadState` holds a thread's agent, its headless
:class:`~nb_hitl.session.Session`, the lock that keeps one run at a time,
the queue the Session's listeners fill for the run streaming now, the
interrupts announced so far and the ledger of answers given (so a replayed
resume is recognised). :class:`Refusal` is how a run says no: the server
turns it into ``RUN_ERROR`` with its ``code``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import Interrupt
from agentscope.message import Msg

from ..pauses import Pause
from ..session import ReplyRun, Session

__all__ = ["Answered", "Refusal", "ThreadState", "canonical"]


def canonical(value: Any) -> str:
    """A stable JSON text of ``value`` (sorted keys), to compare payloads."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


@dataclass
class Answered:
    """An interrupt's answer as recorded: status, canonical payload, the run."""

    status: str
    payload: str
    run_id: str


class Refusal(Exception):
    """A run refused before anything was resumed (becomes ``RUN_ERROR``).

    Attributes:
        code: the ``RUN_ERROR.code`` (``thread_busy``, ``unknown_interrupt``...).
        metadata: put under ``RUN_ERROR.metadata.nb_hitl`` when given.
    """

    def __init__(self, code: str, message: str, metadata: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.metadata = metadata


@dataclass
class ThreadState:
    """One AG-UI thread on the server.

    Attributes:
        thread_id: the AG-UI ``threadId``.
        agent: the thread's ``agentscope.agent.Agent``.
        session: its headless Session.
        owner: the principal that created the thread (``None``: no auth).
        last_used: ``time.monotonic()`` of the last run's end (for eviction).
        streaming: a ``reply_stream`` the Session consumes is between its
            first item and its final ``Msg`` (set by the event listener).
    """

    thread_id: str
    agent: Any
    session: Session | Any
    owner: str | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    queue: asyncio.Queue[tuple[str, Any]] | None = None
    loop: asyncio.AbstractEventLoop | None = None
    streaming: bool = False
    interrupts: dict[str, tuple[Interrupt, Pause]] = field(default_factory=dict)
    ledger: dict[str, Answered] = field(default_factory=dict)
    seen_ids: set[str] = field(default_factory=set)
    last_used: float = 0.0

    def listen(self) -> None:
        """Open the queue of a run (on the loop that reads it)."""
        self.loop = asyncio.get_running_loop()
        self.queue = asyncio.Queue()

    def put(self, item: tuple[str, Any]) -> None:
        """Queue an item for the run listening now, if any. Called
        synchronously by the Session's driving task (the server's loop);
        from another thread or loop it goes through ``call_soon_threadsafe``."""
        queue, loop = self.queue, self.loop
        if queue is None or loop is None:
            return
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            queue.put_nowait(item)
            return
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody listens any more
            pass

    def on_event(self, event: Any, run: ReplyRun) -> None:
        """The Session's event listener: one item of ``agent.reply_stream``."""
        self.streaming = not isinstance(event, Msg)
        self.put(("event", event))

    def on_change(self, kind: str, run: ReplyRun) -> None:
        """The Session's change listener: ``"pause"``, ``"decision"``, ``"end"``."""
        if kind == "end":
            self.streaming = False
        self.put(("notify", (kind, run)))

    @property
    def busy(self) -> bool:
        """A run holds the thread, or its reply is live (not evictable)."""
        if self.lock.locked():
            return True
        current = getattr(self.session, "current", None)
        return bool(current is not None and getattr(current, "live", False))
