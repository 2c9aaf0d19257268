"""The inbox's state: every parked (or stranded) session of one user, across agents.

Pure pieces first: :func:`parked_calls` reads the parked reply out of a
session's ``/messages`` (AgentScope persists the parked assistant ``Msg``:
``id`` is the ``reply_id``, its ``tool_call`` blocks are in state ``asking``
or ``submitted``), :func:`summary_line` makes the one-line summary and
:class:`InboxEntry` is one row.

:class:`InboxState` keeps the rows. :meth:`InboxState.poll` lists once:
``GET /agent/`` then ``GET /sessions/?agent_id=`` for every agent at once
(each ``SessionView`` carries the status AgentScope derives from the shared
run lock and the stored context, so what any worker did shows up), and
``/messages`` only for sessions that newly parked, a few at once. A session
newly parked is a row as soon as the listing shows it (agent, session,
status, since when: its record's ``updated_at``; listeners are told then);
its parked call (tool, summary, ``reply_id``) fills the row when its
``/messages`` comes back, and a session found with no open call leaves.

Pushed updates: :meth:`InboxState.on_event` takes the service's own events
(:class:`~nb_hitl.service.events.BusWatch`, one connection for every
session): an answer taken or a run started drops the session's row at once;
a pause or the end of a run marks the session for one check
(``/status``, then ``/messages`` if it waits), done by :meth:`InboxState.follow`;
an event of a session the inbox does not know yet starts one listing.
Without the bus (a one-process service), :meth:`InboxState.run` lists every
``interval`` seconds. The console also drops a row right after its own answer.

A session ``running`` for longer than ``stranded_after`` seconds is flagged
``stranded``: a worker that died mid-turn leaves AgentScope's run lock in
place until its TTL (600 s) runs out.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from .http import ServiceError, ServiceHTTP

if TYPE_CHECKING:
    from ..pauses import Pause

__all__ = ["InboxEntry", "InboxState", "PARKED", "parked_calls", "summary_line", "show_approvals"]

log = logging.getLogger(__name__)
T = TypeVar("T")

GONE = ("USER_CONFIRM_RESULT", "EXTERNAL_EXECUTION_RESULT", "REPLY_START")
"""Events after which a session no longer waits: an answer was taken, a run started."""
CHECK = ("REQUIRE_USER_CONFIRM", "REQUIRE_EXTERNAL_EXECUTION", "REPLY_END")
"""Events after which a session may wait (a pause) or stopped waiting (a reply ended)."""

PARKED = ("awaiting_permission", "awaiting_external_result")
"""``SessionStatus`` values of a session waiting for a person (AgentScope)."""
_OPEN_CALL_STATES = ("asking", "submitted")


def parked_calls(messages: Iterable[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]], dict[str, Any] | None]:
    """The parked reply of a session, from ``/messages``'s ``messages``.

    Returns:
        ``(reply_id, [tool_call block JSON in state asking/submitted], msg)``
        for the last message when it is an assistant message with open
        calls, else ``(None, [], None)``.
    """
    msgs = list(messages)
    if not msgs:
        return None, [], None
    last = msgs[-1]
    if last.get("role") != "assistant":
        return None, [], None
    blocks = [
        b
        for b in last.get("content") or []
        if isinstance(b, dict) and b.get("type") == "tool_call" and b.get("state") in _OPEN_CALL_STATES
    ]
    return (str(last.get("id")) if blocks else None), blocks, (last if blocks else None)


def summary_line(block: dict[str, Any], limit: int = 100) -> str:
    """One line about a parked tool call: the AskUser question, or ``key=value`` pairs of its input."""
    raw = block.get("input") or ""
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        data = None
    if block.get("name") == "AskUser" and isinstance(data, dict):
        qs = data.get("questions") or []
        if qs and isinstance(qs[0], dict):
            text = str(qs[0].get("question", ""))
            return (text + (f" (+{len(qs) - 1} more)" if len(qs) > 1 else ""))[:limit]
    if isinstance(data, dict):
        text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in data.items())
    else:
        text = str(raw)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class InboxEntry:
    """One row of the inbox: a session that waits for a person, or is stranded.

    Attributes:
        agent_id, agent_name, session_id, session_name: where it is.
        status: AgentScope's ``SessionStatus`` (``awaiting_permission``,
            ``awaiting_external_result`` or ``running``).
        reply_id: the parked reply's id (``None`` while running).
        calls: the open tool-call blocks (JSON, as in ``/messages``).
        since: when the pause opened (the parked message's timestamp when
            the service gives one, else when the inbox first saw it;
            ``time.time()`` seconds).
        stranded: ``running`` for longer than the inbox's ``stranded_after``.
        flags: per tool call id, a note the console adds (e.g. approved before).
        updated_at: the session record's ``updated_at`` when read (a change
            means another run ended: the parked calls are read again).
        owner: the service user the session belongs to: the one person
            AgentScope's service lets answer it (``X-User-ID``).
        approvals_needed: the approvals the first call needs (a console
            policy's ``approvals=N``; 1: one person decides).
        approvals: its approvals so far, as the console's ledger holds them
            (``[{"by", "at", "action"}]``, ``at`` in ``time.time()`` seconds).
    """

    agent_id: str
    agent_name: str
    session_id: str
    session_name: str
    status: str
    reply_id: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    since: float = field(default_factory=time.time)
    stranded: bool = False
    flags: dict[str, str] = field(default_factory=dict)
    updated_at: str = ""
    owner: str = ""
    approvals_needed: int = 1
    approvals: list[dict[str, Any]] = field(default_factory=list)

    def to_view(self) -> dict[str, Any]:
        """The JSON the inbox page renders (every string shown as text)."""
        first = self.calls[0] if self.calls else {}
        return {
            "agent_id": self.agent_id,
            "agent": self.agent_name,
            "session_id": self.session_id,
            "session": self.session_name,
            "status": "stranded" if self.stranded else self.status,
            "reply_id": self.reply_id,
            "tool": first.get("name", ""),
            "tool_call_id": first.get("id", ""),
            "calls": len(self.calls),
            "summary": summary_line(first) if first else "",
            "since": self.since,
            "note": "; ".join(self.flags.values()),
            "may_answer": self.owner,
            "approvals_needed": self.approvals_needed,
            "approvals": self.approvals,
        }


def show_approvals(entry: InboxEntry, pause: Pause | None) -> bool:
    """Put the approvals of ``pause`` (the row's first call, as its card shows
    it: :func:`~nb_hitl.service.approving.shown_pause`) on ``entry``; True when
    the row changed. The page draws them with the card's own text."""
    needed, got = 1, []
    if pause is not None:
        view = pause.to_view()
        needed = view["approvals_needed"]
        got = [dict(a) for a in view["approvals"]]
    if (entry.approvals_needed, entry.approvals) == (needed, got):
        return False
    entry.approvals_needed, entry.approvals = needed, got
    return True


def _msg_time(msg: dict[str, Any] | None) -> float | None:
    stamp = (msg or {}).get("timestamp") or (msg or {}).get("created_at")
    if not isinstance(stamp, str):
        return None
    from datetime import datetime

    try:
        dt = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


class InboxState:
    """Rows of the inbox, refreshed from the service.

    Args:
        http: the user's :class:`~nb_hitl.service.http.ServiceHTTP`.
        stranded_after: seconds a session may stay ``running`` before it is
            shown as stranded.
        include_running: list running sessions too (they become rows only
            once stranded when False).
        max_in_flight: most HTTP calls the inbox has open at once (a
            worker answers one session's ``/messages`` in a few ms of its own
            CPU: more at once only queue there; ``benchmarks/service_inbox.py``).

    Attributes:
        entries: ``{session_id: InboxEntry}``.
        agents: ``{agent_id: name}`` seen at the last poll.
        sessions: ``{session_id: agent_id}`` of every session listed (parked or not).
        error: the last poll's failure text, or ``""``.
        polls: number of completed listings.
        checks: number of single-session checks made after events.
    """

    def __init__(
        self,
        http: ServiceHTTP,
        *,
        stranded_after: float = 60.0,
        include_running: bool = False,
        max_in_flight: int = 4,
    ) -> None:
        self.http = http
        self.stranded_after = stranded_after
        self.include_running = include_running
        self.entries: dict[str, InboxEntry] = {}
        self.agents: dict[str, str] = {}
        self.error = ""
        self.polls = 0
        self.checks = 0
        self.sessions: dict[str, str] = {}
        self._names: dict[str, str] = {}
        self._foreign: set[str] = set()
        self._dirty: dict[str, int] = {}
        self._wake = asyncio.Event()
        self._running_since: dict[str, float] = {}
        self._listeners: list[Callable[[InboxState], None]] = []
        self._poll_lock = asyncio.Lock()
        self.flagger: Callable[[InboxEntry], None] | None = None
        # a poll never has more than this many calls in flight: each costs
        # the service a storage read and a bus round trip
        self._requests = asyncio.Semaphore(max_in_flight)

    def on_change(self, listener: Callable[[InboxState], None]) -> None:
        """Call ``listener(state)`` after every poll that changed a row."""
        self._listeners.append(listener)

    def views(self) -> list[dict[str, Any]]:
        """Rows as JSON, oldest pause first (ties by session id: the page's order too)."""
        return [e.to_view() for e in sorted(self.entries.values(), key=lambda e: (e.since, e.session_id))]

    async def poll(self) -> bool:
        """One refresh from the service; True when a row changed.

        A failing call keeps the previous rows and sets :attr:`error`.
        """
        async with self._poll_lock:
            try:
                changed = await self._poll()
                self.error = ""
            except ServiceError as exc:
                changed = self.error != str(exc)
                self.error = str(exc)
            self.polls += 1
        if changed:
            self._notify()
        return changed

    def _notify(self) -> None:
        for listener in list(self._listeners):
            try:
                listener(self)
            except Exception:  # a listener (widget) never stops the inbox
                log.exception("inbox listener failed")

    async def run(self, interval: float = 1.0, max_polls: int | None = None) -> None:
        """Poll every ``interval`` seconds (``max_polls`` times, or until cancelled)."""
        n = 0
        while max_polls is None or n < max_polls:
            await self.poll()
            n += 1
            await asyncio.sleep(interval)

    async def _limited(self, call: Callable[[], Awaitable[T]]) -> T:
        """``await call()`` once one of the ``max_in_flight`` places is free (the
        call is made only then: a listing cancelled while it waits leaves no
        coroutine unawaited)."""
        async with self._requests:
            return await call()

    async def _poll(self) -> bool:
        agents = await self.http.list_agents()
        self.agents = {
            str(a.get("id")): str((a.get("data") or {}).get("name") or a.get("name") or a.get("id"))
            for a in agents
            if a.get("id")
        }
        views = await asyncio.gather(*(self._limited(partial(self.http.list_sessions, aid)) for aid in self.agents))
        seen: set[str] = set()
        changed = False
        fetch: list[tuple[str, dict[str, Any], str]] = []
        now = time.time()
        self.sessions = {}
        for aid, sessions in zip(self.agents, views, strict=True):
            for view in sessions:
                record = view.get("session") or {}
                sid = str(record.get("id"))
                self.sessions[sid] = aid
                status = str(view.get("status"))
                name = str(((record.get("config") or {}).get("name")) or record.get("name") or sid)
                self._names[sid] = name
                if status == "running":
                    started = self._running_since.setdefault(sid, now)
                    stranded = now - started >= self.stranded_after
                    if not (stranded or self.include_running):
                        continue
                    seen.add(sid)
                    old = self.entries.get(sid)
                    if old is None or old.status != "running" or old.stranded != stranded:
                        self.entries[sid] = InboxEntry(
                            aid, self.agents[aid], sid, name, "running", since=started, stranded=stranded
                        )
                        changed = True
                    continue
                self._running_since.pop(sid, None)
                if status not in PARKED:
                    continue
                seen.add(sid)
                old = self.entries.get(sid)
                if old is None or old.status != status or old.updated_at != str(record.get("updated_at", "")):
                    fetch.append((aid, record, status))
        for sid in list(self.entries):
            if sid not in seen:
                del self.entries[sid]
                changed = True
        # a session newly parked is a row now; its parked call follows from /messages
        shown = {str(rec.get("id")) for _aid, rec, _s in fetch if str(rec.get("id")) not in self.entries}
        for aid, rec, status in fetch:
            sid = str(rec.get("id"))
            if sid in shown:
                since = _msg_time({"created_at": rec.get("updated_at")}) or time.time()
                self.entries[sid] = InboxEntry(aid, self.agents[aid], sid, self._names[sid], status, since=since)
                self.entries[sid].owner = self.http.user_id
        if shown:
            self._notify()
        results = await asyncio.gather(
            *(self._limited(partial(self.http.messages, aid, str(rec.get("id")), limit=1)) for aid, rec, _ in fetch),
            return_exceptions=True,
        )
        for (aid, rec, status), res in zip(fetch, results, strict=True):
            sid = str(rec.get("id"))
            reply_id, calls, msg = (
                (None, [], None) if isinstance(res, BaseException) else parked_calls(res.get("messages") or [])
            )
            if not calls:  # unread, or nothing open after all: no row (a row shown above leaves)
                if sid in shown and self.entries.pop(sid, None) is not None:
                    changed = True
                continue
            name = str(((rec.get("config") or {}).get("name")) or sid)
            entry = self._entry(aid, sid, name, status, reply_id, calls, msg)
            entry.updated_at = str(rec.get("updated_at", ""))
            self.entries[sid] = entry
            changed = True
        return changed

    def _entry(
        self,
        aid: str,
        sid: str,
        name: str,
        status: str,
        reply_id: str | None,
        calls: list[dict[str, Any]],
        msg: dict[str, Any] | None,
    ) -> InboxEntry:
        entry = InboxEntry(
            aid, self.agents.get(aid, aid), sid, name, status, reply_id, calls, since=_msg_time(msg) or time.time()
        )
        entry.owner = self.http.user_id
        if self.flagger is not None:
            self.flagger(entry)
        return entry

    # -- pushed updates ---------------------------------------------------------
    def on_event(self, session_id: str, kind: str) -> None:
        """One event of a session, as the service published it (``kind``: its ``type``).

        An answer taken or a run started (:data:`GONE`) drops the row now; a
        pause or a reply's end (:data:`CHECK`) marks the session for one
        check by :meth:`follow`. Events of sessions of other users are
        ignored once a listing showed they are not this user's.
        """
        if session_id in self._foreign:
            return
        if kind in GONE:
            self._running_since.setdefault(session_id, time.time())
            if self.entries.pop(session_id, None) is not None:
                self._notify()
        elif kind in CHECK:
            self._dirty.setdefault(session_id, 0)
            self._wake.set()

    async def follow(self, settle_every: float = 0.25, give_up_after: int = 120) -> None:
        """Check the sessions :meth:`on_event` marked, until cancelled.

        A session still ``running`` (it parked, and its worker is still
        storing the state) is checked again every ``settle_every`` s, at most
        ``give_up_after`` times (the next listing sees it then). Sessions the
        inbox does not know start one listing first.
        """
        while True:
            if not self._dirty:
                self._wake.clear()
                await self._wake.wait()
            await asyncio.sleep(0.02)  # gather a burst of events into one round
            batch, self._dirty = self._dirty, {}
            unknown = [s for s in batch if s not in self.sessions]
            if unknown:
                await self.poll()
                self._foreign.update(s for s in unknown if s not in self.sessions)
            known = [s for s in batch if s in self.sessions]
            again = await asyncio.gather(
                *(self._limited(partial(self._check, s)) for s in known), return_exceptions=True
            )
            self.checks += len(known)
            for sid, res in zip(known, again, strict=True):
                if res is True and batch[sid] < give_up_after:
                    self._dirty[sid] = max(self._dirty.get(sid, 0), batch[sid] + 1)
            if self._dirty:
                await asyncio.sleep(settle_every)

    async def _check(self, sid: str) -> bool:
        """Read one session's state into its row; True while it is still running."""
        aid = self.sessions[sid]
        status = await self.http.status(aid, sid)
        if status == "running":
            return True
        self._running_since.pop(sid, None)
        entry = None
        if status in PARKED:
            body = await self.http.messages(aid, sid, limit=1)
            reply_id, calls, msg = parked_calls(body.get("messages") or [])
            if calls:
                entry = self._entry(aid, sid, self._names.get(sid, sid), status, reply_id, calls, msg)
        old = self.entries.get(sid)
        if entry is None and old is None:
            return False
        if entry is None:
            del self.entries[sid]
        elif old is not None and old.reply_id == entry.reply_id and old.calls == entry.calls:
            return False
        else:
            self.entries[sid] = entry
        self._notify()
        return False

    def forget(self, session_id: str) -> None:
        """Drop a row now (the console saw its pause close); the next poll re-adds it if it is still parked."""
        self.entries.pop(session_id, None)
