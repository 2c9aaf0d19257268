"""The front door: every answer, however it arrives, is checked here once.

A click or ``session.act`` in the local :class:`~nb_hitl.session.Session`, an
AG-UI resume at the served agent (which drives a Session), the service
console's card: each hands the page message (``{"action", "tool_call_id",
...}``) and the pauses it may answer to :func:`admit`, then runs
:func:`verify` before the answer is recorded and carried. The refusal
sentences a person reads are written here and nowhere else.

* :func:`arrive` (synchronous): shape, lookup, ``reply_id``, still open,
  answered once, deadline; for any :class:`Answerable` card, so the AG-UI
  client's remote cards pass the same check as local pauses;
* :func:`admit`: :func:`arrive`, then the kind's pure
  :func:`~nb_hitl.decisions.decide`; the pause goes ``open -> deciding``.
* :func:`verify` (async): the checks that need the agent's tool and engine
  (permission re-check of an edited input, edited "Always allow" rules,
  the tool's own check of an external result).
* :func:`admit_all` / :func:`release`: a batch (AG-UI resume, "Submit all",
  "Approve all") is checked item by item; ``all_or_nothing`` hands the
  pauses back (``deciding -> open``) when any item is refused.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from ..decisions import Decision, check_external_result, check_rules_match, decide, recheck_permission
from ..errors import AlreadyDecidedError, DecisionError, NbHitlError, PauseNotLiveError
from ..labels import pause_label
from ..pauses import Pause, PauseStatus
from .approvals import needs_more
from .lifecycle import ANSWERED, transition

__all__ = [
    "MAX_BATCH",
    "CONTROL_ACTIONS",
    "Answerable",
    "as_message",
    "arrive",
    "admit",
    "admit_all",
    "release",
    "verify",
    "item_result",
    "BatchRefused",
]

MAX_BATCH = 10_000
"""The most answers one batch may hold ("Approve all" on a reply of 10,000
cards is still one message and one resume)."""

CONTROL_ACTIONS = frozenset({"batch", "interrupt", "sync", "transcript_sync", "cards_sync", "entry_text"})
"""Page actions that are not answers to a pause (a batch holds none of them)."""


class BatchRefused(NbHitlError):
    """An all-or-nothing batch had a refused item; nothing of it was taken.

    Attributes:
        results: per item, ``{"tool_call_id", "ok", "error"?, "field"?, "code"?}``
            in item order (see :func:`item_result`).
    """

    code = "batch_refused"

    def __init__(self, message: str, results: list[dict[str, Any]]) -> None:
        super().__init__(message, field="items")
        self.results = results


def as_message(message: Any) -> dict[str, Any]:
    """``message`` if it is a JSON object.

    Raises:
        DecisionError: it is not (a list, a string, ``null``...).
    """
    if not isinstance(message, dict):
        raise DecisionError("A page message must be a JSON object.")
    return message


class Answerable(Protocol):
    """What the front door and the status table read of a card: a local
    :class:`~nb_hitl.pauses.Pause`, or the AG-UI client's view of a remote
    interrupt (:class:`~nb_hitl.agui.remote.RemoteCard`)."""

    status: PauseStatus
    reason: str | None
    #: grows by one with each :func:`~nb_hitl.answers.lifecycle.transition`
    revision: int

    @property
    def tool_call_id(self) -> str: ...

    @property
    def reply_id(self) -> str: ...

    @property
    def tool_name(self) -> str: ...

    @property
    def input(self) -> Any: ...

    @property
    def decision(self) -> dict[str, Any] | None: ...

    @property
    def deadline(self) -> float | None: ...


A = TypeVar("A", bound=Answerable)


def arrive(cards: Mapping[str, A], message: Any, *, closed: str | None = None, now: float | None = None) -> A:
    """The arrival check of every road: which card an answer is for, and
    whether that card still takes one.

    Args:
        cards: the cards this road may answer, by ``tool_call`` id.
        message: the raw page message (untrusted: any JSON value).
        closed: why no answer is taken any more (the reply ended, the
            session was superseded, the remote turn is not waiting), or
            ``None`` while answers are taken.
        now: the time (``time.time()`` seconds) deadlines are judged at.

    Returns:
        the card (its status unchanged).

    Raises:
        DecisionError: not an object, no ``tool_call_id``, no such tool call,
            another ``reply_id``.
        AlreadyDecidedError: the call has its answer already (exactly once).
        PauseNotLiveError: the card expired, its deadline passed, or ``closed``.
    """
    message = as_message(message)
    tool_call_id = message.get("tool_call_id")
    if not isinstance(tool_call_id, str) or not tool_call_id:
        raise DecisionError("The message names no tool_call_id.", field="tool_call_id")
    card = cards.get(tool_call_id)
    if card is None:
        raise DecisionError(f"This reply has no open tool call {tool_call_id[:80]!r}.", field="tool_call_id")
    reply_id = message.get("reply_id")
    if reply_id is not None and reply_id != card.reply_id:
        raise DecisionError(
            f"This decision names reply {str(reply_id)[:80]!r}, but the tool call belongs to reply {card.reply_id!r}.",
            field="reply_id",
        )
    if card.decision is not None and card.decision.get("action") == "timeout":
        raise PauseNotLiveError(
            f"The deadline of this pause passed; {card.decision.get('applied') or 'the default was applied'}."
        )
    if card.status in ANSWERED:
        raise AlreadyDecidedError(
            f"Already decided: {pause_label(card)} has its decision"
            + (f" ({card.decision.get('action')})." if card.decision else ".")
        )
    if card.status == "expired" or closed is not None:
        raise PauseNotLiveError(f"This pause is no longer live: {card.reason or closed or 'the reply ended'}")
    if card.deadline is not None and (time.time() if now is None else now) > card.deadline:
        raise PauseNotLiveError("The deadline of this pause has passed.")
    return card


def admit(
    pauses: Mapping[str, Pause], message: Any, *, closed: str | None = None, now: float | None = None
) -> tuple[Pause, Decision]:
    """:func:`arrive`, then the kind's pure :func:`~nb_hitl.decisions.decide`:
    the answer of a local pause as AgentScope's objects.

    Args:
        pauses, message, closed, now: as for :func:`arrive`.

    Returns:
        ``(pause, decision)``; the pause is now ``deciding`` (hand it back with
        :func:`release` if a later step refuses).

    Raises:
        DecisionError: as :func:`arrive`, or the kind's own refusal (``field`` set).
        AlreadyDecidedError, PauseNotLiveError: as :func:`arrive`; for a call
            that needs several approvals, a ``DecisionError`` while another
            person's approval is being checked.
    """
    tool_call_id = as_message(message).get("tool_call_id")
    held = pauses.get(tool_call_id) if isinstance(tool_call_id, str) else None
    if held is not None and held.status == "deciding" and needs_more(held):  # not decided: another approval
        raise DecisionError(
            f"Another answer to {pause_label(held)} is being checked right now (it needs "
            f"{held.approvals_needed} approvals); answer again once it is recorded.",
            field="action",
        )
    pause = arrive(pauses, message, closed=closed, now=now)
    decision = decide(pause, message)
    transition(pause, "deciding")
    return pause, decision


def release(pause: Pause) -> None:
    """Hand a pause that is ``deciding`` back to ``open`` (a later check or
    the carrier refused its answer); a pause in any other status is left."""
    if pause.status == "deciding":
        transition(pause, "open")


async def verify(pause: Pause, decision: Decision, *, tool: Any, engine: Any = None) -> None:
    """The checks of an admitted answer that need the agent's tool and engine.

    Args:
        pause: the pause (``deciding``).
        decision: what :func:`admit` returned for it.
        tool: the agent's ``ToolBase`` for ``pause.tool_name``, or ``None``
            (a tool the agent no longer has: nothing to check against).
        engine: the agent's live ``PermissionEngine`` (it holds every rule
            added since the agent was built), or ``None`` where the agent runs
            elsewhere (the service checks its own).

    Raises:
        DecisionError: an edited input a deny rule forbids (AgentScope does
            not re-check edits), an edited rule that does not match the call
            (C18), an external result that breaks the tool's metadata schema.
    """
    if tool is None:
        return
    if decision.edited_input is not None and engine is not None:
        await recheck_permission(engine, tool, decision.edited_input)
    if decision.accepted_rules:
        await check_rules_match(tool, decision.accepted_rules, decision.approved_input)
    if decision.tool_result is not None and decision.tool_result.state == "success":
        await check_external_result(tool, decision.tool_result)


def item_result(message: Any, error: NbHitlError | None = None) -> dict[str, Any]:
    """One item's entry in a batch answer: ``{"tool_call_id", "ok"}`` plus,
    for a refusal, ``"error"`` (the sentence), ``"field"`` and ``"code"``."""
    tcid = message.get("tool_call_id") if isinstance(message, dict) else None
    if error is None:
        return {"tool_call_id": tcid, "ok": True}
    return {"tool_call_id": tcid, "ok": False, "error": str(error), "field": error.field, "code": error.code}


def admit_all(
    pauses: Mapping[str, Pause],
    items: Any,
    *,
    closed: str | None = None,
    all_or_nothing: bool = False,
) -> tuple[list[tuple[int, Pause, Decision]], list[dict[str, Any]]]:
    """:func:`admit` every item of a batch.

    Args:
        pauses, closed: as for :func:`admit`.
        items: the batch's answers (untrusted: must be a non-empty list of
            objects, at most :data:`MAX_BATCH`, none a control action; a
            call named twice is refused at its second answer).
        all_or_nothing: refuse the whole batch when any item is refused
            (an AG-UI resume, the console's "Submit all"); otherwise the
            admitted items go on and the refused ones say why.

    Returns:
        ``(admitted, results)``: ``(index, pause, decision)`` for each item
        admitted (its pause ``deciding``), and one :func:`item_result` per
        item, in order.

    Raises:
        DecisionError: ``items`` is not a non-empty list of objects, or too long.
        BatchRefused: ``all_or_nothing`` and an item was refused (every
            admitted pause was released).
    """
    if not isinstance(items, Sequence) or isinstance(items, str) or not items:
        raise DecisionError("A batch names its decisions in 'items', a non-empty list of objects.", field="items")
    if not all(isinstance(i, dict) for i in items):
        raise DecisionError("A batch names its decisions in 'items', a non-empty list of objects.", field="items")
    if len(items) > MAX_BATCH:
        raise DecisionError(f"A batch holds at most {MAX_BATCH} decisions.", field="items")
    admitted: list[tuple[int, Pause, Decision]] = []
    results: list[dict[str, Any]] = []
    seen: set[Any] = set()
    for n, item in enumerate(items):
        try:
            if item.get("action") in CONTROL_ACTIONS:
                raise DecisionError("A batch holds decisions only.", field="action")
            tcid = item.get("tool_call_id")
            if isinstance(tcid, str) and tcid in seen:
                named = pause_label(pauses[tcid]) if tcid in pauses else repr(tcid[:80])
                raise DecisionError(f"This batch names {named} twice: a call takes one answer.", field="tool_call_id")
            seen.add(tcid)
            pause, decision = admit(pauses, item, closed=closed)
        except NbHitlError as exc:
            results.append(item_result(item, exc))
            continue
        admitted.append((n, pause, decision))
        results.append(item_result(item))
    if all_or_nothing and len(admitted) < len(items):
        for _, pause, _ in admitted:
            release(pause)
        refused = next(r for r in results if not r["ok"])
        raise BatchRefused(f"Nothing was sent: {refused['tool_call_id']!s:.80}: {refused['error']}", results)
    return admitted, results
