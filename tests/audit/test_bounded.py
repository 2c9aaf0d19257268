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


LONG = "mkdir " + "a" * 4000
"""A command no wildcard-heavy rule can be matched against in the bound."""


def _deny(content: str) -> PermissionContext:
    context = PermissionContext()
    context.deny_rules["Bash"] = [
        PermissionRule(tool_name="Bash", rule_content=content, behavior="deny", source="test")
    ]
    return context


def test_two_wildcards_before_the_end_are_counted_and_a_last_one_is_not() -> None:
    bash = Bash()
    huge = {"command": "a" * 100_000}  # `*a*b` against it: re.fullmatch backtracks 10**10 steps (14 s)
    assert match_cost(bash, "*a*b", huge) == (10**10, 100_000)
    assert match_cost(bash, "*a*b", huge)[0] > MATCH_BUDGET
    assert match_cost(bash, "git * --force *", huge) == (0, 100_000)  # one wildcard before the last: linear
    assert match_cost(bash, "*a*b", {"command": "a" * 5_000})[0] <= MATCH_BUDGET  # 2.5e7: matched
    # the estimate stays printable however long the input and many the wildcards
    assert match_cost(bash, "*a" * 60 + "b", huge)[0] == 10**99


def test_the_mode_matrix_refuses_a_pathological_rule_instead_of_hanging() -> None:
    from nb_hitl.permissions import mode_matrix

    context = _deny("*a*a*a*a*a*b")
    with pytest.raises(DecisionError, match=r"deny Bash\(\*a\*a\*a\*a\*a\*b\) has too many wildcards") as err:
        run_async(mode_matrix([{"tool_name": "Bash", "input": {"command": LONG}}], [Bash()], context))
    assert err.value.field == "rules"
    short = run_async(mode_matrix([{"tool_name": "Bash", "input": {"command": "mkdir aaaaab"}}], [Bash()], context))
    assert {cell["behavior"] for cell in short["rows"][0]["cells"].values()} == {"deny"}


def test_why_a_rule_matches_says_it_was_not_matched_and_a_card_edit_is_refused() -> None:
    from nb_hitl.permissions import explain_match
    from nb_hitl.permissions.explain import validate_rule_edit

    rule = {"tool_name": "Bash", "rule_content": "*a*a*a*a*a*b", "behavior": "deny", "source": "test"}
    text = explain_match(rule, "Bash", {"command": LONG}, tool=Bash())
    assert "may or may not match" in text and "too many wildcards" in text and "not matched" in text
    with pytest.raises(DecisionError, match="too many wildcards") as err:
        validate_rule_edit(Bash(), "*a*a*a*a*a*b", call_input={"command": LONG})
    assert err.value.field == "rule_content"


def test_wildcard_heavy_file_rules_are_decided_against_a_long_path() -> None:
    """Read/Write/Edit/Glob/Grep rules go through fnmatch, which (Python 3.11+)
    puts each ``*`` in an atomic group, so matching is linear: the same
    rule shape that backtracks for Bash is decided at once here."""
    import fnmatch

    from agentscope.tool import Read

    pattern = "*a*a*a*a*a*a*b"
    assert fnmatch.translate(pattern).count("(?>") == 6  # each `*` before a literal: no backtracking into it
    path = "/" + "a/" * 50_000
    assert match_cost(Read(), pattern, {"file_path": path}) == (0, 0)  # not a regex matcher: no bound needed
    context = PermissionContext()
    context.deny_rules["Read"] = [PermissionRule(tool_name="Read", rule_content=pattern, behavior="deny", source="t")]
    got = run_async(try_call(context, [Read()], "Read", {"file_path": path}))
    assert got["behavior"] != "deny"  # decided: the path has no `b`
    matched = run_async(try_call(context, [Read()], "Read", {"file_path": path + "b"}))
    assert matched["behavior"] == "deny"
