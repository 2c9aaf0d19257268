"""Kind ``confirm``: the permission engine asked (``RequireUserConfirmEvent``).

The person approves (with chosen ``suggested_rules``), denies or edits the
input; the answer is AgentScope's ``ConfirmResult``. The deadline default
and an AG-UI ``cancelled`` entry are a denial. The AG-UI payload is AG-UI's
approve-with-edits shape ``{"approved", "editedArgs"?, "acceptedRules"?}``,
``reason = "tool_call"``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentscope.event import ConfirmResult
from agentscope.permission import PermissionRule

from .._agentscope import rule_label
from ..errors import DecisionError
from ..messages import MAX_TEXT, parse_edited_input, parse_json_object
from ._base import Decision, PauseKindSpec, action_text, base_message, input_args
from ._schema import META_KEY, REASON_TOOL_CALL, SCHEMA_DIALECT, embed_schema, validate_payload

if TYPE_CHECKING:
    from ag_ui.core import Interrupt

    from ..pauses import Pause

__all__ = ["ConfirmKind", "CONFIRM_ACTIONS"]

CONFIRM_ACTIONS = frozenset({"approve", "deny", "modify"})


def _rules(pause: Pause, indices: list[int]) -> tuple[PermissionRule, ...]:
    chosen = []
    for i in sorted(set(indices)):
        if i >= len(pause.suggested_rules):
            raise DecisionError(f"There is no suggested rule number {i}.", field="rules")
        chosen.append(pause.suggested_rules[i].model_copy(deep=True))
    return tuple(chosen)


def _parse_json_text(text: Any, field: str) -> dict[str, Any]:
    if not isinstance(text, str):
        raise DecisionError("The edited input must be JSON text.", field=field)
    if len(text) > MAX_TEXT:
        raise DecisionError("The edited input is too long.", field=field)
    return parse_json_object(text, field=field)


def _rules_of(message: Mapping[str, Any]) -> list[int]:
    rules = message.get("rules") or []
    if not isinstance(rules, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in rules):
        raise DecisionError("rules must be a list of rule indices.", field="rules")
    return sorted(set(rules))


class ConfirmKind(PauseKindSpec):
    """approve / deny / modify -> ``ConfirmResult`` (see the module docstring)."""

    name = "confirm"
    actions = CONFIRM_ACTIONS
    waits_for = "a confirmation (approve, deny or modify)"
    interrupt_reason = REASON_TOOL_CALL
    timeout_applied = "denied"

    def _decide(self, pause: Pause, msg: Any) -> Decision:
        call = pause.tool_call.model_copy(deep=True)
        if msg.action == "approve":
            rules = _rules(pause, msg.rules)
            return Decision(
                pause.tool_call_id,
                "approve",
                confirm_result=ConfirmResult(confirmed=True, tool_call=call, rules=list(rules) or None),
                accepted_rules=rules,
            )
        if msg.action == "deny":
            return Decision(pause.tool_call_id, "deny", confirm_result=ConfirmResult(confirmed=False, tool_call=call))
        if msg.name is not None and msg.name != pause.tool_name:
            raise DecisionError(
                f"The tool name cannot be changed (from {pause.tool_name!r} to {msg.name[:80]!r}): "
                "an edited name would run another tool without a permission check.",
                field="name",
            )
        edited = parse_edited_input(msg.input, pause.input_schema)
        rules = _rules(pause, msg.rules)
        call.input = json.dumps(edited, ensure_ascii=False)
        return Decision(
            pause.tool_call_id,
            "modify",
            confirm_result=ConfirmResult(confirmed=True, tool_call=call, rules=list(rules) or None),
            edited_input=edited,
            accepted_rules=rules,
        )

    def timeout_message(self, pause: Pause) -> dict[str, Any]:
        """A denial: the call must not run without a yes."""
        return {"action": "deny", "tool_call_id": pause.tool_call_id}

    def cancel_message(self, pause: Pause) -> dict[str, Any]:
        """A denial: AgentScope gives the model a fixed reminder for it, and the reply continues."""
        return {**base_message(pause), "action": "deny"}

    def response_schema(self, pause: Pause) -> dict[str, Any]:
        defs: dict[str, Any] = {}
        edited = embed_schema(pause.input_schema, defs)
        edited = {
            **edited,
            "title": "Edited input",
            "description": (
                f"A full replacement of {pause.tool_name}'s input (not merged). It is checked against "
                "the tool's input schema and the agent's permission rules again before it runs."
            ),
        }
        props: dict[str, Any] = {
            "approved": {
                "type": "boolean",
                "title": "Approve",
                "description": f"true runs {pause.tool_name} (with editedArgs when given); false denies it.",
            },
            "editedArgs": edited,
        }
        if pause.suggested_rules:
            labels = "; ".join(f"{i}: {rule_label(r)}" for i, r in enumerate(pause.suggested_rules))
            props["acceptedRules"] = {
                "type": "array",
                "title": "Always allow",
                "description": f"Indices of AgentScope's suggested rules to add as allow rules ({labels}). "
                "Only with approved = true.",
                "items": {"type": "integer", "minimum": 0, "maximum": len(pause.suggested_rules) - 1},
                "uniqueItems": True,
            }
        schema: dict[str, Any] = {
            "$schema": SCHEMA_DIALECT,
            "type": "object",
            "title": f"Run {pause.tool_name}?",
            "properties": props,
            "required": ["approved"],
            "additionalProperties": False,
        }
        if defs:
            schema["$defs"] = defs
        return schema

    def interrupt_message(self, pause: Pause) -> str:
        head = pause.permission_message or f"Permission required for {pause.tool_name}"
        why = f" ({pause.decision_reason})" if pause.decision_reason else ""
        return f"{head}{why}: run {pause.tool_name}({input_args(pause)})?"

    def resume_message(self, pause: Pause, payload: Any) -> dict[str, Any]:
        """``approved`` -> approve / modify (with ``editedArgs``); ``false`` -> deny.

        Raises:
            DecisionError: ``editedArgs`` or ``acceptedRules`` with ``approved: false``.
        """
        base = base_message(pause)
        rules = list(payload.get("acceptedRules") or [])
        if not payload["approved"]:
            if "editedArgs" in payload or rules:
                raise DecisionError(
                    "editedArgs and acceptedRules only go with approved: true; a denial runs nothing "
                    "and AgentScope ignores rules sent with a denial.",
                    field="approved",
                )
            return {**base, "action": "deny"}
        if "editedArgs" in payload:
            return {
                **base,
                "action": "modify",
                "input": json.dumps(payload["editedArgs"], ensure_ascii=False),
                "rules": rules,
            }
        return {**base, "action": "approve", "rules": rules}

    def meta_ok(self, meta: Mapping[str, Any]) -> bool:
        return isinstance(meta.get("suggested_rules", []), list)

    def view_fields(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "suggested_rules": [
                {"index": int(r.get("index", i)), "label": str(r.get("label", ""))}
                for i, r in enumerate(meta.get("suggested_rules") or [])
                if isinstance(r, dict)
            ]
        }

    def entry_payload(self, interrupt: Interrupt, message: Mapping[str, Any], schema: dict[str, Any]) -> Any:
        action = message.get("action")
        if action == "approve":
            payload: dict[str, Any] = {"approved": True}
            rules = _rules_of(message)
            if rules:
                payload["acceptedRules"] = rules
        elif action == "deny":
            payload = {"approved": False}
        elif action == "modify":
            edited = _parse_json_text(message.get("input"), "input")
            name = message.get("name")
            meta_name = (interrupt.metadata or {}).get(META_KEY, {}).get("tool_name")
            if name is not None and name != meta_name:
                raise DecisionError(
                    "The tool name cannot be changed: an edited name would run another tool "
                    "without a permission check.",
                    field="name",
                )
            payload = {"approved": True, "editedArgs": edited}
            rules = _rules_of(message)
            if rules:
                payload["acceptedRules"] = rules
        else:
            raise DecisionError(
                f"This interrupt waits for a confirmation (approve, deny or modify), not {action_text(action)}.",
                field="action",
            )
        try:
            validate_payload(schema, payload)
        except DecisionError as exc:
            if exc.field and exc.field.startswith("editedArgs"):
                raise DecisionError(
                    str(exc).replace("at $.editedArgs", "at the input"), field="input" + exc.field[len("editedArgs") :]
                ) from None
            raise
        return payload
