"""Policies: make sensitive tool calls always ask, whatever rules or mode say.

A :class:`Policy` is declared in Python: tool names, AgentScope rule
patterns (``{"Bash": ["git push:*"]}``, matched by the tool's own
``match_rule``), and predicates on the input. It acts through AgentScope's
own ``on_check_permission`` middleware hook (``agentscope.middleware.
MiddlewareBase``; ``Agent._check_permission`` runs the chain around the
engine):

* :class:`PolicyMiddleware` first lets the rest of the chain and the
  permission engine decide (``next_handler``), so **deny rules and denying
  modes still win**;
* if a policy matches and the engine did not deny, it returns
  ``PermissionDecision(ASK, bypass_immune=True, suggested_rules=[])`` naming
  the policy, and records the policy name in
  ``agent.state.middle_context["nb_hitl.policy"][tool_call_id]``
  (:data:`~nb_hitl.session.POLICY_CONTEXT_KEY`), which the Session copies
  into the pause so the confirmation widget shows which policy asked (the
  mapping is saved with checkpoints);
* a call the person already approved (call state ``allowed``) is passed
  through untouched: AgentScope's ``_check_permission_impl`` then
  short-circuits it to ALLOW. Without this the approved call would be asked
  again forever.

No "always allow" rule is suggested: the middleware runs around the engine,
so an allow rule could never silence it (that is the point), and offering
one would mislead. For the same reason AgentScope never de-duplicates the
ask within a concurrent batch (it is bypass-immune).

What each mode does (AgentScope 2.0.11 ``permission/_engine.py``), with the
middleware installed:

=============  =================================================================
mode           a call the policy matches
=============  =================================================================
default        ASK (also when an allow rule or the tool itself would allow)
accept_edits   ASK (also for edits inside the working directory)
explore        read-only calls ASK; everything else stays DENY (explore's rule)
bypass         ASK. BYPASS ignores ``bypass_immune`` on asks *tools* emit, but
               honours ask rules as "explicit user intent"; a policy is the
               same kind of intent and the middleware runs after the engine
dont_ask       DENY, naming the policy: DONT_ASK means no person can answer
               (AgentScope converts its own asks to DENY the same way)
=============  =================================================================

Ask rules (optional, :meth:`Policy.ask_rules`, ``apply_policy(...,
add_rules=True)``): tool names and patterns can also be written into the
engine as ``PermissionRule(behavior=ASK, source="nb_hitl policy: NAME")``.
They are saved with the agent's state, so they keep asking after a restore
even if the middleware is not installed again, and they show up in the
permission explorer. Caveats from the engine's order (deny rules, **ask
rules**, read-only fast path, ...): in EXPLORE an ask rule turns a
non-read-only call's DENY into an ASK (it is checked before the read-only
verdict), and in DONT_ASK it becomes a DENY. Predicates cannot be rules
(function tools only match whole-tool rules). The middleware alone is the
default.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentscope.permission import (
    PermissionBehavior,
    PermissionContext,
    PermissionDecision,
    PermissionMode,
    PermissionRule,
)

from ._agentscope import (
    APPROVALS_KEY,
    MCP_HINTS,
    POLICY_CONTEXT_KEY,
    POLICY_DETAIL_KEY,
    PermissionCheck,
    PermissionStep,
    context_map,
    mcp_tool_hints,
    permission_chain,
    permission_context,
    permission_engine,
)
from .answers.approvals import restore as restore_approvals
from .mcp_hints import effective_mcp_hints
from .permissions.shell import parse_command
from .permissions.shell_check import shell_field

__all__ = [
    "Policy",
    "effective_mcp_hints",
    "PolicyMiddleware",
    "policy_middleware",
    "apply_policy",
    "remove_policy",
    "describe_policy_pause",
    "POLICY_DETAIL_KEY",
    "rule_source",
]


def rule_source(name: str) -> str:
    """The ``PermissionRule.source`` of a policy's ask rules: ``nb_hitl policy: NAME``."""
    return f"nb_hitl policy: {name}"


