"""Replay and fork: a recorded session played again offline, and answered differently at a past pause.

A real ``Agent`` whose ``bump`` tool adds to a counter file (asks first),
whose ``peek`` tool reads it (read-only) and which asks the person with
AskUser is recorded once, live (checkpoints and audit log). Replays play it
from the checkpoint and the audit log: the model's turns and every tool's
result come from the record, the pauses show again saying what was answered
then, and the counter file never changes. A fork goes back to the recorded
approval and denies instead: the model reads the denial, the counter stays.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import HintBlock
from agentscope.tool import AskUser, Toolkit

from nb_hitl import Session
from nb_hitl._agentscope import enum_value
from nb_hitl.errors import NbHitlError
from nb_hitl.models import ScriptedChatModel, Turn, result_shown, result_text, tool_call, tool_results
from nb_hitl.session._recording import Recording
from nb_hitl.session._replay import REPLAYED_BY
from nb_hitl.session._replay_tools import RecordedTool
from nb_hitl.store import AuditLog
from tests.support import run_async, wait_until
from tests.support_agents import counter_tools

QUESTION = "How much should I add?"


def said_last(messages: list[Any]) -> Turn:
    """A turn that reads the last tool result the model was sent."""
    return Turn("I read: " + result_text(tool_results(messages)[-1]))


@dataclass
class Recorded:
    folder: Path
    counter: Path
    checkpoints: Path
    audit: Path
    final: str
    bump_id: str
    ask_id: str

    def tools(self) -> list[Any]:
        return counter_tools(self.counter)


async def _record(folder: Path) -> Recorded:
    counter = folder / "counter.txt"
    counter.write_text("0")
    agent = Agent(
        name="counter",
        system_prompt="Count.",
        model=ScriptedChatModel(
            [
                Turn("Let me look.", [tool_call("peek")]),
                Turn(
                    "",
                    [
                        tool_call(
                            "AskUser",
                            questions=[
                                {
                                    "question": QUESTION,
                                    "header": "Step",
                                    "options": [
                                        {"label": "2", "description": "two"},
                                        {"label": "5", "description": "five"},
                                    ],
                                    "multiSelect": False,
                                }
                            ],
                        )
                    ],
                ),
                Turn("Adding 2.", [tool_call("bump", step=2)]),
                said_last,
            ],
            on_exhausted="raise",
        ),
        toolkit=Toolkit(tools=counter_tools(counter)),
    )
    session = Session(agent, display=False, audit_log=folder / "audit.jsonl", checkpoints=folder / "ckpt")
    task = session.start("Add something to the counter.")
    ask = await wait_until(lambda: next((p for p in session.pending if p.kind == "ask_user"), None), "the question")
    await session.act(
        {"action": "answer", "tool_call_id": ask.tool_call_id, "answers": [{"question": QUESTION, "selected": ["2"]}]}
    )
    bump = await wait_until(lambda: next((p for p in session.pending if p.kind == "confirm"), None), "the bump")
    await session.act({"action": "approve", "tool_call_id": bump.tool_call_id})
    final = await task
    session.close()
    assert counter.read_text() == "2"
    return Recorded(
        folder,
        counter,
        folder / "ckpt",
        folder / "audit.jsonl",
        final.get_text_content(),
        bump.tool_call_id,
        ask.tool_call_id,
    )


async def bump_pause(forked: Session, recorded: Recorded) -> Any:
    """The fork's pause: the recorded bump. The replayed question before it is answered from the
    record through the front door, and may be pending for a moment first: never take it instead."""
    return await wait_until(
        lambda: next((p for p in forked.pending if p.tool_call_id == recorded.bump_id), None), "the fork's pause"
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """One live session, recorded once for every test of this module."""
    return run_async(_record(tmp_path_factory.mktemp("replay")))


def test_the_recording_reads_turns_results_and_answers(recorded: Recorded) -> None:
    rec = Recording.load(recorded.checkpoints, audit_log=recorded.audit)
    assert [t.text for t in rec.turns] == ["Let me look.", "", "Adding 2.", recorded.final]
    assert rec.pauses() == [recorded.ask_id, recorded.bump_id]
    assert rec.behavior(recorded.bump_id) == "ask"
    assert result_text(rec.results[recorded.bump_id]) == "The counter is now 2."
    assert [m.get_text_content() for m in rec.prompts] == ["Add something to the counter."]


def test_ten_replays_leave_the_counter_unchanged(recorded: Recorded) -> None:
    async def main() -> None:
        for _ in range(10):
            replayed = Session.replay(
                recorded.checkpoints,
                audit_log=recorded.audit,
                tools=recorded.tools(),
                answers="recorded",
                display=False,
            )
            assert all(isinstance(t, RecordedTool | AskUser) for t in replayed.agent.toolkit.tool_groups[0].tools)
            final = await replayed.play()
            assert final is not None and final.get_text_content() == recorded.final
            run = replayed.current
            assert run is not None and run.status == "finished"
            # the pauses showed again, saying what was answered then, and were answered from the record
            cards = {cid: p for cid, p in run.pauses.items()}
            assert set(cards) == {recorded.ask_id, recorded.bump_id}
            assert cards[recorded.bump_id].message.startswith("Recorded answer: approve, by ")
            assert "Recorded answer: answer (2)" in cards[recorded.ask_id].message
            assert all(p.status == "delivered" for p in cards.values())
            # peek returned what it returned then (0), not what the file holds now (2)
            got = {b.id: result_text(b) for b in tool_results(replayed.agent.state.context)}
            assert got[recorded.bump_id] == "The counter is now 2."
            assert "0" in got.values()
            assert recorded.counter.read_text() == "2"

    run_async(main())


def test_a_replay_waits_for_a_person_by_default(recorded: Recorded) -> None:
    async def main() -> None:
        replayed = Session.replay(recorded.checkpoints, audit_log=recorded.audit, display=False)
        task = replayed.start_play()
        ask = await wait_until(lambda: next(iter(replayed.pending), None), "the question again")
        assert ask.tool_call_id == recorded.ask_id
        assert ask.message.startswith("Recorded answer: answer (2), by ") and "Given again" not in ask.message
        await asyncio.sleep(0.2)
        assert replayed.pending == [ask]  # nobody answered for the person
        msg = replayed.recorded_answer(ask.tool_call_id)
        assert msg is not None
        await replayed.act(msg)
        bump = await wait_until(lambda: next(iter(replayed.pending), None), "the bump again")
        await replayed.act({"action": "approve", "tool_call_id": bump.tool_call_id})
        final = await task
        assert final.get_text_content() == recorded.final
        assert recorded.counter.read_text() == "2"

    run_async(main())


def test_fork_at_the_approval_and_deny(recorded: Recorded, tmp_path: Path) -> None:
    async def main() -> None:
        replayed = Session.replay(recorded.checkpoints, audit_log=recorded.audit, display=False)
        forked = replayed.fork(
            recorded.bump_id,
            model=ScriptedChatModel([said_last], on_exhausted="raise"),
            audit_log=tmp_path / "fork-audit.jsonl",
        )
        task = forked.start_play()
        pause = await bump_pause(forked, recorded)
        assert pause.tool_call_id == recorded.bump_id
        assert pause.message.startswith("What if: answer this pause differently. Recorded answer: approve")
        await forked.act({"action": "deny", "tool_call_id": pause.tool_call_id, "reason": "not today"})
        final = await task
        assert final.get_text_content() == "I read: The user denied your call to bump, saying: not today"
        assert recorded.counter.read_text() == "2"
        # both answers took the front door: the same audit lines as any click
        lines = AuditLog(tmp_path / "fork-audit.jsonl").records("answered")
        assert [(r["tool_call_id"], r["decision"], r["decided_by"]) for r in lines] == [
            (recorded.ask_id, "answer", REPLAYED_BY),
            (recorded.bump_id, "deny", forked.decided_by),
        ]
        # and a second answer to the same pause is refused there
        with pytest.raises(NbHitlError):
            await forked.act({"action": "approve", "tool_call_id": pause.tool_call_id})

    run_async(main())


def test_after_a_fork_a_call_with_no_record_says_so_unless_live(recorded: Recorded) -> None:
    async def main(live: bool) -> str:
        replayed = Session.replay(recorded.checkpoints, audit_log=recorded.audit, display=False)
        again = ScriptedChatModel(
            [Turn("Adding 5 instead.", [tool_call("bump", step=5)]), said_last], on_exhausted="raise"
        )
        forked = replayed.fork(recorded.bump_id, model=again, live=live, tools=recorded.tools())
        task = forked.start_play()
        pause = await bump_pause(forked, recorded)
        await forked.act({"action": "deny", "tool_call_id": pause.tool_call_id})
        new = await wait_until(
            lambda: next((p for p in forked.pending if p.tool_call_id != recorded.bump_id), None), "the new bump"
        )
        assert not new.message or "Recorded answer" not in new.message
        await forked.act({"action": "approve", "tool_call_id": new.tool_call_id})
        final = await task
        state = enum_value(tool_results(forked.agent.state.context)[-1].state)
        assert state == ("success" if live else "error")
        return final.get_text_content()

    said = run_async(main(False))
    assert said.startswith("I read: No recorded result for this call to bump: ") and "nothing ran" in said
    assert recorded.counter.read_text() == "2"
    assert run_async(main(True)) == "I read: The counter is now 7."
    assert recorded.counter.read_text() == "7"
    recorded.counter.write_text("2")  # the record's value, for the other tests


def test_fork_at_an_unknown_pause_names_the_recorded_ones(recorded: Recorded) -> None:
    replayed = Session.replay(recorded.checkpoints, audit_log=recorded.audit, display=False)
    with pytest.raises(
        NbHitlError, match=f"No recorded pause 'nope' to fork at; the recorded pauses are: {recorded.ask_id}"
    ):
        replayed.fork("nope")
    with pytest.raises(ValueError, match="answers must be one of"):
        Session.replay(recorded.checkpoints, audit_log=recorded.audit, answers="maybe", display=False)


def test_fork_a_restored_session(recorded: Recorded) -> None:
    """A restored session (not a replay) forks from the agent's memory and its audit log."""

    def factory(state: Any) -> Agent:
        return Agent(
            name="counter",
            system_prompt="Count.",
            model=ScriptedChatModel([], on_exhausted="raise"),
            toolkit=Toolkit(tools=recorded.tools()),
            state=state,
        )

    async def main() -> None:
        restored = Session.restore(factory, recorded.checkpoints, audit_log=recorded.audit, display=False)
        try:
            forked = restored.fork(recorded.ask_id, model=ScriptedChatModel([said_last], on_exhausted="raise"))
        finally:
            restored.close()
        task = forked.start_play()
        pause = await wait_until(lambda: next(iter(forked.pending), None), "the question, as a what-if")
        assert pause.tool_call_id == recorded.ask_id and pause.message.startswith("What if:")
        await forked.act(
            {
                "action": "answer",
                "tool_call_id": pause.tool_call_id,
                "answers": [{"question": QUESTION, "selected": ["5"]}],
            }
        )
        final = await task
        assert final.get_text_content().startswith("I read: ") and "5" in final.get_text_content()
        assert recorded.counter.read_text() == "2"

    run_async(main())


