"""Kind ``confirm``: the permission engine asked (``RequireUserConfirmEvent``).

The person approves (with chosen ``suggested_rules``), denies or edits the
input; the answer is AgentScope's ``ConfirmResult``. The deadline default
and an AG-UI ``cancelled`` entry are a denial. The AG-UI payload is AG-UI's
approve-with-edits shape ``{"approved", "editedArgs"?, "acceptedRules"?}``,
``reason = "tool_call"``, plus an optional ``reason`` with a denial. A person's reason
replaces AgentScope's "denied by user!" in the call's ``ToolResultBlock`` (the model reads
who denied it and why) and goes into the audit line. What Approve runs is AgentScope's own reading of the arguments
(:mod:`nb_hitl.kinds._reading`); ambiguous arguments refuse Approve. A
deadline or a cancelled entry denies, but the model is told nobody answered
/ the pause was cancelled, not that the user denied it.

What an approval of a file-editing call is bound to (``Decision.seen_file``,
checked by :mod:`nb_hitl.session._promise`) is the file the person was shown
for exactly the input that runs (:func:`modify_binding`): Approve binds the
card's diff. Modify binds the card's file too, unless the preview of exactly
the edited input (:mod:`nb_hitl.edit_preview`) showed another file (the edit
changed ``file_path``): then that file, as the preview read it, so a change
to it before the call runs runs nothing. A Modify whose input was never
previewed (sent from code, or before the preview came) binds the card's file
as before, and ``Decision.file_shown`` is ``None``: the audit line and the
card do not claim that a diff of the edited call was shown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentscope.event import ConfirmResult
from agentscope.permission import PermissionBehavior, PermissionRule

from .._agentscope import rule_label
from ..edit_preview import EditPreview, input_preview, model_input, refuse_unchanged_edit
from ..errors import DecisionError
from ..file_change import input_diff
from ..messages import MAX_SHORT, MAX_TEXT, parse_edited_input
from ._base import Decision, PauseKindSpec, action_text, approvals_so_far, base_message, input_args
from ._reading import InputReading, canonical, read_input, refuse_misread_edit, same_value, visible_json
from ._schema import META_KEY, REASON_TOOL_CALL, SCHEMA_DIALECT, embed_schema, validate_payload
from .confirm_view import confirm_answer_summary, confirm_view_fields

if TYPE_CHECKING:
    from ag_ui.core import Interrupt

    from ..pauses import Pause

__all__ = ["ConfirmKind", "CONFIRM_ACTIONS"]

CONFIRM_ACTIONS = frozenset({"approve", "deny", "modify"})
"""The page actions of a confirmation."""

CONFIRM_DECISIONS: tuple[str, ...] = ("approve", "deny", "modify", "always_allow", "always_deny")
"""The decisions a confirmation offers; ``Session(decisions={tool: [...]})`` narrows them per tool
(like LangGraph's ``allowed_decisions``). ``always_allow`` is Approve with suggested rules added as
allow rules, ``always_deny`` Deny with them added as deny rules."""


def allowed_decisions(spec: Mapping[str, Any] | None) -> dict[str, tuple[str, ...]]:
    """Check ``Session(decisions=...)``: ``{tool_name: [decision, ...]}``.

    Returns:
        ``{tool_name: decisions}`` in :data:`CONFIRM_DECISIONS` order.

    Raises:
        ValueError: not a mapping of tool names to lists, an unknown
            decision, or a list without ``deny`` (a call must always be
            refusable: deadlines and cancelled AG-UI entries deny).
    """
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise ValueError("decisions must map tool names to lists of decisions")
    out: dict[str, tuple[str, ...]] = {}
    for tool, names in spec.items():
        if not isinstance(tool, str) or isinstance(names, str) or not isinstance(names, (list, tuple, set, frozenset)):
            raise ValueError(f"decisions[{tool!r}] must be a list of decisions, e.g. ['approve', 'deny']")
        unknown = sorted(str(n) for n in names if n not in CONFIRM_DECISIONS)
        if unknown:
            raise ValueError(f"decisions[{tool!r}]: unknown {unknown}; choose from {list(CONFIRM_DECISIONS)}")
        if "deny" not in names:
            raise ValueError(f"decisions[{tool!r}] must include 'deny': every call can be refused")
        out[tool] = tuple(d for d in CONFIRM_DECISIONS if d in names)
    return out


def _check_allowed(pause: Pause, msg: Any) -> None:
    wanted = msg.action
    if msg.action == "approve" and msg.rules:
        wanted = "always_allow"
    elif msg.action == "deny" and getattr(msg, "deny_rules", None):
        wanted = "always_deny"
    if msg.action == "deny" and getattr(msg, "cause", "person") != "person":
        return  # a deadline or a cancelled entry always denies
    if wanted not in pause.decisions or (wanted == "always_allow" and "approve" not in pause.decisions):
        offered = ", ".join(d.replace("_", " ") for d in pause.decisions)
        raise DecisionError(
            f"{wanted.replace('_', ' ').capitalize()} is not offered for {pause.tool_name} in this session "
            f"(offered: {offered}).",
            field="action",
        )


EDITED_RULE_SOURCE = "nb_hitl: edited by the user"
"""``PermissionRule.source`` of a suggested rule the person edited before adding it."""


def _rules(pause: Pause, indices: list[int], edits: Any = ()) -> tuple[PermissionRule, ...]:
    """Copies of the chosen suggested rules, with the person's edits of their ``rule_content`` (C18).

    Raises:
        DecisionError: ``field="rules"``: no such rule, an edit of a rule not
            chosen, or an empty ``rule_content`` (``null`` is a whole-tool rule).
    """
    changed: dict[int, str | None] = {}
    for edit in edits:
        if edit.index not in indices:
            raise DecisionError(f"Rule {edit.index} is edited but not ticked.", field="rules")
        if edit.rule_content is not None and not edit.rule_content.strip():
            raise DecisionError(
                "An edited rule cannot be empty; leave it out, or use the whole-tool rule on purpose.", field="rules"
            )
        changed[edit.index] = edit.rule_content
    chosen = []
    for i in sorted(set(indices)):
        if i >= len(pause.suggested_rules):
            raise DecisionError(f"There is no suggested rule number {i}.", field="rules")
        rule = pause.suggested_rules[i].model_copy(deep=True)
        if i in changed:
            rule = rule.model_copy(update={"rule_content": changed[i], "source": EDITED_RULE_SOURCE})
        chosen.append(rule)
    return tuple(chosen)


def _edited_input(text: Any, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A remote card's edited input, parsed and checked against the tool's schema in ``schema``
    (the interrupt's ``response_schema``) as the server checks it. Raises DecisionError (``field="input..."``)."""
    if not isinstance(text, str):
        raise DecisionError("The modified input must be JSON text.", field="input")
    if len(text) > MAX_TEXT:
        raise DecisionError("The modified input is too long.", field="input")
    return parse_edited_input(text, _edited_schema(schema))


def _edited_schema(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """The tool's input schema inside a confirmation's ``response_schema``
    (its ``editedArgs``, with the ``$defs`` it refers to), so a remote card's
    edit is checked as the server checks it (:func:`~nb_hitl.messages.parse_edited_input`)
    before it is sent; ``None`` when the schema has no ``editedArgs``."""
    edited = (schema.get("properties") or {}).get("editedArgs")
    if not isinstance(edited, Mapping):
        return None
    out = {k: v for k, v in edited.items() if k not in ("title", "description")}
    for key in ("$schema", "$defs"):
        if key in schema:
            out[key] = schema[key]
    return out


def approved_reading(pause: Pause) -> InputReading:
    """The reading of the call's input an Approve runs (AgentScope's own).

    Raises:
        DecisionError: ``field="action"`` when the model's arguments are
            ambiguous or unreadable (deny or modify instead), or when
            AgentScope would not re-read its own reading the same way.
    """
    runs = pause.reading or read_input(pause.tool_call.input, pause.input_schema)
    if not runs.approvable or runs.executed is None:
        raise DecisionError(runs.refusal or "This input cannot be approved as it is.", field="action")
    if runs.changes:
        again = read_input(json.dumps(runs.executed, ensure_ascii=False), pause.input_schema)
        if again.executed is None or not same_value(again.executed, runs.executed):
            raise DecisionError(
                "AgentScope does not read the repaired input the same way twice; deny the call or modify its input.",
                field="action",
            )
    return runs


def model_sent(pause: Pause) -> Any:
    """The input the model itself sent for ``pause``'s call: for a call asked again after a
    person's Modify, the model's call (``pause.model_sent``), not the edit its card shows; else
    AgentScope's reading of the call's input, or the raw input."""
    if pause.model_sent is not None:
        return pause.model_sent
    return pause.input if pause.input is not None else pause.tool_call.input


def modify_note(pause: Pause, edited: dict[str, Any]) -> str:
    """What the model reads after an edited call's result: a person changed the call, from what
    (the model's own input, :func:`model_sent`) to what. It says the call was made with the edit,
    not that the tool ran: a replay's recorded tool may answer that nothing ran for that input."""
    sent = model_sent(pause)
    return (
        f"A person edited your tool call. You asked for {pause.tool_name}({visible_json(sent, None)}); "
        f"the person changed it to {pause.tool_name}({visible_json(edited, None)}), and the call was made "
        "with that input: its result is for the edited input."
    )


DENY_TEXT = {
    "timeout": (
        "The call to {tool} did not run: nobody answered the confirmation before the deadline. "
        "The user did not deny it; you may ask again later or do something else."
    ),
    "cancelled": (
        "The call to {tool} did not run: the confirmation was cancelled without an answer "
        "(AG-UI resume status 'cancelled'). The user did not deny it."
    ),
}
"""What the model reads instead of AgentScope's "denied by user!" when no person denied the call."""


def _deny(pause: Pause, call: Any, msg: Any) -> Decision:
    cause = getattr(msg, "cause", "person")
    reason = (getattr(msg, "reason", None) or "").strip() or None
    result = ConfirmResult(confirmed=False, tool_call=call)
    if cause in DENY_TEXT:
        note = DENY_TEXT[cause].format(tool=pause.tool_name)
        so_far = approvals_so_far(pause)  # approved by some, not all: not "nobody answered"
        if so_far is not None:
            when = "when the deadline passed" if cause == "timeout" else "when the confirmation was cancelled"
            note = (
                f"The call to {pause.tool_name} did not run: {so_far} {when}. Nobody denied it; "
                "you may ask again later or do something else."
            )
        return Decision(pause.tool_call_id, "deny", confirm_result=result, note=note, note_replaces=True, cause=cause)
    told = f"The user denied your call to {pause.tool_name}, saying: {reason}" if reason else None
    deny_rules = tuple(
        r.model_copy(update={"behavior": PermissionBehavior.DENY}) for r in _rules(pause, list(msg.deny_rules))
    )
    # a reason: the result says who denied and why (AgentScope's "denied by user!" too); else AgentScope's text
    return Decision(
        pause.tool_call_id,
        "deny",
        confirm_result=result,
        note=told,
        note_replaces=told is not None,
        deny_rules=deny_rules,
        reason=reason,
    )


def seen_file(pause: Pause) -> dict[str, Any] | None:
    """``{"path", "sha256"}`` of the file the card's diff was computed on, or ``None`` (no diff shown)."""
    change = pause.file_change
    if change is None:
        return None
    return {"path": change["path"], "sha256": change["sha256_before"]}


def modify_binding(pause: Pause, edited: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """What a Modify of ``pause`` with ``edited`` is bound to, and the file it was shown.

    Returns:
        ``(seen_file, file_shown)``: ``seen_file`` the ``{"path", "sha256"}``
        the approval guard checks (the preview's file when the last preview,
        ``pause.previewed_file``, was of exactly ``edited`` and showed another
        path than the card's; else the card's, :func:`seen_file`);
        ``file_shown`` the path whose change was shown for exactly
        ``edited`` (that preview's), or ``None`` (no preview of it, or it
        changes no file).
    """
    kept = pause.previewed_file
    if kept is None or kept[0] != canonical(edited) or kept[1] is None:
        return seen_file(pause), None
    shown = kept[1]
    card = pause.file_change
    if card is not None and card["path"] == shown["path"]:
        return seen_file(pause), shown["path"]  # the card's file: bound as an Approve is
    return {"path": shown["path"], "sha256": shown["sha256_before"]}, shown["path"]


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
    cancelled_what = "confirmation"
    confirms = True

    async def preview(self, pause: Pause, message: Any, tool: Any = None) -> EditPreview:
        """See :meth:`PauseKindSpec.preview` (:func:`nb_hitl.edit_preview.input_preview`)."""
        return await input_preview(pause, message, tool)

    def _decide(self, pause: Pause, msg: Any) -> Decision:
        _check_allowed(pause, msg)
        call = pause.tool_call.model_copy(deep=True)
        if msg.action == "approve":
            runs = approved_reading(pause)
            if runs.changes:
                # bind the approval to the reading shown (AgentScope re-reads this text right before the call)
                call.input = json.dumps(runs.executed, ensure_ascii=False)
            rules = _rules(pause, msg.rules, msg.rule_edits)
            return Decision(
                pause.tool_call_id,
                "approve",
                confirm_result=ConfirmResult(confirmed=True, tool_call=call, rules=list(rules) or None),
                accepted_rules=rules,
                approved_input=runs.executed,
                seen_file=seen_file(pause),
                file_shown=pause.file_change["path"] if pause.file_change is not None else None,
            )
        if msg.action == "deny":
            return _deny(pause, call, msg)
        if msg.name is not None and msg.name != pause.tool_name:
            raise DecisionError(
                f"The tool name cannot be changed (from {pause.tool_name!r} to {msg.name[:80]!r}): "
                "an edited name would run another tool without a permission check.",
                field="name",
            )
        edited = refuse_unchanged_edit(pause, parse_edited_input(msg.input, pause.input_schema))
        rules = _rules(pause, msg.rules)
        call.input = refuse_misread_edit(edited, pause.input_schema)
        bound, shown = modify_binding(pause, edited)
        return Decision(
            pause.tool_call_id,
            "modify",
            confirm_result=ConfirmResult(confirmed=True, tool_call=call, rules=list(rules) or None),
            edited_input=edited,
            accepted_rules=rules,
            approved_input=edited,
            note=modify_note(pause, edited),
            seen_file=bound,
            file_shown=shown,
            input_diff=input_diff(model_input(pause), edited),
            sent_input=model_sent(pause),
        )

    def timeout_message(self, pause: Pause) -> dict[str, Any]:
        """The call does not run (no yes): AgentScope's denial, but the model
        is told nobody answered before the deadline, not that the user denied it."""
        return {"action": "deny", "tool_call_id": pause.tool_call_id, "cause": "timeout"}

    def cancel_message(self, pause: Pause) -> dict[str, Any]:
        """The call does not run: AgentScope's denial path, but the model is
        told the pause was cancelled without an answer, not that the user denied it."""
        return {**base_message(pause), "action": "deny", "cause": "cancelled"}

    def response_schema(self, pause: Pause) -> dict[str, Any]:
        defs: dict[str, Any] = {}
        edited = embed_schema(pause.input_schema, defs)
        edited = {
            **edited,
            "title": "Modified input",
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
            "reason": {
                "type": "string",
                "maxLength": MAX_SHORT,
                "title": "Reason",
                "description": "Only with approved = false: why the call is denied. The agent reads it in the "
                "call's result and the audit log records it.",
            },
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
        """``approved`` -> approve / modify (with ``editedArgs``); ``false`` -> deny
        (with its ``reason``, if any).

        Raises:
            DecisionError: ``editedArgs`` or ``acceptedRules`` with ``approved: false``;
                ``reason`` with ``approved: true``.
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
            reason = (payload.get("reason") or "").strip()
            return {**base, "action": "deny", **({"reason": reason} if reason else {})}
        if "reason" in payload:
            raise DecisionError("reason only goes with approved: false (a denial).", field="reason")
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
        return confirm_view_fields(meta)

    def answer_summary(
        self, payload: Any, message: Mapping[str, Any], view: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        return confirm_answer_summary(payload, message, view or {})

    def entry_payload(self, interrupt: Interrupt, message: Mapping[str, Any], schema: dict[str, Any]) -> Any:
        action = message.get("action")
        if action == "approve":
            payload: dict[str, Any] = {"approved": True}
            rules = _rules_of(message)
            if rules:
                payload["acceptedRules"] = rules
        elif action == "deny":
            payload = {"approved": False}
            reason = message.get("reason")
            if isinstance(reason, str) and reason.strip():
                if "reason" not in schema.get("properties", {}):
                    raise DecisionError(
                        "This agent does not take a reason with a denial; deny without one.", field="reason"
                    )
                payload["reason"] = reason.strip()
        elif action == "modify":
            edited = _edited_input(message.get("input"), schema)
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
