"""Interrupt -> widget view, page message -> ResumeEntry: the client side of the mapping (pure).

What :class:`~nb_hitl.agui.remote.RemoteSession` draws for each interrupt of
a paused run (:func:`interrupt_view`: nb_hitl's own views for interrupts
made by :func:`~nb_hitl.agui.mapping.pause_to_interrupt`, a form from
``response_schema`` for any other) and the ``ResumeEntry`` a page message
answers it with (:func:`message_to_entry`). What varies by pause kind is the
kind's (:mod:`nb_hitl.kinds`): ``meta_ok``, ``view_fields``,
``entry_payload``. Strings from the peer are only ever shown as text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ag_ui.core import Interrupt, ResumeEntry

from ..errors import DecisionError
from ..kinds import KINDS, kind_spec
from ..kinds._reading import visible_json, visible_text
from ..kinds._schema import META_KEY, META_VERSION, REASON_TOOL_CALL, validate_payload
from ..messages import parse_json_object
from .ids import parse_expires_at
from .resume_rules import cancel_payload

__all__ = ["OUR_KINDS", "our_kind", "effective_schema", "interrupt_view", "message_to_entry", "shown_arguments"]

OUR_KINDS = KINDS
"""The pause kinds :func:`~nb_hitl.agui.mapping.pause_to_interrupt` maps (``Pause.kind``)."""


def our_kind(interrupt: Interrupt) -> str | None:
    """The pause kind (one of :data:`OUR_KINDS`) when the interrupt's metadata
    says it was made by :func:`~nb_hitl.agui.mapping.pause_to_interrupt` (and is
    well formed enough to draw: the kind's ``meta_ok``), else ``None`` (draw it
    as a form). The metadata
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


def shown_arguments(text: str) -> str:
    """A tool call's arguments as streamed by another AG-UI server, as its card shows them.

    Args:
        text: the ``TOOL_CALL_ARGS`` deltas of the call, joined.

    Returns:
        once the text is one complete JSON object (read as a typed input is:
        :func:`~nb_hitl.messages.parse_json_object`, no key twice), that object as a
        local card shows an input (:func:`~nb_hitl.kinds._reading.visible_json`: one
        key a line); else the text as streamed (cut short, not an object, a key given
        twice), its invisible characters written as ``\\uXXXX`` as a local card does.
    """
    try:
        value = parse_json_object(text, field="arguments")
    except (DecisionError, RecursionError):
        return visible_text(text)
    return visible_json(value)


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
        tool_call_text: the tool call's arguments as streamed, if seen (shown
            by :func:`shown_arguments` when the metadata has no ``input_text``).
        tool_call_name: the tool's name as streamed, if seen.

    Returns:
        ``{"tool_call_id": key, "interrupt_id", "reply_id", "kind", "tool_name",
        "input_text", "input_schema", "permission_message", "decision_reason",
        "bypass_immune", "suggested_rules", "ask_user", "ask_user_error",
        "response_schema", "deadline", "policy", "status": "open", "decision":
        None, "reason": None, "title", "message", "review_output", "review_state",
        "review_error", "form_error", "elicitation_url", "sampling", "tool_hints",
        "parent_tool_call_id",
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
        "input_text": meta.get("input_text") or (shown_arguments(tool_call_text) if tool_call_text else ""),
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
        "sampling": None,
        "tool_hints": None,
        "approvals": meta.get("approvals", []),  # M-of-N (checked by agui.cards.view_problem)
        "approvals_needed": meta.get("approvals_needed", 1),
        "dry_run": False,  # a remote call: the AG-UI road offers no dry run
        # the call an MCP server asked during: the card goes in that call's transcript entry
        "parent_tool_call_id": meta.get("parent_tool_call_id"),
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
