"""Who answers the pauses of the notebooks under ``notebooks/``: a person, or the notebook itself.

A notebook run with *Run All* stops at every pause for a person to click:
the cells after a pause wait for its answer, as ``await session.run(...)``
does. Answering from code (the cell calls ``session.act({...})``, the very
handler a click reaches) is an explicit switch, for unattended runs such as
CI::

    NB_HITL_ANSWER_FROM_CODE=1 jupyter execute notebooks/teams.ipynb

:func:`answer_from_code` reads that switch; a notebook writes
``ANSWER_FROM_CODE = answer_from_code()`` once and guards every cell that
answers a pause with it. The variable must be set in the kernel's
environment (the server's, or ``os.environ`` in the kernel before that
line runs).

A cell that waits for the agent's next card (``await next_pause(session,
"confirm")``) cannot know which answer the person gives before it: another
answer may end the reply without that card. :func:`next_pause` then prints
one line saying how the reply ended and returns ``None``, and the later cells
that needed the card print :data:`SKIPPED` instead of failing, so *Run All*
goes on to the end (a cell whose own branch leads to no card says why and
leaves the card ``None`` too).

A cell that waits for a person's click on a card (``await wait_for_answer(pause,
"press Approve on the card above")``) says what to click only while the card is
open: re-run after the click, it says the card was already answered, and how
(:func:`answered_line`). The card may be a local pause or a remote agent's
(a :class:`~nb_hitl.agui.RemoteSession`'s pause view); one answered where the
notebook does not hear of it by itself (an AG-UI approval link) is waited for
with ``follow=remote.follow``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from .answers.lifecycle import settled
from .errors import NbHitlError
from .kinds import kind_spec
from .labels import answers_text, pause_label
from .pauses import UNANSWERED

if TYPE_CHECKING:
    from .answers.front import Answerable
    from .pauses import Pause
    from .session import Session
    from .session._run import ReplyRun

__all__ = [
    "ANSWER_FROM_CODE_ENV",
    "SKIPPED",
    "AnswerModeError",
    "answer_from_code",
    "answered_line",
    "next_pause",
    "reply_ended_note",
    "wait_for_answer",
]

SKIPPED = "skipped: the card this cell needs did not come on the path your answers took (a cell above says why)"
"""What a cell prints in place of its work when the card it needs never came: the reply ended
without it (:func:`next_pause` printed how), or an earlier cell's branch did not lead to it (that
cell printed why). It does not claim the reply ended: it may still wait for another card."""

#: The switch: ``1`` (or ``true``, ``yes``, ``on``) makes the notebooks answer their own pauses.
ANSWER_FROM_CODE_ENV = "NB_HITL_ANSWER_FROM_CODE"

_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"", "0", "false", "no", "off"})


class AnswerModeError(NbHitlError, ValueError):
    """``NB_HITL_ANSWER_FROM_CODE`` holds a value that is neither on nor off; the message names both."""

    code = "answer_mode"


def answer_from_code(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the notebook answers its own pauses from code.

    Args:
        environ: where to read :data:`ANSWER_FROM_CODE_ENV` (``os.environ``
            when None).

    Returns:
        True when the variable is ``1``, ``true``, ``yes`` or ``on`` (any
        case); False when it is unset, empty, ``0``, ``false``, ``no`` or
        ``off``: every pause then waits for a person's click.

    Raises:
        AnswerModeError: any other value (a typo must not silently pick a mode).
    """
    raw = (os.environ if environ is None else environ).get(ANSWER_FROM_CODE_ENV, "")
    value = raw.strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise AnswerModeError(
        f"{ANSWER_FROM_CODE_ENV}={raw!r} is neither on (1, true, yes, on) nor off (unset, 0, false, no, off)."
    )


def reply_ended_note(run: ReplyRun, kind: str) -> str:
    """The line a notebook shows when the reply ended without a card of ``kind``.

    Args:
        run: the ended reply (its ``status``, ``reason`` and ``final`` message).
        kind: the pause kind waited for (``"confirm"``, ``"ask_user"``, ...).

    Returns:
        How the reply ended (status, and its final text or reason) and what to
        do: run the notebook again to take that path.
    """
    said = (run.final.get_text_content() or "") if run.final is not None else ""
    said = " ".join(said.split()) or run.reason
    how = f"{run.status}: {said!r}" if said else run.status
    return (
        f"nb_hitl: the reply ended ({how}) without a {kind} card: your answer above took another path. "
        "The cells below that need that card are skipped; run the notebook again to take this path."
    )


