"""Page message -> AgentScope object, or a readable refusal.

:func:`decide` takes a page message (``{"action": ..., ...}``) and the
:class:`~nb_hitl.pauses.Pause` it answers and returns a :class:`Decision`
holding AgentScope's own ``ConfirmResult`` or ``ToolResultBlock``, or raises
:class:`~nb_hitl.errors.DecisionError` with the field at fault. The message
shape is checked by :mod:`nb_hitl.messages`; what each action means is the
pause kind's business (:mod:`nb_hitl.kinds`; the table of actions is in
``docs/design.md``, "Pause kinds"). The two checks that need the agent
(:func:`recheck_permission`, :func:`check_external_result`) take the engine
or the tool as arguments.
"""

from __future__ import annotations

from typing import Any

from agentscope.message import ToolResultBlock
from agentscope.permission import PermissionBehavior, PermissionDecision, PermissionRule
from agentscope.tool import ToolBase

from ._agentscope import rule_label
from .errors import DecisionError
from .kinds import Decision, kind_spec
from .kinds.confirm import EDITED_RULE_SOURCE
from .messages import MAX_SHORT, MAX_TEXT, parse_edited_input, parse_json_object, parse_message
from .pauses import Pause
from .permissions.shell import parse_command
from .permissions.shell_check import decide_as_session, shell_field

__all__ = [
    "Decision",
    "decide",
    "recheck_permission",
    "check_rules_match",
    "check_external_result",
    # kept here for code written against them; their home is nb_hitl.messages
    "parse_message",
    "parse_edited_input",
    "parse_json_object",
    "MAX_TEXT",
    "MAX_SHORT",
]


def decide(pause: Pause, message: Any) -> Decision:
    """Turn one page message into a :class:`Decision` for ``pause``.

    Args:
        pause: the open pause the message answers.
        message: the raw page message (a dict).

    Returns:
        Decision: with a ``ConfirmResult`` (approve / deny / modify) or a
        ``ToolResultBlock`` (answer / external_result / return_error; accept
        / edit / reject on a ``review`` pause; submit on a ``form`` pause).

    Raises:
        DecisionError: the message's shape is wrong, it names another tool
            call, its action does not fit the pause's kind (e.g. an external
            result for a call waiting for confirmation, case C06), or the
            kind's own checks refuse it: the edited input is not JSON, breaks
            the tool's schema or renames the tool (C05); an AskUser answer
            does not fit its questions; a review has no result to accept; a
            form's value breaks its ``response_schema`` (``field`` =
            ``value.<name>``) or the form's schema is invalid.
    """
    msg = parse_message(message)
    if msg.tool_call_id != pause.tool_call_id:
        raise DecisionError(
            f"This message is for tool call {msg.tool_call_id[:80]!r}, not {pause.tool_call_id!r}.",
            field="tool_call_id",
        )
    return kind_spec(pause.kind).decide(pause, msg)


async def recheck_permission(engine: Any, tool: ToolBase, edited: dict[str, Any]) -> PermissionDecision:
    """Check an edited input against the agent's permission engine again.

    AgentScope 2.0.11 runs an edited, approved call without a new check
    (``Agent._handle_incoming_event`` only copies name and input), so a deny
    rule could be bypassed by an edit. This closes that hole. A shell
    command is judged one simple command at a time
    (:func:`nb_hitl.permissions.shell_check.judge_shell_call`), so an edit
    to ``sudo rm -rf x`` is refused by ``deny Bash(rm:*)`` as the call would be.

    Args:
        engine: an ``agentscope.permission.PermissionEngine`` over the agent's
            live ``PermissionContext``.
        tool: the tool being called.
        edited: the edited input.

    Returns:
        the engine's decision (ALLOW or ASK: the person is approving it now).

    Raises:
        DecisionError: ``field="input"``, when the engine denies the edited
            input; the message names the deny rule as ``deny tool(content)``
            with its source (or the engine's ``decision_reason`` when the
            deny came from elsewhere, e.g. the tool's own check or the mode).
    """
    decision, verdict = await decide_as_session(engine, tool, edited)  # a shell command: each simple command
    if verdict is not None:
        decision = verdict.decision
    if decision.behavior == PermissionBehavior.DENY:
        rule = _deny_rule(engine, tool, decision)
        if rule is not None:
            why = f" (rule: {rule_label(rule)}, from {rule.source})" if rule.source else f" (rule: {rule_label(rule)})"
        else:
            why = f" ({decision.decision_reason})" if decision.decision_reason else ""
        raise DecisionError(
            f"The modified input is refused by the permission engine: {decision.message}{why}.",
            field="input",
        )
    return decision


async def check_rules_match(tool: ToolBase, rules: Any, tool_input: dict[str, Any] | None) -> None:
    """Check that every rule the person *edited* matches the call approved (C18).

    Uses the tool's own ``match_rule`` (what AgentScope's
    ``PermissionEngine._rule_matches`` calls; a rule with no content matches
    every call). A rule edited so it does not even match the call it was
    accepted for would never apply as the person meant (a function tool's
    ``match_rule`` matches whole-tool rules only, a narrowed Bash prefix may
    miss the command).

    Raises:
        DecisionError: ``field="rules"``, naming the rule.
    """
    key = shell_field(tool)
    command = (tool_input or {}).get(key) if key else None
    # a shell command's rules are matched against each simple command too (nb_hitl.shell_policy)
    inputs = [tool_input or {}]
    if key and isinstance(command, str):
        inputs += [{**(tool_input or {}), key: c.text} for c in parse_command(command).commands]
    for rule in rules:
        if not rule.rule_content or rule.source != EDITED_RULE_SOURCE:
            continue
        if not any([await tool.match_rule(rule.rule_content, inp) for inp in inputs]):
            raise DecisionError(
                f"The rule {rule_label(rule)} does not match this call, so it would not allow it "
                f"({tool.name}'s match_rule); narrow it so it still covers this call.",
                field="rules",
            )


def _deny_rule(engine: Any, tool: ToolBase, decision: PermissionDecision) -> PermissionRule | None:
    """The deny rule behind ``decision``: AgentScope's engine says
    ``decision_reason="Rule: <rule_content>"`` for the first matching deny
    rule of the tool (``PermissionEngine._check_deny_rules``)."""
    context = getattr(engine, "context", None)
    rules = (getattr(context, "deny_rules", None) or {}).get(tool.name, [])
    for rule in rules:
        if decision.decision_reason == f"Rule: {rule.rule_content}":
            return rule
    return None


async def check_external_result(tool: ToolBase | None, result: ToolResultBlock) -> None:
    """Run the tool's own check of an external result before the agent sees it.

    AgentScope calls ``ToolBase.check_external_result`` when resuming and,
    on failure, raises out of the reply and leaves it parked. Checking first
    keeps the reply resumable and shows the error in the widget.

    Raises:
        DecisionError: when the result breaks the tool's ``metadata_schema``.
    """
    if tool is None:
        return
    try:
        await tool.check_external_result(result)
    except Exception as exc:  # noqa: BLE001 - jsonschema.ValidationError or the tool's own check
        text = getattr(exc, "message", None) or str(exc)
        raise DecisionError(
            f"The result does not fit {tool.name}'s metadata schema: {text}", field="metadata"
        ) from None
