"""The audit log as a pandas ``DataFrame``: one row per record, oldest first."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pandas as pd

from ..answers.record import event_of, road_of
from ..store import AuditLog

__all__ = ["audit_frame", "frame_records", "read_records", "when", "COLUMNS"]

COLUMNS = [
    "time",
    "event",
    "session_id",
    "agent",
    "reply_id",
    "tool_call_id",
    "tool_name",
    "original_input",
    "decision",
    "decided_how",
    "rule",
    "policy",
    "mode",
    "decided_by",
    "opened_at",
    "answered_at",
    "edited_input",
    "reason",
    "road",
    "v",
]
"""The columns :func:`audit_frame` puts first (every other field of the
records follows, in the order first seen)."""


def read_records(log: AuditLog | str | os.PathLike[str] | Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of ``log``: an :class:`~nb_hitl.store.AuditLog`, its path,
    or records already read (a list of dicts)."""
    if isinstance(log, AuditLog):
        return log.records()
    if isinstance(log, (str, os.PathLike)):
        return AuditLog(log).records()
    return [dict(r) for r in log]


def frame_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The records of an :func:`audit_frame` frame, each without the fields its record lacked
    (the frame's ``NaN``, ``NaT`` and ``None``)."""
    return [{k: v for k, v in r.items() if not _missing(v)} for r in frame.to_dict("records")]


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value) or value is pd.NaT


def when(value: Any) -> Any:
    """A record's time (seconds since the epoch) as a UTC ``Timestamp``; ``NaT`` when it is not a number."""
    return pd.to_datetime(value, unit="s", utc=True) if isinstance(value, (int, float)) else pd.NaT


def audit_frame(log: AuditLog | str | os.PathLike[str] | Iterable[dict[str, Any]]) -> pd.DataFrame:
    """The records of an audit log as a ``DataFrame``, oldest first.

    Args:
        log: an :class:`~nb_hitl.store.AuditLog`, its path, or its records.

    Returns:
        one row per record with :data:`COLUMNS` first: ``time`` (UTC
        ``Timestamp`` of ``ts``), ``event`` (``checked`` | ``answered``;
        :func:`~nb_hitl.answers.record.event_of`, so older lines read as
        answers), ``opened_at`` (when the pause opened) and ``answered_at``
        (when an answer was written), ``road`` (:func:`~nb_hitl.answers.record.road_of`),
        ``v`` (1 for lines without a version), then every other field.
        A field a record lacks is missing (``NaN``, ``NaT`` for the times).

    Raises:
        ValueError: the log is a symlink.
    """
    records = read_records(log)
    rows = []
    for r in records:
        event = event_of(r)
        row = {
            **r,
            "time": when(r.get("ts")),
            "event": event,
            "opened_at": when(r.get("opened_at")),
            "answered_at": when(r.get("ts")) if event == "answered" else pd.NaT,
            "road": road_of(r),
            "v": r.get("v", 1),
        }
        rows.append(row)
    extra = list(dict.fromkeys(k for r in rows for k in r if k not in COLUMNS))
    return pd.DataFrame(rows, columns=[*COLUMNS, *extra])
