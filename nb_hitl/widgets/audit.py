"""``AuditLogTable``: the audit log of decisions as a small table in the notebook."""

from __future__ import annotations

import json
import os
from typing import Any

import traitlets

from ..answers.record import event_of
from ..audit.calls import held_checks
from ..labels import answers_text
from ..store import AuditLog
from ._base import RequestWidget

__all__ = ["AuditLogTable", "audit_rows"]

COLUMNS = ["time", "tool_name", "input", "decision", "detail", "who"]
"""The columns the table shows: what was decided, on which call, by whom and when. Each row also
keeps ``reply_id`` and ``tool_call_id`` (not shown: ids are AgentScope's and the model's, and a
person tells the calls apart by tool and input)."""


HELD = "not asked: held until an earlier call of its batch was answered, then checked again (a later row)"
"""The ``detail`` of a check that asked nobody (:func:`~nb_hitl.audit.calls.held_checks`)."""


def _short(value: Any, limit: int = 160) -> str:
    if value is None or value == [] or value == {}:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _decided(r: dict[str, Any]) -> str:
    how = str(r.get("decided_how") or "")
    named = r.get("rule") or r.get("policy") or (r.get("mode") if how == "mode" else None)
    return f"{how} {named}" if named else how


def audit_rows(records: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Flatten audit records into table rows (strings only).

    ``input`` is the call's input as the model sent it, in one line (the
    AskUser question; ``path="draft.md"``), the summary the service's inbox
    and every sentence naming a call use. ``detail`` joins what varies by
    decision: the edited input, accepted rules, AskUser answers, the output
    sent, what a deadline applied, the reason given.
    ``who`` is who answered, or for a permission check (``event:
    "checked"``) what decided it: ``rule allow Bash(git status:*)``,
    ``mode default``, ``policy payments``, ``shell_rules``... A check
    AgentScope made again before any answer (:func:`~nb_hitl.audit.calls.held_checks`)
    says in ``detail`` that it asked nobody (:data:`HELD`).
    """
    from ..service.inbox import summary_line  # the one input summary (as in nb_hitl.labels)

    rows = []
    held = held_checks(records)
    for i, r in enumerate(records):
        who = r.get("decided_by") or r.get("who", "")
        if event_of(r) == "checked":  # nobody answered: what decided the check
            who = _decided(r)
        tool_name = str(r.get("tool_name", "") or "")
        detail_parts = [HELD] if i in held else []
        for key, label in (
            ("edited_input", "edited"),
            ("accepted_rules", "rules"),
            ("answers", "answers"),
            ("output", "output"),
            ("applied", "applied"),
            ("reason", "reason"),
            ("policy", "policy"),
        ):
            value = r.get(key)
            if key == "answers":
                text = _short(answers_text(value)) if value else ""
            elif key == "edited_input" and isinstance(value, dict):
                text = summary_line({"name": tool_name, "input": value}, limit=160)
            else:
                text = _short(value)
            if text:
                detail_parts.append(f"{label}: {text}")
        rows.append(
            {
                "time": str(r.get("time", "")),
                "reply_id": str(r.get("reply_id", "")),
                "tool_call_id": str(r.get("tool_call_id", "")),
                "tool_name": tool_name,
                "input": summary_line({"name": tool_name, "input": r.get("original_input")}, limit=100),
                "decision": str(r.get("decision", "")),
                "detail": "; ".join(detail_parts),
                "who": str(who),
            }
        )
    return rows


class AuditLogTable(RequestWidget):
    """A table of an :class:`~nb_hitl.store.AuditLog` (newest last).

    Args:
        log: the log or its path.

    The page's "Refresh" button (action ``refresh``) re-reads the file;
    :meth:`refresh` does the same from Python.
    """

    _page_code = "audit"
    _repr_fields = ("path",)
    columns = traitlets.List(traitlets.Unicode(), default_value=COLUMNS).tag(sync=True)
    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    path = traitlets.Unicode("").tag(sync=True)

    def __init__(self, log: AuditLog | str | os.PathLike[str]) -> None:
        # not ``self.log``: every ipywidgets widget has a ``log`` trait
        self.audit_log = log if isinstance(log, AuditLog) else AuditLog(log)
        super().__init__(handler=self._handle, path=str(self.audit_log.path))
        self.refresh()

    def refresh(self) -> None:
        """Re-read the log file into the table."""
        self.rows = audit_rows(self.audit_log.records())

    def _handle(self, message: dict[str, Any]) -> dict[str, Any]:
        if message.get("action") != "refresh":
            from ..errors import DecisionError

            raise DecisionError(f"Unknown action {str(message.get('action'))[:40]!r}.", field="action")
        self.refresh()
        return {"rows": len(self.rows)}
