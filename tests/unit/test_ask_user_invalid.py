"""AskUser input that breaks ``AskUserParams`` (case C02), with a real Agent.

What AgentScope 2.0.11 checks (``agentscope/tool/_builtin/_ask_user.py``):

* ``_Question._validate_options``: "option labels must be unique within a question";
* ``AskUserParams._validate_question_texts``: "question texts must be unique across the batch";
* ``preview`` on a ``multi_select`` question is only *described* as unsupported
  ("Only supported in single-select questions") in the field description and
  the tool's prompt: no validator rejects it.

The agent itself only runs ``jsonschema`` on ``AskUser.input_schema`` before
submitting the call (``Agent._execute_tool_call``); a JSON Schema cannot say
"unique labels", so every one of these calls reaches the person. nb_hitl
validates with ``AskUserParams`` (``pauses.build_pause``), shows the error,
refuses any answer (nothing ambiguous is ever submitted) and offers to return
an ERROR ``ToolResultBlock`` to the agent.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import ToolResultBlock, ToolResultState
from agentscope.tool import AskUser, AskUserParams, Toolkit
from pydantic import ValidationError

from nb_hitl import DecisionError, Session
from nb_hitl.messages import MAX_SHORT
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from nb_hitl.notify import payload_for
from nb_hitl.store import AuditLog
from tests.support import InputRecorder, run_async, wait_until


def opt(label: str, preview: str | None = None) -> dict[str, Any]:
    o: dict[str, Any] = {"label": label, "description": f"means {label}"}
    if preview is not None:
        o["preview"] = preview
    return o


DUPLICATE_LABELS = [{"question": "Deploy now?", "header": "Deploy", "options": [opt("Yes"), opt("Yes")]}]
DUPLICATE_QUESTIONS = [
    {"question": "Which branch?", "header": "Branch", "options": [opt("main"), opt("dev")]},
    {"question": "Which branch?", "header": "Branch", "options": [opt("release"), opt("hotfix")]},
]
PREVIEW_ON_MULTI = [
    {
        "question": "Which checks should run?",
        "header": "Checks",
        "multi_select": True,
        "options": [opt("lint", preview="ruff check ."), opt("tests", preview="pytest -q")],
    }
]
HUGE_LABEL = [
    {
        "question": "Pick one?",
        "header": "Pick",
        "options": [{"label": "L" * 2_000_000, "description": "big"}, opt("small")],
    }
]
"""C32's size edge: a 2 MB option label, which no answer could carry back (``AnswerIn``: 20,000)."""
TOO_LONG = "questions.0.options.0.label: 2,000,000 characters, longer than an answer can carry back (at most 20,000)"
VALID = [{"question": "Deploy now?", "header": "Deploy", "options": [opt("Yes, deploy"), opt("No, wait")]}]

CASES = {
    "duplicate_labels": (DUPLICATE_LABELS, "option labels must be unique within a question"),
    "duplicate_questions": (DUPLICATE_QUESTIONS, "question texts must be unique across the batch"),
    "preview_on_multi_select": (PREVIEW_ON_MULTI, "preview"),
    "label_too_long": (HUGE_LABEL, TOO_LONG),
}


def test_C02_what_AskUserParams_itself_rejects() -> None:
    """The facts nb_hitl builds on, read from AgentScope 2.0.11."""
    with pytest.raises(ValidationError, match="option labels must be unique within a question"):
        AskUserParams.model_validate({"questions": DUPLICATE_LABELS})
    with pytest.raises(ValidationError, match="question texts must be unique across the batch"):
        AskUserParams.model_validate({"questions": DUPLICATE_QUESTIONS})
    # preview on a multi-select question is NOT rejected by AgentScope 2.0.11
    params = AskUserParams.model_validate({"questions": PREVIEW_ON_MULTI})
    assert params.questions[0].multi_select is True and params.questions[0].options[0].preview == "ruff check ."


