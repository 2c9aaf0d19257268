""" "Replay" and "What if…" requests on a reply, in process (the page's requests through ``session.act``).

What the kernel test checks over a real comm, here on the session itself:
which replies offer the buttons (a recorded session's finished reply; not a
what-if continuation; not a session with no audit log), that a request on a
reply that has not finished is refused, and that a what-if turned live runs
the real tool while one left recorded does not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.tool import Toolkit

from nb_hitl import Session
from nb_hitl._agentscope import enum_value
from nb_hitl.errors import NbHitlError
from nb_hitl.models import ScriptedChatModel, Turn, result_shown, result_text, tool_call, tool_results
from nb_hitl.session._whatif import NOT_RECORDED, offer
from tests.support import run_async, wait_until
from tests.support_agents import counter_tools


def _agent(counter: Path) -> Agent:
    return Agent(
        name="counter",
        system_prompt="Count.",
        model=ScriptedChatModel([Turn("Adding 2.", [tool_call("bump", step=2)]), Turn("Done.")]),
        toolkit=Toolkit(tools=counter_tools(counter)),
    )


async def _recorded(folder: Path, **kwargs: Any) -> tuple[Session, Path, str]:
    counter = folder / "counter.txt"
    counter.write_text("0")
    session = Session(_agent(counter), display=False, **kwargs)
    task = session.start("Add two.")
    pause = await wait_until(lambda: next(iter(session.pending), None), "the bump")
    with pytest.raises(NbHitlError, match=r"offered on a finished reply; this one is (running|paused)\.$"):
        session.act({"action": "replay"})
    await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
    await task
    assert counter.read_text() == "2"
    return session, counter, pause.tool_call_id


def test_what_if_live_runs_the_real_tool_and_recorded_does_not(tmp_path: Path) -> None:
    async def main() -> None:
        session, counter, call_id = await _recorded(tmp_path, audit_log=tmp_path / "audit.jsonl")
        run = session.current
        assert run is not None and run.upto == 1
        assert offer(session, run) == {"ready": True}
        for live, expected in ((False, "2"), (True, "4")):
            started = await session.act({"action": "what_if", "tool_call_id": call_id, "live": live})
            assert started["started"].startswith("What if: bump (step=2) answered differently")
            child, task = run.nested[-1]
            pause = await wait_until(lambda c=child: next(iter(c.pending), None), "the what-if card")
            assert pause.tool_call_id == call_id and pause.message.startswith("What if: answer this pause")
            await child.act({"action": "approve", "tool_call_id": call_id})
            await task
            assert counter.read_text() == expected  # recorded: nothing ran; live: the real bump ran once
            assert offer(child, child.current) == {"reason": NOT_RECORDED}

    run_async(main())


def test_replay_through_act_plays_and_changes_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        session, counter, _ = await _recorded(tmp_path, audit_log=tmp_path / "audit.jsonl")
        started = await session.act({"action": "replay"})
        assert started == {
            "started": "Replay of this reply, from the record (the tools give their recorded results: nothing runs)"
        }
        child, task = session.current.nested[-1]  # type: ignore[union-attr]
        final = await task
        assert final.get_text_content() == "Done." and child.current.status == "finished"
        assert counter.read_text() == "2"

    run_async(main())


def test_a_session_with_no_audit_log_offers_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        session, _, _ = await _recorded(tmp_path)
        assert offer(session, session.current) == {}  # type: ignore[arg-type]
        with pytest.raises(NbHitlError, match=r"keeps no record to replay: make it with Session\(\.\.\., audit_log"):
            session.act({"action": "what_if_list"})

    run_async(main())


def test_a_reply_with_no_message_on_record_has_nothing_to_play(tmp_path: Path) -> None:
    async def main() -> None:
        session, _, _ = await _recorded(tmp_path, audit_log=tmp_path / "audit.jsonl")
        run = session.current
        assert run is not None
        run.upto = 0  # as if the agent's memory held no user message when the reply ended
        with pytest.raises(NbHitlError, match="holds no message up to this reply, so there is nothing to play"):
            session.act({"action": "replay"})
        assert run.nested == []

    run_async(main())


def _short_report(messages: list[Any]) -> Turn:
    """Like the notebooks' scripted model: each result's state and its first 20 characters."""
    return Turn("; ".join(f"{r.name}: {enum_value(r.state)}: {result_shown(r)[:20]}" for r in tool_results(messages)))


def test_what_if_marks_the_recorded_reply_that_no_longer_follows(tmp_path: Path) -> None:
    """A denied call, then What if… approving it (tools recorded): the recorded last turn
    ("bump: denied: ...") was written after a result this fork does not have. It is shown
    marked as the recorded reply, and no text a person reads names an internal call id."""
    counter = tmp_path / "counter.txt"
    counter.write_text("0")
    agent = Agent(
        name="counter",
        system_prompt="Count.",
        model=ScriptedChatModel([Turn("Adding 2.", [tool_call("bump", step=2)]), _short_report]),
        toolkit=Toolkit(tools=counter_tools(counter)),
    )

    async def main() -> tuple[str, str, str]:
        session = Session(agent, display=False, audit_log=tmp_path / "audit.jsonl")
        task = session.start("Add two.")
        pause = await wait_until(lambda: next(iter(session.pending), None), "the bump")
        await session.act({"action": "deny", "tool_call_id": pause.tool_call_id})
        recorded = (await task).get_text_content()
        await session.act({"action": "what_if", "tool_call_id": pause.tool_call_id})
        child, fork = session.current.nested[-1]  # type: ignore[union-attr]
        again = await wait_until(lambda: next(iter(child.pending), None), "the what-if card")
        await child.act({"action": "approve", "tool_call_id": again.tool_call_id})
        final = (await fork).get_text_content()
        (result,) = tool_results(child.agent.state.context, "bump")
        return recorded, final, result_text(result)

    recorded, final, told = run_async(main())
    assert recorded.startswith("bump: denied: ")
    assert final.startswith(recorded)  # the recorded text, shown as it was...
    assert "(What if: this is the reply recorded then, written after bump ended denied." in final  # ...and marked
    assert "In this what-if bump ended error" in final and "may no longer follow" in final
    assert told.startswith("No recorded result for this call to bump: when the session was recorded it did not run")
    assert "call_" not in final and "call_" not in told
    assert counter.read_text() == "0"
