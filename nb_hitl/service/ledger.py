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

import os
import threading
from typing import Any

from ..answers.record import RECORD_VERSION, origin, pause_fields
from ..pauses import Pause
from ..store import AuditLog

__all__ = ["AnswerLedger", "APPROVING", "NOT_APPLIED", "COUNTED"]

APPROVING = ("approve", "modify")
"""Page actions that let a confirmed tool run."""

NOT_APPLIED = ("refused", "not_applied", "answered_elsewhere")
"""Phases of an answer that never reached the tool (``refused`` in older lines)."""

COUNTED = ("approval", "counted")
"""Phases of a call that needs several approvals (:mod:`nb_hitl.service.approving`):
an approval that is not the last (recorded, nothing sent) and the count that
decided the call (the lines of its sending follow); neither reached the service."""


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
    """

    def __init__(self, path: str | os.PathLike[str], service_url: str, user_id: str) -> None:
        self.log = AuditLog(path)
        self.service_url = service_url
        self.user_id = user_id
        self._lock = threading.Lock()
        self._approved: dict[tuple[str, str], dict[str, Any]] = {}
        self._events: set[str] = set()
        for rec in self.log.records():
            self._index(rec)

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
        ids = self.ids(rec)
        if ids is None:
            return
        if rec.get("phase") in COUNTED:  # nothing was sent with it
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

    def record(self, pause: Pause, answer: dict[str, Any], **fields: Any) -> dict[str, Any]:
        """Append one record about ``pause`` (:meth:`line`, same arguments), fsynced, and index it.

        Returns:
            the record as written.
        """
        rec = self.log.append(self.line(pause, answer, **fields))
        self.index(rec)
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

    def index(self, rec: dict[str, Any]) -> None:
        """Index a record this console wrote (thread-safe)."""
        with self._lock:
            self._index(rec)

    def approved(self, session_id: str, tool_call_id: str) -> dict[str, Any] | None:
        """The first approval this console sent for the call (``session_id``:
        the service's) and did not see refused, or ``None``."""
        return self._approved.get((session_id, tool_call_id))

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
