"""The pause-kind registry (nb_hitl.kinds): one spec per kind, and generic code
that never branches on the kind."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import ToolCallBlock, ToolResultBlock, ToolResultState
from agentscope.permission import PermissionBehavior, PermissionRule
from agentscope.tool import AskUser, FunctionTool, Toolkit

from nb_hitl import Session
from nb_hitl.decisions import decide
from nb_hitl.kinds import KINDS, PauseHost, PauseKindSpec, PauseShaper, kind_spec
from nb_hitl.kinds.confirm_view import suggested_rule_view
from nb_hitl.kinds.form import FormTool
from nb_hitl.kinds.review_tool import reviewed
from nb_hitl.models import ScriptedChatModel, Turn
from nb_hitl.pauses import Pause, PauseView, SuggestedRuleView, build_pause

PACKAGE = Path(__file__).resolve().parents[2] / "nb_hitl"


def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path (str): the file.
    """
    return f"Deleted {path}."


def _pause(kind: str) -> Pause:
    """A real pause of each kind (built by build_pause, shaped like the tools do)."""
    if kind == "confirm":
        call = ToolCallBlock(id="c1", name="delete_file", input='{"path": "a"}', state="asking")
        return build_pause("r1", call, FunctionTool(delete_file))
    if kind == "ask_user":
        questions = [{"question": "Which?", "header": "Pick", "options": [{"label": "a", "description": "A"}]}]
        call = ToolCallBlock(id="c1", name="AskUser", input=json.dumps({"questions": questions}), state="submitted")
        return build_pause("r1", call, AskUser())
    call = ToolCallBlock(id="c1", name="tool", input='{"x": 1}', state="submitted")
    pause = build_pause("r1", call, None)
    if kind == "review":
        raw = ToolResultBlock(id="c1", name="tool", output="raw", state=ToolResultState.SUCCESS)
        pause.kind = "review"
        pause.review_result = raw.model_dump(mode="json")
        pause.review_output, pause.review_state = "raw", "success"
    elif kind == "form":
        pause.kind = "form"
        pause.response_schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    elif kind == "elicitation":  # as nb_hitl.mcp builds it under a running call
        pause.kind = "elicitation"
        pause.message = "Delete all rows of customers?"
        pause.response_schema = {"type": "object", "properties": {"confirm": {"type": "boolean"}}}
        kind_spec("elicitation").complete(pause)
    return pause


def test_every_kind_has_a_spec() -> None:
    assert set(KINDS) == {"confirm", "ask_user", "external", "review", "form", "elicitation", "sampling"}
    for name in KINDS:
        spec = kind_spec(name)
        assert isinstance(spec, PauseKindSpec) and spec.name == name
    with pytest.raises(KeyError, match="unknown pause kind"):
        kind_spec("nope")


@pytest.mark.parametrize("kind", ["confirm", "ask_user", "external", "review", "form"])
def test_deadline_default_per_kind(kind: str) -> None:
    """confirm -> a denial; every other kind -> an ERROR result saying nobody answered
    (the review keeps its "not reviewed" mark)."""
    pause = _pause(kind)
    assert pause.kind == kind
    spec = kind_spec(kind)
    decision = decide(pause, spec.timeout_message(pause))
    if kind == "confirm":
        assert spec.timeout_applied == "denied"
        assert decision.confirm_result is not None and decision.confirm_result.confirmed is False
    else:
        assert spec.timeout_applied == "error returned to the agent"
        result = decision.tool_result
        assert result is not None and result.state == ToolResultState.ERROR
        assert result.output == "The user did not answer before the deadline."


def test_deadline_default_of_an_elicitation_is_cancel() -> None:
    """Nobody chose: the MCP server is answered cancel (never an accept or a decline)."""
    pause = _pause("elicitation")
    spec = kind_spec("elicitation")
    decision = decide(pause, spec.timeout_message(pause))
    assert (decision.action, decision.cause, decision.content) == ("cancel", "timeout", None)
    assert decision.tool_result is None and decision.confirm_result is None
    assert spec.timeout_applied == "cancel sent to the MCP server"
    assert decide(pause, spec.cancel_message(pause)).cause == "cancelled"


def test_pause_view_type_describes_to_view() -> None:
    pause = _pause("confirm")
    view = pause.to_view()
    assert list(view) == list(PauseView.__annotations__)
    assert list(_pause("elicitation").to_view()) == list(PauseView.__annotations__)  # the carrier stays out
    rule = {
        "index": 0,
        "label": "x",
        "tool_name": "t",
        "rule_content": None,
        "behavior": "allow",
        "reach": "r",
        "reach_html": None,
    }
    assert set(rule) == set(SuggestedRuleView.__annotations__)


def test_a_suggested_rules_reach_comes_as_safe_html_too() -> None:
    """The reach names its patterns in backticks: the page draws them as code from the kernel's
    sanitised HTML (the road of the model's Markdown), never the backticks themselves."""
    prefix = suggested_rule_view(
        0, PermissionRule(tool_name="Bash", rule_content="git:*", behavior=PermissionBehavior.ALLOW, source="suggested")
    )
    assert "`git`" in prefix["reach"]
    assert prefix["reach_html"] is not None and "<code>git</code>" in prefix["reach_html"]
    assert "`" not in prefix["reach_html"] and "<code>&amp;&amp;</code>" in prefix["reach_html"]
    whole = suggested_rule_view(
        1, PermissionRule(tool_name="Bash", rule_content=None, behavior=PermissionBehavior.ALLOW, source="suggested")
    )
    assert whole["reach"].startswith("allows every call of Bash") and whole["reach_html"] is None


def test_shaping_tools_and_the_session_follow_the_protocols() -> None:
    assert isinstance(reviewed(FunctionTool(delete_file)), PauseShaper)
    assert isinstance(FormTool(), PauseShaper)
    agent = Agent(
        name="a",
        system_prompt="",
        model=ScriptedChatModel([Turn("hi")]),
        toolkit=Toolkit(tools=[]),
    )
    assert isinstance(Session(agent), PauseHost)


def test_no_kind_branches_outside_kinds() -> None:
    """Generic modules dispatch through kind_spec; only nb_hitl/kinds/ compares kinds."""
    pattern = re.compile(r"\.kind\s*(==|!=|in\b)|\bkind\s*==\s*\"(confirm|ask_user|external|review|form)\"")
    offenders: list[Any] = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("kinds/") or rel == "policy.py":
            continue  # policy.py guards a confirmation only
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert offenders == []
