"""Page message -> AgentScope objects, for every decision kind, valid and invalid.

The unit half drives :func:`nb_hitl.decisions.decide` with pauses built by
:func:`nb_hitl.pauses.build_pause` from real AgentScope ``ToolCallBlock`` s
and real tools (``FunctionTool``, ``AskUser``, ``Write`` and an external
``ToolBase`` subclass), and checks the AgentScope objects that come out
(``ConfirmResult``, ``ToolResultBlock``, ``AskUserMetadata``) or the refusal
(``DecisionError`` with its ``field``).

The other half runs cases C05 and C08 through a :class:`nb_hitl.Session`
around a real ``agentscope.agent.Agent`` on ``ScriptedChatModel``: a refused
edit never resumes the agent (the model gets no new call, the tool does not
run), and an answer reaches the model's history.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentscope.event import ConfirmResult
from agentscope.message import ToolCallBlock, ToolResultBlock, ToolResultState
from agentscope.permission import (
    PermissionBehavior,
    PermissionContext,
    PermissionDecision,
    PermissionRule,
)
from agentscope.tool import AskUser, AskUserMetadata, FunctionTool, ToolBase

from nb_hitl.decisions import Decision, check_external_result, decide
from nb_hitl.errors import DecisionError
from nb_hitl.kinds.ask_user import ask_user_output
from nb_hitl.messages import MAX_TEXT, parse_edited_input
from nb_hitl.pauses import Pause, build_pause
from tests.support import run_async


# ---------------------------------------------------------------------------
# real tools and pauses
# ---------------------------------------------------------------------------
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path (str): the file to delete.
    """
    return f"deleted {path}"


class RunOnLaptop(ToolBase):
    """An external tool: the person runs the command and reports back."""

    name = "run_on_laptop"
    description = "Run a shell command on the user's laptop."
    input_schema = {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    }
    metadata_schema = {
        "type": "object",
        "properties": {"exit_code": {"type": "integer"}},
        "required": ["exit_code"],
    }
    is_concurrency_safe = False
    is_read_only = False
    is_external_tool = True

    async def check_permissions(self, tool_input: dict[str, Any], context: PermissionContext) -> PermissionDecision:
        return PermissionDecision(behavior=PermissionBehavior.ALLOW, message="external")


DELETE_TOOL = FunctionTool(delete_file)
SUGGESTED = [
    PermissionRule(tool_name="delete_file", rule_content=None, behavior=PermissionBehavior.ALLOW, source="suggested"),
    PermissionRule(
        tool_name="delete_file", rule_content="*.tmp", behavior=PermissionBehavior.ALLOW, source="suggested"
    ),
]

QUESTIONS = [
    {
        "question": "Which file should I delete?",
        "header": "Cleanup",
        "context": "notes.txt 10 bytes\ndraft.md 20 bytes",
        "options": [
            {"label": "notes.txt", "description": "10 bytes", "preview": "Meeting notes"},
            {"label": "draft.md", "description": "20 bytes", "preview": "# Draft"},
        ],
    },
    {
        "question": "Which backups should I keep?",
        "header": "Backups",
        "multi_select": True,
        "options": [
            {"label": "daily", "description": "every day"},
            {"label": "weekly", "description": "every week"},
            {"label": "monthly", "description": "every month"},
        ],
    },
]


def confirm_pause(input: dict[str, Any] | str | None = None, *, rules: list[PermissionRule] | None = None) -> Pause:
    raw = json.dumps({"path": "notes.txt"} if input is None else input) if not isinstance(input, str) else input
    call = ToolCallBlock(
        id="call_del",
        name="delete_file",
        input=raw,
        state="asking",
        suggested_rules=SUGGESTED if rules is None else rules,
    )
    return build_pause("reply_1", call, DELETE_TOOL)


def ask_pause(questions: list[dict[str, Any]] | None = None) -> Pause:
    call = ToolCallBlock(
        id="call_ask",
        name="AskUser",
        input=json.dumps({"questions": QUESTIONS if questions is None else questions}),
        state="submitted",
    )
    return build_pause("reply_1", call, AskUser())


