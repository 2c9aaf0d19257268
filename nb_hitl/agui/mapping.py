"""Pauses <-> AG-UI interrupts, resume entries <-> page messages (pure).

AG-UI 1.0 ("Interrupts") models a pause as ``RUN_FINISHED`` with
``outcome = {type: "interrupt", interrupts: [Interrupt]}`` and the answer as
the next run's ``RunAgentInput.resume = [ResumeEntry]``. This module holds
the generic machinery: interrupt ids and ``expires_at`` (:mod:`.ids`),
payload validation and AG-UI's one-resume rule (:func:`check_resume`). What
varies by pause kind (the payload schema, the message, what a ``resolved``
or ``cancelled`` entry means, the widget view) is the kind's
(:mod:`nb_hitl.kinds`); the table of payloads is in ``docs/design.md``,
"Pause kinds". A resume becomes the *page message* a widget would send, so
the AG-UI server shares every check with the widget path. Nothing here
touches the network, a widget or an agent.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from ag_ui.core import Interrupt, ResumeEntry

from ..errors import DecisionError, NbHitlError
from ..kinds import KINDS, kind_spec
from ..kinds._schema import (
    META_KEY,
    META_VERSION,
    REASON_INPUT_REQUIRED,
    REASON_REVIEW,
    REASON_TOOL_CALL,
    validate_payload,
)
from ..messages import MAX_SHORT
from ..pauses import Pause
from .ids import interrupt_id, parse_expires_at, to_iso

__all__ = [
    "META_KEY",
    "META_VERSION",
    "OUR_KINDS",
    "REASON_REVIEW",
    "REASON_TOOL_CALL",
    "REASON_INPUT_REQUIRED",
    "ResumeError",
    "interrupt_id",
    "to_iso",
    "parse_expires_at",
    "response_schema",
    "pause_to_interrupt",
    "validate_payload",
    "resume_to_message",
    "cancel_message",
    "CANCEL_PAYLOAD_SCHEMA",
    "cancel_payload",
    "check_resume",
    "our_kind",
    "effective_schema",
    "interrupt_view",
    "message_to_entry",
]

OUR_KINDS = KINDS
"""The pause kinds :func:`pause_to_interrupt` maps (``Pause.kind``)."""


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


# ---------------------------------------------------------------------------
# Pause -> Interrupt
# ---------------------------------------------------------------------------
def pause_to_interrupt(
    pause: Pause,
    thread_id: str,
    *,
    expires_at: float | None = None,
) -> Interrupt:
    """The AG-UI ``Interrupt`` for one open pause.

    Args:
        pause: the open pause (from ``Session.current.pauses``).
        thread_id: the AG-UI thread the agent serves.
        expires_at: epoch seconds after which the interrupt cannot be
            answered; defaults to ``pause.deadline``. The earlier of the two
            is used when both are given.

    Returns:
        ``Interrupt(id, reason, message, tool_call_id, response_schema,
        expires_at, metadata={"nb_hitl": {...}})``. The metadata carries what
        a client needs to draw nb_hitl's own widgets: ``version``, ``kind``,
        ``thread_id``, ``reply_id``, ``tool_call_id``, ``tool_name``,
        ``input`` (parsed, or ``None``), ``input_text`` (as the model sent
        it), ``input_schema``, ``permission_message``, ``decision_reason``,
        ``bypass_immune``, ``suggested_rules`` (``[{index, label, tool_name,
        rule_content, behavior}]``), ``ask_user`` (``AskUserParams`` as
        JSON, or ``None``), ``ask_user_error``, ``policy``, ``shell_commands``
        and ``shell_problems`` (a shell call's simple commands),
        ``approvals`` and ``approvals_needed`` (a call that needs several
        approvals: the interrupt stays open until the last), ``file_change``
        (a file edit's diff, :mod:`nb_hitl.file_change`), and for forms
        and reviews ``title``, ``message``, ``form_error``,
        ``review_output`` (the result to review, only while the pause is
        open), ``review_state``, ``review_error``.
    """
    view = pause.to_view()
    deadline = pause.deadline
    if expires_at is not None:
        deadline = expires_at if deadline is None else min(deadline, expires_at)
    meta = {
        "version": META_VERSION,
        "kind": pause.kind,
        "thread_id": thread_id,
        "reply_id": pause.reply_id,
        "tool_call_id": pause.tool_call_id,
        "tool_name": pause.tool_name,
        "input": pause.input,
        "input_text": pause.tool_call.input,
        "input_schema": pause.input_schema,
        "permission_message": pause.permission_message,
        "decision_reason": pause.decision_reason,
        "bypass_immune": pause.bypass_immune,
        "suggested_rules": view["suggested_rules"],
        "ask_user": view["ask_user"],
        "ask_user_error": pause.ask_user_error,
        "policy": pause.policy,
        "shell_commands": view["shell_commands"],
        "shell_problems": view["shell_problems"],
        "approvals": view["approvals"],
        "approvals_needed": view["approvals_needed"],
        "file_change": view["file_change"],
    }
    for key in ("title", "message", "form_error", "elicitation_url", "review_output", "review_state", "review_error"):
        meta[key] = view[key]
    spec = kind_spec(pause.kind)
    return Interrupt(
        id=interrupt_id(thread_id, pause.reply_id, pause.tool_call_id),
        reason=spec.interrupt_reason,
        message=spec.interrupt_message(pause),
        tool_call_id=pause.tool_call_id,
        response_schema=spec.response_schema(pause),
        expires_at=to_iso(deadline) if deadline is not None else None,
        metadata={META_KEY: meta},
    )


def response_schema(pause: Pause) -> dict[str, Any]:
    """The JSON Schema of a ``resolved`` payload for ``pause`` (its kind's,
    see the module docstring's table)."""
    return kind_spec(pause.kind).response_schema(pause)


# ---------------------------------------------------------------------------
# ResumeEntry -> page message (server side)
# ---------------------------------------------------------------------------
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


def cancel_message(pause: Pause, payload: Any = None) -> dict[str, Any]:
    """The page message a ``cancelled`` entry stands for (see the module
    docstring: a denial for a confirmation, an ERROR result otherwise).

    Args:
        pause: the open pause.
        payload: the entry's payload: ``None``, or :data:`CANCEL_PAYLOAD_SCHEMA`
            (the person's text, which becomes the ERROR result the model reads).

    Raises:
        DecisionError: the payload breaks :data:`CANCEL_PAYLOAD_SCHEMA`, or it
            carries a text for a confirmation (a cancelled confirmation is
            denied as cancelled; a reason goes with a resolved
            ``{"approved": false, "reason": ...}``).
    """
    message = kind_spec(pause.kind).cancel_message(pause)
    if payload is None:
        return message
    validate_payload(CANCEL_PAYLOAD_SCHEMA, payload)
    if message.get("action") != "return_error":
        raise DecisionError(
            "A cancelled confirmation takes no message; deny it with a reason instead.", field="message"
        )
    return {**message, "message": payload["message"]}


def resume_to_message(pause: Pause, entry: ResumeEntry, *, thread_id: str) -> dict[str, Any]:
    """The page message (see :mod:`nb_hitl.decisions`) a resume entry stands
    for, to pass to :meth:`Session.act <nb_hitl.session.Session.act>`.

    Args:
        pause: the open pause the entry answers.
        entry: the AG-UI ``ResumeEntry``.
        thread_id: the thread, to check the entry's id is this pause's.

    Returns:
        ``{"action": "approve" | "deny" | "modify" | "answer" |
        "external_result" | "return_error", "tool_call_id", "reply_id", ...}``.

    Raises:
        ResumeError: ``code="unknown_interrupt"`` when the id is not this
            pause's (:func:`interrupt_id`).
        DecisionError: a ``resolved`` payload that breaks
            :func:`response_schema` (``field`` = JSON path), or
            ``editedArgs`` / ``acceptedRules`` sent with ``approved: false``.
    """
    expected = interrupt_id(thread_id, pause.reply_id, pause.tool_call_id)
    if entry.interrupt_id != expected:
        raise ResumeError(
            f"Resume entry {entry.interrupt_id[:80]!r} does not answer the interrupt of tool call "
            f"{pause.tool_call_id!r} ({expected}).",
            code="unknown_interrupt",
            interrupt_ids=[entry.interrupt_id],
        )
    if entry.status == "cancelled":
        return cancel_message(pause, entry.payload)
    spec = kind_spec(pause.kind)
    validate_payload(spec.response_schema(pause), entry.payload)
    return spec.resume_message(pause, entry.payload)


# ---------------------------------------------------------------------------
# the one-resume rule (both sides)
# ---------------------------------------------------------------------------
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
            try:
                validate_payload(interrupt.response_schema, e.payload)
            except DecisionError as exc:
                raise ResumeError(
                    f"Interrupt {e.interrupt_id}: {exc}",
                    code="invalid_payload",
                    field=f"{e.interrupt_id}:{exc.field or ''}",
                    interrupt_ids=[e.interrupt_id],
                ) from None


# ---------------------------------------------------------------------------
# Interrupt -> widget view, page message -> ResumeEntry (client side)
# ---------------------------------------------------------------------------
def our_kind(interrupt: Interrupt) -> str | None:
    """``"confirm"`` | ``"ask_user"`` | ``"external"`` | ``"form"`` |
    ``"review"`` when the interrupt's
    metadata says it was made by :func:`pause_to_interrupt` (and is well
    formed enough to draw), else ``None`` (draw it as a form). The metadata
    only chooses the view: answers are still checked against
    ``response_schema`` before they are sent."""
    meta = (interrupt.metadata or {}).get(META_KEY) if isinstance(interrupt.metadata, dict) else None
    if not isinstance(meta, dict) or meta.get("version") != META_VERSION:
        return None
    kind = meta.get("kind")
    if kind not in OUR_KINDS:
        return None
    if not isinstance(meta.get("tool_name"), str) or not isinstance(meta.get("input_text", ""), str):
        return None
    return kind if kind_spec(kind).meta_ok(meta) else None


def _fallback_schema(interrupt: Interrupt) -> dict[str, Any]:
    if interrupt.reason in (REASON_TOOL_CALL, "confirmation"):
        return {
            "type": "object",
            "properties": {"approved": {"type": "boolean", "title": "Approve"}},
            "required": ["approved"],
        }
    return {
        "type": "object",
        "properties": {"answer": {"type": "string", "title": "Answer"}},
        "required": ["answer"],
    }


def effective_schema(interrupt: Interrupt) -> dict[str, Any]:
    """The schema answers to ``interrupt`` are checked against: its
    ``response_schema``, or, when it has none, AG-UI's defaults: a boolean
    ``approved`` for ``tool_call`` / ``confirmation`` interrupts, a free-text
    ``answer`` otherwise."""
    return dict(interrupt.response_schema) if interrupt.response_schema else _fallback_schema(interrupt)


def interrupt_view(
    interrupt: Interrupt,
    *,
    key: str,
    run_id: str,
    tool_call_text: str | None = None,
    tool_call_name: str | None = None,
) -> dict[str, Any]:
    """The pause dict a :class:`~nb_hitl.widgets.ReplyWidget` draws for one
    interrupt (the shape of :meth:`Pause.to_view <nb_hitl.pauses.Pause.to_view>`).

    Args:
        interrupt: an interrupt received in a ``RUN_FINISHED`` outcome.
        key: the widget's handle for it (sent back as ``tool_call_id``): the
            interrupt's ``tool_call_id`` when that is unique in the outcome,
            else the interrupt id.
        run_id: the run that raised it (shown as ``reply_id``).
        tool_call_text: the tool call's arguments as streamed, if seen.
        tool_call_name: the tool's name as streamed, if seen.

    Returns:
        ``{"tool_call_id": key, "interrupt_id", "reply_id", "kind", "tool_name",
        "input_text", "input_schema", "permission_message", "decision_reason",
        "bypass_immune", "suggested_rules", "ask_user", "ask_user_error",
        "response_schema", "deadline", "policy", "status": "open", "decision":
        None, "reason": None, "title", "message", "review_output", "review_state",
        "review_error", "form_error", "elicitation_url", "tool_hints",
        "approvals", "approvals_needed"}`` (``kind``: one of :data:`OUR_KINDS`).
        Strings from the peer are only ever shown as text by the page.
    """
    kind = our_kind(interrupt)
    meta = (interrupt.metadata or {}).get(META_KEY, {}) if kind else {}
    view: dict[str, Any] = {
        "tool_call_id": key,
        "interrupt_id": interrupt.id,
        "reply_id": run_id,
        "kind": kind or "form",
        "tool_name": meta.get("tool_name") or tool_call_name or interrupt.reason,
        "input_text": meta.get("input_text") or tool_call_text or "",
        "input_schema": meta.get("input_schema"),
        "permission_message": meta.get("permission_message"),
        "decision_reason": meta.get("decision_reason"),
        "bypass_immune": bool(meta.get("bypass_immune")),
        "suggested_rules": [],
        "ask_user": None,
        "ask_user_error": None,
        "response_schema": effective_schema(interrupt),
        "deadline": parse_expires_at(interrupt.expires_at),
        "policy": meta.get("policy"),
        "status": "open",
        "decision": None,
        "reason": None,
        "title": (meta.get("title") or None) if kind else (tool_call_name or interrupt.reason),
        "message": None if kind else interrupt.message,
        "review_output": None,
        "review_state": None,
        "review_error": None,
        "form_error": None,
        "elicitation_url": None,
        "tool_hints": None,
        "approvals": meta.get("approvals", []),  # M-of-N (checked by agui.cards.view_problem)
        "approvals_needed": meta.get("approvals_needed", 1),
        "dry_run": False,  # a remote call: the AG-UI road offers no dry run
    }
    if kind:
        view.update(kind_spec(kind).view_fields(meta))
    return view


def message_to_entry(interrupt: Interrupt, message: Mapping[str, Any]) -> ResumeEntry:
    """The ``ResumeEntry`` a page message answers ``interrupt`` with (the
    inverse of :func:`resume_to_message`, for the client), checked against
    the interrupt's schema (:func:`effective_schema`) with ``jsonschema``.

    Actions: for nb_hitl's own interrupts the widget's ``approve`` /
    ``deny`` / ``modify`` / ``answer`` / ``external_result`` /
    ``return_error``; for any interrupt ``submit`` (``{"value": payload}``,
    the generated form) and ``cancel`` (status ``cancelled``, no payload).
    ``return_error`` is sent as ``cancelled``: the server turns it into an
    ERROR result (see the module docstring); for nb_hitl's own interrupts the
    person's text goes with it (:func:`cancel_payload`), so the remote model
    reads it as a local one would.

    Raises:
        DecisionError: unknown action, or a payload that breaks the schema
            (``field`` is where: ``input`` for an edited input, ``answers.0``,
            or the form field's path).
    """
    action = message.get("action")
    kind = our_kind(interrupt)
    if action == "cancel" or action == "return_error":
        payload = cancel_payload(message) if kind is not None else None
        return ResumeEntry(interrupt_id=interrupt.id, status="cancelled", payload=payload)
    schema = effective_schema(interrupt)
    if action == "submit":
        value = message.get("value")
        validate_payload(schema, value)
        return ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=value)
    if kind is None:
        raise DecisionError(
            f"This interrupt is answered with its form (submit) or cancelled, not {str(action)[:40]!r}.",
            field="action",
        )
    payload = kind_spec(kind).entry_payload(interrupt, message, schema)
    return ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=payload)
