"""AG-UI's resume contract, both sides: the one-resume rule and the cancel payload (pure).

AG-UI 1.0 ("Interrupts") answers a paused run with one
``RunAgentInput.resume = [ResumeEntry]``: every interrupt answered exactly
once, a ``resolved`` entry before its ``expires_at`` and fitting its
``response_schema`` (:func:`check_resume`). A ``cancelled`` entry of
nb_hitl's own interrupts may carry the person's words
(:data:`CANCEL_PAYLOAD_SCHEMA`). The server (:mod:`nb_hitl.agui.mapping`)
and the client (:mod:`nb_hitl.agui.interrupt_views`,
:mod:`nb_hitl.agui.remote`) check with these same functions.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from ag_ui.core import Interrupt, ResumeEntry

from ..errors import DecisionError, NbHitlError
from ..kinds._schema import validate_payload
from ..messages import MAX_SHORT
from .ids import parse_expires_at

__all__ = ["ResumeError", "CANCEL_PAYLOAD_SCHEMA", "cancel_payload", "check_payload", "check_resume"]


class ResumeError(NbHitlError):
    """A resume (a list of ``ResumeEntry``) cannot be applied or sent.

    Attributes:
        code: machine-readable reason, also used as AG-UI ``RUN_ERROR.code``:
            ``unknown_interrupt``, ``missing_interrupt``,
            ``duplicate_interrupt``, ``interrupt_expired``, ``interrupt_closed``,
            ``invalid_payload``, ``thread_busy``,
            ``conflicting_replay``, ``input_with_resume``, ``no_input``.
        interrupt_ids: the interrupt ids at fault.
    """

    code = "resume_refused"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        field: str | None = None,
        interrupt_ids: Sequence[str] = (),
    ) -> None:
        super().__init__(message, field=field)
        if code is not None:
            self.code = code
        self.interrupt_ids = list(interrupt_ids)


CANCEL_PAYLOAD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"message": {"type": "string", "minLength": 1, "maxLength": MAX_SHORT}},
    "required": ["message"],
    "additionalProperties": False,
}
"""The payload a ``cancelled`` entry may carry for nb_hitl's own interrupts:
``{"message": <the person's words>}``, their "Return the error" text, which
the model reads as the call's ERROR result (as in a local session). Both
sides use it: the client builds it (:func:`cancel_payload`), the server
turns it back into the page message (:func:`cancel_message`). A ``cancelled``
entry without a payload keeps AG-UI's meaning: abandoned, no answer."""


def cancel_payload(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """The payload of the ``cancelled`` entry a ``return_error`` page message
    stands for: ``{"message": text}`` when the person typed one, else ``None``.

    Raises:
        DecisionError: the text breaks :data:`CANCEL_PAYLOAD_SCHEMA` (too long).
    """
    text = message.get("message") if message.get("action") == "return_error" else None
    if not isinstance(text, str) or not text.strip():
        return None
    payload = {"message": text}
    validate_payload(CANCEL_PAYLOAD_SCHEMA, payload)
    return payload


def check_resume(
    interrupts: Sequence[Interrupt],
    entries: Sequence[ResumeEntry],
    *,
    now: float | None = None,
    validate: bool = True,
) -> None:
    """AG-UI's resume contract for one paused run, checked before anything
    is sent or applied.

    Rules (AG-UI "Interrupts", contract rules 2, 3, 6, 7): every entry names
    an interrupt of the run; every interrupt is answered exactly once; a
    ``resolved`` entry is not past its interrupt's ``expires_at`` and its
    payload fits ``response_schema``. A ``cancelled`` entry is accepted past
    ``expires_at``: it decides nothing and is the only way out of a thread
    whose interrupt expired.

    Args:
        interrupts: the interrupts of the paused run (its outcome).
        entries: the resume entries.
        now: epoch seconds (``time.time()`` when omitted).
        validate: check ``resolved`` payloads against ``response_schema``.

    Raises:
        ResumeError: ``duplicate_interrupt``, ``unknown_interrupt``,
            ``missing_interrupt``, ``interrupt_expired`` or
            ``invalid_payload`` (``field`` = ``"<interrupt id>:<path>"``).
    """
    now = time.time() if now is None else now
    by_id = {i.id: i for i in interrupts}
    seen: set[str] = set()
    dupes = []
    for e in entries:
        if e.interrupt_id in seen:
            dupes.append(e.interrupt_id)
        seen.add(e.interrupt_id)
    if dupes:
        raise ResumeError(
            f"Interrupt {dupes[0][:80]!r} is answered more than once in this resume.",
            code="duplicate_interrupt",
            interrupt_ids=dupes,
        )
    unknown = [e.interrupt_id for e in entries if e.interrupt_id not in by_id]
    if unknown:
        raise ResumeError(
            f"The resume names interrupt(s) the paused run did not raise: {', '.join(u[:80] for u in unknown)}.",
            code="unknown_interrupt",
            interrupt_ids=unknown,
        )
    missing = [i for i in by_id if i not in seen]
    if missing:
        raise ResumeError(
            "Every open interrupt must be answered in one resume; still open: " + ", ".join(missing) + ".",
            code="missing_interrupt",
            interrupt_ids=missing,
        )
    for e in entries:
        interrupt = by_id[e.interrupt_id]
        if e.status != "resolved":
            continue
        deadline = parse_expires_at(interrupt.expires_at)
        if deadline is not None and now > deadline:
            raise ResumeError(
                f"Interrupt {e.interrupt_id} expired at {interrupt.expires_at}; it can only be cancelled now.",
                code="interrupt_expired",
                interrupt_ids=[e.interrupt_id],
            )
        if validate:
            check_payload(e.interrupt_id, interrupt.response_schema, e.payload)


def check_payload(interrupt_id: str, schema: Any, payload: Any) -> None:
    """A ``resolved`` entry's payload against its interrupt's ``response_schema``.

    Raises:
        ResumeError: ``invalid_payload`` (``field`` = ``"<interrupt id>:<path>"``).
    """
    try:
        validate_payload(schema, payload)
    except DecisionError as exc:
        raise ResumeError(
            f"Interrupt {interrupt_id}: {exc}",
            code="invalid_payload",
            field=f"{interrupt_id}:{exc.field or ''}",
            interrupt_ids=[interrupt_id],
        ) from None