def external_pause() -> Pause:
    call = ToolCallBlock(id="call_ext", name="run_on_laptop", input=json.dumps({"command": "ls"}), state="submitted")
    return build_pause("reply_1", call, RunOnLaptop())


def msg(pause: Pause, action: str, **payload: Any) -> dict[str, Any]:
    """A message exactly as js/reply.ts sends it."""
    return {
        "request_id": "r1",
        "action": action,
        "tool_call_id": pause.tool_call_id,
        "reply_id": pause.reply_id,
        **payload,
    }


def refused(pause: Pause, message: Any) -> DecisionError:
    with pytest.raises(DecisionError) as info:
        decide(pause, message)
    return info.value


# ---------------------------------------------------------------------------
# the pauses themselves
# ---------------------------------------------------------------------------
def test_pause_kinds_and_copy() -> None:
    live = ToolCallBlock(id="call_del", name="delete_file", input='{"path": "a"}', state="asking")
    pause = build_pause("reply_1", live, DELETE_TOOL)
    assert pause.kind == "confirm"
    assert pause.tool_call is not live and pause.tool_call == live
    assert pause.input == {"path": "a"}
    assert pause.input_schema == DELETE_TOOL.input_schema
    assert ask_pause().kind == "ask_user"
    assert external_pause().kind == "external"
    view = confirm_pause().to_view()
    assert view["suggested_rules"][0]["label"] == "allow delete_file"
    assert view["suggested_rules"][1]["label"] == "allow delete_file(*.tmp)"


# ---------------------------------------------------------------------------
# approve / deny / modify
# ---------------------------------------------------------------------------
def test_approve_gives_confirm_result_on_a_copy() -> None:
    pause = confirm_pause()
    d = decide(pause, msg(pause, "approve"))
    assert isinstance(d, Decision) and d.is_confirmation and d.action == "approve"
    cr = d.confirm_result
    assert isinstance(cr, ConfirmResult)
    assert cr.confirmed is True and cr.rules is None
    assert cr.tool_call.id == "call_del" and cr.tool_call.name == "delete_file"
    assert json.loads(cr.tool_call.input) == {"path": "notes.txt"}
    assert cr.tool_call is not pause.tool_call
    assert d.tool_result is None and d.edited_input is None
    assert d.summary() == {"action": "approve", "confirmed": True}


def test_approve_with_chosen_rules() -> None:
    pause = confirm_pause()
    d = decide(pause, msg(pause, "approve", rules=[1]))
    assert d.confirm_result.rules == [SUGGESTED[1]]
    assert d.confirm_result.rules[0] is not SUGGESTED[1]
    assert d.accepted_rules == (SUGGESTED[1],)
    assert d.summary()["accepted_rules"] == ["allow delete_file(*.tmp)"]
    both = decide(pause, msg(pause, "approve", rules=[1, 0, 1]))
    assert both.confirm_result.rules == SUGGESTED  # sorted, de-duplicated


@pytest.mark.parametrize(
    "rules, field",
    [([5], "rules"), (["0"], "rules.0"), ([-1], "rules.0"), (0, "rules"), ([0] * 65, "rules")],
)
def test_approve_with_bad_rules_refused(rules: Any, field: str) -> None:
    pause = confirm_pause()
    err = refused(pause, msg(pause, "approve", rules=rules))
    assert err.field == field


@pytest.mark.parametrize(
    ("action", "extra", "field"),
    [
        ("approve", {"edited_input": {"path": "notes.txt"}}, "edited_input"),  # a typo must not approve the original
        ("approve", {"input": '{"path": "notes.txt"}'}, "input"),  # an edit goes with "modify"
        ("approve", {"rule": [0]}, "rule"),
        ("deny", {"reson": "keep it"}, "reson"),  # would deny without telling the model why
        ("deny", {"rules": [0]}, "rules"),  # "Always deny" is deny_rules
    ],
)
def test_a_field_the_action_does_not_take_is_refused_never_ignored(
    action: str, extra: dict[str, Any], field: str
) -> None:
    pause = confirm_pause()
    with pytest.raises(DecisionError) as err:
        decide(pause, msg(pause, action, **extra))
    assert err.value.field == field
    assert str(err.value).startswith(f"This {action} message has no field {field!r}, so nothing was done (it takes: ")


