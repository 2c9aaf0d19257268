"""The permission explorer on an agent's live context, rule validation, and rule files (import / export), against AgentScope's real PermissionEngine."""

from __future__ import annotations

import asyncio
import json

import pytest
from agentscope.event import ConfirmResult, RequireUserConfirmEvent, UserConfirmResultEvent
from agentscope.message import UserMsg
from agentscope.permission import (
    PermissionBehavior,
    PermissionContext,
    PermissionMode,
    PermissionRule,
)
from agentscope.state import AgentState

from nb_hitl import permissions as perm
from nb_hitl.errors import DecisionError
from nb_hitl.models import Turn, tool_call
from nb_hitl.widgets.permissions import PermissionExplorer
from tests.support import run_async
from tests.unit.test_permission_cases import (  # helpers shared with that module
    Page,
    R,
    make_agent,
    make_tools,
)


# ---------------------------------------------------------------------------
# the agent's live context
# ---------------------------------------------------------------------------
def test_rules_added_in_widget_apply_to_the_agents_next_call():
    """A rule added through the widget lands in the context the agent's
    engine reads: the next call runs without a confirmation."""

    async def run() -> None:
        agent = make_agent([Turn("deleting", [tool_call("delete_file", path="a.txt")]), Turn("done")])
        widget = PermissionExplorer(agent, watch=False)
        page = Page(widget)
        reply = await page.send(
            "add_rule", rule={"tool_name": "delete_file", "rule_content": None, "behavior": "allow"}
        )
        assert reply["ok"], reply
        assert reply["rule"]["source"] == "nb_hitl"
        events = [e async for e in agent.reply_stream(UserMsg("user", "delete a.txt"))]
        assert not any(isinstance(e, RequireUserConfirmEvent) for e in events)
        assert agent.model.remaining == 0  # both turns played: the tool ran, the model answered
        widget.close()

    run_async(run())


def test_always_allow_from_a_confirmation_appears_in_the_explorer():
    async def run() -> None:
        agent = make_agent([Turn("deleting", [tool_call("delete_file", path="a.txt")]), Turn("done")])
        widget = PermissionExplorer(agent, watch=False)
        assert widget.context["rules"] == []
        pending = None
        async for event in agent.reply_stream(UserMsg("user", "delete a.txt")):
            if isinstance(event, RequireUserConfirmEvent):
                pending = event
        assert pending is not None
        tc = pending.tool_calls[0]
        async for _ in agent.reply_stream(
            UserConfirmResultEvent(
                reply_id=pending.reply_id,
                confirm_results=[
                    ConfirmResult(confirmed=True, tool_call=tc.model_copy(deep=True), rules=tc.suggested_rules)
                ],
            )
        ):
            pass
        assert await widget.poll_once() is True  # what the watch task does
        assert [r["label"] for r in widget.context["rules"]] == ["allow delete_file"]
        assert widget.context["rules"][0]["source"] == "suggested"
        assert await widget.poll_once() is False
        widget.close()

    run_async(run())


def test_watch_task_runs_on_the_loop_and_stops_on_close():
    async def run() -> None:
        agent = make_agent()
        widget = PermissionExplorer(agent, watch_interval=0.01)
        task = widget._watch_task
        assert task is not None and not task.done()
        widget.close()
        await asyncio.sleep(0)
        assert task.cancelled() or task.done()

    run_async(run())


def test_replaced_state_engine_context_is_used_and_flagged():
    agent = make_agent()
    agent.state = AgentState()  # the trap: the engine keeps the old context
    view = perm.describe_context(agent)
    assert view["state_in_sync"] is False
    perm.add_rule(agent, R("Bash", "git:*", "allow"))
    assert perm.context_of(agent) is agent._engine.context
    assert agent._engine.context.allow_rules["Bash"][0].rule_content == "git:*"
    assert agent.state.permission_context.allow_rules == {}