def _match_inputs(tool: Any, tool_input: dict[str, Any]) -> list[dict[str, Any]]:
    """The inputs a pattern is matched against: the call's, and for a shell
    tool each form of each simple command in it (as the shell rules match
    deny and ask rules, :mod:`nb_hitl.shell_policy`), so ``git push:*`` also
    matches ``cd repo && git push`` and ``sudo git push``."""
    key = shell_field(tool)
    command = tool_input.get(key) if key else None
    if not key or not isinstance(command, str):
        return [tool_input]
    forms = [form for cmd in parse_command(command).commands for form in cmd.rule_forms()]
    return [tool_input, *({**tool_input, key: form} for form in dict.fromkeys(forms))]


def _context(agent: Any) -> PermissionContext:
    """The agent's live permission context (its engine's); the state's for an
    object without an engine."""
    try:
        return permission_context(agent)
    except TypeError:
        return agent.state.permission_context


@dataclass(frozen=True)
class Policy:
    """A declarative "always ask" policy.

    A call matches when **any** of these holds:

    Args:
        name: shown in the confirmation widget and the audit log.
        tools: tool names that always ask.
        patterns: ``{tool_name: [rule_content, ...]}``: AgentScope rule
            patterns, matched by the tool's own ``match_rule`` exactly as the
            engine matches rules (``Bash``: ``"git push:*"`` prefix, other
            ``*`` wildcards, substring without ``*``; ``Read``/``Write``/
            ``Edit``: fnmatch on the path). For a shell tool a pattern is
            also matched against each simple command of the command line
            (after ``;``/``&&``/``|``, in ``$(...)``, behind ``sudo``...).
        when: ``{tool_name: predicate(tool_input) -> bool}``.
        predicate: ``(tool_name, tool_input) -> bool`` for any tool.
        mcp_hints: ``{hint: bool}`` over MCP's tool annotations
            (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
            ``openWorldHint``): an MCP tool matches when every hint given has
            that value, a hint its server left out counting as MCP's default
            (:func:`effective_mcp_hints`: a tool that says nothing may be
            destructive). ``{"destructiveHint": True}``: every destructive MCP
            tool asks. Hints are the server's word, not a guarantee.
        message: a sentence shown with the ask (why this policy exists).
        approvals: how many people must approve a call it matches (the
            call runs once, after the last approval; a denial vetoes; see
            :mod:`nb_hitl.answers.approvals`), or ``{tool_name: n}`` per
            tool (tools not named need one).
        distinct: the approvals must come from distinct people
            (``decided_by``: the OS user, an AG-UI principal...).

    A predicate that raises counts as a match (fail closed: the call asks
    and the message says the check failed).

    Raises:
        ValueError: no name, nothing to match, or ``approvals`` not a
            positive integer (or a mapping to them).
    """

    name: str
    tools: Sequence[str] = ()
    patterns: Mapping[str, Sequence[str]] = field(default_factory=dict)
    when: Mapping[str, Callable[[dict[str, Any]], bool]] = field(default_factory=dict)
    predicate: Callable[[str, dict[str, Any]], bool] | None = None
    mcp_hints: Mapping[str, bool] = field(default_factory=dict)
    message: str | None = None
    approvals: int | Mapping[str, int] = 1
    distinct: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("A Policy needs a name (shown to the person it asks).")
        if isinstance(self.tools, str):
            raise ValueError(f"Policy {self.name!r}: tools must be a list of tool names, not one string.")
        for pats in dict(self.patterns).values():
            if isinstance(pats, str) or not all(isinstance(p, str) and p for p in pats):
                raise ValueError(f"Policy {self.name!r}: patterns must map a tool name to a list of non-empty strings.")
        object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "patterns", {k: tuple(v) for k, v in dict(self.patterns).items()})
        object.__setattr__(self, "when", dict(self.when))
        hints = dict(self.mcp_hints)
        bad = [k for k, v in hints.items() if k not in MCP_HINTS or not isinstance(v, bool)]
        if bad:
            raise ValueError(
                f"Policy {self.name!r}: mcp_hints maps {', '.join(MCP_HINTS)} to True or False, not {bad[0]!r}."
            )
        object.__setattr__(self, "mcp_hints", hints)
        if not (self.tools or self.patterns or self.when or self.predicate or self.mcp_hints):
            raise ValueError(
                f"Policy {self.name!r} matches nothing: give tools, patterns, when, predicate or mcp_hints."
            )
        counts = dict(self.approvals) if isinstance(self.approvals, Mapping) else {"": self.approvals}
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in counts.values()):
            raise ValueError(f"Policy {self.name!r}: approvals must be a positive integer (or map tools to one).")
        if isinstance(self.approvals, Mapping):
            object.__setattr__(self, "approvals", counts)

    def approvals_for(self, tool_name: str) -> int:
        """How many approvals a call of ``tool_name`` this policy matches needs."""
        if isinstance(self.approvals, Mapping):
            return int(self.approvals.get(tool_name, 1))
        return int(self.approvals)

    async def match(self, tool: Any, tool_input: dict[str, Any]) -> str | None:
        """Why this policy matches the call, or ``None``.

        Args:
            tool: the resolved ``ToolBase``.
            tool_input: the parsed, schema-validated input.

        Returns:
            a short reason (``"tool send_email"``, ``"Bash(git push:*)"``,
            ``"its check on the input"``) or ``None``.
        """
        name = tool.name
        if name in self.tools:
            return self.match_call(name, tool_input)
        declared = mcp_tool_hints(tool) if self.mcp_hints else None
        if declared is not None:
            effective = effective_mcp_hints(declared)
            if all(effective[k] == v for k, v in self.mcp_hints.items()):
                said = ", ".join(f"{k}={str(effective[k]).lower()}" for k in self.mcp_hints)
                return f"MCP tool {name} ({said})"
        for pattern in self.patterns.get(name, ()):
            try:
                for candidate in _match_inputs(tool, tool_input):
                    matched = tool.match_rule(pattern, candidate)
                    if inspect.isawaitable(matched):  # AgentScope accepts sync match_rule too
                        matched = await matched
                    if matched:
                        return f"{name}({pattern})"
            except Exception as exc:  # noqa: BLE001 - fail closed
                return f"{name}({pattern}) (matching raised {type(exc).__name__}: {exc})"
        return self._checked(name, tool_input)

    def match_call(self, tool_name: str, tool_input: dict[str, Any]) -> str | None:
        """Why this policy matches a call known by its tool's name and input
        alone (the console of AgentScope's service sees a parked call, not the
        service's tool): ``tools``, ``when`` and ``predicate``. ``patterns``
        and ``mcp_hints`` need the tool itself (:meth:`match`).

        Returns:
            a short reason, as :meth:`match`, or ``None``.
        """
        if tool_name in self.tools:
            return f"tool {tool_name}"
        return self._checked(tool_name, tool_input)

    def _checked(self, name: str, tool_input: dict[str, Any]) -> str | None:
        checks: list[Callable[[], Any]] = []
        if name in self.when:
            checks.append(lambda: self.when[name](tool_input))
        if self.predicate is not None:
            checks.append(lambda: self.predicate(name, tool_input))  # type: ignore[misc]
        for check in checks:
            try:
                if check():
                    return "its check on the input"
            except Exception as exc:  # noqa: BLE001 - fail closed
                return f"its check on the input raised {type(exc).__name__}: {exc}"
        return None

    def ask_rules(self) -> list[PermissionRule]:
        """The engine rules this policy can be written as: a whole-tool ASK
        rule per name in ``tools`` and one per pattern, each with
        ``source="nb_hitl policy: NAME"``. Predicates have no rule form.
        See the module docstring for the caveats (EXPLORE, DONT_ASK)."""
        rules = [
            PermissionRule(
                tool_name=t, rule_content=None, behavior=PermissionBehavior.ASK, source=rule_source(self.name)
            )
            for t in self.tools
        ]
        for tool_name, pats in self.patterns.items():
            rules += [
                PermissionRule(
                    tool_name=tool_name, rule_content=p, behavior=PermissionBehavior.ASK, source=rule_source(self.name)
                )
                for p in pats
            ]
        return rules

    def middleware(self) -> PolicyMiddleware:
        """A :class:`PolicyMiddleware` with just this policy (for ``Agent(middlewares=[...])``)."""
        return PolicyMiddleware([self])


