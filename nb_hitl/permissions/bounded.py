"""Rule matching with a bound: a pathological rule is reported, not hung on.

AgentScope's ``Bash.match_rule`` turns a wildcard rule into a regular
expression (each ``*`` becomes ``.*``) and runs ``re.fullmatch`` on the whole
command line. Python's ``re`` backtracks: a rule with k wildcards before its
last character that does not match costs about ``len(command) ** k`` steps
(measured: ``*a*b`` against 100,000 characters takes 14 s, ``*a*a*a*a*b``
against a few thousand runs for hours), so the explorer's "Try a call", its
mode matrix, "why does it match", a rule edited on a card and a replay over
a long history would hang on it, with the GIL held. :func:`match_cost`
estimates that cost before matching; :class:`BoundedEngine` (AgentScope's
own ``PermissionEngine``, its ``_rule_matches`` checked first) raises
:class:`PathologicalRuleError` instead of matching a rule over
:data:`MATCH_BUDGET`. Every match of a rule in the explorer and in a replay
goes through it.

File rules (``Read``/``Write``/``Edit``/``Glob``/``Grep``) are matched with
``fnmatch``, whose translation (Python 3.11+) puts each ``*`` in an atomic
group: linear in the path, whatever the wildcards, so they cost nothing here.
"""

from __future__ import annotations

from typing import Any

from agentscope.permission import PermissionEngine, PermissionRule

from .._agentscope import rule_label
from ..errors import NbHitlError
from .shell_check import shell_field

__all__ = ["MATCH_BUDGET", "match_cost", "may_backtrack", "BoundedEngine", "PathologicalRuleError"]

MATCH_BUDGET = 10**8
"""The most backtracking steps (estimated, :func:`match_cost`) one rule match
may take: about a tenth of a second of ``re`` (measured: ``.*a.*b`` against
10,000 characters, 10**8 steps, 0.12 s); a rule over it is reported."""


_MOST = 10**99  # a cost past any bound, still printable as a float


class PathologicalRuleError(NbHitlError, ValueError):
    """Matching a rule against an input would backtrack too long.

    Attributes:
        rule: the ``PermissionRule``.
        cost: the estimated steps (:func:`match_cost`).
    """

    def __init__(self, rule: PermissionRule, cost: int, length: int) -> None:
        super().__init__(
            f"The rule {rule_label(rule)} has too many wildcards to match against an input of {length} "
            f"characters (about {cost:.1e} backtracking steps; the bound is {MATCH_BUDGET:.0e}): not matched."
        )
        self.rule = rule
        self.cost = cost


def _wildcards(content: str) -> int:
    """Unescaped ``*`` in a ``Bash`` rule (``\\*`` is a literal star), not
    counting one that ends the rule (a last ``.*`` takes the rest of the line
    without backtracking)."""
    count, i = 0, 0
    while i < len(content):
        if content[i] == "\\":
            i += 2
            continue
        count += content[i] == "*" and i < len(content) - 1
        i += 1
    return count


def match_cost(tool: Any, rule_content: str | None, tool_input: dict[str, Any]) -> tuple[int, int]:
    """The estimated backtracking steps of matching ``rule_content`` against
    ``tool_input`` with ``tool``'s regex matcher, and the input's length.

    Only shell tools (AgentScope's ``Bash``, tools with a
    ``shell_command_field``) match by regular expression; a whole-tool rule,
    a prefix rule (``git:*``) and a rule with at most one wildcard before its
    last character are linear. Returns ``(0, length)`` for those, else
    ``(length ** k, length)`` with ``k`` the wildcards before the last
    character (at most ``10 ** 99``).
    """
    key = shell_field(tool)
    text = tool_input.get(key) if key else None
    length = len(text) if isinstance(text, str) else 0
    if not rule_content or not key or rule_content.endswith(":*"):
        return 0, length
    stars = _wildcards(rule_content)
    if stars < 2:
        return 0, length
    return min(max(length, 1) ** stars, _MOST), length


def may_backtrack(rule: PermissionRule) -> bool:
    """Whether matching ``rule`` can cost anything at all (:func:`match_cost`
    is 0 for a rule with fewer than two wildcards, whatever the input)."""
    content = rule.rule_content
    return content is not None and content.count("*") >= 2


class BoundedEngine(PermissionEngine):
    """AgentScope's ``PermissionEngine`` whose rule matcher refuses a match
    over :data:`MATCH_BUDGET` (:class:`PathologicalRuleError`); every decision
    is otherwise the engine's own."""

    @staticmethod
    def check_cost(tool: Any, rule: PermissionRule, input_data: dict[str, Any]) -> None:
        """Refuse a match over :data:`MATCH_BUDGET` before it starts.

        Raises:
            PathologicalRuleError: matching ``rule`` against ``input_data`` would backtrack too long.
        """
        if may_backtrack(rule):
            cost, length = match_cost(tool, rule.rule_content, input_data)
            if cost > MATCH_BUDGET:
                raise PathologicalRuleError(rule, cost, length)

    async def _rule_matches(self, tool: Any, rule: PermissionRule, input_data: dict[str, Any]) -> bool:
        self.check_cost(tool, rule, input_data)
        return bool(await super()._rule_matches(tool, rule, input_data))
