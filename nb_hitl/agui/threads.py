"""The server's threads: one AG-UI ``threadId``, its agent and Session, and the registry.

:class:`ThreadState` holds a thread's agent, its headless
:class:`~nb_hitl.session.Session`, the lock that keeps one run at a time,
the queue the Session's listeners fill for the run streaming now, the
interrupts announced so far and the ledger of answers given (so a replayed
resume is recognised). :class:`Refusal` is how a run says no: the server
turns it into ``RUN_ERROR`` with its ``code``. :class:`ThreadRegistry` creates
threads, restores them from checkpoints, checks their owner and evicts the
finished ones (TTL, then least recently used), so memory stays bounded.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import Interrupt
from agentscope.message import Msg

from .._agentscope import is_parked
from ..pauses import Pause
from ..session import _SESSIONS as session_registry
from ..session import ReplyRun, Session
from ..session import _restore as restore
from ..store import CheckpointStore

__all__ = [
    "OWNER_KEY",
    "Answered",
    "Refusal",
    "ThreadRegistry",
    "ThreadState",
    "canonical",
    "checkpoint_id",
]


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
    adopt: bool = False
    """Restored from a checkpoint with a parked reply: the next run first
    re-opens its pauses (:meth:`~nb_hitl.session.Session.start_resume`)."""

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


OWNER_KEY = "nb_hitl.agui.owner"
"""Key in ``AgentState.middle_context``: the principal that created the
thread (kept in checkpoints, so ownership survives a server restart)."""


def checkpoint_id(thread_id: str) -> str:
    """The checkpoint name of a thread (a hash: thread ids come from clients)."""
    return "agui-" + hashlib.sha256(thread_id.encode("utf-8")).hexdigest()[:32]


class ThreadRegistry:
    """The server's threads: created on first use, restored from checkpoints
    after a restart, owned by the principal that created them, evicted when
    finished and idle (TTL) or when the registry is full (least recently used).

    Args:
        factory: ``(thread_id) -> Agent``; with checkpoints it is also called
            as ``factory(thread_id, state=AgentState)`` to rebuild a thread.
        session_kwargs: :class:`~nb_hitl.session.Session` arguments.
        max_threads: threads kept at most; a new thread beyond it evicts the
            least recently used finished one, or is refused (``server_busy``).
        ttl: seconds a finished, idle thread is kept (``None``: no TTL).
        clock: ``() -> seconds`` (monotonic) for TTL and LRU.
    """

    def __init__(
        self,
        factory: Callable[..., Any],
        session_kwargs: dict[str, Any],
        *,
        max_threads: int = 1000,
        ttl: float | None = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.factory = factory
        self.session_kwargs = session_kwargs
        self.max_threads = max_threads
        self.ttl = ttl
        self.clock = clock
        self.threads: dict[str, ThreadState] = {}
        self.evicted = 0
        self._creating: dict[str, asyncio.Lock] = {}
        checkpoints = session_kwargs.get("checkpoints")
        self.store: CheckpointStore | None = (
            CheckpointStore(checkpoints) if isinstance(checkpoints, str | os.PathLike) else checkpoints
        )
        if self.store is not None:
            self.session_kwargs = {**session_kwargs, "checkpoints": self.store}

    def __len__(self) -> int:
        return len(self.threads)

    async def get(self, thread_id: str, principal: str | None) -> ThreadState:
        """The thread ``thread_id`` for ``principal`` (created or restored).

        Raises:
            Refusal: ``thread_not_found`` (it belongs to another principal;
                nothing else is said), ``server_busy`` (full of live threads).
        """
        thread = self.threads.get(thread_id)
        if thread is None:
            lock = self._creating.setdefault(thread_id, asyncio.Lock())
            try:
                async with lock:
                    thread = self.threads.get(thread_id) or await self._create(thread_id, principal)
            finally:
                if not lock.locked():
                    self._creating.pop(thread_id, None)
        if thread.owner != principal:
            raise Refusal("thread_not_found", f"No thread {thread_id[:80]!r} here.")
        thread.last_used = self.clock()
        return thread

    def sweep(self) -> int:
        """Evict finished threads idle longer than ``ttl``; returns how many."""
        if self.ttl is None:
            return 0
        limit = self.clock() - self.ttl
        old = [t for t in self.threads.values() if not t.busy and t.last_used < limit]
        for t in old:
            self._evict(t)
        return len(old)

    def _evict(self, thread: ThreadState) -> None:
        self.threads.pop(thread.thread_id, None)
        self.evicted += 1
        # nb_hitl.session keeps agent -> Session in a WeakKeyDictionary whose
        # value holds its key (Session.agent), so the entry never dies alone;
        # drop it, or every evicted thread's agent stays in memory
        if session_registry.get(thread.agent) is thread.session:
            del session_registry[thread.agent]

    def _make_room(self) -> None:
        self.sweep()
        while len(self.threads) >= self.max_threads:
            idle = [t for t in self.threads.values() if not t.busy]
            if not idle:
                raise Refusal("server_busy", "The server holds as many live threads as it may; try again later.")
            self._evict(min(idle, key=lambda t: t.last_used))

    async def _build(self, *args: Any, **kwargs: Any) -> Any:
        agent = self.factory(*args, **kwargs)
        return await agent if inspect.isawaitable(agent) else agent

    async def _create(self, thread_id: str, principal: str | None) -> ThreadState:
        self._make_room()
        sid = checkpoint_id(thread_id)
        record = None
        if self.store is not None:
            try:
                record = self.store.load(sid)
            except (FileNotFoundError, ValueError):
                record = None
        kwargs = {k: v for k, v in self.session_kwargs.items() if k != "session_id"}
        restored = False
        if record is not None:
            owner = (record["state"].get("middle_context") or {}).get(OWNER_KEY)
            if owner != principal:
                raise Refusal("thread_not_found", f"No thread {thread_id[:80]!r} here.")
            # the one restore (nb_hitl.session._restore), as Session.restore:
            # a call whose decision was handed to the agent is not asked again
            agent = await self._build(thread_id, state=restore.states(record))
            restore.settle(agent, record)
            restored = True
        else:
            agent = await self._build(thread_id)
            agent.state.middle_context[OWNER_KEY] = principal
        session = Session(agent, display=False, session_id=sid, **kwargs)
        thread = ThreadState(thread_id=thread_id, agent=agent, session=session, owner=principal)
        thread.adopt = restored and is_parked(agent)
        thread.last_used = self.clock()
        session.on_event(thread.on_event)
        session.on_change(thread.on_change)
        self.threads[thread_id] = thread
        return thread
