"""A page's message to a reply is handled once what it set going reached the page.

In the kernel a click is one comm message, which ipykernel frames with iopub
``status`` ``busy`` and ``idle`` when no cell runs (``session.start``). The
answer's checks, the queue and the agent's resumed stream run as tasks after
the widget's handler returns, so ``idle`` used to leave before the agent's next
event: the page handled both status messages first. Here the handler asks that
message's handling to end only once (:func:`nb_hitl.widgets._hold.hold_dispatch`,
at most ``HOLD_LIMIT``) the answer was sent and, when it handed decisions to the
agent, the resumed stream's first event and the cards it changed were pushed
(:meth:`SessionCore._push_soon <nb_hitl.session._core.SessionCore._push_soon>`):
the page gets ``busy``, the answer, the agent's next event, the cards, ``idle``,
as a plain ``ipywidgets`` button's update goes between ``busy`` and ``idle``.

Nothing here decides, checks or records an answer: that stays the desk's
(:mod:`nb_hitl.session._actions`, :mod:`nb_hitl.answers`); this only follows
the run's state and wakes the waiter when it moved (:func:`stepped`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from ..widgets._hold import hold_dispatch
from ._run import ReplyRun

__all__ = ["answered", "settled", "stepped", "on_its_way"]


def answered(run: ReplyRun, answer: Awaitable[Any]) -> Awaitable[Any]:
    """``answer`` (the page's answer, awaited by the widget), counted on ``run``
    while it runs; the comm message being handled, if any, ends after
    :func:`settled` (:func:`~nb_hitl.widgets._hold.hold_dispatch`).

    Args:
        run: the reply the page's message is about.
        answer: what the desk answers the page (a coroutine, not yet started).

    Returns:
        a coroutine with ``answer``'s result (or exception).
    """
    run.answering += 1
    hold_dispatch(lambda: settled(run))
    return _counted(run, answer)


async def _counted(run: ReplyRun, answer: Awaitable[Any]) -> Any:
    try:
        return await answer
    finally:
        run.answering -= 1
        stepped(run)


def on_its_way(run: ReplyRun) -> bool:
    """Whether something a page's message set going has not reached the page yet:
    an answer still being worked out, a push waiting for the resumed stream's
    first event (``push_due``), decisions handed to the agent with no event since
    (``resuming``), or decisions queued for the woken driving task."""
    return bool(run.answering or run.push_due is not None or run.resuming or (run.queue and run.wake.is_set()))


async def settled(run: ReplyRun) -> None:
    """Return once nothing is :func:`on_its_way` (woken by :func:`stepped`);
    never blocks the loop. Bounded by the caller (``HOLD_LIMIT``)."""
    while on_its_way(run):
        if run.step is None or run.step.done():
            run.step = asyncio.get_running_loop().create_future()
        await asyncio.shield(run.step)


def stepped(run: ReplyRun) -> None:
    """The run moved (a push, the resumed stream's first event, an answer done):
    wake :func:`settled` to look again."""
    step, run.step = run.step, None
    if step is not None and not step.done():
        step.set_result(None)
