"""A wildcard-heavy Bash rule against a long command is refused with a clear
error in the permission explorer, not matched for minutes (AgentScope's
Bash.match_rule backtracks in re.fullmatch)."""

from __future__ import annotations

import pytest
from agentscope.permission import PermissionContext, PermissionRule
from agentscope.tool import Bash

from nb_hitl.errors import DecisionError
from nb_hitl.permissions import try_call
from nb_hitl.permissions.bounded import MATCH_BUDGET, match_cost
from tests.support import run_async


def test_match_cost_flags_only_regex_rules_with_many_wildcards() -> None:
    bash, long_input = Bash(), {"command": "mkdir " + "a" * 4000}
    assert match_cost(bash, "*a*a*a*a*a*b", long_input)[0] > MATCH_BUDGET
    assert match_cost(bash, "mkdir:*", long_input) == (0, 4006)  # a prefix rule is linear
    assert match_cost(bash, "*a*", long_input) == (0, 4006)  # one backtracking point
    assert match_cost(bash, "*a*a*a*a*a*b", {"command": "mkdir x"})[0] <= MATCH_BUDGET


def test_the_explorer_refuses_a_pathological_rule_naming_it() -> None:
    context = PermissionContext()
    context.deny_rules["Bash"] = [
        PermissionRule(tool_name="Bash", rule_content="*a*a*a*a*a*b", behavior="deny", source="test")
    ]
    with pytest.raises(DecisionError, match=r"deny Bash\(\*a\*a\*a\*a\*a\*b\)") as err:
        run_async(try_call(context, [Bash()], "Bash", {"command": "mkdir " + "a" * 4000}))
    assert err.value.field == "rules"
    # a short command is matched as usual
    got = run_async(try_call(context, [Bash()], "Bash", {"command": "mkdir aaaaab"}))
    assert got["behavior"] == "deny"
