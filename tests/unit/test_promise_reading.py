"""The input shown and checked is the input the tool receives, or Approve is refused.

A property test over the argument text a model may send: AgentScope reads
``ToolCallBlock.input`` with its own ``_json_loads_with_repair(input,
tool.input_schema)`` right before the tool runs (``Toolkit.call_tool``);
whatever the text, either the approved ``ConfirmResult`` makes AgentScope
read exactly the input the card shows, or nb_hitl refuses Approve.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest
from agentscope._utils._common import _json_loads_with_repair
from agentscope.message import ToolCallBlock
from agentscope.tool import FunctionTool, ToolChunk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nb_hitl import DecisionError
from nb_hitl.decisions import decide
from nb_hitl.kinds._reading import same_value, visible_json, visible_text
from nb_hitl.pauses import build_pause


def write_note(
    path: str, count: int = 1, flag: bool = False, tags: list[str] | None = None, ratio: float = 0.5
) -> ToolChunk:
    """Write a note.

    Args:
        path (str): the file.
        count (int): copies.
        flag (bool): a flag.
        tags (list[str]): tags.
        ratio (float): a ratio.
    """
    raise AssertionError("never run here")


TOOL = FunctionTool(write_note)
SCHEMA = TOOL.input_schema


def pause_for(raw: str) -> Any:
    call = ToolCallBlock(id="call_1", name="write_note", input=raw, state="asking")
    return build_pause("reply_1", call, TOOL)


def agentscope_runs(raw: str) -> Any:
    """What ``Toolkit.call_tool`` passes to the tool for ``raw`` (AgentScope's own function)."""
    return _json_loads_with_repair(raw, SCHEMA)


# -- the property -------------------------------------------------------------
TRICKY = st.sampled_from(["\u202e", "\u200b", "\u2066", "\ufeff", "\x00", "\u2028", "\u00a0", "é", "😀", '"', "\\"])
STRINGS = st.lists(st.one_of(st.text(max_size=6), TRICKY), max_size=4).map("".join)
VALUES = st.one_of(
    STRINGS,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.lists(STRINGS, max_size=3),
    st.integers().map(str),
)
KEYS = st.one_of(st.sampled_from(["path", "count", "flag", "tags", "ratio"]), st.text(max_size=5))
OBJECTS = st.dictionaries(KEYS, VALUES, max_size=5).map(lambda d: json.dumps(d, ensure_ascii=False))


@st.composite
def argument_texts(draw: Any) -> str:
    base = draw(OBJECTS)
    how = draw(st.sampled_from(["as is", "truncate", "two", "trailing", "leading", "dup", "noise", "single quotes"]))
    if how == "truncate":
        return base[: draw(st.integers(min_value=0, max_value=len(base)))]
    if how == "two":
        return base + draw(st.sampled_from(["", " ", "\n"])) + draw(OBJECTS)
    if how == "trailing":
        return base + draw(st.text(max_size=8))
    if how == "leading":
        return draw(st.text(max_size=8)) + base
    if how == "dup":
        key = draw(st.sampled_from(["path", "count"]))
        return base[:-1] + ("," if len(base) > 2 else "") + f'"{key}": {json.dumps(draw(VALUES))}' + "}"
    if how == "noise":
        return draw(st.text(max_size=40))
    if how == "single quotes":
        return base.replace('"', "'")
    return base


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(argument_texts())
def test_shown_input_is_what_runs_or_approve_is_refused(raw: str) -> None:
    pause = pause_for(raw)
    view = pause.to_view()
    try:
        decision = decide(pause, {"action": "approve", "tool_call_id": "call_1"})
    except DecisionError as exc:
        assert exc.field == "action"
        assert view["approve_refused"], "a refused Approve is said on the card"
        return
    assert view["approve_refused"] is None
    shown = json.loads(view["input_text"])
    runs = agentscope_runs(decision.confirm_result.tool_call.input)
    assert same_value(runs, shown), (raw, runs, shown)
    assert same_value(decision.approved_input, shown)
    # every character of the input can be seen
    hidden = [ch for ch in view["input_text"] if ch not in " \n" and unicodedata.category(ch)[0] in "CZ"]
    assert hidden == []


# -- the cases, one by one ----------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "refused"),
    [
        ('{"path": "notes.txt"} {"path": "precious.txt"}', "several JSON values"),  # C25
        ('{"path": "a", "path": "b"}', "more than once"),
        ('{"path": "a"} then more', "text after"),
        ('```json\n{"path": "a"}\n```', "text before"),
        ("[1, 2]", "cannot read"),
    ],
)
def test_ambiguous_or_unreadable_arguments_refuse_approve(raw: str, refused: str) -> None:
    pause = pause_for(raw)
    assert refused in (pause.to_view()["approve_refused"] or "")
    with pytest.raises(DecisionError):
        decide(pause, {"action": "approve", "tool_call_id": "call_1"})
    # Deny and Modify remain
    assert decide(pause, {"action": "deny", "tool_call_id": "call_1"}).confirm_result.confirmed is False
    d = decide(pause, {"action": "modify", "tool_call_id": "call_1", "input": '{"path": "a"}'})
    assert agentscope_runs(d.confirm_result.tool_call.input) == d.approved_input == {"path": "a"}


