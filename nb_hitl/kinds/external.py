"""Kind ``external``: an external tool (``ToolBase.is_external_tool``) is parked.

AgentScope parks the reply with ``RequireExternalExecutionEvent`` (call state
``submitted``); the person supplies the tool's output (``external_result``,
state ``success`` | ``error``) or an error (``return_error``). The answer is
a ``ToolResultBlock``; the deadline default and an AG-UI ``cancelled`` entry
are an ERROR result. AG-UI payload: ``{"output", "state"?}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentscope.message import ToolResultBlock, ToolResultState

from ..errors import DecisionError
from ..messages import MAX_TEXT
from ._base import Decision, PauseKindSpec, action_text, base_message, error_result, input_args
from ._schema import SCHEMA_DIALECT, validate_payload

if TYPE_CHECKING:
    from ag_ui.core import Interrupt

    from ..pauses import Pause

__all__ = ["ExternalKind", "EXTERNAL_ACTIONS"]

EXTERNAL_ACTIONS = frozenset({"answer", "external_result", "return_error"})
"""The actions of kinds ``external`` and ``ask_user``."""


class ExternalKind(PauseKindSpec):
    """external_result / return_error -> ``ToolResultBlock`` (see the module docstring)."""

    name = "external"
    actions = EXTERNAL_ACTIONS
    waits_for = "an external result"

    def _decide(self, pause: Pause, msg: Any) -> Decision:
        if msg.action == "answer":
            raise DecisionError("Only AskUser calls take answers; send the tool's output instead.", field="action")
        if msg.action == "external_result":
            return Decision(
                pause.tool_call_id,
                "external_result",
                tool_result=ToolResultBlock(
                    id=pause.tool_call_id,
                    name=pause.tool_name,
                    output=msg.output,
                    state=ToolResultState.SUCCESS if msg.state == "success" else ToolResultState.ERROR,
                ),
            )
        return self._return_error(pause, msg)

    def _return_error(self, pause: Pause, msg: Any) -> Decision:
        text = msg.message or f"The AskUser input is invalid and was not shown to the user:\n{pause.ask_user_error}"
        return Decision(pause.tool_call_id, "return_error", tool_result=error_result(pause, text))

    def response_schema(self, pause: Pause) -> dict[str, Any]:
        return {
            "$schema": SCHEMA_DIALECT,
            "type": "object",
            "title": f"Output of {pause.tool_name}",
            "properties": {
                "output": {
                    "type": "string",
                    "title": "Output",
                    "description": f"What {pause.tool_name} returned; the model reads this text.",
                    "maxLength": MAX_TEXT,
                },
                "state": {
                    "type": "string",
                    "enum": ["success", "error"],
                    "default": "success",
                    "title": "State",
                    "description": "success, or error when the tool failed.",
                },
            },
            "required": ["output"],
            "additionalProperties": False,
        }

    def interrupt_message(self, pause: Pause) -> str:
        return (
            f"{pause.tool_name} runs outside the agent: run {pause.tool_name}({input_args(pause)}) and give its output."
        )

    def resume_message(self, pause: Pause, payload: Any) -> dict[str, Any]:
        return {
            **base_message(pause),
            "action": "external_result",
            "output": payload["output"],
            "state": payload.get("state", "success"),
        }

    def answer_summary(
        self, payload: Any, message: Mapping[str, Any], view: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The tool's result as sent: ``{"action": "external_result", "state"}``."""
        state = payload.get("state", "success") if isinstance(payload, Mapping) else "success"
        return {"action": "external_result", "state": state}

    def entry_payload(self, interrupt: Interrupt, message: Mapping[str, Any], schema: dict[str, Any]) -> Any:
        action = message.get("action")
        if action != "external_result":
            raise DecisionError(
                f"This interrupt waits for the tool's output, not {action_text(action)}.", field="action"
            )
        payload = {"output": message.get("output"), "state": message.get("state", "success")}
        validate_payload(schema, payload)
        return payload