def test_deny_gives_unconfirmed_result_without_rules() -> None:
    pause = confirm_pause()
    d = decide(pause, msg(pause, "deny"))
    assert d.confirm_result.confirmed is False
    assert not d.confirm_result.rules
    assert d.confirm_result.tool_call.id == "call_del"
    assert d.summary() == {"action": "deny", "confirmed": False}


def test_modify_edits_a_copy() -> None:
    pause = confirm_pause()
    before = pause.tool_call.model_dump()
    d = decide(pause, msg(pause, "modify", input='{"path": "draft.md"}'))
    assert d.action == "modify" and d.edited_input == {"path": "draft.md"}
    assert d.confirm_result.confirmed is True
    assert json.loads(d.confirm_result.tool_call.input) == {"path": "draft.md"}
    assert d.confirm_result.tool_call.name == "delete_file"
    assert pause.tool_call.model_dump() == before  # the pause's own copy is untouched
    assert d.summary()["edited_input"] == {"path": "draft.md"}
    same_name = decide(pause, msg(pause, "modify", input='{"path": "x"}', name="delete_file", rules=[0]))
    assert same_name.confirm_result.rules == [SUGGESTED[0]]


def test_C05a_name_change_refused() -> None:
    pause = confirm_pause()
    err = refused(pause, msg(pause, "modify", input='{"path": "notes.txt"}', name="list_files"))
    assert err.field == "name"
    assert "cannot be changed" in str(err) and "'list_files'" in str(err)


@pytest.mark.parametrize(
    "text, field, words",
    [
        ('{"path": 5}', "input.path", ['in field "path":', "is not of type 'string'"]),
        ('{"file": "notes.txt"}', "input", ["'path' is a required property"]),
    ],
)
def test_C05c_schema_break_refused_with_the_field(text: str, field: str, words: list[str]) -> None:
    pause = confirm_pause()
    err = refused(pause, msg(pause, "modify", input=text))
    assert err.field == field
    for w in words:
        assert w in str(err)


@pytest.mark.parametrize(
    "text, where",
    [
        ('{"path": "notes.txt"', "line 1, column 21"),
        ('{\n  "path": notes.txt\n}', "line 2, column 11"),
        ("", "line 1, column 1"),
    ],
)
def test_C05d_non_json_refused_with_line_and_column(text: str, where: str) -> None:
    pause = confirm_pause()
    err = refused(pause, msg(pause, "modify", input=text))
    assert err.field == "input"
    assert "not valid JSON" in str(err) and where in str(err)


def test_modify_non_object_and_oversize_refused() -> None:
    pause = confirm_pause()
    assert "JSON object" in str(refused(pause, msg(pause, "modify", input='["notes.txt"]')))
    err = refused(pause, msg(pause, "modify", input=" " * (MAX_TEXT + 1)))
    assert err.field == "input"
    err = refused(pause, msg(pause, "modify", input={"path": "x"}))  # an object, not the typed text
    assert err.field == "input"


def test_parse_edited_input_without_schema() -> None:
    assert parse_edited_input('{"a": [1, 2]}', None) == {"a": [1, 2]}


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_parse_edited_input_refuses_non_finite_numbers(number: str) -> None:
    with pytest.raises(DecisionError, match="NaN and Infinity are not JSON numbers|too large") as err:
        parse_edited_input(f'{{"to": "ACME", "amount": {number}}}', None)
    assert err.value.field == "input"
    assert parse_edited_input('{"amount": 1e300}', None) == {"amount": 1e300}


