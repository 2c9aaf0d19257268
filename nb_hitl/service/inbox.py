"""The inbox's state: every parked (or stranded) session of one user, across agents.

Pure pieces first: :func:`parked_calls` reads the parked reply out of a
session's ``/messages`` (AgentScope persists the parked assistant ``Msg``:
``id`` is the ``reply_id``, its ``tool_call`` blocks are in state ``asking``
or ``submitted``), :func:`summary_line` makes the one-line summary and
:class:`InboxEntry` is one row.

:class:`InboxState` keeps the rows. :meth:`InboxState.poll` asks the service
once: ``GET /agent/`` then ``GET /sessions/?agent_id=`` per agent (each
``SessionView`` carries the status AgentScope derives from the shared run
lock and the stored context, so what any worker did shows up), and
``/messages`` only for sessions that newly parked. :meth:`InboxState.run`
repeats that every ``interval`` seconds; the console also calls
:meth:`InboxState.poll` right after an answer so a closed pause leaves at once.

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
from typing import Any, TypeVar

from .http import ServiceError, ServiceHTTP

__all__ = ["InboxEntry", "InboxState", "PARKED", "parked_calls", "summary_line"]

log = logging.getLogger(__name__)
T = TypeVar("T")

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
        }


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
        max_in_flight: most HTTP calls one poll has open at once.

    Attributes:
        entries: ``{session_id: InboxEntry}``.
        agents: ``{agent_id: name}`` seen at the last poll.
        error: the last poll's failure text, or ``""``.
        polls: number of completed polls.
    """

    def __init__(
        self,
        http: ServiceHTTP,
        *,
        stranded_after: float = 60.0,
        include_running: bool = False,
        max_in_flight: int = 8,
    ) -> None:
        self.http = http
        self.stranded_after = stranded_after
        self.include_running = include_running
        self.entries: dict[str, InboxEntry] = {}
        self.agents: dict[str, str] = {}
        self.error = ""
        self.polls = 0
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
        """Rows as JSON, oldest pause first."""
        return [e.to_view() for e in sorted(self.entries.values(), key=lambda e: e.since)]

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
            for listener in list(self._listeners):
                try:
                    listener(self)
                except Exception:  # a listener (widget) never stops the inbox
                    log.exception("inbox listener failed")
        return changed

    async def run(self, interval: float = 1.0, max_polls: int | None = None) -> None:
        """Poll every ``interval`` seconds (``max_polls`` times, or until cancelled)."""
        n = 0
        while max_polls is None or n < max_polls:
            await self.poll()
            n += 1
            await asyncio.sleep(interval)

    async def _limited(self, call: Awaitable[T]) -> T:
        async with self._requests:
            return await call

    async def _poll(self) -> bool:
        agents = await self.http.list_agents()
        self.agents = {
            str(a.get("id")): str((a.get("data") or {}).get("name") or a.get("name") or a.get("id"))
            for a in agents
            if a.get("id")
        }
        views = await asyncio.gather(*(self._limited(self.http.list_sessions(aid)) for aid in self.agents))
        seen: set[str] = set()
        changed = False
        fetch: list[tuple[str, dict[str, Any], str]] = []
        now = time.time()
        for aid, sessions in zip(self.agents, views, strict=True):
            for view in sessions:
                record = view.get("session") or {}
                sid = str(record.get("id"))
                status = str(view.get("status"))
                name = str(((record.get("config") or {}).get("name")) or record.get("name") or sid)
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
        results = await asyncio.gather(
            *(self._limited(self.http.messages(aid, str(rec.get("id")), limit=5)) for aid, rec, _ in fetch),
            return_exceptions=True,
        )
        for (aid, rec, status), res in zip(fetch, results, strict=True):
            if isinstance(res, BaseException):
                continue
            reply_id, calls, msg = parked_calls(res.get("messages") or [])
            if not calls:
                continue
            sid = str(rec.get("id"))
            name = str(((rec.get("config") or {}).get("name")) or sid)
            entry = InboxEntry(aid, self.agents[aid], sid, name, status, reply_id, calls, since=_msg_time(msg) or now)
            entry.updated_at = str(rec.get("updated_at", ""))
            if self.flagger is not None:
                self.flagger(entry)
            self.entries[sid] = entry
            changed = True
        return changed

    def forget(self, session_id: str) -> None:
        """Drop a row now (the console saw its pause close); the next poll re-adds it if it is still parked."""
        self.entries.pop(session_id, None)
