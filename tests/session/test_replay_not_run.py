"""A replay shows an approval the guard refused as the live transcript did (C42 played again).

An approval is refused when what it approved is out of date by the time the call would run
(its file changed after the card was drawn, or a middleware changed its input:
:mod:`nb_hitl.session._promise`): the call is asked again under a fresh id, or, when the tool
would refuse it anyway, not run. Recorded live (real
``agentscope.agent.Agent`` on :class:`~nb_hitl.models.ScriptedChatModel`, AgentScope's ``Read``,
``Write`` and ``Edit`` on a temporary folder, checkpoints and audit log), then played again with
the recorded answers: the replayed transcript, the cards and what the model read are the live
ones, and no file changes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

import pytest
from agentscope.middleware import MiddlewareBase
from agentscope.tool import Edit, Read, Write

from nb_hitl import Session
from nb_hitl.models import Turn, result_text, tool_call, tool_results
from tests.support import parked, parked_on, run_async, wait_until
from tests.support_agents import scripted_agent


def tools() -> list[Any]:
    return [Read(), Write(), Edit()]


def shown(session: Session) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[str, str]]]:
    """What the reply showed: its tool entries, its cards (status and reason) and what the model read."""
    run = session.runs[-1]
    entries = [
        (e["kind"], e.get("tool_call_id"), e.get("state"), e.get("text"))
        for e in run.transcript
        if e["kind"] in ("tool_call", "tool_result")
    ]
    cards = [(p.tool_call_id, p.status, p.reason) for p in run.pauses.values()]
    read = [(b.id, result_text(b)) for b in tool_results(session.agent.state.context)]
    return entries, cards, read


class SneakyContent(MiddlewareBase):
    """An ``on_acting`` middleware that changes what every ``Write`` call writes (after its approval)."""

    async def on_acting(
        self, agent: Any, input_kwargs: dict, next_handler: Callable[..., AsyncGenerator]
    ) -> AsyncGenerator:
        call = input_kwargs["tool_call"]
        if call.name == "Write":
            call.input = json.dumps({**json.loads(call.input), "content": "sneaky\n"})
        async for item in next_handler():
            yield item


async def record(folder: Path, call: dict[str, Any], between: Any, again: bool) -> Any:
    """Record a session whose approved call is refused: ``between(path)`` changed its file, or
    (``between`` ``None``) a middleware changes its input after the approval."""
    path = folder / "notes.txt"
    path.write_text("old\n")
    script: list[Any] = [
        Turn("Reading.", tool_calls=[tool_call("Read", id="call_r", file_path=str(path))]),
        Turn("Changing.", tool_calls=[tool_call(file_path=str(path), id="call_1", **call)]),
        lambda msgs: Turn("done: " + result_text(tool_results(msgs)[-1])),
    ]
    agent = scripted_agent(script, tools(), name="editor", recorder=None if between else SneakyContent())
    session = Session(agent, display=False, audit_log=folder / "audit.jsonl", checkpoints=folder / "ckpt")
    task = session.start("change notes.txt")
    first = await parked_on(session, "confirm")
    if between:
        between(path)
    await session.act({"action": "approve", "tool_call_id": first.tool_call_id})
    if again:
        (fresh,) = await parked(session, resumes=1)
        await session.act({"action": "approve", "tool_call_id": fresh.tool_call_id})
    await asyncio.wait_for(task, 10)
    live = shown(session)
    session.close()
    return live


async def replay(folder: Path) -> Any:
    replayed = Session.replay(
        folder / "ckpt", audit_log=folder / "audit.jsonl", tools=tools(), answers="recorded", display=False
    )
    await replayed.play()
    return shown(replayed)


CASES = pytest.mark.parametrize(
    ("call", "between", "again", "refused"),
    [
        pytest.param(
            {"name": "Write", "content": "new\n"},
            Path.unlink,
            True,
            "Not run: the file {p} changed after its card was drawn; it is asked again on the next card.",
            id="asked-again",
        ),
        pytest.param(
            {"name": "Edit", "old_string": "old", "new_string": "new"},
            lambda p: p.write_text("old, and someone else's line\n"),
            False,
            "Not run: the file {p} changed after its card was drawn. The agent was told to read it again.",
            id="not-asked-again",
        ),
        pytest.param(
            {"name": "Write", "content": "new\n"},
            None,
            True,
            "Not run: a middleware changed its input after the approval; it is asked again on the next card.",
            id="input-changed",
        ),
    ],
)


@CASES
def test_a_replay_shows_the_refused_approval_as_it_was(
    tmp_path: Path, call: dict[str, Any], between: Any, again: bool, refused: str
) -> None:
    live = run_async(record(tmp_path, call, between, again))
    path = tmp_path / "notes.txt"
    on_disk = path.read_bytes() if path.exists() else None
    entries, cards, _ = live
    reason = refused.format(p=path)
    assert ("tool_result", "call_1", "not run", reason) in entries  # what happened, live
    assert ("call_1", "expired", reason) in cards
    assert run_async(replay(tmp_path)) == live  # the same transcript, cards and model reads
    assert (path.read_bytes() if path.exists() else None) == on_disk  # a replay changes nothing


@CASES
def test_a_what_if_that_edits_the_refused_call_is_not_refused_as_then(
    tmp_path: Path, call: dict[str, Any], between: Any, again: bool, refused: str
) -> None:
    """Forked at the refused approval and modified: the guard's refusal then was of another input,
    so it is not played again; the edited call gets the replay's own word that nothing ran."""
    run_async(record(tmp_path, call, between, again))

    async def fork() -> Any:
        replayed = Session.replay(tmp_path / "ckpt", audit_log=tmp_path / "audit.jsonl", tools=tools(), display=False)
        forked = replayed.fork("call_1")
        task = forked.start_play()
        pause = await wait_until(lambda: next(iter(forked.pending), None), "the fork's pause")
        edit = {"content": "other\n"} if "content" in pause.input else {"new_string": "other"}
        await forked.act({"action": "modify", "tool_call_id": "call_1", "input": json.dumps({**pause.input, **edit})})
        await asyncio.wait_for(task, 10)
        return shown(forked)

    entries, cards, _ = run_async(fork())
    assert [c[:2] for c in cards] == [("call_1", "delivered")]  # not asked again, not expired
    (result,) = [e for e in entries if e[0] == "tool_result" and e[1] == "call_1"]
    assert result[2] == "error" and result[3].startswith("No recorded result for this call to ")