def test_mode_matrix_uses_copies_and_leaves_agent_untouched():
    async def run() -> None:
        agent = make_agent()
        perm.add_rule(agent, R("Bash", "git:*", "allow"))
        before = agent._engine.context.model_dump()
        matrix = await perm.mode_matrix(
            [("Bash", {"command": "git push"}), {"tool_name": "Bash", "input": '{"command": "rm -rf /"}'}], None, agent
        )
        assert agent._engine.context.model_dump() == before
        assert matrix["modes"] == ["default", "accept_edits", "explore", "bypass", "dont_ask"]
        row = {m: c["behavior"] for m, c in matrix["rows"][0]["cells"].items()}
        assert row == {
            "default": "allow",
            "accept_edits": "allow",
            "explore": "deny",
            "bypass": "allow",
            "dont_ask": "allow",
        }
        rm = matrix["rows"][1]["cells"]
        assert rm["default"]["bypass_immune"] and rm["default"]["behavior"] == "ask"
        assert rm["bypass"]["behavior"] == "allow" and rm["dont_ask"]["behavior"] == "deny"

        widget = PermissionExplorer(agent, watch=False)
        page = Page(widget)
        reply = await page.send("matrix", calls=[{"tool_name": "Bash", "input": {"command": "git push"}}])
        assert reply["ok"] and widget.matrix["rows"][0]["cells"]["explore"]["behavior"] == "deny"
        # changing the live mode re-decides the last try and the matrix
        await page.send("try_call", tool_name="Bash", input='{"command": "git push"}')
        assert widget.last_try["behavior"] == "allow"
        await page.send("set_mode", mode="explore")
        assert widget.last_try["behavior"] == "deny" and widget.last_try["mode"] == "explore"
        assert widget.matrix["live_mode"] == "explore"
        bad = await page.send("matrix", calls=[{"tool_name": "Bash", "input": {"cmd": "x"}}])
        assert bad["ok"] is False and bad["field"] == "calls[0].input"
        widget.close()

    run_async(run())


def test_try_call_in_another_mode_does_not_change_agent():
    async def run() -> None:
        agent = make_agent()
        result = await perm.try_call(agent, None, "Write", {"file_path": "/srv/proj/x", "content": ""}, mode="bypass")
        assert result["behavior"] == "allow" and result["mode"] == "bypass"
        assert agent._engine.context.mode == PermissionMode.DEFAULT

    run_async(run())


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "data, field",
    [
        ("not a dict", None),
        ({"tool_name": "", "rule_content": None, "behavior": "allow", "source": "s"}, "tool_name"),
        ({"tool_name": " Bash", "rule_content": None, "behavior": "allow", "source": "s"}, "tool_name"),
        ({"tool_name": "Bash", "behavior": "allow", "source": "s"}, "rule_content"),
        ({"tool_name": "Bash", "rule_content": "", "behavior": "allow", "source": "s"}, "rule_content"),
        ({"tool_name": "Bash", "rule_content": 3, "behavior": "allow", "source": "s"}, "rule_content"),
        ({"tool_name": "Bash", "rule_content": "x", "behavior": "passthrough", "source": "s"}, "behavior"),
        ({"tool_name": "Bash", "rule_content": "x", "behavior": "alow", "source": "s"}, "behavior"),
        ({"tool_name": "Bash", "rule_content": "x", "behavior": "allow"}, "source"),
        ({"tool_name": "Bash", "rule_contnet": "x", "behavior": "allow", "source": "s"}, "rule_contnet"),
    ],
)
def test_parse_rule_refuses_with_field(data, field):
    with pytest.raises(DecisionError) as err:
        perm.parse_rule(data)
    assert err.value.field == field
    assert str(err.value)


def test_parse_rule_makes_real_permission_rule():
    rule = perm.parse_rule({"tool_name": "Bash", "rule_content": "git:*", "behavior": "deny", "source": "me"})
    assert isinstance(rule, PermissionRule) and rule.behavior is PermissionBehavior.DENY
    assert perm.rule_label(rule) == "deny Bash(git:*)"