class PolicyMiddleware(PermissionStep):
    """AgentScope ``on_check_permission`` middleware enforcing policies.

    Pass it at construction, first in the list so it wraps every other
    permission middleware: ``Agent(..., middlewares=[policy_middleware(p)])``,
    or install it on a live agent with :func:`apply_policy`.

    Args:
        policies: the policies, checked in order; the first match names the ask.

    Returns (per call, see the module docstring): the chain's own decision
    when no policy matches, the call was already approved (state
    ``allowed``) or the chain denies; otherwise a bypass-immune ASK (DENY in
    ``dont_ask`` mode) whose ``decision_reason`` is
    ``"nb_hitl policy: NAME"``.
    """

    def __init__(self, policies: Iterable[Policy] = ()) -> None:
        self.policies: list[Policy] = []
        for p in policies:
            self.add(p)

    def add(self, policy: Policy) -> None:
        """Add a policy (a policy with the same name is replaced)."""
        if not isinstance(policy, Policy):
            raise TypeError(f"PolicyMiddleware takes Policy objects, got {type(policy).__name__}")
        self.policies = [p for p in self.policies if p.name != policy.name] + [policy]

    def remove(self, name: str) -> bool:
        """Remove the policy called ``name``; returns whether there was one."""
        before = len(self.policies)
        self.policies = [p for p in self.policies if p.name != name]
        return len(self.policies) != before

    async def judge(self, agent: Any, check: PermissionCheck, decision: PermissionDecision) -> PermissionDecision:
        """The first matching policy's ASK (see the class docstring)."""
        tool_call, tool, tool_input = check.tool_call, check.tool, check.tool_input
        if decision.behavior == PermissionBehavior.DENY:
            return decision
        for policy in self.policies:
            why = await policy.match(tool, tool_input)
            if why is None:
                continue
            reason = rule_source(policy.name)
            text = f"The policy {policy.name!r} requires a person to confirm this call ({why})."
            if policy.message:
                text += f" {policy.message}"
            context = _context(agent)
            if context.mode == PermissionMode.DONT_ASK:
                return PermissionDecision(
                    behavior=PermissionBehavior.DENY,
                    message=(
                        f"Permission denied for {tool.name}: the policy {policy.name!r} requires a person "
                        "to confirm it, and dont_ask mode has no person to ask."
                    ),
                    decision_reason=f"{reason} (dont_ask mode: ASK converted to DENY)",
                )
            context_map(agent, POLICY_CONTEXT_KEY)[tool_call.id] = policy.name
            context_map(agent, POLICY_DETAIL_KEY)[tool_call.id] = {
                "message": text,
                "reason": reason,
                "approvals": policy.approvals_for(tool.name),
                "distinct": policy.distinct,
            }
            return PermissionDecision(
                behavior=PermissionBehavior.ASK,
                message=text,
                decision_reason=reason,
                suggested_rules=[],
                bypass_immune=True,
            )
        return decision


