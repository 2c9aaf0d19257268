"""What the console answered, remembered across kernels: exactly once from its side.

AgentScope's service persists a session's state only when a run ends, so a
worker killed after a confirmed tool's side effect brings the call back as
``awaiting_permission``; sending the same confirmation again would run the
tool twice (at-least-once). :class:`AnswerLedger` keeps every answer the
console sent in nb_hitl's :class:`~nb_hitl.store.AuditLog` (one fsynced JSON
line each, written *before* the POST), in the one audit record of
:mod:`nb_hitl.answers.record` (``origin`` road ``"service"``), so the
console can see that a call it already approved is asking again, say when it
was approved, and require a second, explicit approval.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from typing import Any

from ..answers.record import RECORD_VERSION, origin, pause_fields
from ..audit.tail import LogTail
from ..pauses import Pause
from ..store import AuditLog

__all__ = ["AnswerLedger", "APPROVING", "NOT_APPLIED", "COUNTED", "NOTIFIED"]

APPROVING = ("approve", "modify")
"""Page actions that let a confirmed tool run."""

NOT_APPLIED = ("refused", "not_applied", "answered_elsewhere")
"""Phases of an answer that never reached the tool (``refused`` in older lines)."""

COUNTED = ("approval", "counted")
"""Phases of a call that needs several approvals (:mod:`nb_hitl.service.approving`):
an approval that is not the last (recorded, nothing sent) and the count that
decided the call (the lines of its sending follow); neither reached the service."""


NOTIFIED = "notified"
"""``event`` of a line saying who was told of a parked call (:mod:`nb_hitl.service.notices`)."""


class AnswerLedger:
    """The console's audit log, with an index of approvals.

    Args:
        path: the JSON-lines file (created with its folder).
        service_url: the service's name or base URL (recorded on every line).
        user_id: the service user (recorded on every line).

    Each record is :mod:`nb_hitl.answers.record`'s (``"v": 2``): the pause's
    fields, the answer's fields (``decision`` is the page action),
    ``decided_by`` (the person answering: the service user unless the
    console names another), ``agent`` (the service agent's name),
    and ``origin = {"road": "service", "service_url", "service_session_id",
    "agent_id", "user", "event_id"}`` (``event_id``: the id of the AgentScope
    event sent), plus ``phase`` (``sending`` before the POST, then
    ``applied`` / ``not_applied`` / ``answered_elsewhere`` / ``unknown``),
    ``detail``, ``second_approval`` and, for ``answered_elsewhere``, ``by``
    and ``at``. A call that needs several approvals also has lines of the
    phases :data:`COUNTED` (no ``event_id``: nothing sent with them; the
    count's ``approval`` / ``approvals`` fields and ``approvals_held``,
    :mod:`nb_hitl.service.approving`): consoles sharing the file count
    together. Lines written before (no ``v``: ``service``, ``user_id``,
    ``session_id`` = the service's session id, ``event_id`` at the top) are
    still read.

    The index is kept by a :class:`~nb_hitl.audit.tail.LogTail` (``tail``):
    every read or write first reads the lines appended since the last one
    (other consoles' too), so looking up or counting one call costs what
    was appended since, never the whole file. The calls' records
    (:meth:`call_records`) and the notifications (:meth:`notified`) are every
    console's; the answers :meth:`approved` and :meth:`sent` know are those of
    the file when this ledger was made and those it wrote since.
    """

    def __init__(self, path: str | os.PathLike[str], service_url: str, user_id: str) -> None:
        self.log = AuditLog(path)
        self.service_url = service_url
        self.user_id = user_id
        self.tail = LogTail(self._index, self._forget)
        self._forget()
        self.catch_up()

    def _forget(self) -> None:
        """Empty the index (the file is read from its start next)."""
        self._approved: dict[tuple[str, str], dict[str, Any]] = {}
        self._events: set[str] = set()
        self._calls: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._notified: set[tuple[str, str, str]] = set()
        self._whole = True  # reading the whole file: its answers count as this console's

    def ids(self, rec: dict[str, Any]) -> tuple[str, str, str] | None:
        """``(service_session_id, tool_call_id, event_id)`` of a record of this
        service and user (either version), or ``None`` for any other line."""
        got = rec.get("origin")
        if isinstance(got, dict):
            if got.get("road") != "service" or got.get("service_url") != self.service_url:
                return None
            if got.get("user") != self.user_id:
                return None
            return str(got.get("service_session_id")), str(rec.get("tool_call_id")), str(got.get("event_id"))
        if rec.get("service") != self.service_url or rec.get("user_id") != self.user_id:
            return None
        return str(rec.get("session_id")), str(rec.get("tool_call_id")), str(rec.get("event_id"))

    def _index(self, rec: dict[str, Any]) -> None:
        """Index one line of the file (the tail calls it for every new line, in order)."""
        ids = self.ids(rec)
        if ids is None:
            return
        session_id, tool_call_id, _event_id = ids
        if rec.get("event") == NOTIFIED:
            self._notified.add((session_id, tool_call_id, str(rec.get("input_sha256"))))
            return
        self._calls.setdefault((session_id, tool_call_id), []).append(rec)
        if self._whole:
            self._index_sent(rec)

    def _index_sent(self, rec: dict[str, Any]) -> None:
        """Index an answer this console sent: a line of the file as it was when
        the console started, or one it wrote since (:meth:`approved`, :meth:`sent`)."""
        ids = self.ids(rec)
        if ids is None or rec.get("phase") in COUNTED:  # nothing was sent with it
            return
        session_id, tool_call_id, event_id = ids
        self._events.add(event_id)
        key = (session_id, tool_call_id)
        if rec.get("phase") in NOT_APPLIED:
            held = self._approved.get(key)
            if held is not None and self.ids(held) == ids:
                del self._approved[key]  # that approval never reached the tool
            return
        if rec.get("decision") in APPROVING:
            self._approved.setdefault(key, rec)

    def catch_up(self) -> int:
        """Index the lines appended to the file since the last read, by this
        console or any other (:meth:`~nb_hitl.store.AuditLog.catch_up`: a
        cost of the lines appended, not of the file's length).

        Returns:
            the number of new lines.

        Raises:
            OSError: the file cannot be read.
        """
        got = self.log.catch_up(self.tail)
        self._whole = False
        return got

    def append_checked(self, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Append what ``build()`` makes of the index, with every line written
        before it indexed, under the file's lock
        (:meth:`~nb_hitl.store.AuditLog.append_checked`); the line written is indexed too.

        Returns:
            the record as written.

        Raises:
            whatever ``build`` raises (nothing is written); OSError: the file cannot be written.
        """

        def make() -> dict[str, Any]:
            self._whole = False  # the lines before were read
            return build()

        return self.log.append_checked(self.tail, make)

    def record(self, pause: Pause, answer: dict[str, Any], **fields: Any) -> dict[str, Any]:
        """Append one record about ``pause`` (:meth:`line`, same arguments), fsynced, and index it.

        Returns:
            the record as written.

        Raises:
            OSError: the file cannot be written.
        """
        line = self.line(pause, answer, **fields)
        rec = self.append_checked(lambda: line)
        self._index_sent(rec)
        return rec

    def line(
        self,
        pause: Pause,
        answer: dict[str, Any],
        *,
        service_session_id: str,
        agent_id: str,
        agent: str,
        event_id: str | None,
        phase: str,
        decided_by: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """One record about ``pause``, not written (:meth:`record` appends it).

        Args:
            pause: the pause answered.
            answer: :func:`~nb_hitl.answers.record.decision_fields` of the
                answer (or ``{"decision": action}`` for a raw body).
            service_session_id, agent_id: where the session lives.
            agent: the service agent's name.
            event_id: the id of the AgentScope event sent (``None``: nothing sent).
            phase: ``sending``, the :class:`~nb_hitl.answers.outcome.Outcome`
                status, or one of :data:`COUNTED`.
            decided_by: the person who answered (default: the service user).
            **extra: ``detail``, ``second_approval``, ``by``, ``at``, the
                approvals' fields.
        """
        return {
            "v": RECORD_VERSION,
            "agent": agent,
            **pause_fields(pause),
            **answer,
            "decided_by": decided_by or self.user_id,
            "origin": self.origin(service_session_id, agent_id, event_id),
            "phase": phase,
            **extra,
        }

    def origin(self, service_session_id: str, agent_id: str, event_id: str | None = None) -> dict[str, Any]:
        """The ``origin`` of this console's records (road ``"service"``)."""
        return origin(
            "service",
            service_url=self.service_url,
            service_session_id=service_session_id,
            agent_id=agent_id,
            user=self.user_id,
            event_id=event_id,
        )

    def approved(self, session_id: str, tool_call_id: str) -> dict[str, Any] | None:
        """The first approval this console sent for the call (``session_id``:
        the service's) and did not see refused, or ``None``."""
        return self._approved.get((session_id, tool_call_id))

    async def watch(self, wanted: Callable[[], bool], changed: Callable[[], Any], every: float = 1.0) -> None:
        """Every ``every`` s while ``wanted()``: call ``changed()`` when the file's
        size changed since the last look (another console recorded something an
        open card or row shows, e.g. an approval: it sends nothing the service's
        stream would show). Runs until cancelled; a file that cannot be read is skipped."""
        size = -1
        while True:
            await asyncio.sleep(every)
            if not wanted():
                continue
            with contextlib.suppress(OSError):
                now = self.log.path.stat().st_size
                if now != size:
                    size = now
                    changed()

    def call_records(self, session_id: str, tool_call_id: str) -> list[dict[str, Any]]:
        """This service's and user's records of one call (``session_id``: the
        service's), oldest first, as indexed so far (:meth:`catch_up` first to
        see what other consoles appended since). No notification lines."""
        return list(self._calls.get((session_id, tool_call_id), ()))

    def notified(self, session_id: str, tool_call_id: str, input_sha256: str) -> bool:
        """Whether a notification line (``event: "notified"``) for the call and
        input is indexed (:mod:`nb_hitl.service.notices`)."""
        return (session_id, tool_call_id, input_sha256) in self._notified

    def sent(self, event_id: str) -> bool:
        """Whether this console (this ledger) sent the event ``event_id``."""
        return event_id in self._events

    def records(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """This service's and user's records, oldest first (one service session's if given)."""
        out = []
        for rec in self.log.records():
            ids = self.ids(rec)
            if ids is not None and (session_id is None or ids[0] == session_id):
                out.append(rec)
        return out