def test_a_compressed_context_is_not_replayed(recorded: Recorded) -> None:
    agent = Agent(name="counter", system_prompt="Count.", model=ScriptedChatModel([]), toolkit=Toolkit(tools=[]))
    agent.state.summary = "Earlier, the counter was bumped."
    with pytest.raises(NbHitlError, match="context was compressed"):
        Recording.from_agent(agent, recorded.audit)


def test_a_fork_that_modifies_a_recorded_call_is_not_given_the_recorded_result(recorded: Recorded) -> None:
    """The record holds what bump(step=2) returned. A what-if that changes the call to step=5
    (tools recorded) must not tell the model, or show the person, "The counter is now 2." as
    the result of bump(step=5): nothing ran, and the result says so."""

    async def main() -> str:
        replayed = Session.replay(recorded.checkpoints, audit_log=recorded.audit, tools=recorded.tools(), display=False)
        forked = replayed.fork(recorded.bump_id, model=ScriptedChatModel([said_last], on_exhausted="raise"))
        task = forked.start_play()
        pause = await bump_pause(forked, recorded)
        await forked.act({"action": "modify", "tool_call_id": pause.tool_call_id, "input": '{"step": 5}'})
        final = await task
        (result,) = [b for b in tool_results(forked.agent.state.context) if b.id == recorded.bump_id]
        assert enum_value(result.state) == "error"
        # what the model read of the person's edit does not say the tool ran (nothing did)
        hints = [
            str(b.hint)
            for m in forked.agent.state.context
            if not isinstance(m.content, str)
            for b in m.content
            if isinstance(b, HintBlock)
        ]
        (edit,) = [h for h in hints if h.startswith("A person edited your tool call")]
        assert 'the person changed it to bump({"step": 5}), and the call was made with that input' in edit
        assert "it ran" not in edit and "before it ran" not in edit
        return final.get_text_content()

    said = run_async(main())
    assert "The counter is now 2." not in said
    assert said.startswith("I read: No recorded result for this call to bump with this input")
    assert 'bump({"step": 2})' in said and 'bump({"step": 5})' in said and "nothing ran" in said
    assert recorded.counter.read_text() == "2"


