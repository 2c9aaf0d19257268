"""What reading one stream from a peer may cost, and the meter that enforces it.

A peer's event stream (an AG-UI run over SSE) is untrusted input: it may
never end, send events forever, or send one event of any size. A
:class:`StreamBudget` states the caps (each a named default below); a
:class:`StreamMeter` counts one run against them and raises
:class:`StreamLimitReached` at the first cap passed. The reader stops there,
closes the stream, and shows the person the error's message: which cap, its
value, and what to do.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import NbHitlError

__all__ = [
    "MAX_EVENT_BYTES",
    "MAX_RUN_BYTES",
    "MAX_RUN_EVENTS",
    "MAX_RUN_SECONDS",
    "StreamBudget",
    "StreamLimitReached",
    "StreamMeter",
]

MAX_RUN_BYTES = 256 * 1024 * 1024
"""The most bytes one run's stream may send (256 MiB, as received: SSE
framing included). A long answer with many tool calls is a few megabytes."""

MAX_RUN_EVENTS = 200_000
"""The most events one run may send. A model streams roughly one text delta
per token; 200,000 is a long answer with room to spare, and the client keeps
every event of a run in memory (``RunRecord.events``)."""

MAX_RUN_SECONDS = 3600.0
"""The longest one run's stream may stay open, in seconds (an hour)."""

MAX_EVENT_BYTES = 8 * 1024 * 1024
"""The largest single event (8 MiB of ``data:``): one event is parsed as a
whole, so its size is what one parse may cost."""

_ADVICE = "The remote agent may still be working on the server. To allow more, pass a larger {cap} in StreamBudget(...) (RemoteSession(budget=...) or AguiClient(budget=...))."


class StreamLimitReached(NbHitlError):
    """A stream passed a cap of its :class:`StreamBudget`; the reader stopped.

    Attributes:
        cap: the cap's name (``"max_bytes"``, ``"max_events"``,
            ``"max_seconds"``, ``"max_event_bytes"``).
        limit: its value.
    """

    code = "stream_limit"

    def __init__(self, cap: str, limit: float, what: str) -> None:
        super().__init__(f"The run was stopped: {what} (the client's {cap} cap). " + _ADVICE.format(cap=cap))
        self.cap = cap
        self.limit = limit


@dataclass(frozen=True)
class StreamBudget:
    """The caps on reading one run's stream (defaults: the ``MAX_*`` constants).

    Attributes:
        max_bytes: bytes received (:data:`MAX_RUN_BYTES`).
        max_events: events received (:data:`MAX_RUN_EVENTS`).
        max_seconds: seconds from the request to the run's end
            (:data:`MAX_RUN_SECONDS`).
        max_event_bytes: the size of one event (:data:`MAX_EVENT_BYTES`).

    Raises:
        ValueError: a cap that is not positive.
    """

    max_bytes: int = MAX_RUN_BYTES
    max_events: int = MAX_RUN_EVENTS
    max_seconds: float = MAX_RUN_SECONDS
    max_event_bytes: int = MAX_EVENT_BYTES

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_events", "max_seconds", "max_event_bytes"):
            if not getattr(self, name) > 0:
                raise ValueError(f"StreamBudget.{name} must be positive, not {getattr(self, name)!r}.")

    def meter(self, started: float) -> StreamMeter:
        """A meter for one run whose request went out at ``started`` (a
        monotonic clock reading, e.g. ``loop.time()``)."""
        return StreamMeter(self, started)

    def event_too_large(self) -> StreamLimitReached:
        """The error for one event past :attr:`max_event_bytes`."""
        return StreamLimitReached(
            "max_event_bytes",
            self.max_event_bytes,
            f"the server sent an event larger than {self.max_event_bytes:,} bytes",
        )


class StreamMeter:
    """One run's consumption against its :class:`StreamBudget`.

    Args:
        budget: the caps.
        started: when the run's request went out (monotonic seconds).
    """

    def __init__(self, budget: StreamBudget, started: float) -> None:
        self.budget = budget
        self.deadline = started + budget.max_seconds
        self.bytes = 0
        self.events = 0

    def add_bytes(self, n: int) -> None:
        """Count ``n`` bytes received.

        Raises:
            StreamLimitReached: past ``max_bytes``.
        """
        self.bytes += n
        if self.bytes > self.budget.max_bytes:
            cap = self.budget.max_bytes
            raise StreamLimitReached("max_bytes", cap, f"it sent more than {cap:,} bytes")

    def add_event(self) -> None:
        """Count one event received.

        Raises:
            StreamLimitReached: past ``max_events``.
        """
        self.events += 1
        if self.events > self.budget.max_events:
            cap = self.budget.max_events
            raise StreamLimitReached("max_events", cap, f"it sent more than {cap:,} events")

    def time_left(self, now: float) -> float:
        """Seconds left before ``max_seconds`` passes (more than zero).

        Raises:
            StreamLimitReached: ``max_seconds`` has passed.
        """
        left = self.deadline - now
        if left <= 0:
            cap = self.budget.max_seconds
            raise StreamLimitReached("max_seconds", cap, f"it did not end within {cap:g} s")
        return left