def policy_middleware(*policies: Policy) -> PolicyMiddleware:
    """The middleware to pass at construction:
    ``Agent(..., middlewares=[policy_middleware(p1, p2), ...])``."""
    return PolicyMiddleware(policies)


def _permission_chain(agent: Any) -> list[Any]:
    return permission_chain(
        agent, "apply_policy installs its middleware there; pass policy_middleware(...) to the Agent instead"
    )


def iter_outermost(chain: list[Any]) -> Iterable[Any]:
    """The leading middlewares of ``chain`` that stay first (``outermost = True``)."""
    for mw in chain:
        if not getattr(mw, "outermost", False):
            return
        yield mw


def apply_policy(agent: Any, policy: Policy, *, add_rules: bool = False) -> PolicyMiddleware:
    """Apply a policy to a live agent.

    AgentScope filters middlewares by hook once, in ``Agent.__init__``, into
    the private list ``Agent._check_permission_middlewares``; this installs
    one :class:`PolicyMiddleware` at its front (outermost, as if it were
    passed first at construction; only the audit's record of each check,
    :mod:`nb_hitl.audit.checked`, stays outside it) or adds the policy to the one already
    there. Nothing else is touched; the list is read on every permission
    check (``Agent._check_permission``), so the next call is covered.

    Args:
        agent: a live ``agentscope.agent.Agent``.
        policy: the policy.
        add_rules: also add :meth:`Policy.ask_rules` to the agent's engine
            (``agent._engine.add_rule``; saved with the state, see the module
            docstring for the caveats).

    Returns:
        the agent's :class:`PolicyMiddleware`.

    Raises:
        TypeError: not an AgentScope 2.0.x ``Agent``.
    """
    chain = _permission_chain(agent)
    mw = next((m for m in chain if isinstance(m, PolicyMiddleware)), None)
    if mw is None:
        mw = PolicyMiddleware()
        # outermost, after a middleware that must stay first (the audit's record of each check)
        chain.insert(sum(1 for _ in iter_outermost(chain)), mw)
    mw.add(policy)
    if add_rules:
        engine = permission_engine(agent)
        existing = {
            (r.tool_name, r.rule_content, r.source) for rules in engine.context.ask_rules.values() for r in rules
        }
        for rule in policy.ask_rules():
            if (rule.tool_name, rule.rule_content, rule.source) not in existing:
                engine.add_rule(rule)
    return mw


