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
from ._reading import same_by_value
from ._schema import REASON_INPUT_REQUIRED, SCHEMA_DIALECT, validate_payload

if TYPE_CHECKING:
    from ag_ui.core import Interrupt

    from ..pauses import Pause

__all__ = [
    "SamplingKind",
    "SAMPLING_ACTIONS",
    "SAMPLING_STAGES",
    "edited_messages",
    "denial_text",
    "sampling_problem",
]

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


UNCHANGED_EDIT = {
    "messages": "Your edit changes nothing: press Approve to call the model with the request as shown, "
    "or change a message first.",
    "output": "Your edit changes nothing: press Approve to send the completion as shown, or change it first.",
}
"""Why an edit equal to what Approve sends is refused, by the field edited: the audit log would
record an edit and the card would say "Edited" when nothing was (as a confirm's Modify,
:func:`nb_hitl.edit_preview.refuse_unchanged_edit`)."""


def _refuse_unchanged(edited: Any, shown: Any, field: str) -> None:
    if same_by_value(edited, shown):
        raise DecisionError(UNCHANGED_EDIT[field], field=field)


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def sampling_problem(value: Any) -> str | None:
    """Why a peer's ``sampling`` (an interrupt's ``metadata.nb_hitl.sampling``, the shape of
    ``Pause.sampling``) cannot be drawn, or ``None``: every part must be of the type the card
    reads (``stage`` one of :data:`SAMPLING_STAGES`, ``messages`` ``[{"role", "text"}]`` of
    text, text or ``None`` for the prompt, the completion, the model and the notes, numbers
    or ``None`` for the limits, lists of text for hints and stop sequences)."""
    if not isinstance(value, Mapping):
        return "sampling is not an object"
    messages = value.get("messages")
    if value.get("stage") not in SAMPLING_STAGES:
        return "sampling.stage is neither 'request' nor 'completion'"
    if not isinstance(messages, list) or not all(
        isinstance(m, Mapping) and isinstance(m.get("role"), str) and isinstance(m.get("text"), str) for m in messages
    ):
        return "sampling.messages is not a list of {role, text} texts"
    for key in ("system_prompt", "include_context", "completion", "model", "settings_note", "error"):
        if value.get(key) is not None and not isinstance(value[key], str):
            return f"sampling.{key} is not text"
    for key in ("max_tokens", "temperature"):
        number = value.get(key)
        if number is not None and (isinstance(number, bool) or not isinstance(number, int | float)):
            return f"sampling.{key} is not a number"
    if not _texts(value.get("model_hints", [])) or not _texts(value.get("stop_sequences", [])):
        return "sampling.model_hints and sampling.stop_sequences are lists of text"
    priorities = value.get("priorities", {})
    if not isinstance(priorities, Mapping) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in priorities.values()
    ):
        return "sampling.priorities is not an object of numbers"
    return None


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
            messages = edited_messages(pause, msg.messages)
            shown = [m.get("text") for m in pause.sampling.get("messages") or []]
            _refuse_unchanged([m["text"] for m in messages], shown, "messages")
            return Decision(pause.tool_call_id, "edit", content={"messages": messages})
        if msg.messages is not None or msg.output is None:
            raise DecisionError("An edited completion is sent as text (output).", field="output")
        if len(msg.output) > MAX_TEXT:
            raise DecisionError(f"The edited completion is too long (at most {MAX_TEXT} characters).", field="output")
        _refuse_unchanged(msg.output, pause.sampling.get("completion"), "output")
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

    def interrupt_meta(self, pause: Pause) -> dict[str, Any]:
        return {"sampling": pause.sampling}

    def meta_ok(self, meta: Mapping[str, Any]) -> bool:
        """A request drawn only when it is whole (:func:`sampling_problem`); one the server
        could not show carries its reason (``form_error``) and no request."""
        if meta.get("sampling") is None:
            return isinstance(meta.get("form_error"), str)
        return sampling_problem(meta["sampling"]) is None

    def view_fields(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        return {"message": meta.get("message"), "form_error": meta.get("form_error"), "sampling": meta.get("sampling")}

    def answer_summary(
        self, payload: Any, message: Mapping[str, Any], view: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """As the local card's decision: the action, an edit's ``content``, a denial's reason."""
        out: dict[str, Any] = {"action": payload["action"]}
        if "messages" in payload:
            out["content"] = {"messages": payload["messages"]}
        if "output" in payload:
            out["content"] = {"text": payload["output"]}
        if payload.get("reason"):
            out["reason"] = payload["reason"]
        return out

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
