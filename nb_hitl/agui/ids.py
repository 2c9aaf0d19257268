"""AG-UI interrupt ids and times (pure).

An interrupt id is a hash of thread, reply and tool call (and, once a call
that needs several approvals was modified, of the input everyone approves
now), so a server can refuse an id that names another call or an input that
changed since; ``expires_at`` is ISO 8601 UTC.
Re-exported by :mod:`nb_hitl.agui.mapping`.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import time as _time

__all__ = ["interrupt_id", "to_iso", "parse_expires_at", "readable_time"]


def interrupt_id(thread_id: str, reply_id: str, tool_call_id: str, input_sha256: str | None = None) -> str:
    """The interrupt id of one parked tool call.

    Args:
        thread_id: the AG-UI ``threadId`` (one conversation, one agent).
        reply_id: AgentScope's ``reply_id`` of the parked reply.
        tool_call_id: the parked ``ToolCallBlock.id``.
        input_sha256: the SHA-256 (hex) of the input the interrupt asks
            about, when it is bound to it (an edited input, see
            :func:`nb_hitl.agui.mapping.pause_interrupt_id`).

    Returns:
        ``"nbh-" + 32 hex digits`` of SHA-256 over the three (and the input's
        hash, when given; unit-separated), the same for the same parts,
        different for any other.
    """
    parts = (thread_id, reply_id, tool_call_id) + ((input_sha256,) if input_sha256 is not None else ())
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return f"nbh-{digest[:32]}"


def to_iso(epoch_seconds: float) -> str:
    """``time.time()`` seconds -> ISO 8601 UTC with milliseconds and ``Z``
    (AG-UI's documented convention for ``Interrupt.expires_at``)."""
    moment = _dt.datetime.fromtimestamp(epoch_seconds, tz=_dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def readable_time(epoch_seconds: float, *, now: float | None = None) -> str:
    """``time.time()`` seconds as a person reads them on a page the server
    renders: the server's local time with its zone, ``19:30:19 CET`` on the
    day of ``now`` (default: the current time), else ``2 Dec 2026, 19:30:19 CET``."""
    moment = _dt.datetime.fromtimestamp(epoch_seconds).astimezone()
    today = _dt.datetime.fromtimestamp(_time.time() if now is None else now).astimezone().date()
    return moment.strftime("%H:%M:%S %Z" if moment.date() == today else "%-d %b %Y, %H:%M:%S %Z")


def parse_expires_at(value: str | None) -> float | None:
    """ISO 8601 ``expires_at`` -> epoch seconds, or ``None`` when absent or
    not a date (AG-UI: such a value "leaves the interrupt looking permanently
    unexpired"). A value without a zone is read as UTC."""
    if not value or not isinstance(value, str):
        return None
    try:
        moment = _dt.datetime.fromisoformat(value.strip().replace("z", "Z"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    return moment.timestamp()