def test_widget_refuses_bad_actions_with_field_and_keeps_context():
    async def run() -> None:
        agent = make_agent()
        widget = PermissionExplorer(agent, watch=False)
        page = Page(widget)
        cases = [
            (("add_rule",), {"rule": {"tool_name": "bash", "rule_content": "x", "behavior": "allow"}}, "tool_name"),
            (("add_rule",), {"rule": {"tool_name": "Bash", "rule_content": "", "behavior": "allow"}}, "rule_content"),
            (("set_mode",), {"mode": "yolo"}, "mode"),
            (("try_call",), {"tool_name": "Bash", "input": "{not json"}, "input"),
            (("try_call",), {"tool_name": "Bash", "input": {"command": 3}}, "input"),
            (("try_call",), {"tool_name": "Nope", "input": {}}, "tool_name"),
            (("remove_rule",), {"rule": R("Bash", "x", "allow")}, "rule"),
            (("frobnicate",), {}, "action"),
        ]
        for (action,), payload, field in cases:
            reply = await page.send(action, **payload)
            assert reply["ok"] is False, (action, reply)
            assert reply["field"] == field, (action, reply)
            assert reply["code"] == "invalid"
        assert perm.describe_context(agent)["rules"] == []
        assert agent._engine.context.mode == PermissionMode.DEFAULT
        # ping is answered by the base widget
        assert (await page.send("ping"))["ok"] is True
        widget.close()

    run_async(run())


def test_add_edit_remove_rules_through_widget():
    async def run() -> None:
        agent = make_agent()
        widget = PermissionExplorer(agent, watch=False)
        page = Page(widget)
        assert (await page.send("add_rule", rule=R("Bash", "git:*", "allow")))["ok"]
        dup = await page.send("add_rule", rule=R("Bash", "git:*", "allow"))
        assert dup["ok"] is False and "already" in dup["error"]
        assert (await page.send("add_rule", rule=R("Bash", "curl", "deny")))["ok"]
        labels = [r["label"] for r in widget.context["by_tool"]["Bash"]]
        assert labels == ["deny Bash(curl)", "allow Bash(git:*)"]
        # edit in place
        reply = await page.send("edit_rule", old=R("Bash", "git:*", "allow"), new=R("Bash", "git status:*", "allow"))
        assert reply["ok"], reply
        assert agent._engine.context.allow_rules["Bash"][0].rule_content == "git status:*"
        # a refused edit changes nothing
        bad = await page.send(
            "edit_rule", old=R("Bash", "git status:*", "allow"), new=R("Bash", "git:*", "passthrough")
        )
        assert bad["ok"] is False and bad["field"] == "behavior"
        assert agent._engine.context.allow_rules["Bash"][0].rule_content == "git status:*"
        # edit that changes the behavior moves the rule
        reply = await page.send("edit_rule", old=R("Bash", "curl", "deny"), new=R("Bash", "curl", "ask"))
        assert reply["ok"]
        assert "Bash" not in agent._engine.context.deny_rules
        assert agent._engine.context.ask_rules["Bash"][0].rule_content == "curl"
        assert (await page.send("remove_rule", rule=R("Bash", "curl", "ask")))["ok"]
        assert "Bash" not in agent._engine.context.ask_rules
        assert [r["label"] for r in widget.context["rules"]] == ["allow Bash(git status:*)"]
        # working directories
        assert (await page.send("add_working_directory", path="/srv/proj"))["ok"]
        assert widget.context["working_directories"] == [{"path": "/srv/proj", "source": "nb_hitl"}]
        res = await perm.try_call(
            agent, None, "Write", {"file_path": "/srv/proj/x.py", "content": ""}, mode="accept_edits"
        )
        assert res["behavior"] == "allow"
        rel = await page.send("add_working_directory", path="relative/dir")
        assert rel["ok"] is False and rel["field"] == "path"
        assert (await page.send("remove_working_directory", path="/srv/proj"))["ok"]
        widget.close()

    run_async(run())


def test_constructor_refuses_unknown_kwargs_and_non_agents():
    agent = make_agent()
    with pytest.raises(TypeError):
        PermissionExplorer(agent, colour="red")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        PermissionExplorer(object())
    w = perm.explore(agent, watch=False)
    assert isinstance(w, PermissionExplorer)
    assert [t["name"] for t in w.tools] == ["Bash", "Read", "Write", "Edit", "delete_file", "lookup"]
    assert {t["name"]: t["read_only"] for t in w.tools}["Read"] is True
    w.close()