# ---------------------------------------------------------------------------
# AskUser answers (C08 and the rest)
# ---------------------------------------------------------------------------
def test_answer_single_and_multi() -> None:
    pause = ask_pause()
    d = decide(
        pause,
        msg(
            pause,
            "answer",
            answers=[
                {"question": "Which backups should I keep?", "selected": ["daily", "monthly"], "other": None},
                {"question": "Which file should I delete?", "selected": ["draft.md"], "other": None},
            ],
        ),
    )
    tr = d.tool_result
    assert isinstance(tr, ToolResultBlock)
    assert tr.id == "call_ask" and tr.name == "AskUser" and tr.state == ToolResultState.SUCCESS
    meta = AskUserMetadata.model_validate(tr.metadata)
    # answers come back in the order of the questions
    assert [a.question for a in meta.answers] == ["Which file should I delete?", "Which backups should I keep?"]
    assert meta.answers[0].selected == ["draft.md"] and meta.answers[0].other is None
    assert meta.answers[1].selected == ["daily", "monthly"]
    assert tr.output == ask_user_output(meta.answers)
    assert '"Which file should I delete?" -> draft.md' in tr.output
    assert '"Which backups should I keep?" -> daily, monthly' in tr.output
    run_async(check_external_result(AskUser(), tr))  # fits AskUser's own metadata_schema
    assert d.summary()["answers"][1]["selected"] == ["daily", "monthly"]


def test_answer_other_free_text() -> None:
    pause = ask_pause()
    d = decide(
        pause,
        msg(
            pause,
            "answer",
            answers=[
                {"question": "Which file should I delete?", "selected": [], "other": "  old_log.txt  "},
                {"question": "Which backups should I keep?", "selected": ["weekly"], "other": "yearly"},
            ],
        ),
    )
    meta = AskUserMetadata.model_validate(d.tool_result.metadata)
    assert meta.answers[0].selected == [] and meta.answers[0].other == "old_log.txt"
    assert meta.answers[1].selected == ["weekly"] and meta.answers[1].other == "yearly"
    assert '(Other) "old_log.txt"' in d.tool_result.output


def test_C08_question_without_multi_select_is_single_select() -> None:
    questions = [
        {
            "question": "Keep or drop?",
            "header": "Choice",
            "options": [{"label": "keep", "description": "k"}, {"label": "drop", "description": "d"}],
        }
    ]
    pause = ask_pause(questions)
    assert pause.ask_user is not None and pause.ask_user.questions[0].multi_select is False
    assert pause.to_view()["ask_user"]["questions"][0]["multi_select"] is False

    d = decide(pause, msg(pause, "answer", answers=[{"question": "Keep or drop?", "selected": ["drop"]}]))
    assert AskUserMetadata.model_validate(d.tool_result.metadata).answers[0].selected == ["drop"]

    err = refused(pause, msg(pause, "answer", answers=[{"question": "Keep or drop?", "selected": ["keep", "drop"]}]))
    assert err.field == "answers.0.selected" and "takes one answer" in str(err)
    err = refused(
        pause, msg(pause, "answer", answers=[{"question": "Keep or drop?", "selected": ["keep"], "other": "both"}])
    )
    assert err.field == "answers.0.selected"


@pytest.mark.parametrize(
    "answers, field, words",
    [
        ([{"question": "Which file should I delete?", "selected": ["x.txt"]}], "answers.0.selected", "not an option"),
        ([{"question": "Unknown?", "selected": ["a"]}], "answers.0", "There is no question"),
        (
            [{"question": "Which file should I delete?", "selected": ["notes.txt"]}],
            "answers",
            "still open: 'Which backups should I keep?'",
        ),
        (
            [
                {"question": "Which file should I delete?", "selected": ["notes.txt"]},
                {"question": "Which file should I delete?", "selected": ["draft.md"]},
            ],
            "answers.1",
            "answered twice",
        ),
        (
            [
                {"question": "Which file should I delete?", "selected": []},
                {"question": "Which backups should I keep?", "selected": ["daily"]},
            ],
            "answers.0",
            "Choose an option",
        ),
        (
            [
                {"question": "Which file should I delete?", "selected": ["notes.txt"]},
                {"question": "Which backups should I keep?", "selected": ["daily", "daily"]},
            ],
            "answers.1.selected",
            "selected twice",
        ),
        ([{"question": "Which file should I delete?", "selected": "notes.txt"}], "answers.0.selected", "valid list"),
        ([{"question": "Which file should I delete?", "selected": [], "nope": 1}], "answers.0.nope", "Extra inputs"),
        ("notes.txt", "answers", "valid list"),
    ],
)
def test_answer_invalid(answers: Any, field: str, words: str) -> None:
    pause = ask_pause()
    err = refused(pause, msg(pause, "answer", answers=answers))
    assert err.field == field
    assert words in str(err)