async def next_pause(
    session: Session, kind: str, *, seen: Collection[str] = (), timeout: float | None = None
) -> Pause | None:
    """Wait (without blocking the kernel) for the current reply's next card of ``kind``.

    The card may come only after a person's click on the one before, so there
    is no time limit by default.

    Args:
        session: the :class:`~nb_hitl.session.Session` whose current reply is watched.
        kind: the pause kind (``"confirm"``, ``"ask_user"``, ``"external"``, ...).
        seen: ``tool_call`` ids to pass over (cards already handled).
        timeout: seconds to wait at most; ``None``: as long as the reply runs.

    Returns:
        The first pause of ``kind`` in the reply not in ``seen`` (open or
        already answered), or ``None`` when the reply ended without one: the
        :func:`reply_ended_note` line is then printed.

    Raises:
        TimeoutError: ``timeout`` seconds passed while the reply still ran.
        KeyError: ``kind`` is not a pause kind (:func:`nb_hitl.kinds.kind_spec`).
    """
    wanted = kind_spec(kind)  # KeyError, naming the kinds, for a kind that does not exist
    loop = asyncio.get_running_loop()
    end = None if timeout is None else loop.time() + timeout
    changed = asyncio.Event()

    def heard(*_: Any) -> None:
        # (kind, run) from the session, or a reply's task when it ends; either may be on another thread
        loop.call_soon_threadsafe(changed.set)

    session.on_change(heard)  # a card opened ("pause"), a decision, the reply's end
    watched: asyncio.Task[Any] | None = None
    try:
        while True:
            changed.clear()
            run = session.current
            if run is not None:
                found = [p for p in run.pauses.values() if kind_spec(p.kind) is wanted and p.tool_call_id not in seen]
                if found:
                    return found[0]
                if not run.live or (run.task is not None and run.task.done()):
                    print(reply_ended_note(run, kind))
                    return None
                if run.task is not None and run.task is not watched:
                    watched = run.task
                    watched.add_done_callback(heard)
            left = None if end is None else end - loop.time()
            if left is not None and left <= 0:
                raise TimeoutError(f"no {kind} card within {timeout} s (the reply still runs)")
            # no reply yet: the session's first change for it (its first card, or its end) wakes this
            try:
                await asyncio.wait_for(changed.wait(), left)
            except TimeoutError:
                pass  # checked once more, then raised above
    finally:
        session.off_change(heard)
        if watched is not None:
            watched.remove_done_callback(heard)


def answered_line(pause: Answerable) -> str:
    """How a card that no longer waits was closed, for a cell re-run after it.

    Args:
        pause: a local :class:`~nb_hitl.pauses.Pause` or a remote card
            (:class:`~nb_hitl.agui.turn.RemoteCard`) whose status is ``decided``,
            ``delivered`` or ``expired``.

    Returns:
        ``Already answered: delete_file (path="draft.md"): approve.`` (with the AskUser
        choices, who answered when the card was answered elsewhere (``approve by bob``),
        the reason given with a denial), or for an expired pause
        ``No longer waiting: ... closed unanswered (reason).``
    """
    label = pause_label(pause)
    if pause.status == "expired":
        return f"No longer waiting: {label} closed unanswered ({pause.reason or 'expired'})."
    decision = pause.decision or {}
    how = str(decision.get("action") or pause.status)
    if decision.get("answers"):
        how += f" ({answers_text(decision['answers'])})"
    if decision.get("by"):
        how += f" by {decision['by']}"
    if decision.get("reason"):
        how += f", reason: {decision['reason']}"
    return f"Already answered: {label}: {how}."


def _card(pause: Answerable | dict[str, Any]) -> Answerable:
    """``pause`` as :func:`~nb_hitl.answers.lifecycle.settled` takes it: a remote pause view
    (the dicts a :class:`~nb_hitl.agui.RemoteSession` gives) in a ``RemoteCard``, which reads
    and moves that very dict."""
    if isinstance(pause, dict):
        from .agui.turn import RemoteCard  # only with the ``agui`` extra, which made the view

        return RemoteCard(pause)
    return pause


async def wait_for_answer(
    pause: Answerable | dict[str, Any],
    click: str,
    *,
    follow: Callable[[], Awaitable[object]] | None = None,
) -> None:
    """Wait (without blocking the kernel, with no time limit) until a person has answered ``pause``.

    Args:
        pause: the card the person answers: a local :class:`~nb_hitl.pauses.Pause`, or a
            remote agent's pause view (a dict of :meth:`~nb_hitl.agui.RemoteSession.until_paused`
            or ``RemoteSession.pending``; a ``RemoteCard``).
        click: what to do on it, as the line shows it (``"press Approve on the card above"``).
        follow: for a card answered where this kernel does not hear of it by itself (an
            AG-UI approval link: ``remote.follow``, which asks the server until it no longer
            repeats the card): awaited alongside the wait while the card is open, and to its
            end; its error ends the wait.

    Prints ``Waiting for you: {click}.`` while the card is open; once it was answered (the
    cell re-run after the click) prints :func:`answered_line` instead and returns at once.
    An answer being checked (status ``deciding``) is waited for without a line: a refused one
    leaves the card open again, and the wait goes on. The wait is woken by the card's status
    change itself (:func:`~nb_hitl.answers.lifecycle.settled`), not by looking again and again.

    Raises:
        Exception: what ``follow`` raised (e.g. :class:`~nb_hitl.errors.PauseNotLiveError`: the
            remote turn is not paused); the wait is given up, no waiter is left.
    """
    card = _card(pause)
    if card.status not in UNANSWERED:
        print(answered_line(card))
        return
    if card.status == "open":
        print(f"Waiting for you: {click}.")

    async def answered() -> None:
        while card.status in UNANSWERED:
            await settled(card, None, waiting=UNANSWERED)

    if follow is None:
        await answered()
        return
    both = [asyncio.ensure_future(answered()), asyncio.ensure_future(follow())]
    try:
        for first in asyncio.as_completed(both):
            await first  # the first error ends the wait
    finally:
        for task in both:
            task.cancel()  # nothing for a task that ended
