"""Shell commands judged one simple command at a time, by AgentScope's engine.

:func:`judge_shell_call` reads a shell tool's command line
(:func:`nb_hitl.permissions.shell.parse_command`) and puts each simple
command to the agent's own ``PermissionEngine``:

* deny and ask rules (``PermissionEngine._check_deny_rules`` /
  ``_check_ask_rules``, i.e. the tool's own ``match_rule``) are checked
  against every form of every simple command
  (:meth:`~nb_hitl.permissions.shell.SimpleCommand.rule_forms`): a deny
  rule's program denies wherever it appears (after ``;``/``&&``/``||``/``|``,
  in ``$(...)``, behind ``sudo`` and other wrappers, as ``/bin/rm``);
* the whole decision for each simple command is
  ``PermissionEngine.check_permission`` on its text alone, in the live mode.

How the call's decision follows (``whole`` is the engine's decision on the
whole line, which AgentScope made first):

==========================================  ====================================
what was found                              decision
==========================================  ====================================
``whole`` denies                            ``whole`` (a deny rule's, if one matches)
a simple command is denied                  DENY, naming the command and rule
a part cannot be judged (syntax error,      ASK, bypass-immune, no suggested
computed program, non-literal ``sh -c``,   rules (DENY in ``dont_ask``)
code piped to a shell that is not literal)
a simple command is not allowed             ASK; suggested rules: one per such
                                            command, ``<its text>:*`` (DENY in
                                            ``dont_ask``)
every simple command is allowed             ``whole``; when ``whole`` is the
                                            mode's plain fallback ASK (no ask
                                            rule, not a safety ask): ALLOW;
                                            an ASK kept offers no rules
==========================================  ====================================

So a call asks unless every simple command in it is allowed by the rules,
and an "Always allow" rule offered for one command covers that command
(with more arguments after it), never what is chained to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentscope.permission import (
    PermissionBehavior,
    PermissionContext,
    PermissionDecision,
    PermissionEngine,
    PermissionMode,
    PermissionRule,
)
from agentscope.tool import Bash, ToolBase

from .shell import ShellParse, SimpleCommand, parse_command

__all__ = [
    "SHELL_RULE_SOURCE",
    "SHELL_REASON",
    "ShellVerdict",
    "shell_field",
    "judge_shell_call",
    "decide_as_session",
    "command_rule",
    "rule_covers",
    "shell_forms",
]

SHELL_RULE_SOURCE = "nb_hitl: shell command"
"""``PermissionRule.source`` of the rules :func:`judge_shell_call` suggests."""

SHELL_REASON = "nb_hitl shell rules"
"""The start of the ``decision_reason`` of a decision the shell rules changed."""


def shell_field(tool: Any) -> str | None:
    """The input key holding a shell command line for ``tool``, or ``None``.

    AgentScope's ``Bash`` has ``"command"``; any other tool declares its own
    with a ``shell_command_field`` attribute (e.g. ``"script"``).
    """
    if isinstance(tool, Bash):
        return "command"
    declared = getattr(tool, "shell_command_field", None)
    return declared if isinstance(declared, str) and declared else None


def command_rule(tool_name: str, cmd: SimpleCommand) -> PermissionRule:
    """The allow rule that covers ``cmd`` as shown: ``<its text>:*`` (a
    ``Bash.match_rule`` prefix rule: this command, or it with more arguments)."""
    return PermissionRule(
        tool_name=tool_name, rule_content=f"{cmd.text}:*", behavior=PermissionBehavior.ALLOW, source=SHELL_RULE_SOURCE
    )


@dataclass
class ShellVerdict:
    """What :func:`judge_shell_call` found.

    Attributes:
        decision: the call's decision (``whole`` itself when nothing changes it).
        parse: the command line's :class:`~nb_hitl.permissions.shell.ShellParse`.
        parts: per simple command, ``SimpleCommand.to_dict()`` plus
            ``"behavior"`` (``allow`` / ``ask`` / ``deny``) and ``"why"``.
        changed: whether ``decision`` is not the engine's decision on the whole line.
    """

    decision: PermissionDecision
    parse: ShellParse
    parts: list[dict[str, Any]] = field(default_factory=list)
    changed: bool = False

    def detail(self) -> dict[str, Any]:
        """JSON-ready: ``{"commands", "problems", "message", "reason",
        "bypass_immune", "changed"}`` (kept in the agent's state for the card)."""
        return {
            "commands": self.parts,
            "problems": list(self.parse.problems),
            "message": self.decision.message,
            "reason": self.decision.decision_reason,
            "bypass_immune": bool(self.decision.bypass_immune),
            "changed": self.changed,
        }


def _quote(cmd: SimpleCommand) -> str:
    text = cmd.text if len(cmd.text) <= 120 else cmd.text[:117] + "..."
    return f"`{text}`" + (f" (in {cmd.via})" if cmd.via else "")


async def _judge_part(
    engine: PermissionEngine, tool: ToolBase, key: str, tool_input: Mapping[str, Any], cmd: SimpleCommand
) -> tuple[str, str, PermissionDecision | None]:
    """``(behavior, why, decision)`` for one simple command; ``decision`` is a
    deny's or a safety ask's, else ``None``."""
    for form in cmd.rule_forms():
        denied = await engine._check_deny_rules(tool, {**tool_input, key: form})
        if denied is not None:
            return "deny", f"{denied.decision_reason} matches `{form}`", denied
    for form in cmd.rule_forms():
        asked = await engine._check_ask_rules(tool, {**tool_input, key: form})
        if asked is not None:
            return "ask", f"{asked.decision_reason} matches `{form}`", None
    own = await engine.check_permission(tool, {**tool_input, key: cmd.text})
    fallback = own.behavior == PermissionBehavior.ASK and not own.bypass_immune
    why = "no allow rule matches it" if fallback else (own.message or own.decision_reason or "")
    if own.behavior == PermissionBehavior.ALLOW:
        return "allow", why, None
    if own.behavior == PermissionBehavior.DENY:
        return "deny", why, own
    return "ask", why, own if own.bypass_immune else None


async def decide_as_session(
    engine: PermissionEngine, tool: ToolBase, tool_input: Mapping[str, Any], *, shell_rules: bool = True
) -> tuple[PermissionDecision, ShellVerdict | None]:
    """What a Session decides for a call: AgentScope's engine on the whole input, then (a shell
    tool, ``shell_rules`` on, as a Session's default) :func:`judge_shell_call` on its simple
    commands. The one sequence the explorer's "Try a call", its mode matrix, the rule replay
    and the check of an edited input use; the Session itself runs the same two steps as
    AgentScope's permission chain and its innermost middleware (:mod:`nb_hitl.shell_policy`).

    Returns:
        ``(engine's decision, shell verdict or None)``; the Session's decision is the verdict's
        ``decision`` when there is a verdict, else the engine's.
    """
    decision = await engine.check_permission(tool, dict(tool_input))
    verdict = await judge_shell_call(engine, tool, dict(tool_input), decision) if shell_rules else None
    return decision, verdict


async def judge_shell_call(
    engine: PermissionEngine,
    tool: ToolBase,
    tool_input: Mapping[str, Any],
    whole: PermissionDecision | None = None,
) -> ShellVerdict | None:
    """Judge a shell tool's call one simple command at a time (see the module docstring).

    Args:
        engine: the agent's ``PermissionEngine`` (its live context and mode).
        tool: the tool called.
        tool_input: the parsed input.
        whole: the engine's (or the middleware chain's) decision on the
            whole input; asked of ``engine`` when not given.

    Returns:
        a :class:`ShellVerdict`, or ``None`` when ``tool`` takes no shell
        command (:func:`shell_field`) or the input holds no command text.
    """
    key = shell_field(tool)
    command = tool_input.get(key) if key else None
    if key is None or not isinstance(command, str):
        return None
    if whole is None:
        whole = await engine.check_permission(tool, dict(tool_input))
    parse = parse_command(command)
    parts: list[dict[str, Any]] = []
    denied: tuple[SimpleCommand, str, PermissionDecision] | None = None
    asking: list[tuple[SimpleCommand, str, PermissionDecision | None]] = []
    for cmd in parse.commands:
        behavior, why, decision = await _judge_part(engine, tool, key, tool_input, cmd)
        parts.append({**cmd.to_dict(), "behavior": behavior, "why": why})
        if behavior == "deny" and denied is None and decision is not None:
            denied = (cmd, why, decision)
        elif behavior == "ask":
            asking.append((cmd, why, decision))
    verdict = ShellVerdict(whole, parse, parts)
    if whole.behavior == PermissionBehavior.DENY and (
        denied is None or (whole.decision_reason or "").startswith("Rule:")
    ):
        return verdict  # a deny from the mode or the tool is told as such, unless a deny rule names the command
    dont_ask = engine.context.mode == PermissionMode.DONT_ASK
    if denied is not None:
        cmd, why, decision = denied
        verdict.decision = PermissionDecision(
            behavior=PermissionBehavior.DENY,
            message=f"Permission to use {tool.name} has been denied: the command {_quote(cmd)} is denied ({why}).",
            decision_reason=decision.decision_reason or SHELL_REASON,
        )
    elif parse.problems:
        said = "; ".join(parse.problems)
        verdict.decision = PermissionDecision(
            behavior=PermissionBehavior.DENY if dont_ask else PermissionBehavior.ASK,
            message=(
                f"Permission required for {tool.name}: the command cannot be checked command by command ({said})"
                + (", and dont_ask mode has no person to ask." if dont_ask else ".")
            ),
            decision_reason=f"{SHELL_REASON}: cannot be judged",
            bypass_immune=True,
            suggested_rules=[],
        )
    elif asking and dont_ask:  # an ask rule matched a command: no person to ask
        listed = "; ".join(f"{_quote(c)}: {w}" if w else _quote(c) for c, w, _ in asking)
        verdict.decision = PermissionDecision(
            behavior=PermissionBehavior.DENY,
            message=f"Permission denied for {tool.name} (dont_ask mode): a command in it needs a person ({listed}).",
            decision_reason=f"{SHELL_REASON}: dont_ask mode converted ASK to DENY",
        )
    elif asking:
        listed = "; ".join(f"{_quote(c)}: {w}" if w else _quote(c) for c, w, _ in asking)
        suggested = [command_rule(tool.name, c) for c, _, safety in asking if safety is None and c.program]
        verdict.decision = PermissionDecision(
            behavior=PermissionBehavior.ASK,
            message=f"Permission required for {tool.name}: not every command in it is allowed ({listed}).",
            decision_reason=f"{SHELL_REASON}: {len(asking)} of {len(parse.commands)} commands not allowed",
            bypass_immune=bool(whole.bypass_immune) or any(s is not None for _, _, s in asking),
            suggested_rules=list({r.rule_content: r for r in suggested}.values()),
        )
    elif whole.behavior != PermissionBehavior.ALLOW and parse.commands:
        fallback = not whole.bypass_immune and (whole.decision_reason or "").startswith("Mode:")  # the engine's step 6
        if fallback and await engine._check_ask_rules(tool, dict(tool_input)) is None:
            verdict.decision = PermissionDecision(
                behavior=PermissionBehavior.ALLOW,
                message=f"Permission granted for {tool.name}: every command in it is allowed.",
                decision_reason=f"{SHELL_REASON}: every command allowed",
            )
        elif whole.suggested_rules:  # an ask rule or a safety ask: no allow rule could silence it
            verdict.decision = PermissionDecision(
                behavior=whole.behavior,
                message=whole.message,
                decision_reason=whole.decision_reason,
                bypass_immune=whole.bypass_immune,
                suggested_rules=[],
            )
    verdict.changed = verdict.decision is not whole
    return verdict


def shell_forms(tool: ToolBase, tool_input: Mapping[str, Any]) -> list[tuple[str, tuple[str, ...]]] | None:
    """Per simple command of a shell call, its text and the forms a deny or
    ask rule is matched against (:meth:`~nb_hitl.permissions.shell.SimpleCommand.rule_forms`;
    an allow rule is matched against the text alone), in order; ``None``
    when ``tool`` takes no shell command (:func:`shell_field`)."""
    key = shell_field(tool)
    command = tool_input.get(key) if key else None
    if key is None or not isinstance(command, str):
        return None
    return [(cmd.text, tuple(cmd.rule_forms())) for cmd in parse_command(command).commands]


async def rule_covers(
    tool: ToolBase,
    rule: PermissionRule,
    tool_input: Mapping[str, Any],
    engine: PermissionEngine | None = None,
    forms: list[tuple[str, tuple[str, ...]]] | None = None,
) -> list[str] | None:
    """The simple commands of a shell call that ``rule`` covers under the
    shell rules, by the tool's own ``match_rule``: a deny or ask rule on any
    of a command's forms (:meth:`~nb_hitl.permissions.shell.SimpleCommand.rule_forms`),
    an allow rule on its text.

    Args:
        engine: whose matcher to use (``_rule_matches``); a
            :class:`~nb_hitl.permissions.bounded.BoundedEngine` when omitted.
        forms: :func:`shell_forms` of the call, when already known (a
            replay matches every rule against one call).

    Returns:
        the covered commands' texts, in order (empty when none), or ``None``
        when ``tool`` takes no shell command.

    Raises:
        PathologicalRuleError: (the default engine) matching ``rule`` would backtrack too long.
    """
    key = shell_field(tool)
    parts = forms if forms is not None else shell_forms(tool, tool_input)
    if key is None or parts is None:
        return None
    if engine is None:
        from .bounded import BoundedEngine  # bounded.py reads shell_field from here

        engine = BoundedEngine(PermissionContext())
    allow = rule.behavior == PermissionBehavior.ALLOW
    covered = []
    for text, rule_forms in parts:
        for form in (text,) if allow else rule_forms:
            if await engine._rule_matches(tool, rule, {**tool_input, key: form}):
                covered.append(text)
                break
    return covered