# ---------------------------------------------------------------------------
# import / export
# ---------------------------------------------------------------------------
def test_export_import_round_trip():
    ctx = PermissionContext()
    for r in (R("Bash", "git:*", "allow"), R("Read", "/etc/*", "deny"), R("delete_file", None, "ask")):
        perm.add_rule(ctx, r)
    text = perm.export_rules(ctx)
    data = json.loads(text)
    assert data == [R("Read", "/etc/*", "deny"), R("delete_file", None, "ask"), R("Bash", "git:*", "allow")]
    for item in data:  # AgentScope's own shape
        PermissionRule.model_validate(item)
    other = PermissionContext()
    rules = perm.import_rules(text, into=other)
    assert len(rules) == 3
    assert perm.describe_context(other)["rules"] == perm.describe_context(ctx)["rules"]
    perm.import_rules(text, into=other)  # importing again adds no duplicates
    assert len(perm.describe_context(other)["rules"]) == 3


MALFORMED = """[
  {"tool_name": "Bash", "rule_content": "git:*", "behavior": "allow", "source": "team"},
  {"tool_name": "Read",
   "rule_content": "/etc/*",
   "behavior": "alow",
   "source": "team"}
]
"""


@pytest.mark.parametrize(
    "text, line, field",
    [
        (MALFORMED, 5, "rules[1].behavior"),
        (
            '[\n  {"tool_name": "Bash", "rule_content": "x", "behavior": "allow", "source": "s"},\n  {"tool_name": "Bash", "behavior": "deny", "source": "s"}\n]',
            3,
            "rules[1].rule_content",
        ),
        (
            '[\n  {"tool_name": "Bash", "rule_content": "x", "behavior": "allow", "source": "s"}\n  {"tool_name": "Read"}\n]',
            3,
            None,
        ),
        ('{"tool_name": "Bash"}', 1, None),
        ('[\n  "allow Bash(git:*)"\n]', 2, "rules[0]"),
        (
            '[{"tool_name": "Bash", "rule_content": "x", "behavior": "allow", "source": "s"},\n\n {"tool_name": "Bash",\n  "rule_contnet": "y", "behavior": "allow", "source": "s"}]',
            4,
            "rules[1].rule_contnet",
        ),
        (
            '[\n  {"tool_name": "bash", "rule_content": "x", "behavior": "allow", "source": "s"}\n]',
            2,
            "rules[0].tool_name",
        ),
    ],
)
def test_import_refuses_malformed_with_line_and_field_nothing_applied(text, line, field):
    agent = make_agent()
    perm.add_rule(agent, R("Bash", "ls:*", "allow"))
    before = agent._engine.context.model_dump()
    with pytest.raises(perm.RuleFileError) as err:
        perm.import_rules(text, into=agent, known_tools=[t.name for t in make_tools()])
    assert err.value.line == line
    assert err.value.field == field
    assert str(err.value).startswith(f"line {line}")
    assert agent._engine.context.model_dump() == before  # nothing half-applied


def test_import_through_widget_all_or_nothing_and_replace():
    async def run() -> None:
        agent = make_agent()
        widget = PermissionExplorer(agent, watch=False)
        page = Page(widget)
        await page.send("add_rule", rule=R("Bash", "ls:*", "allow"))
        bad = await page.send("import", text=MALFORMED)
        assert bad["ok"] is False and bad["field"] == "rules[1].behavior" and bad["error"].startswith("line 5")
        assert [r["label"] for r in widget.context["rules"]] == ["allow Bash(ls:*)"]
        good = MALFORMED.replace('"alow"', '"deny"')
        ok = await page.send("import", text=good, replace=True)
        assert ok["ok"] and ok["count"] == 2
        assert sorted(r["label"] for r in widget.context["rules"]) == ["allow Bash(git:*)", "deny Read(/etc/*)"]
        exported = await page.send("export")
        assert json.loads(exported["text"]) == json.loads(perm.export_rules(agent))
        widget.close()

    run_async(run())
