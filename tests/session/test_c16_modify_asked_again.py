"""C16 when the edited call is asked again: a person's Modify stays what the model reads.

The quickstart's deletion (the real quickstart agent, :func:`nb_hitl.demo.demo_agent`, on the scripted
offline model, with its ``delete_file`` sandbox tool in ``tmp_path``): the person picks ``draft.md``,
the file changes after the card was drawn, the person modifies the call to ``./draft.md``. The
approval was bound to the file as shown (C42), so nothing runs and the edited call is asked again
under a fresh id. Whatever the second card's answer, the model reads that a person changed its call
``draft.md`` to ``./draft.md`` (not only that it was asked again), and a What if… forked at the second
card starts from the model's own call.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from nb_hitl import Session
from nb_hitl.demo import demo_agent
from nb_hitl.models import result_text, tool_results
from tests.session.test_c42_file_changed_since_approval import hints
from tests.session.test_dry_run import msg
from tests.session.test_dry_run_folder import DRAFT, confirm_deletion
from tests.support import parked, run_async, wait_until

EDIT = {"path": "./draft.md"}


def person_changed(was: str) -> str:
    """What the model reads of the person's Modify of call ``was`` (the model's call, then the edit)."""
    return (
        f"A person edited your tool call {was} before it ran. You asked for "
        'delete_file({"path": "draft.md"}); the person changed it to delete_file({"path": "./draft.md"})'
    )


async def asked_again_after_modify(session: Session, draft: Path) -> tuple[Any, Any, asyncio.Task[Any]]:
    """Start the quickstart's request; modify its deletion after the file changed; ``(first, again, task)``."""
    task = session.start("Please tidy up my sandbox folder.")
    first = await confirm_deletion(session)
    draft.write_text(DRAFT + "A line written after the card was drawn.\n")
    await session.act(msg(first, "modify", input=json.dumps(EDIT)))
    (again,) = await parked(session, resumes=2)
    assert first.status == "expired" and again.tool_call_id == f"{first.tool_call_id}_r2"
    assert again.input == EDIT and again.model_sent == {"path": "draft.md"}
    return first, again, task


@pytest.mark.parametrize("answer", ["approve", "deny", "modify"])
def test_c16_a_modified_call_asked_again_tells_the_model_what_the_person_changed(tmp_path: Path, answer: str) -> None:
    agent = demo_agent(tmp_path / "box", chunk_delay=0)
    draft, notes = agent.sandbox / "draft.md", agent.sandbox / "notes.txt"

    async def scenario() -> str:
        session = Session(agent, display=False, audit_log=str(tmp_path / "audit.jsonl"))
        first, again, task = await asked_again_after_modify(session, draft)
        extra = {"input": json.dumps({"path": "notes.txt"})} if answer == "modify" else {}
        await session.act(msg(again, answer, **extra))
        await asyncio.wait_for(task, 10)
        return str(first.tool_call_id)

    was = run_async(scenario())
    told = hints(agent)  # what the scripted model received in its call after the result
    asked = [h for h in told if "asked the person\nagain" in h or "asked the person again" in h]
    assert len(asked) == 1 and person_changed(was) in asked[0], told
    (result,) = tool_results(agent.model.calls[-1], "delete_file")
    if answer == "approve":
        assert result_text(result) == "Deleted ./draft.md." and not draft.exists()
    elif answer == "deny":
        assert draft.exists() and notes.exists()
    else:  # modified again: the model still asked for draft.md, the person changed it twice
        assert result_text(result) == "Deleted notes.txt." and draft.exists() and not notes.exists()
        twice = (
            'You asked for delete_file({"path": "draft.md"}); the person changed it to '
            'delete_file({"path": "notes.txt"}), and the call was made with that input'
        )
        assert any(h.startswith(f"A person edited your tool call. {twice}") for h in told), told


def test_c16_a_what_if_at_the_card_asked_again_starts_from_the_model_call(tmp_path: Path) -> None:
    agent = demo_agent(tmp_path / "box", chunk_delay=0)
    draft = agent.sandbox / "draft.md"

    async def scenario() -> tuple[str, Any, list[str]]:
        session = Session(agent, display=False, audit_log=str(tmp_path / "audit.jsonl"))
        first, again, task = await asked_again_after_modify(session, draft)
        await session.act(msg(again, "approve"))
        await asyncio.wait_for(task, 10)
        await session.act({"action": "what_if", "tool_call_id": again.tool_call_id})
        child, fork = session.current.nested[-1]  # type: ignore[union-attr]
        forked = await wait_until(lambda: next(iter(child.pending), None), "the what-if card")
        await child.act(msg(forked, "deny"))
        await asyncio.wait_for(fork, 10)
        return str(first.tool_call_id), forked, hints(child.agent)

    was, forked, told = run_async(scenario())
    assert forked.tool_call_id == f"{was}_r2" and forked.input == EDIT
    assert forked.model_sent == {"path": "draft.md"}  # the model's own call, not the edit
    assert any(person_changed(was) in h for h in told), told


def test_c16_an_edited_call_asked_again_twice_still_tells_the_person_change(tmp_path: Path) -> None:
    """The file changes again after the second card's Approve: a third card; the model reads the
    person's change once, under its own call id, with the id its call shows now."""
    agent = demo_agent(tmp_path / "box", chunk_delay=0)
    draft = agent.sandbox / "draft.md"

    async def scenario() -> str:
        session = Session(agent, display=False)
        first, again, task = await asked_again_after_modify(session, draft)
        draft.write_text(DRAFT + "Yet another line.\n")
        await session.act(msg(again, "approve"))
        (third,) = await parked(session, resumes=3)
        assert third.tool_call_id == f"{first.tool_call_id}_r2_r2" and third.model_sent == {"path": "draft.md"}
        await session.act(msg(third, "approve"))
        await asyncio.wait_for(task, 10)
        return str(first.tool_call_id)

    was = run_async(scenario())
    (told,) = [h for h in hints(agent) if "asked the person again" in h]
    assert person_changed(was) in told and f"as call {was}_r2_r2" in told
    (result,) = tool_results(agent.model.calls[-1], "delete_file")
    assert result_text(result) == "Deleted ./draft.md." and not draft.exists()
