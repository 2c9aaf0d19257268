"""What ``run`` / ``start`` / ``act`` return, used rightly and wrongly (in-process)."""

from __future__ import annotations

import asyncio
import gc
import warnings
from pathlib import Path

import pytest

from nb_hitl import Session
from nb_hitl.models import Turn
from tests.session.test_records import SCRIPT, ran, touch_agent
from tests.support import parked, run_async


def test_an_unawaited_run_sends_nothing_and_says_how(tmp_path: Path) -> None:
    agent = touch_agent(tmp_path / "runs.txt", [Turn("Hi.")])

    async def scenario() -> None:
        session = Session(agent, display=False)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "coroutine was never awaited"
            call = session.run("hello")
            assert "write `await session.run(...)`" in repr(call)
            del call
            gc.collect()
        await asyncio.sleep(0.05)
        assert session.runs == [] and agent.model.calls == []
        # still a coroutine for asyncio's own helpers
        final = await asyncio.wait_for(asyncio.create_task(session.run("hello")), 10)
        assert final.get_text_content() == "Hi."

    run_async(scenario())


def test_result_of_a_running_reply_says_await(tmp_path: Path) -> None:
    async def scenario() -> None:
        session = Session(touch_agent(tmp_path / "runs.txt", SCRIPT), display=False)
        task = session.start("touch a")
        await parked(session)
        with pytest.raises(asyncio.InvalidStateError, match="await task"):
            task.result()
        await session.interrupt()

    run_async(scenario())


def test_an_unawaited_act_is_carried_through(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"

    async def scenario() -> None:
        session = Session(touch_agent(runs, SCRIPT), display=False)
        task = session.start("touch a")
        [pause] = await parked(session)
        session.act({"action": "approve", "tool_call_id": pause.tool_call_id})  # no await
        assert pause.status == "deciding"
        final = await asyncio.wait_for(task, 10)
        assert final.get_text_content() == "Done." and pause.status == "delivered"

    run_async(scenario())
    assert ran(runs) == ["a"]
