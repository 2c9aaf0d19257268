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
most 20 page updates a second).

Those rules follow the clock; on a loaded machine the kernel is starved now
and then, each gap looks like a quiet stream, and the messages (so the bytes)
would follow wall time rather than the text. So the stream also keeps a
**byte budget** (:func:`over_budget`): while what its messages cost beyond
their text (envelopes and op framing, estimated) would pass
``(RATIO - 1)`` times the text streamed so far (plus an allowance for the
first messages), the next message waits for a longer quiet
(:data:`QUIET_OVER`) or age (:data:`MAX_DELAY_OVER`). Bytes sent then stay
within about :data:`RATIO` times the text, whatever the machine's load. The
benchmark ``benchmarks/streaming.py`` measures the effect against baselines
in the same run.

Only text deltas wait for those rules. What a person's answer changes (its
card, the reply's status) goes right after the resumed stream's first event,
or :data:`RESUME_QUIET` seconds after the resume if that stream says nothing
(``SessionCore._push_soon``); ``benchmarks/click_to_resume.py`` measures it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._transcript import Transcript

__all__ = [
    "ENVELOPE",
    "MAX_DELAY",
    "MAX_DELAY_OVER",
    "MIN_GAP",
    "OP_BYTES",
    "QUIET",
    "QUIET_OVER",
    "RATIO",
    "RESUME_QUIET",
    "flush_delay",
    "over_budget",
    "pace",
]

#: seconds between two stream messages to one widget, at least (≤ 20 per second)
MIN_GAP = 0.05
#: seconds without a change after which the pending changes are sent
QUIET = 0.06
#: seconds a change may wait while the stream keeps changing
MAX_DELAY = 0.25
#: seconds without a change after which the pending changes are sent, over budget
QUIET_OVER = 0.1
#: seconds a change may wait while the stream keeps changing, over budget
MAX_DELAY_OVER = 1.0
#: bytes a stream message costs beyond its ops (the Jupyter envelope and the message's own JSON), estimated
ENVELOPE = 750
#: bytes an op costs beyond its text (its JSON framing), estimated
OP_BYTES = 60
#: the most a stream should send, in bytes, per byte of text streamed
RATIO = 1.6
#: seconds the cards and status of a resume wait for the resumed stream's first
#: event, which they follow (``SessionCore._push_soon``); it usually comes within
#: a few milliseconds (the approved tool starts, or the model is called)
RESUME_QUIET = 0.05


def over_budget(overhead: int, streamed: int) -> bool:
    """Whether one more message would take the stream past its byte budget.

    Args:
        overhead: estimated bytes the stream's messages so far cost beyond
            their text (:data:`ENVELOPE` a message, :data:`OP_BYTES` an op).
        streamed: characters of streamed text (deltas) so far.

    Returns:
        ``overhead + ENVELOPE > (RATIO - 1) * streamed + 2 * ENVELOPE``:
        the first two messages are always within budget.
    """
    return overhead + ENVELOPE > (RATIO - 1) * streamed + 2 * ENVELOPE


def flush_delay(now: float, *, last_flush: float, first_change: float, last_change: float, over: bool = False) -> float:
    """Seconds from ``now`` until the pending changes are due (0.0: send now).

    Args:
        now: the current ``time.monotonic()`` reading, in seconds.
        last_flush: when the previous message was sent (``0.0``: never).
        first_change: when the oldest change not yet sent was made.
        last_change: when the newest change was made.
        over: the stream is over its byte budget (:func:`over_budget`).

    Returns:
        ``max(0, due - now)`` where ``due`` is the earlier of ``last_change +
        QUIET`` and ``first_change + MAX_DELAY`` (``QUIET_OVER`` and
        ``MAX_DELAY_OVER`` when ``over``), but not before ``last_flush +
        MIN_GAP``.
    """
    quiet, oldest = (QUIET_OVER, MAX_DELAY_OVER) if over else (QUIET, MAX_DELAY)
    due = max(min(last_change + quiet, first_change + oldest), last_flush + MIN_GAP)
    return max(0.0, due - now)


def pace(tr: Transcript, send: Callable[..., object], *args: object) -> None:
    """The transcript ``tr`` changed by a delta: call ``send(*args)`` (which flushes
    its pending changes) when they are due, now or from a timer on the running
    loop (``tr.timer``), so the last delta shows even if the stream stalls.

    One pacing for every owner of a reply widget (the local Session, the AG-UI
    client's view). Per delta this only notes the time while a timer is armed.
    A change that is not a delta is sent at once by its owner, whatever is
    pending with it (the flush cancels the timer).

    Args:
        tr: the reply's :class:`~nb_hitl.session._transcript.Transcript`
            (``pending``, ``first_change``, ``last_change``, ``last_flush``,
            ``overhead``, ``streamed``, ``timer``).
        send: sends the pending changes now; it must reset ``tr.first_change``
            and ``tr.timer`` (:func:`nb_hitl.widgets._transcript_feed.flush` does).
        args: ``send``'s arguments (no closure made per delta).
    """
    if not tr.pending:
        return
    now = time.monotonic()
    tr.last_change = now
    if tr.first_change is None:
        tr.first_change = now
    if tr.timer is None:
        _send_when_due(tr, send, args, now)


def _send_when_due(
    tr: Transcript, send: Callable[..., object], args: tuple[object, ...], now: float | None = None
) -> None:
    """Send the pending changes if they are due, else (re)arm the timer for when they will be."""
    tr.timer = None
    if not tr.pending or tr.first_change is None:
        return
    wait = flush_delay(
        time.monotonic() if now is None else now,
        last_flush=tr.last_flush,
        first_change=tr.first_change,
        last_change=tr.last_change,
        over=over_budget(tr.overhead, tr.streamed),
    )
    if wait <= 0:
        send(*args)
    else:
        tr.timer = asyncio.get_running_loop().call_later(wait, _send_when_due, tr, send, args)
