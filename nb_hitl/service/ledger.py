"""What the console answered, remembered across kernels: exactly once from its side.

AgentScope's service persists a session's state only when a run ends, so a
worker killed after a confirmed tool's side effect brings the call back as
``awaiting_permission``; sending the same confirmation again would run the
tool twice (at-least-once). :class:`AnswerLedger` keeps every answer the
console sent in nb_hitl's :class:`~nb_hitl.store.AuditLog` (one fsynced JSON
line each, written *before* the POST), keyed by service URL, user, session
and tool call id, so the console can see that a call it already approved is
asking again, say when it was approved, and require a second, explicit
approval.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from ..store import AuditLog

__all__ = ["AnswerLedger", "APPROVING"]

APPROVING = ("approve", "modify")
"""Page actions that let a confirmed tool run."""


class AnswerLedger:
    """The console's audit log, with an index of approvals.

    Args:
        path: the JSON-lines file (created with its folder).
        service_url: the service's base URL (recorded on every line).
        user_id: the service user (recorded on every line).

    Each record: AuditLog's ``time``, ``ts``, ``who`` plus ``service``,
    ``user_id``, ``agent_id``, ``session_id``, ``reply_id``, ``tool_call_id``,
    ``tool_name``, ``decision`` (page action), ``event_id`` (the id of the
    AgentScope event sent), ``phase`` (``sending`` before the POST, then
    ``applied`` / ``not_applied`` / ``answered_elsewhere`` / ``unknown`` (``refused`` in older lines)), ``detail``, ``second_approval``.
    """

    def __init__(self, path: str | os.PathLike[str], service_url: str, user_id: str) -> None:
        self.log = AuditLog(path)
        self.service_url = service_url
        self.user_id = user_id
        self._lock = threading.Lock()
        self._approved: dict[tuple[str, str], dict[str, Any]] = {}
        for rec in self.log.records():
            self._index(rec)

    def _key(self, session_id: str, tool_call_id: str) -> tuple[str, str]:
        return (session_id, tool_call_id)

    def _index(self, rec: dict[str, Any]) -> None:
        if rec.get("service") != self.service_url or rec.get("user_id") != self.user_id:
            return
        if rec.get("decision") not in APPROVING or rec.get("phase") in ("refused", "not_applied"):
            # a refused approval never reached the tool
            if rec.get("phase") in ("refused", "not_applied"):
                key = self._key(str(rec.get("session_id")), str(rec.get("tool_call_id")))
                held = self._approved.get(key)
                if held is not None and held.get("event_id") == rec.get("event_id"):
                    del self._approved[key]
            return
        key = self._key(str(rec.get("session_id")), str(rec.get("tool_call_id")))
        self._approved.setdefault(key, rec)

    def record(self, **fields: Any) -> dict[str, Any]:
        """Append one record (fsynced) and index it; the record as written."""
        rec = self.log.append({"service": self.service_url, "user_id": self.user_id, **fields})
        with self._lock:
            self._index(rec)
        return rec

    def approved(self, session_id: str, tool_call_id: str) -> dict[str, Any] | None:
        """The first approval this console sent for the call and did not see
        refused, or ``None``."""
        return self._approved.get(self._key(session_id, tool_call_id))

    def records(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """This service's and user's records, oldest first (one session's if given)."""
        out = [
            r for r in self.log.records() if r.get("service") == self.service_url and r.get("user_id") == self.user_id
        ]
        return [r for r in out if session_id is None or r.get("session_id") == session_id]