@pytest.mark.parametrize("case", list(CASES))
def test_C02_invalid_askuser_shows_the_error_and_returns_it_to_the_agent(tmp_path: Path, case: str) -> None:
    questions, expected = CASES[case]
    seen: list[ToolResultBlock] = []

    def retry(msgs: list[Any]) -> Turn:
        seen.extend(tool_results(msgs, "AskUser"))
        return Turn("Sorry, asking properly.", [tool_call("AskUser", id="ask_ok", questions=VALID)])

    def done(msgs: list[Any]) -> Turn:
        return Turn(f"You said: {result_text(tool_results(msgs, 'AskUser')[-1])}")

    recorder = InputRecorder()
    agent = Agent(
        name="asker",
        system_prompt="Ask before acting.",
        model=ScriptedChatModel(
            [Turn("A question.", [tool_call("AskUser", id="ask_bad", questions=questions)]), retry, done],
            on_exhausted="raise",
        ),
        toolkit=Toolkit(tools=[AskUser()]),
        middlewares=[recorder],
    )
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> str:
        session = Session(agent, display=True, audit_log=str(audit))
        task = session.start("Go.")
        run = await wait_until(lambda: session.current.status == "paused" and session.current, "the AskUser pause")
        pause = run.pauses["ask_bad"]
        # the call did reach the person (AgentScope's jsonschema check let it through)
        assert [tc.id for tc in agent.state.get_awaiting_tool_calls(agent.name)] == ["ask_bad"]
        assert pause.kind == "ask_user"
        # the pause shows the validation error and no questions to answer
        assert pause.ask_user is None
        assert expected in (pause.ask_user_error or "")
        view = run.widget.pauses[0]
        assert view["ask_user"] is None and expected in view["ask_user_error"]

        # nothing ambiguous is ever submitted: any answer is refused, through the widget too
        first_q = questions[0]
        attempts = [
            {
                "action": "answer",
                "tool_call_id": "ask_bad",
                "answers": [{"question": first_q["question"], "selected": [first_q["options"][0]["label"]]}],
            },
            {
                "action": "answer",
                "tool_call_id": "ask_bad",
                "answers": [{"question": q["question"], "selected": [q["options"][0]["label"]]} for q in questions],
            },
            {"action": "external_result", "tool_call_id": "ask_bad", "output": "Yes"},
        ]
        sent: list[dict[str, Any]] = []
        # the answers to page messages (card stream messages are not answers)
        run.widget.send = lambda m, *_: None if m.get("type") in ("nbh_cards", "nbh_transcript") else sent.append(m)  # type: ignore[method-assign]
        for i, message in enumerate(attempts):
            with pytest.raises(DecisionError):
                session.act(message)
            run.widget._on_page_message(run.widget, {"request_id": f"a{i}", **message}, [])
        assert [(s["request_id"], s["ok"], s["code"]) for s in sent] == [
            (f"a{i}", False, "invalid") for i in range(len(attempts))
        ]
        if case == "label_too_long":  # the answer message itself is refused: no answer carries such a label
            assert "A picked option's label is too long: " in sent[0]["error"]
            assert "an answer takes at most 20,000. Nothing reached the agent" in sent[0]["error"]
        else:
            assert "return the error to the agent" in sent[0]["error"]
        assert len(recorder.inputs) == 1 and run.resumes == 0 and pause.status == "open"

        # "Return this error to the agent" (the widget's button sends return_error)
        run.widget._on_page_message(
            run.widget, {"request_id": "ret", "action": "return_error", "tool_call_id": "ask_bad"}, []
        )
        await wait_until(lambda: any(s["request_id"] == "ret" for s in sent), "the return_error reply")
        assert [s for s in sent if s["request_id"] == "ret"][0]["ok"] is True

        # the agent reads the error, asks properly, and the valid question is answered
        await wait_until(
            lambda: "ask_ok" in run.pauses and run.pauses["ask_ok"].status == "open", "the corrected AskUser"
        )
        assert run.pauses["ask_ok"].ask_user is not None
        await session.act(
            {
                "action": "answer",
                "tool_call_id": "ask_ok",
                "answers": [{"question": "Deploy now?", "selected": ["No, wait"]}],
            }
        )
        return (await asyncio.wait_for(task, 10)).get_text_content()

    final = run_async(scenario())
    assert final.endswith('"Deploy now?" -> No, wait')
    # the model got an ERROR result naming the problem, for the bad call
    assert [(r.id, r.state) for r in seen] == [("ask_bad", ToolResultState.ERROR)]
    assert expected in result_text(seen[0])
    assert "not shown to the user" in result_text(seen[0])
    records = AuditLog(audit).records("answered")
    assert [(r["tool_call_id"], r["decision"]) for r in records] == [("ask_bad", "return_error"), ("ask_ok", "answer")]
    kinds = [type(i).__name__ for i in recorder.inputs]
    assert kinds == ["Msg", "ExternalExecutionResultEvent", "ExternalExecutionResultEvent"]


