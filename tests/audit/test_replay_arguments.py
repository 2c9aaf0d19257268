"""``replay``'s candidate rules in a shape it does not take get an error naming the shapes it does
take (not "got str" from iterating a dict's keys, nor a raw ``TypeError``), before anything is read."""

from __future__ import annotations

from typing import Any

import pytest
from agentscope.tool import Bash

from nb_hitl.audit import replay
from nb_hitl.errors import DecisionError
from tests.support import run_async

RULE = {"tool_name": "Bash", "rule_content": "git:*", "behavior": "allow"}


@pytest.mark.parametrize(
    ("rules", "field", "said"),
    [
        ({"mode": "default", "rules": [RULE]}, "rules", "got a dict with keys 'mode', 'rules'. Pass its list as rules"),
        (None, "rules", "got None."),
        ('[{"tool_name": "Bash"}]', "rules", "got text."),
        (5, "rules", "got int."),
        ([RULE, "mode"], "rules[1]", "rules[1] must be a PermissionRule or a rule dict"),
    ],
)
def test_rules_in_another_shape_are_refused_naming_the_shapes(rules: Any, field: str, said: str) -> None:
    with pytest.raises(DecisionError) as err:
        run_async(replay([], rules, [Bash()]))
    assert err.value.field == field
    assert said in str(err.value)
    assert "a list of rules" in str(err.value) or "rule dict like" in str(err.value)


def test_the_same_rules_as_a_list_replay() -> None:
    frame = run_async(replay([], [RULE], [Bash()], mode="default"))
    assert len(frame) == 0 and list(frame.attrs["rules"]["rule"]) == ["allow Bash(git:*)"]
