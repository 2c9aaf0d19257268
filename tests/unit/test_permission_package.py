"""The ``nb_hitl.permissions`` package: its public names, no import cycle
with the widget, the watch loop's cheap fingerprint, and bounded traces."""

from __future__ import annotations

import json
import subprocess
import sys

from agentscope.permission import PermissionContext, PermissionEngine, PermissionMode
from agentscope.tool import Bash

from nb_hitl import _agentscope
from nb_hitl import permissions as perm
from tests.support import run_async
from tests.unit.test_permission_cases import R, make_agent, make_tools

PUBLIC = [
    "MODES", "RULE_BEHAVIORS", "RuleFileError", "context_of", "engine_of", "describe_context", "parse_rule",
    "rule_to_dict", "rule_label", "add_rule", "remove_rule", "edit_rule", "set_mode", "add_working_directory",
    "remove_working_directory", "list_tools", "get_tool", "try_call", "mode_matrix", "explain_match",
    "export_rules", "import_rules", "explore", "rule_reach", "validate_rule_edit",
]  # fmt: skip


def test_public_names_and_aliases():
    for name in PUBLIC:
        assert name in perm.__all__ and hasattr(perm, name), name
    agent = make_agent()
    assert perm.engine_of(agent) is _agentscope.permission_engine(agent) is agent._engine
    assert perm.context_of(agent) is agent._engine.context


def test_importing_the_logic_does_not_import_the_widget():
    code = (
        "import sys, nb_hitl.permissions as p; "
        "assert 'nb_hitl.widgets.permissions' not in sys.modules, 'widget imported'; "
        "import nb_hitl.widgets.permissions; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_context_fingerprint_follows_every_change_of_the_view():
    agent = make_agent()
    seen = [perm.rules.context_fingerprint(agent)]

    def changed() -> bool:
        fp = perm.rules.context_fingerprint(agent)
        new = fp != seen[-1]
        seen.append(fp)
        return new

    assert not changed()
    perm.add_rule(agent, R("Bash", "git:*", "allow"))
    assert changed()
    agent._engine.context.allow_rules["Bash"][0].source = "elsewhere"  # changed in place
    assert changed()
    perm.set_mode(agent, PermissionMode.BYPASS)
    assert changed()
    perm.add_working_directory(agent, "/srv/proj")
    assert changed()
    perm.remove_rule(agent, {**R("Bash", "git:*", "allow"), "source": "elsewhere"})
    assert changed()
    assert not changed()


def test_try_call_trace_lists_matching_rules_and_bounds_the_others():
    ctx = PermissionContext()
    engine = PermissionEngine(ctx)
    text = json.dumps([R("Bash", f"job{i}:*", "allow") for i in range(400)] + [R("Bash", "make:*", "allow")])
    perm.import_rules(text, into=ctx)

    async def run() -> dict:
        return await perm.try_call(engine, [Bash()], "Bash", {"command": "make all"})

    result = run_async(run())
    assert result["behavior"] == "allow"
    matched = [c for c in result["rules_checked"] if c["matched"]]
    assert [c["label"] for c in matched] == ["allow Bash(make:*)"]
    unmatched = [c for c in result["rules_checked"] if not c["matched"]]
    assert len(unmatched) == perm.engine.MAX_UNMATCHED_LISTED
    assert result["rules_omitted"] == 400 - perm.engine.MAX_UNMATCHED_LISTED
    small = run_async(perm.try_call(PermissionContext(), make_tools(), "Bash", {"command": "ls"}))
    assert small["rules_omitted"] == 0