def test_the_recorded_turns_after_a_fork_say_what_the_model_read_now(recorded: Recorded) -> None:
    """No model passed: the recorded turns go on after the fork's pause. The recorded last turn
    quoted the tool ("I read: The counter is now 2."); after a denial, or a live call that
    changed the counter, it quotes what the model was sent in this play, never the stale result."""

    async def main(decision: dict[str, Any], live: bool) -> str:
        replayed = Session.replay(recorded.checkpoints, audit_log=recorded.audit, display=False)
        forked = replayed.fork(recorded.bump_id, live=live, tools=recorded.tools())
        task = forked.start_play()
        pause = await bump_pause(forked, recorded)
        await forked.act({**decision, "tool_call_id": pause.tool_call_id})
        final = await task
        (result,) = [b for b in tool_results(forked.agent.state.context) if b.id == recorded.bump_id]
        assert final.get_text_content() == "I read: " + result_shown(result)
        return final.get_text_content()

    assert recorded.final == "I read: The counter is now 2."
    denied = run_async(main({"action": "deny", "reason": "not today"}, False))
    assert denied == "I read: The user denied your call to bump, saying: not today"
    # AgentScope's own denial is markup for the model: the reply quotes its words, not its tags
    bare = run_async(main({"action": "deny"}, False))
    assert bare == 'I read: The execution of tool "bump" is denied by user!'
    assert recorded.counter.read_text() == "2"
    live = run_async(main({"action": "modify", "input": '{"step": 3}'}, True))
    assert live == "I read: The counter is now 5."
    assert recorded.counter.read_text() == "5"
    recorded.counter.write_text("2")  # the record's value, for the other tests
    again = run_async(main({"action": "approve"}, False))  # the same answer, recorded tools: as recorded
    assert again == recorded.final


