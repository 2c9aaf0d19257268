"""Replay of a session whose pauses were a form and a review: the recorded answers given again.

A real ``Agent`` asks a form (``FormTool``: an amount) and then calls a
reviewed lookup (``reviewed(FunctionTool)``: its result held back until a
person accepts, edits or rejects it; the lookup counts its runs in a file).
Recorded live: the form is submitted with ``{"amount": 3}``, the lookup is
approved and its result is edited (redacted). A replay with ``answers="recorded"``, with the
real tools or without them, shows both cards again and gives both answers
from the record (the form's value and the edited text come from the
recorded results); the model reads what it read then, and the lookup never
runs again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.tool import FunctionTool, Toolkit

from nb_hitl import FormTool, Session, reviewed
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from nb_hitl.session._replay import REPLAYED_BY
from nb_hitl.session._replay_tools import REPLAYED_REVIEW
from tests.support import run_async, wait_until

SCHEMA = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}
REDACTED = "customer ada: [redacted]"


def _tools(runs: Path) -> list[Any]:
    def lookup(who: str) -> str:
        """Look a customer up.

        Args:
            who (str): the customer.
        """
        runs.write_text(str(int(runs.read_text()) + 1))
        return f"customer {who}: card 4111 1111 1111 1111"

    return [FormTool(), reviewed(FunctionTool(lookup))]


def _reads(messages: list[Any]) -> Turn:
    return Turn("I read: " + " | ".join(result_text(r) for r in tool_results(messages)))


@dataclass
class Recorded:
    runs: Path
    checkpoints: Path
    audit: Path
    final: str


async def _record(folder: Path) -> Recorded:
    runs = folder / "runs.txt"
    runs.write_text("0")
    agent = Agent(
        name="clerk",
        system_prompt="Help.",
        model=ScriptedChatModel(
            [
                Turn("", [tool_call("AskForm", title="Amount", schema=SCHEMA)]),
                Turn("", [tool_call("lookup", who="ada")]),
                _reads,
            ]
        ),
        toolkit=Toolkit(tools=_tools(runs)),
    )
    session = Session(agent, display=False, audit_log=folder / "audit.jsonl", checkpoints=folder / "ckpt")
    task = session.start("Charge ada.")
    form = await wait_until(lambda: next((p for p in session.pending if p.kind == "form"), None), "the form")
    await session.act({"action": "submit", "tool_call_id": form.tool_call_id, "value": {"amount": 3}})
    confirm = await wait_until(lambda: next((p for p in session.pending if p.kind == "confirm"), None), "the ask")
    await session.act({"action": "approve", "tool_call_id": confirm.tool_call_id})
    review = await wait_until(lambda: next((p for p in session.pending if p.kind == "review"), None), "the review")
    await session.act({"action": "edit", "tool_call_id": review.tool_call_id, "output": REDACTED})
    final = (await task).get_text_content()
    session.close()
    assert runs.read_text() == "1" and REDACTED in final and '"amount": 3' in final
    return Recorded(runs, folder / "ckpt", folder / "audit.jsonl", final)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return run_async(_record(tmp_path_factory.mktemp("forms_reviews")))


@pytest.mark.parametrize("with_tools", [True, False], ids=["real-tools-given", "no-tools-given"])
def test_recorded_form_and_review_answers_are_given_again(recorded: Recorded, with_tools: bool) -> None:
    async def main() -> None:
        tools = _tools(recorded.runs) if with_tools else []
        replayed = Session.replay(
            recorded.checkpoints, audit_log=recorded.audit, tools=tools, answers="recorded", display=False
        )
        final = await replayed.play()
        assert final is not None and final.get_text_content() == recorded.final
        run = replayed.current
        assert run is not None and run.status == "finished"
        kinds = {p.kind: p for p in run.pauses.values()}
        assert set(kinds) == {"form", "review"}  # the lookup's confirmation came first, under the review's id
        assert all(p.status == "delivered" for p in kinds.values())
        assert [(p.decision or {}).get("action") for p in kinds.values()] == ["submit", "edit"]
        assert kinds["form"].message.startswith("Recorded answer: submit, by ")
        assert "Given again from the record." in kinds["review"].message
        assert REPLAYED_REVIEW in kinds["review"].message
        assert recorded.runs.read_text() == "1"  # the lookup never ran again

    run_async(main())


def test_a_replay_that_asks_shows_the_recorded_answer_and_waits(recorded: Recorded) -> None:
    async def main() -> None:
        replayed = Session.replay(recorded.checkpoints, audit_log=recorded.audit, display=False)
        task = replayed.start_play()
        form = await wait_until(lambda: next(iter(replayed.pending), None), "the form again")
        assert form.kind == "form"
        message = replayed.recorded_answer(form.tool_call_id)
        assert message == {"tool_call_id": form.tool_call_id, "action": "submit", "value": {"amount": 3}}
        await replayed.act(message, decided_by=REPLAYED_BY)
        ask = await wait_until(lambda: next(iter(replayed.pending), None), "the lookup's confirmation again")
        assert ask.kind == "confirm" and ask.message.startswith("Recorded answer: approve, by ")
        assert replayed.recorded_answer(ask.tool_call_id, "confirm") == {
            "tool_call_id": ask.tool_call_id,
            "action": "approve",
        }
        await replayed.act({"action": "approve", "tool_call_id": ask.tool_call_id})
        review = await wait_until(lambda: next(iter(replayed.pending), None), "the review again")
        assert review.kind == "review" and review.review_output == REDACTED
        assert review.tool_call_id == ask.tool_call_id
        assert replayed.recorded_answer(review.tool_call_id, "review") == {
            "tool_call_id": review.tool_call_id,
            "action": "edit",
            "output": REDACTED,
        }
        await replayed.act({"action": "accept", "tool_call_id": review.tool_call_id})
        final = await task
        assert final.get_text_content() == recorded.final
        assert recorded.runs.read_text() == "1"

    run_async(main())
