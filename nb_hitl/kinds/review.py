"""Kind ``review``: a reviewed tool ran and its result waits for a person.

:class:`~nb_hitl.kinds.review_tool.ReviewedTool` parks the call as an
external tool and shapes the pause (``review_output``, ``review_state``,
``review_result`` or ``review_error``). The person accepts the result, edits
it or rejects it; the deadline default and an AG-UI ``cancelled`` entry
withhold it (``return_error``, "not reviewed"). AG-UI payload:
``{"action": "accept" | "edit" | "reject", "output"?, "reason"?}``,
``reason = "nb_hitl:review"``. Design notes: ``docs/design.md``, "Pause kinds".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentscope.message import ToolResultBlock, ToolResultState

from ..edit_preview import EditPreview, output_preview
from ..errors import DecisionError
from ..messages import MAX_SHORT, MAX_TEXT
from ._base import Decision, PauseKindSpec, action_text, base_message
from ._schema import REASON_REVIEW, SCHEMA_DIALECT, validate_payload

if TYPE_CHECKING:
    from ag_ui.core import Interrupt

    from ..pauses import Pause

__all__ = ["ReviewKind", "REVIEW_ACTIONS", "REVIEW_METADATA_KEY", "review_refusal"]

REVIEW_ACTIONS = frozenset({"accept", "edit", "reject", "return_error"})
"""Kind ``review``; ``return_error`` is the deadline default."""

REVIEW_METADATA_KEY = "nb_hitl.review"
"""Key nb_hitl adds to a reviewed result's ``metadata``: ``"accepted"``,
``"edited"``, ``"rejected"`` or ``"not_reviewed"``."""


def review_refusal(tool_name: str, reason: str | None = None) -> str:
    """The text the model reads when a person rejects a reviewed result.

    It says that the tool *did* run (so the model does not assume nothing
    happened) and that calling it again will not reveal the result.
    """
    why = f" Their reason: {reason.strip()}" if reason and reason.strip() else ""
    return (
        f'<system-reminder>The tool "{tool_name}" ran, but the user reviewed its result and '
        f"withheld it from you.{why} Do not call the tool again to get this result; continue "
        "without it or ask the user.</system-reminder>"
    )


UNCHANGED_REVIEW = "Your edit changes nothing: press Accept to give the model the result as shown, or change it first."
"""Why an edit equal to the result shown is refused: the card would say "Result edited" and the audit
log record an edit, while the model reads the raw result (as a confirm's Modify,
:func:`nb_hitl.edit_preview.refuse_unchanged_edit`, and a sampling card's edit)."""


def _unchanged(pause: Pause, output: str) -> bool:
    """Whether ``output`` is the result shown (a browser's ``\\r\\n`` read as ``\\n``). A result that
    already carries a review's mark (a replay shows the result the model read then, after its
    review) may be "edited" to itself: that gives the recorded edit again."""
    shown = pause.review_output
    marked = REVIEW_METADATA_KEY in ((pause.review_result or {}).get("metadata") or {})
    return shown is not None and not marked and output.replace("\r\n", "\n") == shown.replace("\r\n", "\n")


def _decide_review(pause: Pause, msg: Any) -> Decision:
    """accept / edit / reject / return_error for a ``review`` pause."""
    if msg.action in ("accept", "edit") and pause.review_result is None:
        raise DecisionError(
            "There is no result to review"
            + (f": {pause.review_error}" if pause.review_error else ".")
            + " Reject it instead.",
            field="action",
        )
    state = ToolResultState(pause.review_state or ToolResultState.SUCCESS.value)
    if msg.action == "accept":
        raw = ToolResultBlock.model_validate(pause.review_result)
        metadata = dict(raw.metadata or {})
        metadata[REVIEW_METADATA_KEY] = "accepted"
        result = ToolResultBlock(
            id=pause.tool_call_id, name=pause.tool_name, output=raw.output, state=raw.state, metadata=metadata
        )
        return Decision(pause.tool_call_id, "accept", tool_result=result)
    if msg.action == "edit":
        if msg.output is None:
            raise DecisionError("An edited result is sent as text (output).", field="output")
        if _unchanged(pause, msg.output):
            raise DecisionError(UNCHANGED_REVIEW, field="output")
        result = ToolResultBlock(
            id=pause.tool_call_id,
            name=pause.tool_name,
            output=msg.output,
            state=state,
            metadata={REVIEW_METADATA_KEY: "edited"},
        )
        return Decision(pause.tool_call_id, "edit", tool_result=result)
    if msg.action == "reject":
        result = ToolResultBlock(
            id=pause.tool_call_id,
            name=pause.tool_name,
            output=review_refusal(pause.tool_name, msg.reason),
            state=ToolResultState.DENIED,
            metadata={REVIEW_METADATA_KEY: "rejected"},
        )
        return Decision(pause.tool_call_id, "reject", tool_result=result)
    # return_error: the deadline default; the result stays unseen
    text = msg.message or f'The result of "{pause.tool_name}" was not reviewed, so it is withheld.'
    result = ToolResultBlock(
        id=pause.tool_call_id,
        name=pause.tool_name,
        output=text,
        state=ToolResultState.ERROR,
        metadata={REVIEW_METADATA_KEY: "not_reviewed"},
    )
    return Decision(pause.tool_call_id, "return_error", tool_result=result)


class ReviewKind(PauseKindSpec):
    """accept / edit / reject / return_error -> ``ToolResultBlock`` (see the module docstring)."""

    name = "review"
    actions = REVIEW_ACTIONS
    waits_for = "a review of its result (accept, edit or reject)"
    interrupt_reason = REASON_REVIEW

    async def preview(self, pause: Pause, message: Any, tool: Any = None) -> EditPreview:
        """See :meth:`PauseKindSpec.preview` (:func:`nb_hitl.edit_preview.output_preview`)."""
        return output_preview(pause, message)

    def _decide(self, pause: Pause, msg: Any) -> Decision:
        return _decide_review(pause, msg)

    def cancel_message(self, pause: Pause) -> dict[str, Any]:
        """``return_error`` with no text: decide's "not reviewed, so it is withheld"."""
        return {**base_message(pause), "action": "return_error"}

    def response_schema(self, pause: Pause) -> dict[str, Any]:
        if pause.review_error or pause.review_output is None:
            actions = ["reject"]
        else:
            actions = ["accept", "edit", "reject"]
        return {
            "$schema": SCHEMA_DIALECT,
            "type": "object",
            "title": f"Review the result of {pause.tool_name}",
            "properties": {
                "action": {
                    "type": "string",
                    "enum": actions,
                    "title": "Decision",
                    "description": "accept: the model reads the result as it is; edit: it reads `output` "
                    "instead; reject: it is told the result was withheld.",
                },
                "output": {"type": "string", "maxLength": MAX_TEXT, "title": "Edited result"},
                "reason": {"type": "string", "maxLength": MAX_SHORT, "title": "Reason (reject)"},
            },
            "required": ["action"],
            "additionalProperties": False,
            "if": {"properties": {"action": {"const": "edit"}}},
            "then": {"required": ["output"]},
        }

    def interrupt_message(self, pause: Pause) -> str:
        return f"{pause.tool_name} ran; its result waits for your review before the model reads it."

    def resume_message(self, pause: Pause, payload: Any) -> dict[str, Any]:
        base = base_message(pause)
        if payload["action"] == "edit":
            return {**base, "action": "edit", "output": payload["output"]}
        if payload["action"] == "reject":
            return {**base, "action": "reject", "reason": payload.get("reason")}
        return {**base, "action": "accept"}

    def view_fields(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        fields = {
            "message": meta.get("message"),
            "review_output": meta.get("review_output"),
            "review_state": meta.get("review_state"),
            "review_error": meta.get("review_error"),
        }
        if fields["review_output"] is None and not fields["review_error"]:
            fields["review_error"] = "The interrupt carries no result to review."
        return fields

    def entry_payload(self, interrupt: Interrupt, message: Mapping[str, Any], schema: dict[str, Any]) -> Any:
        action = message.get("action")
        if action == "accept":
            payload: dict[str, Any] = {"action": "accept"}
        elif action == "edit":
            payload = {"action": "edit", "output": message.get("output")}
        elif action == "reject":
            payload = {"action": "reject"}
            if isinstance(message.get("reason"), str) and message["reason"].strip():
                payload["reason"] = message["reason"]
        else:
            raise DecisionError(
                f"A review is answered with accept, edit or reject, not {action_text(action)}.", field="action"
            )
        validate_payload(schema, payload)
        return payload