def remove_policy(agent: Any, name: str) -> bool:
    """Undo :func:`apply_policy`: drop the policy from the agent's
    :class:`PolicyMiddleware` and its ask rules (``source`` ``nb_hitl
    policy: NAME``) from the engine's context.

    Returns:
        whether anything was removed.
    """
    removed = False
    for mw in _permission_chain(agent):
        if isinstance(mw, PolicyMiddleware):
            removed = mw.remove(name) or removed
    context = _context(agent)
    for tool_name in list(context.ask_rules):
        kept = [r for r in context.ask_rules[tool_name] if r.source != rule_source(name)]
        if len(kept) != len(context.ask_rules[tool_name]):
            removed = True
            context.ask_rules[tool_name] = kept
    return removed


def describe_policy_pause(agent: Any, pause: Any) -> None:
    """Fill a policy-forced confirmation's message, reason, safety flag,
    the approvals it needs (``Policy(approvals=...)``) and those it got
    before a restart (``APPROVALS_KEY``).

    The Session rebuilds a confirmation's message with the permission engine
    alone, which does not see middlewares (it may even say "granted");
    this puts back what the policy said (``POLICY_DETAIL_KEY``), so the
    widget shows it next to the policy chip.

    Args:
        agent: the agent (its ``state.middle_context`` is read).
        pause: a :class:`~nb_hitl.pauses.Pause` whose ``policy`` is set.
    """
    if pause.kind != "confirm" or not pause.policy:
        return
    details = agent.state.middle_context.get(POLICY_DETAIL_KEY)
    detail = details.get(pause.tool_call_id) if isinstance(details, dict) else None
    if isinstance(detail, dict):
        pause.permission_message = str(detail.get("message") or "")
        pause.decision_reason = str(detail.get("reason") or rule_source(pause.policy))
        needed = detail.get("approvals")
        pause.approvals_needed = needed if isinstance(needed, int) and needed >= 1 else 1
        pause.approvals_distinct = detail.get("distinct") is not False
        restore_approvals(pause, agent.state.middle_context.get(APPROVALS_KEY))  # taken before a restart
    else:
        pause.permission_message = f"The policy {pause.policy!r} requires a person to confirm this call."
        pause.decision_reason = rule_source(pause.policy)
    pause.bypass_immune = True
    pause.suggested_rules = []
