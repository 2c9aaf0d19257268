"""How the AG-UI server says no to a run: :class:`Refusal` (``RUN_ERROR`` with
its ``code``), the refusal of answers the Session's front door refused
(:func:`refusal_of`) and of a resume from a principal who does not own the
thread (:func:`check_answerer`)."""

from __future__ import annotations

from typing import Any

from ag_ui.core import Interrupt, ResumeEntry

from ..answers.approvals import needs_more
from ..answers.front import BatchRefused
from ..pauses import Pause

__all__ = [
    "REFUSAL_CODES",
    "Refusal",
    "check_answerer",
    "held_input",
    "interrupt_named",
    "refusal_at",
    "refusal_of",
    "refusal_words",
    "stale_refusal",
]


class Refusal(Exception):
    """A run refused before anything was resumed (becomes ``RUN_ERROR``).

    Attributes:
        code: the ``RUN_ERROR.code`` (``thread_busy``, ``unknown_interrupt``...).
        metadata: put under ``RUN_ERROR.metadata.nb_hitl`` when given.
    """

    def __init__(self, code: str, message: str, metadata: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.metadata = metadata


REFUSAL_CODES = {"invalid": "invalid_payload", "already_decided": "interrupt_closed", "expired": "interrupt_closed"}
"""``RUN_ERROR.code`` of an answer the Session's front door refused, by the
refusal's own code (:mod:`nb_hitl.errors`); any other code is ``resume_failed``."""


def interrupt_named(tool_name: str | None) -> str:
    """How a sentence a person reads names an interrupt: by its tool ("The interrupt for delete_file"),
    never by its id (the ids are in ``RUN_ERROR.metadata.nb_hitl`` for programs)."""
    return f"The interrupt for {tool_name}" if tool_name else "An interrupt"


def refusal_words(error: str | None, tool_name: str | None) -> str:
    """The server's reason as a person reads it on the card of ``tool_name``:
    without the prefix that names the interrupt (the card already does),
    ending in one full stop. The error code stays in the run's record."""
    text = (error or "no reason given").strip()
    head = f"{interrupt_named(tool_name)}: "
    if text.startswith(head):
        text = text[len(head) :]
    return text.rstrip(".") + "."


def refusal_of(exc: BatchRefused, entries: dict[str, ResumeEntry], tools: dict[str, str]) -> Refusal:
    """The :class:`Refusal` of a resume whose answers the Session refused
    (all or nothing: nothing was taken).

    Args:
        exc: the Session's refusal; ``exc.results`` says, per answer, why.
        entries: the resume entries by the ``tool_call_id`` they answer.
        tools: the tool name of each answered call, by ``tool_call_id`` (the message names it).

    Returns:
        a refusal naming the interrupts at fault and, for the first, the field
        (``RUN_ERROR.metadata.nb_hitl``), with the code of the first
        (:data:`REFUSAL_CODES`).
    """
    refused = [r for r in exc.results if not r["ok"]]
    if not refused:
        return Refusal("resume_failed", str(exc))
    ids = [entries[r["tool_call_id"]].interrupt_id if r["tool_call_id"] in entries else "?" for r in refused]
    parts = []
    for r in refused:  # the field of the first is in the metadata
        parts.append(f"{interrupt_named(tools.get(r['tool_call_id']))}: {r['error']}")
    code = REFUSAL_CODES.get(str(refused[0].get("code")), "resume_failed")
    return Refusal(code, "; ".join(parts), refusal_at(ids, refused[0].get("field")))


def refusal_at(interrupt_ids: list[str], field: str | None) -> dict[str, Any]:
    """``RUN_ERROR.metadata.nb_hitl`` of a refused resume: which of the
    client's own interrupts is at fault, and where (for its card)."""
    return {"interrupt_ids": list(interrupt_ids), "field": field}


def check_answerer(
    thread_id: str, owner: str | None, principal: str | None, answers: list[tuple[Pause, dict[str, Any]]]
) -> None:
    """A resume from another principal than the thread's owner may only answer
    calls that need several approvals (a second pair of eyes), and only
    approve or deny them: an edit of the call (a Modify) or rules to keep
    are the owner's.

    Args:
        thread_id: the AG-UI ``threadId``.
        owner: the principal that created the thread.
        principal: who sends the resume.
        answers: ``(pause, page message)`` of each resume entry.

    Raises:
        Refusal: ``thread_not_found`` (a call with one approval: as for any
            other principal's thread); ``not_owner`` (an edit or rules from
            another principal: nothing was taken).
    """
    if principal == owner:
        return
    if not all(needs_more(p) for p, _ in answers):
        raise Refusal("thread_not_found", f"No thread {thread_id[:80]!r} here.")
    for pause, message in answers:
        if message.get("action") not in ("approve", "deny") or message.get("rules"):
            raise Refusal(
                "not_owner",
                f"{interrupt_named(pause.tool_name)}: only the thread's owner may edit the call or keep "
                "rules; you may resume it only to approve or deny it as shown. Nothing was taken.",
            )


def stale_refusal(closed: list[tuple[str, Pause]], open_ids: set[str]) -> Refusal | None:
    """The refusal of a resume naming an interrupt whose pause is still open
    under another id: someone modified the call since it was raised (its id is
    bound to the input, :func:`~nb_hitl.agui.mapping.pause_interrupt_id`), so
    its answer is never counted for an input its sender did not see.

    Args:
        closed: ``(interrupt id, pause)`` of the named interrupts that are not open.
        open_ids: the ids open now.

    Returns:
        ``Refusal("interrupt_stale")`` naming the stale ids and, in
        ``open_interrupt_ids``, those to answer instead; ``None`` when none is stale.
    """
    stale = [(i, p) for i, p in closed if p.status == "open"]
    if not stale:
        return None
    return Refusal(
        "interrupt_stale",
        f"{interrupt_named(stale[0][1].tool_name)} was raised for an input that someone has modified since "
        "(the count of approvals started again with the edit): nothing was taken. Read the edited input "
        "in the interrupt open now and answer that one.",
        {**refusal_at([i for i, _ in stale], None), "open_interrupt_ids": sorted(open_ids)},
    )


def held_input(open_now: list[tuple[Interrupt, Pause]], new: list[Any]) -> dict[str, Any]:
    """``RUN_FINISHED.metadata.nb_hitl.refused_input`` of a run whose input came
    while interrupts were open (AG-UI 1.0, "Interrupts and Resume": the producer
    keeps them open and ends with the interrupt outcome again): ``{"code":
    "interrupts_pending", "message": <for people>, "message_ids": <the user
    messages not taken>}``."""
    ids = ", ".join(i.id for i, _ in open_now)
    told = "Your message was not given to the agent: it" if new else "Nothing ran: the agent"
    return {
        "code": "interrupts_pending",
        "message": f"{told} waits for answers to its open interrupts ({ids}). "
        "Answer all of them in one resume, then send new messages.",
        "message_ids": [m.id for m in new],
    }
