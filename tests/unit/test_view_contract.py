"""The page and the kernel agree on what a pause looks like.

``js/types.ts`` declares the TypeScript ``PauseView`` (and ``SuggestedRuleView``)
the reply widget draws; :mod:`nb_hitl.pauses` declares the same dicts as
``TypedDict`` s, which ``Pause.to_view()`` returns. A key added, renamed or
dropped on one side only fails here, not in a browser. The kinds and statuses
(``PauseKind``, ``PauseStatus``) must match too.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from agentscope.message import ToolCallBlock
from agentscope.permission import PermissionBehavior, PermissionRule

import nb_hitl.messages as messages
import nb_hitl.pauses as pauses

TYPES_TS = Path(__file__).resolve().parents[2] / "js" / "types.ts"


def ts_interface_keys(source: str, name: str) -> set[str]:
    """The property names of ``export interface <name> { ... }`` in TypeScript source."""
    match = re.search(r"export interface " + re.escape(name) + r"\s*\{(.*?)\n\}", source, flags=re.S)
    assert match, f"no interface {name} in js/types.ts"
    body = re.sub(r"/\*.*?\*/|//[^\n]*", "", match.group(1), flags=re.S)
    return set(re.findall(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\??\s*:", body, flags=re.M))


def ts_string_union(source: str, name: str) -> set[str]:
    """The members of ``export type <name> = "a" | "b" ...;``."""
    match = re.search(r"export type " + re.escape(name) + r"\s*=([^;]*);", source)
    assert match, f"no type {name} in js/types.ts"
    return set(re.findall(r'"([^"]+)"', match.group(1)))


@pytest.fixture(scope="module")
def source() -> str:
    return TYPES_TS.read_text(encoding="utf-8")


def test_ts_parser_reads_nested_and_optional_keys() -> None:
    ts = "export interface X {\n  a: string;\n  // c: no\n  b?: { inner: number } | null;\n}\n"
    assert ts_interface_keys(ts, "X") == {"a", "b"}


def test_pause_view_keys_match(source: str) -> None:
    py_keys = set(typing.get_type_hints(pauses.PauseView))
    assert ts_interface_keys(source, "PauseView") == py_keys


def test_suggested_rule_view_keys_match(source: str) -> None:
    py_keys = set(typing.get_type_hints(pauses.SuggestedRuleView))
    assert ts_interface_keys(source, "SuggestedRuleView") == py_keys


def test_to_view_returns_exactly_the_declared_keys() -> None:
    rule = PermissionRule(tool_name="Bash", rule_content="ls", behavior=PermissionBehavior.ALLOW, source="session")
    call = ToolCallBlock(id="call-1", name="Bash", input='{"command": "ls"}', suggested_rules=[rule])
    view = pauses.Pause(reply_id="r1", tool_call=call, kind="confirm", suggested_rules=[rule]).to_view()
    assert set(view) == set(typing.get_type_hints(pauses.PauseView))
    assert [set(r) for r in view["suggested_rules"]] == [set(typing.get_type_hints(pauses.SuggestedRuleView))]


def test_kinds_and_statuses_match(source: str) -> None:
    assert ts_string_union(source, "PauseKind") == set(typing.get_args(pauses.PauseKind))
    assert ts_string_union(source, "PauseStatus") == set(typing.get_args(pauses.PauseStatus))


MESSAGES_TS = TYPES_TS.parent / "messages.ts"


def ts_union_members(source: str, name: str) -> dict[str, set[str]]:
    """The members of ``export type <name> = | { action: "a"; x?: T } | ...;``: action -> its other keys."""
    match = re.search(r"export type " + re.escape(name) + r"\s*=(.*?);\n", source, flags=re.S)
    assert match, f"no type {name} in js/messages.ts"
    members: dict[str, set[str]] = {}
    for body in re.findall(r"\|\s*\{(.*?)\}\s*(?=\||$)", match.group(1), flags=re.S):
        keys = dict(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\??\s*:\s*([^;]+)", body))
        action = re.fullmatch(r'\s*"([a-z_]+)"\s*', keys.pop("action"))
        assert action, body
        members[action.group(1)] = set(keys)
    return members


def test_decision_messages_match() -> None:
    """Each decision the page sends (``Decision`` in js/messages.ts) is one of
    nb_hitl.messages' page messages, with only fields that message declares;
    ``cancel`` is the remote (AG-UI) interrupt's own action."""
    page = ts_union_members(MESSAGES_TS.read_text(encoding="utf-8"), "Decision")
    models = {
        typing.get_args(m.model_fields["action"].annotation)[0]: m
        for m in typing.get_args(typing.get_args(messages.PageMessage)[0])
    }
    assert set(page) == set(models) | {"cancel"}
    assert page.pop("cancel") == set()
    for action, keys in page.items():
        assert keys <= set(models[action].model_fields) - {"request_id", "tool_call_id", "reply_id", "action"}, action
