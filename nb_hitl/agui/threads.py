"""The server's threads: one AG-UI ``threadId``, its agent and Session, and the registry.

:class:`ThreadState` holds a thread's agent, its headless
:class:`~nb_hitl.session.Session`, the lock that keeps one run at a time,
the queue the Session's listeners fill for the run streaming now, the
interrupts announced so far and the ledger of answers given (so a replayed
resume is recognised). :class:`~nb_hitl.agui.refusals.Refusal` is how a run says no: the server
turns it into ``RUN_ERROR`` with its ``code`` (:mod:`nb_hitl.agui.refusals`;
:func:`~nb_hitl.agui.refusals.held_input` for input sent while interrupts are open). :class:`ThreadRegistry` creates threads,
restores them from checkpoints (the Session's own restore), checks their
owner, closes one for its owner and evicts the finished ones (TTL, then
least recently used), so memory stays bounded.
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
from typing import Any, cast

from ag_ui.core import Interrupt, ResumeEntry
from agentscope.message import Msg

from .._agentscope import is_parked
from ..answers.approvals import needs_more
from ..answers.lifecycle import settled
from ..pauses import UNANSWERED, Pause
from ..session import _SESSIONS as session_registry
from ..session import ReplyRun, Session
from ..session import _restore as restore
from ..store import CheckpointStore
from .events import EventTranslator
from .refusals import Refusal, check_answerer

__all__ = [
    "OWNER_KEY",
    "Answered",
    "ThreadRegistry",
    "ThreadState",
    "canonical",
    "checkpoint_id",
    "answers_settled",
    "unseen_answer",
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


def unseen_answer(
    interrupt_id: str, tool_call_id: str, by: str | None, action: Any, *, applied: str | None = None
) -> dict[str, Any]:
    """What the owner's client is told of an answer it did not give (an approval link, another principal's
    resume, the Session's deadline), in ``RUN_FINISHED.metadata.nb_hitl.answered_elsewhere``:
    ``{"interrupt_id", "tool_call_id", "by", "action", "at"}`` (``at``: when it was taken, epoch seconds,
    so the card says when), and for a deadline (``by`` ``"deadline"``, ``action`` ``"timeout"``)
    ``"applied"``, the default it applied (``"denied"``, ``"reply interrupted"``...); ``by`` is ``None``
    where the server cannot tell (:meth:`ThreadState.catch_up`)."""
    got = {"interrupt_id": interrupt_id, "tool_call_id": tool_call_id, "by": by, "action": action, "at": time.time()}
    return {**got, "applied": applied} if applied is not None else got


SETTLE_WAIT = 30.0
"""Seconds a run without input waits at most for answers being checked (:func:`answers_settled`)."""


async def answers_settled(thread: ThreadState, *, timeout: float = SETTLE_WAIT) -> None:
    """Wait (at most ``timeout`` s) while an answer given without a run (an approval link's,
    ``session.act`` in the server's process) is being checked (a pause ``deciding``): a run
    without input then sees what it decided instead of a call that is neither open nor answered.
    Woken by the pauses' transitions (:func:`~nb_hitl.answers.lifecycle.settled`); it returns
    when the thread's current run has no pause ``deciding``, or when ``timeout`` passed."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        run = thread.session.current
        deciding = next((p for p in run.pauses.values() if p.status == "deciding"), None) if run else None
        left = end - loop.time()
        if deciding is None or left <= 0:
            return
        await settled(deciding, left)


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
    reported: set[str] = field(default_factory=set)
    """The interrupts whose answer the owner's client was told of (:meth:`take_unseen`)."""
    adopt: bool = False
    """Restored from a checkpoint with a parked reply: the next run first
    re-opens its pauses (:meth:`~nb_hitl.session.Session.start_resume`)."""

    def check_answerer(self, principal: str | None, answers: list[tuple[Pause, dict[str, Any]]]) -> None:
        """:func:`~nb_hitl.agui.refusals.check_answerer` for this thread's owner."""
        check_answerer(self.thread_id, self.owner, principal, answers)

    def record_answers(
        self,
        messages: list[tuple[ResumeEntry, dict[str, Any]]],
        results: list[dict[str, Any]],
        run_id: str,
        *,
        by: str | None = None,
    ) -> list[dict[str, Any]] | None:
        """Put a taken resume's answers in the ledger, except approvals short
        of N (their interrupts stay open for the next person); answers by
        another principal than the owner (``by``) also go to :attr:`unseen`.

        Returns:
            ``[{"interrupt_id", "approvals"}]`` when every answer was such an
            approval (nothing reaches the agent), else ``None``.
        """
        waiting = {r["tool_call_id"]: r for r in results if r.get("status") == "approval_recorded"}
        taken = {r["tool_call_id"] for r in results if r.get("ok")}  # an answer not taken is not in the ledger
        for entry, message in messages:
            if message["tool_call_id"] not in waiting and message["tool_call_id"] in taken:
                self.ledger[entry.interrupt_id] = Answered(entry.status, canonical(entry.payload), run_id)
                if by != self.owner:  # the owner's client did not see this run: it catches up later
                    self.unseen.append(
                        unseen_answer(entry.interrupt_id, message["tool_call_id"], by, message.get("action"))
                    )
        if len(waiting) < len(messages):
            return None
        return [
            {"interrupt_id": e.interrupt_id, "approvals": len(waiting[m["tool_call_id"]]["approvals"])}
            for e, m in messages
        ]

    def translator(self) -> EventTranslator:
        """A run's event translator: a tool result the model reads otherwise
        than the tool streamed it (nb_hitl's note, AgentScope's cut to fit
        the context) is sent as the model reads it, as the local transcript
        shows it (``ReplyRun.told``, filled by the Session before the
        translator reads the event from the queue)."""

        def reading(tool_call_id: str) -> str | None:
            run = self.session.current
            return run.told.get(tool_call_id) if run is not None else None

        return EventTranslator(reading=reading)

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

    def catch_up(self) -> None:
        """Put in :attr:`unseen` the interrupts of the current reply that were announced and have
        closed since without an AG-UI resume and without a word in :attr:`unseen` (the Session's
        deadline applied its default, ``session.act`` in the server's process answered, the reply
        was interrupted or closed there): whatever closed them, the owner's client catches up."""
        run = self.session.current
        told = {u.get("interrupt_id") for u in self.unseen} | self.reported | set(self.ledger)
        for iid, (_, pause) in self.interrupts.items():
            if iid in told or pause.status in UNANSWERED or run is None:
                continue
            if run.pauses.get(pause.tool_call_id) is not pause:
                continue
            decided = pause.decision or {}
            if decided.get("action") == "timeout":
                applied = str(decided.get("applied") or "the default was applied")
                self.unseen.append(unseen_answer(iid, pause.tool_call_id, "deadline", "timeout", applied=applied))
            elif pause.status == "expired":
                got = unseen_answer(iid, pause.tool_call_id, None, "expired")
                self.unseen.append({**got, "reason": pause.reason or "The reply ended on the server."})
            else:
                self.unseen.append(unseen_answer(iid, pause.tool_call_id, None, decided.get("action")))

    @property
    def unseen(self) -> list[dict[str, Any]]:
        """Answers that decided a call without the owner's client (an approval
        link, :mod:`nb_hitl.agui.links`, another principal's resume, the Session's
        deadline), ``[{"interrupt_id", "tool_call_id", "by", "action"}]`` (see
        :func:`unseen_answer`): the owner's next run without input catches up with them.
        Kept in the agent's ``AgentState.middle_context`` (:data:`UNSEEN_KEY`), so they go
        into the thread's checkpoint and a restarted server still tells the owner."""
        return cast("list[dict[str, Any]]", self.agent.state.middle_context.setdefault(UNSEEN_KEY, []))

    @unseen.setter
    def unseen(self, value: list[dict[str, Any]]) -> None:
        self.agent.state.middle_context[UNSEEN_KEY] = value

    def take_unseen(self) -> list[dict[str, Any]]:
        """:attr:`unseen`, emptied: the owner's client is told of them now, and not again, also by a
        server restarted later: the emptied list goes to the thread's checkpoint at once
        (``Session.checkpoint``; a failed write is logged), or, while a ``reply_stream`` is under way
        (:attr:`streaming`), with the checkpoint the Session writes at the reply's next pause or end
        (a state written mid-stream would hold half a reply)."""
        got, self.unseen = self.unseen, []
        self.reported.update(str(u.get("interrupt_id")) for u in got)
        if got and not self.streaming:
            self.session._checkpoint_quietly()
        return got

    def settled(self, run: ReplyRun | None, item: tuple[str, Any]) -> bool:
        """Whether the run listening now (reading ``run``, the reply it
        started or resumed) has nothing more to stream, given the latest
        queued ``item``: its reply ended, or
        every parked tool call has an open pause and either no
        ``reply_stream`` is between its first item and its final ``Msg`` or a
        running tool call waits on an open pause of its own (``Pause.carrier``:
        an MCP server's elicitation or sampling request; the stream cannot go
        on before it is answered). A pause is added on the driving task right
        after the event announcing it, or after the stream by
        ``_sync_pauses``, or by the running tool; each addition queues a
        ``"pause"`` notification, so the last one re-checks this."""
        kind, value = item
        if run is None:
            return False
        if kind == "notify" and value[0] == "end" and value[1] is run:
            return True
        if not run.live:
            return False
        carried = any(p.carrier is not None and p.status == "open" for p in run.pauses.values())
        if self.streaming and not carried:
            return False
        awaiting = self.session.parked_tool_calls()
        if not awaiting and not carried:
            return False
        return all(tc.id in run.pauses and run.pauses[tc.id].status == "open" for tc in awaiting)

    @property
    def busy(self) -> bool:
        """A run holds the thread, or its reply is live (not evictable)."""
        if self.lock.locked():
            return True
        current = getattr(self.session, "current", None)
        return bool(current is not None and getattr(current, "live", False))


UNSEEN_KEY = "nb_hitl.agui.unseen"
"""Key in ``AgentState.middle_context``: :attr:`ThreadState.unseen` (kept in checkpoints)."""

OWNER_KEY = "nb_hitl.agui.owner"
"""Key in ``AgentState.middle_context``: the principal that created the
thread (kept in checkpoints, so ownership survives a server restart)."""


def checkpoint_id(thread_id: str) -> str:
    """The checkpoint name of a thread (a hash: thread ids come from clients)."""
    return "agui-" + hashlib.sha256(thread_id.encode("utf-8")).hexdigest()[:32]


def awaits_approvals(thread: ThreadState) -> bool:
    """Whether ``thread`` has an open pause that needs more approvals
    (:func:`nb_hitl.answers.approvals.needs_more`)."""
    run = thread.session.current
    return run is not None and run.live and any(p.status == "open" and needs_more(p) for p in run.pauses.values())


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
        self.links: Any = None
        """The server's :class:`~nb_hitl.agui.links.Links`: a thread's notifications carry its links."""
        checkpoints = session_kwargs.get("checkpoints")
        self.store: CheckpointStore | None = (
            CheckpointStore(checkpoints) if isinstance(checkpoints, str | os.PathLike) else checkpoints
        )
        if self.store is not None:
            self.session_kwargs = {**session_kwargs, "checkpoints": self.store}

    def __len__(self) -> int:
        return len(self.threads)

    async def get(self, thread_id: str, principal: str | None, *, co_approve: bool = False) -> ThreadState:
        """The thread ``thread_id`` for ``principal`` (created or restored).

        Args:
            thread_id, principal: the run's thread and who sends it.
            co_approve: the run is a resume: another principal than the
                owner may send it while the thread waits for approvals of a
                call that needs several (``Policy(approvals=N)``); the server
                then lets it answer only such calls.

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
        if thread.owner != principal and not (co_approve and awaits_approvals(thread)):
            raise Refusal("thread_not_found", f"No thread {thread_id[:80]!r} here.")
        thread.last_used = self.clock()
        return thread

    def close(self, thread_id: str, principal: str | None) -> None:
        """Close a thread for its owner: its Session is closed and it is
        forgotten, with its checkpoint; the same ``thread_id`` later starts
        a new conversation.

        Raises:
            Refusal: ``thread_not_found`` (no such thread, or another
                principal's: nothing else is said), ``thread_busy`` (a run
                holds it, or its reply is live: answer or cancel its
                interrupts first).
        """
        thread = self.threads.get(thread_id)
        sid = checkpoint_id(thread_id)
        if thread is None:
            owner_known = False
            if self.store is not None:
                try:
                    record = self.store.load(sid)
                    owner_known = (record["state"].get("middle_context") or {}).get(OWNER_KEY) == principal
                except (FileNotFoundError, ValueError):
                    owner_known = False
            if not owner_known:
                raise Refusal("thread_not_found", f"No thread {thread_id[:80]!r} here.")
        elif thread.owner != principal:
            raise Refusal("thread_not_found", f"No thread {thread_id[:80]!r} here.")
        elif thread.busy:
            raise Refusal(
                "thread_busy",
                f"Thread {thread_id[:80]!r} is running or waits on interrupts; answer or cancel them first.",
            )
        else:
            self._evict(thread)
            thread.session.close()
        if self.store is not None:
            self.store.path(sid).unlink(missing_ok=True)

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
        if session.notices is not None and self.links is not None:  # Session(notify=...): with links
            session.notices.links = self.links.notice(thread_id)
        thread = ThreadState(thread_id=thread_id, agent=agent, session=session, owner=principal)
        thread.adopt = restored and (is_parked(agent) or bool(session.unchecked_tool_calls()))
        thread.last_used = self.clock()
        session.on_event(thread.on_event)
        session.on_change(thread.on_change)
        self.threads[thread_id] = thread
        return thread