def test_a_recorded_answer_refused_now_says_so_on_its_open_card(recorded: Recorded) -> None:
    """The record's answer to the question names an option it does not offer (its audit line
    changed after the session): given again, the front door refuses it. The card stays open for a
    person and says the recorded answer was refused, never that it was given again."""

    async def main() -> None:
        rec = Recording.load(recorded.checkpoints, audit_log=recorded.audit)
        for line in rec.history[recorded.ask_id]:
            line["answers"] = [{"question": QUESTION, "selected": ["9"]}]
        replayed = Session.replay(rec, answers="recorded", display=False)
        task = replayed.start_play()
        ask = await wait_until(
            lambda: next((p for p in replayed.pending if "refused this time" in (p.message or "")), None),
            "the refusal on the question's card",
        )
        assert ask.tool_call_id == recorded.ask_id and ask.status == "open"
        assert "Given again" not in ask.message
        assert "'9' is not an option" in ask.message and ask.message.endswith("answer it yourself.")
        msg = {"tool_call_id": ask.tool_call_id, "action": "answer"}
        await replayed.act({**msg, "answers": [{"question": QUESTION, "selected": ["2"]}]})
        final = await task  # the bump after it is answered from the record
        assert final.get_text_content() == recorded.final
        run = replayed.current
        assert run is not None and run.pauses[recorded.bump_id].message.endswith("Given again from the record.")
        assert recorded.counter.read_text() == "2"

    run_async(main())