def test_C25_a_key_given_twice_is_named_not_called_invalid_json() -> None:
    """Duplicate keys are valid JSON: the card names the key instead of calling the text invalid."""
    view = pause_for('{"path": "a", "path": "b"}').to_view()
    assert json.loads(view["input_text"]) == {"path": "b"}
    (change,) = view["input_changes"]
    assert change.startswith('The arguments name the key "path" twice; JSON readers disagree'), change
    assert "not valid JSON" not in change
    # truncated text is still called what it is
    assert "not valid JSON" in pause_for('{"path": "a", "count": "5"').to_view()["input_changes"][0]


def test_repaired_arguments_are_shown_with_what_the_model_sent() -> None:
    pause = pause_for('{"path": "a", "count": "5"')
    view = pause.to_view()
    assert json.loads(view["input_text"])["count"] == 5
    assert view["sent_text"] == '{"path": "a", "count": "5"'
    assert view["input_changes"] and view["approve_refused"] is None
    d = decide(pause, {"action": "approve", "tool_call_id": "call_1"})
    assert agentscope_runs(d.confirm_result.tool_call.input)["count"] == 5


def test_unchanged_arguments_keep_the_models_text() -> None:
    raw = json.dumps({"path": "a", "count": 2, "flag": True, "tags": ["x"], "ratio": 0.25})
    pause = pause_for(raw)
    assert pause.to_view()["sent_text"] is None and pause.to_view()["input_changes"] == []
    d = decide(pause, {"action": "approve", "tool_call_id": "call_1"})
    assert d.confirm_result.tool_call.input == raw


def test_visible_json_escapes_invisible_characters_and_keeps_big_integers() -> None:
    value = {"p": "a\u202eb\u200bc\u2066d\ufeffe\u2028f\u00a0g😀\U000e0041", "n": 2**80 + 3}
    text = visible_json(value)
    for ch in ("\u202e", "\u200b", "\u2066", "\ufeff", "\u2028", "\u00a0", "\U000e0041"):
        assert ch not in text
    assert "\\u202e" in text and "😀" in text and str(2**80 + 3) in text
    assert json.loads(text) == value
    assert visible_text("tab\there\u202e") == "tab\\u0009here\\u202e"


def test_an_edit_reaches_the_page_as_text_when_json_would_not_show_it_faithfully() -> None:
    pause = pause_for('{"path": "a"}')
    plain = decide(pause, {"action": "modify", "tool_call_id": "call_1", "input": '{"path": "b"}'}).summary()
    assert "edited_input_text" not in plain and plain["edited_input"] == {"path": "b"}
    big = 2**60 + 1
    edit = json.dumps({"path": "b\u202e", "count": big}, ensure_ascii=False)
    summary = decide(pause, {"action": "modify", "tool_call_id": "call_1", "input": edit}).summary()
    assert str(big) in summary["edited_input_text"] and "\\u202e" in summary["edited_input_text"]
    assert json.loads(summary["edited_input_text"]) == {"path": "b\u202e", "count": big}