def test_C02_return_error_with_the_persons_own_words(tmp_path: Path) -> None:
    seen: list[ToolResultBlock] = []

    def read(msgs: list[Any]) -> Turn:
        seen.extend(tool_results(msgs, "AskUser"))
        return Turn("Understood.")

    agent = Agent(
        name="asker",
        system_prompt="s",
        model=ScriptedChatModel(
            [Turn("", [tool_call("AskUser", id="ask_bad", questions=DUPLICATE_LABELS)]), read], on_exhausted="raise"
        ),
        toolkit=Toolkit(tools=[AskUser()]),
    )

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("Go.")
        await wait_until(lambda: session.pending, "the pause")
        await session.act(
            {
                "action": "return_error",
                "tool_call_id": "ask_bad",
                "message": "Both options say Yes; which one means deploy?",
            }
        )
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert [(r.state, result_text(r)) for r in seen] == [
        (ToolResultState.ERROR, "Both options say Yes; which one means deploy?")
    ]


def test_C02_valid_multi_select_without_preview_is_answered_normally() -> None:
    """The control case: a multi-select question without preview is valid and answerable."""
    questions = [
        {
            "question": "Which checks should run?",
            "header": "Checks",
            "multi_select": True,
            "options": [opt("lint"), opt("tests")],
        }
    ]
    agent = Agent(
        name="asker",
        system_prompt="s",
        model=ScriptedChatModel(
            [
                Turn("", [tool_call("AskUser", id="ask", questions=questions)]),
                lambda m: Turn(result_text(tool_results(m, "AskUser")[-1])),
            ],
            on_exhausted="raise",
        ),
        toolkit=Toolkit(tools=[AskUser()]),
    )

    async def scenario() -> str:
        session = Session(agent, display=False)
        task = session.start("Go.")
        pause = (await wait_until(lambda: session.pending, "the pause"))[0]
        assert pause.ask_user_error is None and pause.ask_user is not None
        await session.act(
            {
                "action": "answer",
                "tool_call_id": "ask",
                "answers": [{"question": "Which checks should run?", "selected": ["lint", "tests"]}],
            }
        )
        return (await asyncio.wait_for(task, 10)).get_text_content()

    assert run_async(scenario()).endswith('"Which checks should run?" -> lint, tests')


def _view_bytes(view: Any) -> int:
    return len(json.dumps(view))


@pytest.mark.parametrize("label_chars", [2_000_000, 19_000])
def test_an_askuser_view_carries_a_large_label_once(label_chars: int) -> None:
    """The page gets the call's input once: a valid call's as ``ask_user`` (its
    ``input_text`` is empty), an invalid one's as ``input_text``; a label too long
    to answer is refused up front, with the cap in the card's error."""
    label = "L" * label_chars
    options = [{"label": label, "description": "big"}, opt("small")]
    questions = [{"question": "Pick one?", "header": "Pick", "options": options}]
    agent = Agent(
        name="asker",
        system_prompt="Ask.",
        model=ScriptedChatModel([Turn("Q.", [tool_call("AskUser", id="big", questions=questions)])]),
        toolkit=Toolkit(tools=[AskUser()]),
    )

    async def scenario() -> tuple[dict[str, Any], str]:
        session = Session(agent, display=True)
        task = session.start("Go.")
        run = await wait_until(lambda: session.current.status == "paused" and session.current, "the AskUser pause")
        view = dict(run.widget.pauses[0])
        summary = payload_for(run.pauses["big"], "bob", session_id="s", agent="asker")["input_summary"]
        task.cancel()
        return view, summary

    view, summary = run_async(scenario())
    assert label_chars < _view_bytes(view) < label_chars + 10_000  # once, not twice
    if label_chars > MAX_SHORT:
        assert view["ask_user"] is None and TOO_LONG.replace("2,000,000", f"{label_chars:,}") in view["ask_user_error"]
        assert label in view["input_text"]  # shown (cut by the page) beside the error
    else:
        assert view["input_text"] == "" and view["ask_user"]["questions"][0]["options"][0]["label"] == label
        assert summary == "Pick one?"  # a notification says what the card asks
