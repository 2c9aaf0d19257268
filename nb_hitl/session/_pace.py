"""When a reply's transcript stream sends its next message to the page.

Each comm message costs about 0.6 kB of Jupyter envelope (header, parent
header, comm id) whatever it carries, and a fast model yields a delta every
millisecond or two. Sending at a fixed rate would spend more bytes on
envelopes than on text; sending per delta, far more. The stream therefore
batches changes and sends one message when either

* the stream has been **quiet** for :data:`QUIET` seconds (the model paused,
  called a tool or stalled: what it said is on the page at once), or
* the oldest change not yet sent is :data:`MAX_DELAY` seconds old (text keeps
  moving while a model streams without a pause),

and never sooner than :data:`MIN_GAP` seconds after the previous message (at
most 20 page updates a second). The benchmark ``benchmarks/streaming.py``
measures the effect against baselines in the same run.
"""

from __future__ import annotations

__all__ = ["MAX_DELAY", "MIN_GAP", "QUIET", "flush_delay"]

#: seconds between two stream messages to one widget, at least (≤ 20 per second)
MIN_GAP = 0.05
#: seconds without a change after which the pending changes are sent
QUIET = 0.06
#: seconds a change may wait while the stream keeps changing
MAX_DELAY = 0.25


def flush_delay(now: float, *, last_flush: float, first_change: float, last_change: float) -> float:
    """Seconds from ``now`` until the pending changes are due (0.0: send now).

    Args:
        now: the current ``time.monotonic()`` reading, in seconds.
        last_flush: when the previous message was sent (``0.0``: never).
        first_change: when the oldest change not yet sent was made.
        last_change: when the newest change was made.

    Returns:
        ``max(0, due - now)`` where ``due`` is the earlier of ``last_change +
        QUIET`` and ``first_change + MAX_DELAY``, but not before ``last_flush +
        MIN_GAP``.
    """
    due = max(min(last_change + QUIET, first_change + MAX_DELAY), last_flush + MIN_GAP)
    return max(0.0, due - now)
