"""Every tool call on the record: the decision of each permission check.

:class:`CheckedMiddleware` is an ``on_check_permission`` middleware
(``agentscope.middleware.MiddlewareBase``) that a :class:`~nb_hitl.Session`
with an ``audit_log`` installs as the *outermost* permission middleware
(:func:`install_checked`), so it sees the decision the agent consumes: after
AgentScope's engine, the shell rules (:mod:`nb_hitl.shell_policy`) and any
:class:`~nb_hitl.policy.PolicyMiddleware`. It appends one record per check
(``event: "checked"``, the shape of :mod:`nb_hitl.answers.record`) whether a
person is asked or not: ``decision`` is ``allow``, ``deny`` or ``ask`` and
``decided_how`` what decided it (:func:`decided_how`). A call that asks is
recorded again when it is answered (``event: "answered"``), linked by
``tool_call_id``. A call the person already approved (call state
``allowed``) goes through the chain once more before it runs; that check is
the answer's, already recorded, and is not written again.

A check whose record cannot be written is denied (fail closed: no call runs
off the record), with a message that says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from agentscope.permission import PermissionBehavior, PermissionDecision

from .._agentscope import PermissionCheck, PermissionStep, enum_value, permission_chain, permission_engine, rule_label
from ..permissions.shell_check import SHELL_REASON

__all__ = ["CheckedMiddleware", "install_checked", "remove_checked", "decided_how", "CHECKED", "ANSWERED"]

log = logging.getLogger("nb_hitl.audit")

CHECKED = "checked"
"""``event`` of a permission check's record."""

ANSWERED = "answered"
"""``event`` of an answer's record (a person, or a deadline, answered an ask)."""

_MODE_REASONS = ("Mode:", "Explore mode", "Bypass mode", "User is not available")
_POLICY = "nb_hitl policy:"


async def decided_how(
    agent: Any, tool: Any, tool_input: dict[str, Any], decision: PermissionDecision
) -> dict[str, Any]:
    """What decided a permission check, from the decision AgentScope's engine
    and nb_hitl's middlewares returned.

    Returns:
        ``{"decided_how": "rule" | "mode" | "policy" | "shell_rules" |
        "read_only" | "tool_check", "rule": label, "policy": name, "mode"}``
        (``rule``/``policy`` only when they decided). The rule is the first
        of the decision's behaviour that the engine's own matcher
        (``PermissionEngine._rule_matches``) finds for the call: the engine
        names deny and ask rules in ``decision_reason`` (``Rule: ...``) but
        not the allow rule that granted a call.
    """
    reason = decision.decision_reason or ""
    try:
        engine = permission_engine(agent)
    except TypeError:
        engine = None
    mode = enum_value(engine.context.mode) if engine is not None else None
    out: dict[str, Any] = {"mode": mode}
    if reason.startswith(_POLICY):
        return {**out, "decided_how": "policy", "policy": reason[len(_POLICY) :].split(" (")[0].strip()}
    if reason.startswith(SHELL_REASON):
        return {**out, "decided_how": "shell_rules"}
    rule_named = "Rule:" in reason
    granted = decision.behavior == PermissionBehavior.ALLOW and not reason
    if engine is not None and (rule_named or granted):
        buckets = ("allow_rules",) if granted else ("deny_rules", "ask_rules")
        content = reason.split("Rule:", 1)[1].strip() if rule_named else None
        for bucket in buckets:
            for rule in getattr(engine.context, bucket).get(tool.name, []):
                if rule_named and str(rule.rule_content) != content:
                    continue
                if await engine._rule_matches(tool, rule, tool_input):
                    return {**out, "decided_how": "rule", "rule": rule_label(rule)}
    if reason.startswith("Read-only"):
        return {**out, "decided_how": "read_only"}
    if any(word in reason for word in _MODE_REASONS):
        return {**out, "decided_how": "mode"}
    return {**out, "decided_how": "tool_check"}


class CheckedMiddleware(PermissionStep):
    """The ``on_check_permission`` middleware recording each check (see the module docstring).

    Args:
        write: appends one record (the Session's ``_audit_record``); raises
            when it cannot.
    """

    outermost = True
    """Stays the first permission middleware (``apply_policy`` inserts after it)."""

    def __init__(self, write: Callable[[dict[str, Any]], None]) -> None:
        self.write = write

    async def judge(self, agent: Any, check: PermissionCheck, decision: PermissionDecision) -> PermissionDecision:
        """The chain's decision, recorded, then returned unchanged."""
        tool_call, tool, tool_input = check.tool_call, check.tool, check.tool_input
        try:
            how = await decided_how(agent, tool, tool_input, decision)
            self.write(
                {
                    "event": CHECKED,
                    "agent": agent.name,
                    "reply_id": agent.state.reply_id,
                    "tool_call_id": tool_call.id,
                    "tool_name": tool.name,
                    "original_input": tool_input,
                    "decision": enum_value(decision.behavior),
                    **how,
                    "reason": decision.decision_reason,
                    "message": decision.message,
                    "bypass_immune": bool(decision.bypass_immune),
                    "decided_by": None,  # nobody answered (an ask is answered later)
                }
            )
        except Exception as exc:  # fail closed: no call runs off the record
            log.error("could not record the permission check of %s", tool_call.id, exc_info=True)
            return PermissionDecision(
                behavior=PermissionBehavior.DENY,
                message=f"Permission denied for {tool.name}: the call could not be written to the audit log ({exc}).",
                decision_reason="nb_hitl audit: not recorded",
            )
        return decision


def install_checked(agent: Any, write: Callable[[dict[str, Any]], None]) -> CheckedMiddleware:
    """Make a :class:`CheckedMiddleware` writing with ``write`` the outermost
    ``on_check_permission`` middleware of ``agent`` (idempotent: the one
    already there takes the new ``write``, so a newer Session records).

    Raises:
        TypeError: ``agent`` is not an AgentScope 2.0.x ``Agent``.
    """
    chain = permission_chain(agent)
    existing = next((m for m in chain if isinstance(m, CheckedMiddleware)), None)
    mw = existing or CheckedMiddleware(write)
    mw.write = write
    chain[:] = [mw, *(m for m in chain if not isinstance(m, CheckedMiddleware))]
    return mw


def remove_checked(agent: Any) -> None:
    """Take :class:`CheckedMiddleware` off ``agent`` (a Session without an audit log)."""
    chain = getattr(agent, "_check_permission_middlewares", None)
    if isinstance(chain, list):
        chain[:] = [m for m in chain if not isinstance(m, CheckedMiddleware)]
