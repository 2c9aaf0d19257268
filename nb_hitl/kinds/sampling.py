"""Kind ``sampling``: an MCP server asks the notebook's model for a completion while its tool runs.

An MCP server handling a ``tools/call`` may ask the client's model for a
completion (MCP "sampling", ``sampling/createMessage``: messages, a system
prompt, model preferences, a token limit). :mod:`nb_hitl.mcp` turns the
request into two pauses of this kind under the running tool call, one after
the other (``Pause.sampling["stage"]``):

* ``"request"``: the server's request, shown as text, before the
  notebook's model is called. ``approve`` calls the model with it, ``edit``
  with the person's own text of each message (``messages``: one string per
  message, in order; roles stay the server's), ``deny`` calls nothing.
* ``"completion"``: what the model answered, before it goes back to the
  server. ``approve`` sends it, ``edit`` sends the person's text
  (``output``), ``deny`` sends nothing.

A denial (the person's, the deadline's, an AG-UI ``cancelled`` entry) is an
MCP error to the server (never an invented completion); what the model
reads is the tool's result, which says the call failed. A request that
cannot be shown whole (a message that is not text) leaves only ``deny``
(``Pause.form_error`` says why). The edited messages or completion are the
decision's ``content`` (``{"messages": [{"role", "text"}]}`` or
``{"text": ...}``), recorded in the audit line. AG-UI payload:
``{"action": "approve" | "edit" | "deny", "messages"?, "output"?, "reason"?}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import DecisionError
from ..messages import MAX_SHORT, MAX_TEXT
from ._base import Decision, PauseKindSpec, action_text, base_message
from ._schema import REASON_INPUT_REQUIRED, SCHEMA_DIALECT, validate_payload

if TYPE_CHECKING:
    from ag_ui.core import Interrupt

    from ..pauses import Pause

__all__ = ["SamplingKind", "SAMPLING_ACTIONS", "SAMPLING_STAGES", "edited_messages", "denial_text"]

SAMPLING_ACTIONS = frozenset({"approve", "edit", "deny"})
"""The answers to either stage of a sampling request."""

SAMPLING_STAGES = ("request", "completion")
"""``Pause.sampling["stage"]``: before the model is called, before its answer goes back."""


def stage_of(pause: Pause) -> str:
    """``"request"`` or ``"completion"`` (a pause without its request reads as ``"request"``)."""
    stage = (pause.sampling or {}).get("stage")
    return stage if stage in SAMPLING_STAGES else "request"


def denial_text(stage: str, cause: str = "person", reason: str | None = None) -> str:
    """What the MCP server (and, through the tool's result, the model) is told of a denial.

    Args:
        stage: ``"request"`` (the model was not called) or ``"completion"``
            (the model answered, its answer was withheld).
        cause: ``"person"``, ``"timeout"`` or ``"cancelled"``.
        reason: the person's own words, if any.
    """
    who = {
        "timeout": "Nobody answered before the deadline",
        "cancelled": "The person cancelled without an answer",
    }.get(cause, "The person denied it")
    what = (
        "the notebook's model was not called"
        if stage == "request"
        else "the notebook's model answered, but its completion was withheld"
    )
    why = f" Their reason: {reason.strip()}" if reason and reason.strip() else ""
    return f"Sampling request refused: {who}; {what}.{why}"


def edited_messages(pause: Pause, texts: Any) -> list[dict[str, str]]:
    """The request's messages with the person's texts (one per message, in order; roles kept).

    Raises:
        DecisionError: not a list of strings of the request's length, too
            long, or every message empty (``field="messages"``).
    """
    shown = (pause.sampling or {}).get("messages") or []
    if not isinstance(texts, list) or len(texts) != len(shown) or not all(isinstance(t, str) for t in texts):
        raise DecisionError(
            f"An edited request gives the text of each of its {len(shown)} messages, in order.", field="messages"
        )
    if sum(len(t) for t in texts) > MAX_TEXT:
        raise DecisionError(f"The edited messages are too long (at most {MAX_TEXT} characters).", field="messages")
    if not any(t.strip() for t in texts):
        raise DecisionError("Every edited message is empty: there is nothing to ask the model.", field="messages")
    return [{"role": str(m.get("role", "user")), "text": t} for m, t in zip(shown, texts, strict=True)]


class SamplingKind(PauseKindSpec):
    """approve / edit / deny, twice (see the module docstring)."""

    name = "sampling"
    actions = SAMPLING_ACTIONS
    waits_for = "a review of the MCP server's sampling request (approve, edit or deny)"
    interrupt_reason = REASON_INPUT_REQUIRED
    timeout_applied = "an error sent to the MCP server (no completion)"
    cancelled_what = "MCP sampling request"

    def _decide(self, pause: Pause, msg: Any) -> Decision:
        stage = stage_of(pause)
        if msg.action == "deny":
            if msg.deny_rules:
                raise DecisionError("A sampling request has no rules to deny.", field="deny_rules")
            return Decision(pause.tool_call_id, "deny", cause=msg.cause, reason=msg.reason)
        if pause.form_error is not None or pause.sampling is None:
            raise DecisionError(
                f"This request cannot be sent: {pause.form_error or 'it carries no request.'} Deny it instead.",
                field="action",
            )
        if msg.action == "approve":
            return Decision(pause.tool_call_id, "approve")
        if stage == "request":
            if msg.output is not None:
                raise DecisionError("Edit the request's messages (messages), not an output.", field="output")
            return Decision(pause.tool_call_id, "edit", content={"messages": edited_messages(pause, msg.messages)})
        if msg.messages is not None or msg.output is None:
            raise DecisionError("An edited completion is sent as text (output).", field="output")
        if len(msg.output) > MAX_TEXT:
            raise DecisionError(f"The edited completion is too long (at most {MAX_TEXT} characters).", field="output")
        return Decision(pause.tool_call_id, "edit", content={"text": msg.output})

    def timeout_message(self, pause: Pause) -> dict[str, Any]:
        return {**base_message(pause), "action": "deny", "cause": "timeout"}

    def cancel_message(self, pause: Pause) -> dict[str, Any]:
        return {**base_message(pause), "action": "deny", "cause": "cancelled"}

    # -- AG-UI ------------------------------------------------------------
    def response_schema(self, pause: Pause) -> dict[str, Any]:
        answerable = pause.form_error is None and pause.sampling is not None
        edit: dict[str, Any] = (
            {"type": "array", "items": {"type": "string"}, "title": "The text of each message, in order"}
            if stage_of(pause) == "request"
            else {"type": "string", "maxLength": MAX_TEXT, "title": "The completion sent instead"}
        )
        field = "messages" if stage_of(pause) == "request" else "output"
        return {
            "$schema": SCHEMA_DIALECT,
            "type": "object",
            "title": f"Review of {pause.title or 'an MCP sampling request'}",
            "properties": {
                "action": {"enum": ["approve", "edit", "deny"] if answerable else ["deny"]},
                field: edit,
                "reason": {"type": "string", "maxLength": MAX_SHORT, "title": "Reason (deny)"},
            },
            "required": ["action"],
            "additionalProperties": False,
            "if": {"properties": {"action": {"const": "edit"}}},
            "then": {"required": ["action", field]},
        }

    def interrupt_message(self, pause: Pause) -> str:
        if stage_of(pause) == "completion":
            return "The notebook's model answered an MCP server's sampling request; review it before it is sent."
        return "An MCP server asks the notebook's model for a completion; review the request first."

    def resume_message(self, pause: Pause, payload: Any) -> dict[str, Any]:
        out = {**base_message(pause), "action": payload["action"]}
        for key in ("messages", "output", "reason"):
            if key in payload:
                out[key] = payload[key]
        return out

    def view_fields(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        return {"message": meta.get("message"), "form_error": meta.get("form_error"), "sampling": meta.get("sampling")}

    def entry_payload(self, interrupt: Interrupt, message: Mapping[str, Any], schema: dict[str, Any]) -> Any:
        action = message.get("action")
        if action not in SAMPLING_ACTIONS:
            raise DecisionError(
                f"A sampling request is answered with approve, edit or deny, not {action_text(action)}.",
                field="action",
            )
        payload: dict[str, Any] = {"action": action}
        for key in ("messages", "output", "reason"):
            if message.get(key) is not None:
                payload[key] = message[key]
        validate_payload(schema, payload)
        return payload
