"""Hostile and big inputs to the permission explorer, and the helpers for
"Always allow" (``rule_reach``, ``validate_rule_edit``).

Everything is checked against AgentScope's real ``PermissionEngine`` and
builtin tools: deep JSON fails with a readable error instead of
``RecursionError``; tool names with look-alike, invisible or bidi
characters are refused with the code point named; ``rule_reach`` wording
is backed by the engine matching its own example; an edited suggested rule
is checked against the call being confirmed.
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from agentscope.permission import (
    PermissionBehavior,
    PermissionContext,
    PermissionEngine,
    PermissionRule,
)
from agentscope.tool import Bash, FunctionTool, Read, Write

from nb_hitl import permissions as perm
from nb_hitl.errors import DecisionError
from nb_hitl.permissions.shell_check import rule_covers
from nb_hitl.widgets.permissions import MAX_MATRIX_CALLS, PermissionExplorer
from tests.support import run_async
from tests.unit.test_permission_cases import Page, R, make_agent, make_tools

KNOWN = [t.name for t in make_tools()]


def rule(tool: str, content: str | None, behavior: str = "allow") -> PermissionRule:
    return PermissionRule(
        tool_name=tool, rule_content=content, behavior=PermissionBehavior(behavior), source="userSettings"
    )


def engine_matches(tool, r: PermissionRule, tool_input: dict) -> bool:
    async def run() -> bool:
        return bool(await PermissionEngine(PermissionContext())._rule_matches(tool, r, tool_input))

    return run_async(run())


def deep_dict(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


# ---------------------------------------------------------------------------
# deep JSON
# ---------------------------------------------------------------------------
def test_import_of_deeply_nested_json_is_a_rule_file_error_and_changes_nothing():
    agent = make_agent()
    perm.add_rule(agent, R("Bash", "ls:*", "allow"))
    before = agent._engine.context.model_dump()
    text = "[\n" + json.dumps(R("Bash", "git:*", "allow")) + ",\n" + "[" * 100_000 + "]" * 100_000 + "\n]"
    with pytest.raises(perm.RuleFileError) as err:
        perm.import_rules(text, into=agent, known_tools=KNOWN)
    assert err.value.line == 3  # the line where the nesting runs away
    assert "nested" in str(err.value) or "nests" in str(err.value)
    assert str(err.value).startswith("line 3")
    assert agent._engine.context.model_dump() == before


def test_import_nested_but_readable_value_is_refused_by_field():
    text = json.dumps([{**R("Bash", None, "allow"), "rule_content": json.loads("[" * 300 + "]" * 300)}])
    with pytest.raises(perm.RuleFileError) as err:
        perm.import_rules(text)
    assert err.value.field == "rules[0].rule_content"


@pytest.mark.parametrize(
    "tool_input",
    [
        '{"command": ' + "[" * 100_000 + "]" * 100_000 + "}",
        {"command": "ls", "extra": deep_dict(5_000)},
    ],
    ids=["json-text", "dict"],
)
def test_try_call_with_deeply_nested_input_fails_on_the_input_field(tool_input):
    async def run() -> None:
        with pytest.raises(DecisionError) as err:
            await perm.try_call(PermissionContext(), make_tools(), "Bash", tool_input)
        assert err.value.field == "input"
        assert "nested" in str(err.value)
        with pytest.raises(DecisionError) as err2:
            await perm.mode_matrix([{"tool_name": "Bash", "input": tool_input}], make_tools(), PermissionContext())
        assert err2.value.field == "calls[0].input"

    run_async(run())


def test_widget_answers_deep_input_and_deep_rules_file_with_a_field_error():
    async def run() -> None:
        agent = make_agent()
        widget = PermissionExplorer(agent, watch=False)
        page = Page(widget)
        try:
            deep = '{"command": ' + "[" * 50_000 + "]" * 50_000 + "}"
            for action, payload, field in [
                ("try_call", {"tool_name": "Bash", "input": deep}, "input"),
                ("explain", {"rule": R("Bash", "git:*", "allow"), "tool_name": "Bash", "input": deep}, "input"),
            ]:
                reply = await page.send(action, **payload)
                assert reply["ok"] is False, reply
                assert reply["field"] == field
            reply = await page.send("import", text="[" * 50_000 + "]" * 50_000)
            assert reply["ok"] is False
            assert "line 1" in reply["error"]
            assert perm.describe_context(agent)["rules"] == []
            assert (await page.send("ping"))["ok"] is True
        finally:
            widget.close()

    run_async(run())


# ---------------------------------------------------------------------------
# big imports: same result as before, one pass
# ---------------------------------------------------------------------------
def test_import_skips_rules_already_present_and_duplicates_within_the_file():
    ctx = PermissionContext()
    rows = [R("Bash", f"cmd{i}:*", "allow") for i in range(500)]
    rows.append({**R("Bash", "cmd3:*", "allow"), "source": "other"})  # same effect, other source
    rows.append(R("Bash", "cmd3:*", "deny"))  # other behavior: another rule
    text = json.dumps(rows)
    assert len(perm.import_rules(text, into=ctx)) == 502
    assert len(perm.import_rules(text, into=ctx)) == 502
    view = perm.describe_context(ctx)
    assert view["counts"] == {"allow": 500, "deny": 1, "ask": 0}
    # engine order kept: the file's order within a bucket
    assert [r["rule_content"] for r in view["by_tool"]["Bash"] if r["behavior"] == "allow"][:3] == [
        "cmd0:*",
        "cmd1:*",
        "cmd2:*",
    ]


def test_import_error_far_into_a_big_file_names_its_line():
    rows = [R("Bash", f"cmd{i}:*", "allow") for i in range(5_000)]
    rows[4_321] = R("Bash", f"cmd{4_321}:*", "sometimes")
    text = "[\n  " + ",\n  ".join(json.dumps(r) for r in rows) + "\n]\n"
    with pytest.raises(perm.RuleFileError) as err:
        perm.import_rules(text)
    assert err.value.line == 4_323
    assert err.value.field == "rules[4321].behavior"


# ---------------------------------------------------------------------------
# confusable tool names
# ---------------------------------------------------------------------------
CONFUSABLE = [
    ("delete_fil\u0435", "U+0435", "CYRILLIC SMALL LETTER IE"),
    ("d\u0435lete_file", "U+0435", "CYRILLIC"),
    ("delete\u200b_file", "U+200B", "ZERO WIDTH SPACE"),
    ("\u202edelete_file", "U+202E", "RIGHT-TO-LEFT OVERRIDE"),
    ("delete_file\u00a0", "U+00A0", "NO-BREAK SPACE"),
    ("B\u0430sh", "U+0430", "CYRILLIC SMALL LETTER A"),
]


@pytest.mark.parametrize("name,code,uname", CONFUSABLE)
def test_confusable_tool_names_are_refused_naming_the_code_point(name, code, uname):
    agent = make_agent()
    with pytest.raises(DecisionError) as err:
        perm.add_rule(agent, {**R(name, None, "allow")}, known_tools=KNOWN)
    assert err.value.field == "tool_name"
    assert code in str(err.value) and uname in str(err.value)
    assert "Did you mean the tool" in str(err.value)
    # also as a PermissionRule object, and without knowing the tools
    with pytest.raises(DecisionError):
        perm.add_rule(agent, rule(name, None))
    with pytest.raises(perm.RuleFileError) as ferr:
        perm.import_rules("[\n" + json.dumps(R(name, None, "allow")) + "\n]", into=agent)
    assert ferr.value.field == "rules[0].tool_name" and ferr.value.line == 2
    assert perm.describe_context(agent)["rules"] == []


def test_cyrillic_rule_would_never_apply_to_the_real_tool():
    # Why refusing matters: the engine keys rules by the exact name.
    ctx = PermissionContext()
    PermissionEngine(ctx).add_rule(rule("delete_fil\u0435", None, "deny"))
    tool = make_tools()[4]
    assert tool.name == "delete_file"

    async def run():
        return await PermissionEngine(ctx).check_permission(tool, {"path": "/x"})

    assert run_async(run()).behavior != PermissionBehavior.DENY


def test_non_ascii_name_of_a_real_tool_is_accepted_exactly_and_old_rules_stay_removable():
    def löschen(path: str) -> str:
        """Delete.

        Args:
            path: the file.
        """
        return path

    tool = FunctionTool(löschen)
    ctx = PermissionContext()
    with pytest.raises(DecisionError):
        perm.add_rule(ctx, R("löschen", None, "allow"))  # not known: refused
    added = perm.add_rule(ctx, R("löschen", None, "allow"), known_tools=[tool.name])
    assert added.tool_name == "löschen"
    # a confusable rule that got in some other way can still be removed
    PermissionEngine(ctx).add_rule(rule("delete\u200b_file", None))
    perm.remove_rule(ctx, R("delete\u200b_file", None, "allow"))
    assert [r["tool_name"] for r in perm.describe_context(ctx)["rules"]] == ["löschen"]


@pytest.mark.parametrize("content,code", [("git\u200b:*", "U+200B"), ("ls\u202e", "U+202E"), ("a\x00b", "U+0000")])
def test_invisible_characters_in_rule_content_are_refused(content, code):
    with pytest.raises(DecisionError) as err:
        perm.parse_rule(R("Bash", content, "allow"))
    assert err.value.field == "rule_content" and code in str(err.value)


def test_plain_names_and_unicode_content_still_accepted():
    for name in ["Bash", "delete_file", "mcp__fs__read", "server.tool", "ns/tool-2"]:
        assert perm.parse_rule(R(name, None, "allow")).tool_name == name
    assert perm.parse_rule(R("Read", "/data/café/*", "allow")).rule_content == "/data/café/*"


# ---------------------------------------------------------------------------
# rule_reach
# ---------------------------------------------------------------------------
def _example(line: str) -> str:
    m = re.search(r"e\.g\. `([^`]+)`", line)
    assert m, line
    return m.group(1).replace("…", "x")


def test_rule_reach_bash_prefix_says_chained_commands_and_engine_agrees():
    r = rule("Bash", "git status:*")
    line = perm.rule_reach(r)
    assert line.startswith("in a Session covers `git status` and `git status` with more arguments")
    assert "AgentScope's engine alone (a Session with shell_rules=False) also allows anything chained after" in line
    assert "\n" not in line
    example = _example(line)
    assert "&&" in example
    assert engine_matches(Bash(), r, {"command": example})
    # what a Session covers of the same line, by the shell rules' own matching
    assert run_async(rule_covers(Bash(), r, {"command": example.replace("…", "x")})) == ["git status"]
    assert run_async(rule_covers(Bash(), r, {"command": "git status --short"})) == ["git status --short"]


def test_rule_reach_bash_without_star_is_a_substring_match_anywhere():
    r = rule("Bash", "docker run")
    line = perm.rule_reach(r)
    assert "substring" in line and "anywhere" in line
    example = _example(line)
    assert not example.startswith("docker run")
    assert engine_matches(Bash(), r, {"command": example})


def test_rule_reach_bash_wildcard_swallows_chains():
    r = rule("Bash", "make *")
    line = perm.rule_reach(r)
    example = _example(line)
    assert "&&" in example and engine_matches(Bash(), r, {"command": example})


def test_rule_reach_write_star_crosses_slash_and_engine_agrees():
    r = rule("Write", "/srv/app/*.txt")
    line = perm.rule_reach(r)
    assert "crosses `/`" in line
    example = _example(line)
    assert example.count("/") > "/srv/app/x.txt".count("/")
    assert engine_matches(Write(), r, {"file_path": example, "content": ""})


@pytest.mark.parametrize("content", ["~/**", "/home/ann/**", "/home/ann/*"])
def test_rule_reach_path_rule_covering_home(content):
    r = rule("Edit", content)
    line = perm.rule_reach(r, home="/home/ann")
    assert "home folder" in line
    probe = "~/.ssh/id_rsa" if content.startswith("~") else "/home/ann/.ssh/id_rsa"
    assert engine_matches(Read(), rule("Read", content), {"file_path": probe})


def test_rule_reach_whole_tool_and_function_tool_and_deny():
    assert perm.rule_reach(rule("delete_file", None)).startswith("allows every call of delete_file")
    assert perm.rule_reach(rule("Bash", None, "deny")).startswith("denies every call of Bash")
    line = perm.rule_reach(rule("delete_file", "/tmp/*"), tool=make_tools()[4])
    assert line.startswith("matches nothing")
    assert not engine_matches(make_tools()[4], rule("delete_file", "/tmp/*"), {"path": "/tmp/x"})
    assert "every file on the machine" in perm.rule_reach(rule("Write", "*"))


def test_rule_reach_relative_pattern_never_absolute():
    line = perm.rule_reach(rule("Write", "src/main.py"))
    assert "never an absolute path" in line
    assert not engine_matches(Write(), rule("Write", "src/main.py"), {"file_path": "/work/src/main.py", "content": ""})


ABSOLUTE_PROBES = ["/home/user/.config/evil.txt", "/home/user/a/b/secrets/key", "/etc/passwd", "/srv/src/main.py",
                   "/work/x.py", "/src/a/b", "/home/user/src/main.py"]  # fmt: skip


@pytest.mark.parametrize(
    ("tool", "content"),
    [
        (Write(), "*.txt"),
        (Read(), "*.txt"),
        (Read(), "**/secrets/**"),
        (Write(), "src/**"),
        (Write(), "src/main.py"),
        (Read(), "?etc/passwd"),
        (Read(), "src/*.py"),
    ],
)
def test_rule_reach_on_absolute_paths_is_what_agentscopes_matcher_does(tool, content):
    """What ``rule_reach`` (the card's "Always allow" line, the explorer's "Add rule" preview) says of
    absolute paths is what AgentScope's matcher does: "never" only when no absolute path matches, and
    the absolute example it names does match (``Write(*.txt)`` reaches ``/home/user/.config/evil.txt``)."""
    r = rule(tool.name, content)
    line = perm.rule_reach(r, home="/home/user")
    matched = [p for p in ABSOLUTE_PROBES if engine_matches(tool, r, {"file_path": p, "content": ""})]
    if "never an absolute path" in line:
        assert matched == [], line
    else:
        assert "absolute paths" in line, line
        assert engine_matches(tool, r, {"file_path": _example(line.split("absolute paths", 1)[1]), "content": ""})
        assert matched, line
    for p in matched:  # explain_match agrees with the matcher on each
        text = perm.explain_match(r, tool.name, {"file_path": p, "content": ""}, tool=tool)
        assert f"`{p}` matches." in text and "does not match" not in text, text


# ---------------------------------------------------------------------------
# validate_rule_edit
# ---------------------------------------------------------------------------
def test_narrowed_suggested_rule_still_matches_the_call_on_the_real_engine():
    async def run() -> None:
        call = {"command": "git push origin main"}
        result = await perm.try_call(PermissionContext(), make_tools(), "Bash", call)
        assert result["behavior"] == "ask"
        suggested = result["engine"]["suggested_rules"][0]  # AgentScope's own suggestion
        assert suggested["rule_content"] == "git push:*"
        narrowed = perm.validate_rule_edit(Bash(), "git push origin:*", call_input=call)
        assert isinstance(narrowed, PermissionRule)
        assert narrowed.behavior == PermissionBehavior.ALLOW
        ctx = PermissionContext()
        PermissionEngine(ctx).add_rule(narrowed)
        assert (await PermissionEngine(ctx).check_permission(Bash(), call)).behavior == PermissionBehavior.ALLOW
        other = {"command": "git push upstream main"}
        assert (await PermissionEngine(ctx).check_permission(Bash(), other)).behavior == PermissionBehavior.ASK

    run_async(run())


def test_narrowed_rule_that_misses_the_call_is_refused():
    with pytest.raises(DecisionError) as err:
        perm.validate_rule_edit(Bash(), "git push upstream:*", call_input={"command": "git push origin main"})
    assert err.value.field == "rule_content"
    with pytest.raises(DecisionError):
        perm.validate_rule_edit(
            "Write", "/srv/other/**", call_input={"file_path": "/srv/p/a.txt", "content": "x"}, known_tools=KNOWN
        )
    ok = perm.validate_rule_edit("Write", "/srv/p/*.txt", call_input={"file_path": "/srv/p/a.txt", "content": "x"})
    assert ok.rule_content == "/srv/p/*.txt"


@pytest.mark.parametrize(
    "tool,content,kwargs,field",
    [
        ("Bash", "", {}, "rule_content"),
        ("Bash", "   ", {}, "rule_content"),
        ("Bash", "git:* ", {}, "rule_content"),
        ("Bash", "git\u200b:*", {}, "rule_content"),
        ("B\u0430sh", "git:*", {"known_tools": KNOWN}, "tool_name"),
        ("Bash", "git:*", {"behavior": "maybe"}, "behavior"),
        ("Bash", "git:*", {"behavior": "passthrough"}, "behavior"),
        ("delete_file", "/tmp/*", {}, "rule_content"),
    ],
)
def test_validate_rule_edit_refuses(tool, content, kwargs, field):
    with pytest.raises(DecisionError) as err:
        perm.validate_rule_edit(tool, content, **kwargs)
    assert err.value.field == field


def test_validate_rule_edit_whole_tool_and_function_tool():
    r = perm.validate_rule_edit(make_tools()[4], None, call_input={"path": "/x"})
    assert r.rule_content is None and r.tool_name == "delete_file"
    assert engine_matches(make_tools()[4], r, {"path": "/x"})


def test_widget_reach_action_uses_the_agents_tool():
    async def run() -> None:
        agent = make_agent()
        widget = PermissionExplorer(agent, watch=False)
        page = Page(widget)
        try:
            reply = await page.send("reach", rule={"tool_name": "Bash", "rule_content": "git:*", "behavior": "allow"})
            assert reply["ok"] and reply["text"].startswith(
                "This rule in a Session covers `git` and `git` with more arguments"
            )
            # the line's Markdown as the kernel's sanitised HTML, as a card's reach: its patterns as code
            assert reply["html"].startswith("<p>This rule in a Session covers <code>git</code> and <code>git</code>")
            reply = await page.send(
                "reach", rule={"tool_name": "delete_file", "rule_content": "x", "behavior": "allow"}
            )
            assert reply["ok"] and reply["text"].startswith("This rule matches nothing")
            reply = await page.send(
                "reach",
                rule={"tool_name": "Bash", "rule_content": "<img src=x onerror=alert(1)>:*", "behavior": "allow"},
            )
            assert reply["ok"] and "<img" in reply["text"] and "<img" not in reply["html"]
            reply = await page.send("reach", rule={"tool_name": "B\u0430sh", "rule_content": "x", "behavior": "allow"})
            assert reply["ok"] is False and reply["field"] == "tool_name" and "U+0430" in reply["error"]
            assert perm.describe_context(agent)["rules"] == []  # asking changes nothing
        finally:
            widget.close()

    run_async(run())


def test_rule_written_as_a_label_in_tool_name_gets_a_hint():
    with pytest.raises(DecisionError) as err:
        perm.parse_rule(R("Bash(git:*)", None, "allow"))
    assert err.value.field == "tool_name"
    assert "U+0028 LEFT PARENTHESIS" in str(err.value)
    assert "tool_name 'Bash', rule_content 'git:*'" in str(err.value)


# page messages with the wrong type or too much work: a clear refusal by field, never an internal error
def test_widget_refuses_a_working_directory_that_is_not_text_and_a_matrix_of_too_many_calls():
    async def run() -> None:
        agent = make_agent()
        widget = PermissionExplorer(agent, watch=False)
        page = Page(widget)
        try:
            for path in ({"a": 1}, ["/tmp"], 5, None):
                reply = await page.send("remove_working_directory", path=path)
                assert reply["ok"] is False and reply["code"] == "invalid", reply
                assert reply["field"] == "path" and "nb_hitl could not handle" not in reply["error"]
            call = {"tool_name": "Bash", "input": {"command": "ls"}}
            reply = await page.send("matrix", calls=[call] * (MAX_MATRIX_CALLS + 1))
            assert reply["ok"] is False and reply["field"] == "calls", reply
            assert reply["error"].startswith(f"The matrix decides at most {MAX_MATRIX_CALLS} calls at a time;")
            assert f"you gave {MAX_MATRIX_CALLS + 1}." in reply["error"]
            assert widget.matrix == {} and widget.matrix_calls == []  # nothing decided, nothing kept
            reply = await page.send("matrix", calls=[call] * 2)
            assert reply["ok"] is True and len(reply["matrix"]["rows"]) == 2
        finally:
            widget.close()

    run_async(run())


def test_mode_matrix_from_code_takes_more_calls_and_lets_the_loop_run():
    """From code the matrix has no page bound; between calls the loop gets a turn (a click is answered meanwhile)."""

    async def run() -> tuple[int, int]:
        agent = make_agent()
        ticks = 0
        done = False

        async def ticker() -> None:
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0)

        counting = asyncio.ensure_future(ticker())
        calls = [("Bash", {"command": f"echo {i}"}) for i in range(MAX_MATRIX_CALLS + 20)]
        matrix = await perm.mode_matrix(calls, None, agent)
        done = True
        await counting
        return len(matrix["rows"]), ticks

    rows, ticks = run_async(run())
    assert rows == MAX_MATRIX_CALLS + 20
    assert ticks >= MAX_MATRIX_CALLS  # the loop ran between the calls, not only after the last