def test_answer_to_invalid_ask_user_refused_and_return_error() -> None:
    bad = ask_pause(
        [
            {
                "question": "Yes or yes?",
                "header": "Dup",
                "options": [{"label": "Yes", "description": "a"}, {"label": "Yes", "description": "b"}],
            }
        ]
    )
    assert bad.ask_user is None and "labels must be unique" in bad.ask_user_error
    err = refused(bad, msg(bad, "answer", answers=[{"question": "Yes or yes?", "selected": ["Yes"]}]))
    assert "invalid" in str(err)

    d = decide(bad, msg(bad, "return_error"))
    assert d.tool_result.state == ToolResultState.ERROR
    assert d.tool_result.id == "call_ask" and d.tool_result.name == "AskUser"
    assert "labels must be unique" in d.tool_result.output
    assert d.summary()["state"] == "error"


def test_return_error_on_valid_ask_user_needs_a_message() -> None:
    pause = ask_pause()
    assert refused(pause, msg(pause, "return_error")).field == "message"
    d = decide(pause, msg(pause, "return_error", message="I won't answer that."))
    assert d.tool_result.state == ToolResultState.ERROR and d.tool_result.output == "I won't answer that."


# ---------------------------------------------------------------------------
# external results
# ---------------------------------------------------------------------------
def test_external_result_success_and_error() -> None:
    pause = external_pause()
    ok = decide(pause, msg(pause, "external_result", output="a.txt\nb.txt", state="success"))
    assert ok.tool_result.state == ToolResultState.SUCCESS
    assert ok.tool_result.id == "call_ext" and ok.tool_result.name == "run_on_laptop"
    assert ok.tool_result.output == "a.txt\nb.txt"
    assert ok.summary() == {"action": "external_result", "state": "success", "output": "a.txt\nb.txt"}
    bad = decide(pause, msg(pause, "external_result", output="ls: permission denied", state="error"))
    assert bad.tool_result.state == ToolResultState.ERROR
    default = decide(pause, msg(pause, "external_result", output="x"))
    assert default.tool_result.state == ToolResultState.SUCCESS


def test_external_result_metadata_checked_by_the_tool() -> None:
    tool = RunOnLaptop()
    pause = external_pause()
    d = decide(pause, msg(pause, "external_result", output="done"))
    with pytest.raises(DecisionError) as info:  # no exit_code in metadata: the tool's schema refuses
        run_async(check_external_result(tool, d.tool_result))
    assert info.value.field == "metadata" and "exit_code" in str(info.value)
    good = d.tool_result.model_copy(update={"metadata": {"exit_code": 0}})
    run_async(check_external_result(tool, good))
    run_async(check_external_result(None, d.tool_result))


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"output": 5}, "output"),
        ({"output": "x", "state": "maybe"}, "state"),
        ({"output": "x" * (MAX_TEXT + 1)}, "output"),
        ({}, "output"),
    ],
)
def test_external_result_bad_types_refused(payload: dict[str, Any], field: str) -> None:
    pause = external_pause()
    assert refused(pause, msg(pause, "external_result", **payload)).field == field


def test_external_result_for_ask_user_refused() -> None:
    pause = ask_pause()
    assert refused(pause, msg(pause, "external_result", output="notes.txt")).field == "action"
    ext = external_pause()
    assert refused(ext, msg(ext, "answer", answers=[])).field == "action"
