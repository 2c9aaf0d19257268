"""The life cycle of a pause: one status table for every road an answer takes.

A pause's ``status`` (:data:`~nb_hitl.pauses.PauseStatus`) only changes
through :func:`transition`, along the named edges of :data:`TRANSITIONS`::

    open -> deciding -> decided -> delivered
    open | deciding | decided | delivered -> expired
    deciding -> open (a check refused the answer, or the carrier could not apply it,
                      or it was an approval and the call needs more: M-of-N)
    decided -> open (the far side refused what the carrier handed it: an AG-UI resume refused by the server)

The local :class:`~nb_hitl.session.Session`, the AG-UI server (which drives
one), the AG-UI client and the service console all move their pauses through
this table, so "decided" and "delivered" mean the same everywhere:

* ``deciding``: an answer passed the front door (:mod:`nb_hitl.answers.front`)
  and is being checked, recorded or sent;
* ``decided``: it is recorded and queued for the agent (local) or handed to
  the carrier that delivers it;
* ``delivered``: the agent (or the service) took it; for the service console
  this is set only when the answer produced the call's result.

An illegal change raises :class:`PauseTransitionError` (an internal error,
logged) instead of silently overwriting the status. A pause whose answer is
carried outside the agent's queue (``Pause.carrier``: an MCP server waiting
for its elicitation) hears here of its expiry, whatever ended it.

:func:`transition` is also the one place that marks a pause changed (its
``revision`` grows by one): a reply's push rebuilds and sends the views of the
pauses marked since the last push, and only those
(:meth:`nb_hitl.widgets._cards.CardFeed.views_of`). A change to a shown
pause's view therefore goes with a transition: the decision and the approvals
are set between ``decide`` and ``record`` / ``refuse``, an expiry's reason
with ``expire`` (a carrier may add what it told the far side), an error that
comes after a delivered answer with ``deliver``; a card's text that changes
without a status change (a replay's recorded answer refused) goes through
:func:`retell`.

:func:`transition` is also what wakes the code waiting for a status change:
:func:`settled` returns once its pause leaves ``deciding`` (by any of
``refuse``, ``record`` or ``expire``), or leaves whichever statuses its caller
waits out (``waiting=("open", "deciding")``: until the pause has its answer,
:func:`nb_hitl.walkthrough.wait_for_answer`), on whatever thread and loop the
transition ran, instead of looking at the status again and again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from ..errors import NbHitlError
from ..pauses import PauseStatus

if TYPE_CHECKING:
    from ..pauses import Pause
    from .front import Answerable

__all__ = ["TRANSITIONS", "PauseTransitionError", "transition", "can_transition", "retell", "settled", "ANSWERED"]

log = logging.getLogger("nb_hitl.answers")

TRANSITIONS: dict[tuple[PauseStatus, PauseStatus], str] = {
    ("open", "deciding"): "decide",  # an answer passed the front door
    ("deciding", "open"): "refuse",  # refused by a check or the carrier, or an approval short of N: open again
    ("deciding", "decided"): "record",  # audited and queued / handed to the carrier
    ("decided", "delivered"): "deliver",  # the agent (or the service) took it
    ("decided", "open"): "refuse",  # the carrier's far side refused it before the agent took it (an AG-UI resume)
    ("delivered", "delivered"): "deliver",  # the tool result arrived for a delivered decision
    ("open", "expired"): "expire",
    ("deciding", "expired"): "expire",
    ("decided", "expired"): "expire",  # recorded, but the reply ended before the agent got it
    ("delivered", "expired"): "expire",  # delivered, but the reply stopped before AgentScope applied it
}
"""The legal pause status changes, ``(from, to) -> name of the transition``."""

ANSWERED: tuple[PauseStatus, ...] = ("deciding", "decided", "delivered")
"""Statuses of a pause that has its answer (a second one is refused)."""


_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]", frozenset[PauseStatus]]
"""``(its loop, the future it awaits, the statuses it waits out)``."""

_waiting: dict[int, tuple[Any, list[_Waiter]]] = {}
"""``id(key) -> (key, waiters)`` for the pauses someone awaits in :func:`settled` (``key``:
:func:`_key`). An entry exists only while one of its waiters waits (each removes itself
when it returns, however it returns), and holds its key, so its id is not reused meanwhile.
Keyed by id: a :class:`~nb_hitl.pauses.Pause` (a dataclass) is not hashable."""
_waiting_lock = threading.Lock()
"""Guards :data:`_waiting` (a transition may run on another thread than the waiter's loop)."""


class PauseTransitionError(NbHitlError):
    """An illegal pause status change was asked for (a bug in nb_hitl, not a user error)."""


def can_transition(pause: Answerable, to: PauseStatus) -> bool:
    """Whether ``pause`` may move from its status to ``to``."""
    return (pause.status, to) in TRANSITIONS


def transition(pause: Answerable, to: PauseStatus, *, reason: str | None = None) -> str:
    """Move ``pause.status`` to ``to`` along a legal edge of :data:`TRANSITIONS`.

    Args:
        pause: the pause (its ``status`` is changed in place).
        to: the new status.
        reason: set as ``pause.reason`` (expiries say why).

    A ``carrier`` (``Pause.carrier``) hears of an expiry: its ``expired(reason)``
    may return the reason the card shows instead (what it told the far
    side). Then the pause's ``revision`` grows by one: its view is rebuilt
    and sent with the next push. A pause whose new status is none of those a
    :func:`settled` waits out wakes that waiter (on its own loop).

    Returns:
        the name of the transition (``"decide"``, ``"expire"``...).

    Raises:
        PauseTransitionError: ``(pause.status, to)`` is not a legal edge; the
            status is left unchanged and the error is logged.
    """
    name = TRANSITIONS.get((pause.status, to))
    if name is None:
        err = PauseTransitionError(
            f"Illegal pause transition {pause.status} -> {to} for {pause.tool_name} ({pause.tool_call_id})"
        )
        log.error("%s", err)
        raise err
    pause.status = to
    if reason is not None:
        pause.reason = reason
    carrier = getattr(pause, "carrier", None)  # a local Pause may have one; a remote card has none
    if to == "expired" and carrier is not None:
        try:
            said = carrier.expired(pause.reason or "The pause expired.")
            if isinstance(said, str):
                pause.reason = said
        except Exception:  # a carrier never stops the status change
            log.exception("the carrier of %s failed on expiry", pause.tool_call_id)
    pause.revision += 1
    _wake(pause)
    return name


def retell(pause: Pause, message: str) -> None:
    """Change what a pause's card says (``pause.message``) without a status
    change, and mark the pause changed (its ``revision`` grows by one) so the
    next push sends its view: e.g. a replay whose recorded answer was refused
    says so on the card that stays open."""
    pause.message = message
    pause.revision += 1


_DECIDING: tuple[PauseStatus, ...] = ("deciding",)
"""What :func:`settled` waits out by default: an answer being checked."""


async def settled(pause: Answerable, timeout: float | None, *, waiting: Collection[PauseStatus] = _DECIDING) -> bool:
    """Wait until ``pause``'s status is none of ``waiting``: by default, until it is no
    longer ``deciding`` (its answer is checked).

    Woken by :func:`transition` itself when the pause moves to a status not in
    ``waiting`` (out of ``deciding``: ``refuse``, ``record`` or ``expire``), whichever
    thread runs it: the waiting loop is woken with ``call_soon_threadsafe``. No polling.

    Args:
        pause: any card :func:`transition` takes (a local
            :class:`~nb_hitl.pauses.Pause`, a remote card...).
        timeout: seconds to wait at most; ``None`` waits for as long as it takes.
        waiting: the statuses to wait out (``("open", "deciding")``: until the
            pause has its answer, or expired).

    Returns:
        ``True`` once the pause left ``waiting`` (at once if its status is not in
        it; it may be back in it by the time the caller looks, e.g. ``deciding``
        again: a caller that needs it out looks again), ``False`` if ``timeout``
        passed first.

    Raises:
        asyncio.CancelledError: the waiting task was cancelled. Neither a
            timeout nor a cancellation leaves a waiter behind.
    """
    loop = asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()
    statuses = frozenset(waiting)
    waiter: _Waiter = (loop, woken, statuses)
    with _waiting_lock:
        if pause.status not in statuses:  # read under the lock: a transition wakes under it after its change
            return True
        key = _key(pause)
        _waiting.setdefault(id(key), (key, []))[1].append(waiter)
    try:
        done, _ = await asyncio.wait((woken,), timeout=timeout)
    finally:
        _forget(pause, waiter)
        woken.cancel()  # nothing if it was woken
    return bool(done)


def _key(pause: Answerable) -> object:
    """The object a pause's waiters are filed under: the one holding its state. A card
    may say which in ``lifecycle_key`` (a remote card's view dict: the AG-UI client wraps
    the same view in a new :class:`~nb_hitl.agui.turn.RemoteCard` for each move); else
    the pause itself."""
    return getattr(pause, "lifecycle_key", pause)


def _forget(pause: Answerable, waiter: _Waiter) -> None:
    """Take ``waiter`` off ``pause``'s waiters (if :func:`_wake` has not already)."""
    key = id(_key(pause))
    with _waiting_lock:
        entry = _waiting.get(key)
        if entry is None or waiter not in entry[1]:
            return
        entry[1].remove(waiter)
        if not entry[1]:
            del _waiting[key]


def _wake(pause: Answerable) -> None:
    """Wake every :func:`settled` waiting for ``pause`` whose statuses its new one is not in,
    each on its own loop; the others wait on."""
    with _waiting_lock:
        entry = _waiting.get(id(_key(pause)))
        if entry is None:
            return
        woken = [w for w in entry[1] if pause.status not in w[2]]
        entry[1][:] = [w for w in entry[1] if pause.status in w[2]]
        if not entry[1]:
            del _waiting[id(_key(pause))]
    for loop, future, _statuses in woken:
        try:
            loop.call_soon_threadsafe(_resolve, future)
        except RuntimeError:  # its loop is closed: nothing waits there any more
            pass


def _resolve(woken: asyncio.Future[None]) -> None:
    """On the waiter's loop: resolve its future, unless it was given up (timed out, cancelled)."""
    if not woken.done():
        woken.set_result(None)
