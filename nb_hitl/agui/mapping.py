"""Pauses -> AG-UI interrupts, resume entries -> page messages: the server side (pure).

AG-UI 1.0 ("Interrupts") models a pause as ``RUN_FINISHED`` with
``outcome = {type: "interrupt", interrupts: [Interrupt]}`` and the answer as
the next run's ``RunAgentInput.resume = [ResumeEntry]``. This module maps an
open pause to its interrupt (:func:`pause_to_interrupt`) and a resume entry
to the *page message* a widget would send (:func:`resume_to_message`,
:func:`cancel_message`), so the AG-UI server shares every check with the
widget path. The rest of the machinery has its own modules, re-exported
here: interrupt ids and ``expires_at`` (:mod:`.ids`), AG-UI's one-resume
rule and the cancel payload (:mod:`.resume_rules`), the client's side,
interrupt -> view and page message -> entry (:mod:`.interrupt_views`). What
varies by pause kind (the payload schema, the message, what a ``resolved``
or ``cancelled`` entry means, the widget view) is the kind's
(:mod:`nb_hitl.kinds`); the table of payloads is in ``docs/design.md``,
"Pause kinds". Nothing here touches the network, a widget or an agent.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import Interrupt, ResumeEntry

from ..answers.approvals import input_hash
from ..errors import DecisionError
from ..kinds import kind_spec
from ..kinds._schema import (
    META_KEY,
    META_VERSION,
    REASON_INPUT_REQUIRED,
    REASON_REVIEW,
    REASON_TOOL_CALL,
    validate_payload,
)
from ..pauses import Pause
from .ids import interrupt_id, parse_expires_at, to_iso
from .interrupt_views import OUR_KINDS, effective_schema, interrupt_view, message_to_entry, our_kind
from .resume_rules import CANCEL_PAYLOAD_SCHEMA, ResumeError, cancel_payload, check_resume

__all__ = [
    "META_KEY",
    "META_VERSION",
    "OUR_KINDS",
    "REASON_REVIEW",
    "REASON_TOOL_CALL",
    "REASON_INPUT_REQUIRED",
    "ResumeError",
    "interrupt_id",
    "pause_interrupt_id",
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
    "META_TEXT",
]

META_TEXT = (
    "title",
    "message",
    "form_error",
    "elicitation_url",
    "review_output",
    "review_state",
    "review_error",
    "parent_tool_call_id",
)
"""The pause view's fields of text (or ``None``) an interrupt's metadata carries as they are."""


# ---------------------------------------------------------------------------
# Pause -> Interrupt
# ---------------------------------------------------------------------------
def pause_interrupt_id(pause: Pause, thread_id: str) -> str:
    """The id of ``pause``'s interrupt in ``thread_id``: :func:`interrupt_id`
    of thread, reply and tool call and, once someone modified a call that
    needs several approvals (``pause.approved_edit``), of the input everyone
    approves now (:func:`~nb_hitl.answers.approvals.input_hash`, the hash an
    approval link is bound to). An approval sent against the interrupt raised
    before the edit then names an id that is no longer open: it is refused
    as stale, never counted for an input its sender did not see."""
    bound = input_hash(pause) if pause.approved_edit is not None else None
    return interrupt_id(thread_id, pause.reply_id, pause.tool_call_id, bound)


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
        ``input`` (parsed, or ``None``), ``input_text`` (the input as the
        local card shows it: AgentScope's reading, pretty-printed; once
        someone modified a call that needs several approvals, the edit they
        approve), ``sent_text`` and ``input_changes`` (what the model sent
        and AgentScope's repairs, when the input shown differs from it;
        else ``None`` and ``[]``), ``input_schema``, ``permission_message``, ``decision_reason``,
        ``bypass_immune``, ``suggested_rules`` (``[{index, label, tool_name,
        rule_content, behavior}]``), ``ask_user`` (``AskUserParams`` as
        JSON, or ``None``), ``ask_user_error``, ``policy``, ``shell_commands``
        and ``shell_problems`` (a shell call's simple commands),
        ``approvals`` and ``approvals_needed`` (a call that needs several
        approvals: the interrupt stays open until the last), ``file_change``
        (a file edit's diff, :mod:`nb_hitl.file_change`), and for forms
        and reviews ``title``, ``message``, ``form_error``,
        ``review_output`` (the result to review, only while the pause is
        open), ``review_state``, ``review_error``, and the kind's own fields
        (:meth:`~nb_hitl.kinds.PauseKindSpec.interrupt_meta`: an MCP sampling
        request's ``sampling``).
    """
    view = pause.to_view()
    edited = pause.approved_input
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
        # what the call will run with: the model's input, or once someone modified a call
        # that needs several approvals, the edit everyone approves now
        "input": edited if edited is not None else pause.input,
        # its text exactly as the local card shows it (Pause.to_view: AgentScope's reading, one
        # key a line, invisible characters escaped), and what the model sent when that differs
        "input_text": view["input_text"],
        "sent_text": view["sent_text"],
        "input_changes": view["input_changes"],
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
    fields: dict[str, Any] = dict(view)
    meta.update({key: fields[key] for key in META_TEXT})
    spec = kind_spec(pause.kind)
    meta.update(spec.interrupt_meta(pause))
    return Interrupt(
        id=pause_interrupt_id(pause, thread_id),
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
    expected = pause_interrupt_id(pause, thread_id)
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
