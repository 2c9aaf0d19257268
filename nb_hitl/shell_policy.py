"""The shell rules policy: shell commands mean what the permission rules say.

AgentScope matches a ``Bash`` rule against the whole command line as text,
so ``deny Bash(rm:*)`` does not stop ``\\trm -rf x``, ``/bin/rm -rf x``,
``sudo rm -rf x`` or ``echo ok; rm -rf x``, and ``allow Bash(git status:*)``
also allows ``git status && curl … | sh``. :class:`ShellRulesMiddleware`
is an ``on_check_permission`` middleware (``agentscope.middleware.
MiddlewareBase``) that, after the chain and the engine decided the call,
judges it again one simple command at a time with the same engine
(:func:`nb_hitl.permissions.shell_check.judge_shell_call`): a call asks
unless every simple command in it is allowed, a deny rule denies wherever
its program appears, and what cannot be parsed asks.

It is on by default: :class:`~nb_hitl.Session` installs it on every agent it
drives (``Session(..., shell_rules=False)`` leaves it out), as the
*innermost* permission middleware, so a :class:`~nb_hitl.policy.Policy`
still sees (and may tighten) its decision. It acts on AgentScope's ``Bash``
and on any tool with a ``shell_command_field`` attribute naming the input
key of its command line. A call the person already approved (call state
``allowed``) is passed through untouched, as AgentScope's own
``_check_permission_impl`` does.

For each call that asks, what it found is kept in
``agent.state.middle_context["nb_hitl.shell"][tool_call_id]``
(:data:`~nb_hitl._agentscope.SHELL_CONTEXT_KEY`, saved with checkpoints):
the simple commands (``{program, args, redirections, assignments, text,
via, behavior, why}``), the problems, and the message; the Session puts them
in the pause (``Pause.shell_commands``, :func:`describe_shell_pause`).
"""

from __future__ import annotations

from typing import Any

from agentscope.message import ToolCallState
from agentscope.permission import PermissionBehavior, PermissionDecision

from ._agentscope import (
    SHELL_CONTEXT_KEY,
    PermissionCheck,
    PermissionStep,
    context_map,
    enum_value,
    permission_chain,
    permission_engine,
)
from .permissions.shell import parse_command
from .permissions.shell_check import judge_shell_call, shell_field

__all__ = ["ShellRulesMiddleware", "install_shell_rules", "describe_shell_pause", "SHELL_CONTEXT_KEY"]


class ShellRulesMiddleware(PermissionStep):
    """AgentScope ``on_check_permission`` middleware applying the shell rules
    (see the module docstring). Stateless: one instance may serve many agents."""

    async def judge(self, agent: Any, check: PermissionCheck, decision: PermissionDecision) -> PermissionDecision:
        """The chain's decision, judged again per simple command."""
        tool_call, tool, tool_input = check.tool_call, check.tool, check.tool_input
        try:
            engine = permission_engine(agent)
        except TypeError:
            return decision
        verdict = await judge_shell_call(engine, tool, tool_input, decision)
        if verdict is None:
            return decision
        details = context_map(agent, SHELL_CONTEXT_KEY)
        if verdict.decision.behavior == PermissionBehavior.ASK:
            details[tool_call.id] = verdict.detail()
        else:
            details.pop(tool_call.id, None)  # nothing stale for a reused call id
        return verdict.decision


def install_shell_rules(agent: Any) -> ShellRulesMiddleware:
    """Make :class:`ShellRulesMiddleware` the innermost ``on_check_permission``
    middleware of ``agent`` (idempotent).

    AgentScope 2.0.11 filters middlewares by hook once, in ``Agent.__init__``,
    into ``Agent._check_permission_middlewares``, read on every check; the
    last one wraps the engine directly.

    Raises:
        TypeError: ``agent`` is not an AgentScope 2.0.x ``Agent``.
    """
    chain = permission_chain(agent)
    existing = next((m for m in chain if isinstance(m, ShellRulesMiddleware)), None)
    mw = existing or ShellRulesMiddleware()
    chain[:] = [m for m in chain if not isinstance(m, ShellRulesMiddleware)]
    chain.append(mw)
    return mw


def describe_shell_pause(agent: Any, pause: Any, tool: Any = None) -> None:
    """Put what the shell rules found into a confirmation: the simple commands
    (``pause.shell_commands``) and, when they changed the engine's decision,
    their message, reason, bypass-immunity (the Session rebuilds a pause's
    message with the engine alone, which does not see middlewares).

    A confirmation of a shell tool the rules did not judge (``shell_rules=False``,
    or a policy asked) still shows its simple commands, read by the same parser
    (:func:`~nb_hitl.permissions.shell.parse_command`), with no behavior.

    Args:
        agent: the agent (its ``state.middle_context`` is read).
        pause: a :class:`~nb_hitl.pauses.Pause` (only a confirmation has a detail kept).
        tool: the called tool (``None``: unknown), to read the command line of a
            call the rules did not judge (:func:`~nb_hitl.permissions.shell_check.shell_field`).
    """
    details = agent.state.middle_context.get(SHELL_CONTEXT_KEY)
    detail = details.get(pause.tool_call_id) if isinstance(details, dict) else None
    if not isinstance(detail, dict):  # kept only for a call that asked: a confirmation
        _describe_unjudged(pause, tool)
        return
    commands = detail.get("commands")
    pause.shell_commands = [dict(c) for c in commands if isinstance(c, dict)] if isinstance(commands, list) else []
    pause.shell_problems = [str(p) for p in detail.get("problems") or []]
    if detail.get("changed"):
        pause.permission_message = str(detail.get("message") or "")
        pause.decision_reason = str(detail.get("reason") or "")
        pause.bypass_immune = bool(detail.get("bypass_immune"))


def _describe_unjudged(pause: Any, tool: Any) -> None:
    """The simple commands of a shell tool's confirmation the shell rules kept nothing for."""
    key = shell_field(tool) if tool is not None else None
    command = (pause.input or {}).get(key) if key else None
    if enum_value(pause.tool_call.state) != ToolCallState.ASKING.value or not isinstance(command, str):
        return  # only the permission engine's confirmations (state ``asking``)
    parse = parse_command(command)
    pause.shell_commands = [{**c.to_dict(), "behavior": "", "why": ""} for c in parse.commands]
    pause.shell_problems = list(parse.problems)
