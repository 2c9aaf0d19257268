"""The quickstart's deletion: its card shows the whole file removed, a "Dry run" deletes it in a copy
of the sandbox folder, and the approval is bound to the file seen (C42).

The real quickstart agent (:func:`nb_hitl.demo.demo_agent`: an AgentScope ``Agent`` on the scripted
offline model, with ``delete_file``, :class:`nb_hitl.demo.SandboxDelete`, which implements
``planned_change`` and the :class:`~nb_hitl.dry_run_folder.FolderTool` protocol); answers go
through ``Session.act`` (the path of a click). Checked: the card's diff, every byte of the sandbox,
what the dry run says it did, the audit log, and what the model read.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from pathlib import Path
from typing import Any

import pytest
from agentscope.tool import FunctionTool

from nb_hitl import Session
from nb_hitl.demo import demo_agent
from nb_hitl.errors import DecisionError
from nb_hitl.models import Turn, result_text, tool_call, tool_results
from nb_hitl.store import AuditLog
from tests.session.test_c42_file_changed_since_approval import hints
from tests.session.test_dry_run import msg, snapshot
from tests.support import parked, parked_on, run_async
from tests.support_agents import scripted_agent

DRAFT = "# Draft\n\nA first paragraph nobody has read yet.\n"


async def confirm_deletion(session: Session, name: str = "draft.md") -> Any:
    """Start the quickstart's request, pick ``name`` in the AskUser pause; the delete_file confirmation."""
    ask = await parked_on(session, "ask_user")
    question = ask.ask_user.questions[0].question
    answers = [{"question": question, "selected": [name], "other": None}]
    await session.act(msg(ask, "answer", answers=answers))
    return await parked_on(session, "confirm")


def test_the_deletion_card_shows_the_whole_file_removed(tmp_path: Path) -> None:
    agent = demo_agent(tmp_path / "box", chunk_delay=0)
    draft = agent.sandbox / "draft.md"

    async def scenario() -> dict[str, Any]:
        session = Session(agent, display=False)
        task = session.start("Please tidy up my sandbox folder.")
        confirm = await confirm_deletion(session)
        view = confirm.to_view()
        await session.act(msg(confirm, "deny"))
        await asyncio.wait_for(task, 10)
        return view

    view = run_async(scenario())
    assert view["dry_run"] is True
    assert view["file_change"] == {
        "path": str(draft),
        "diff": f"--- {draft}\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-# Draft\n-\n-A first paragraph nobody has read yet.\n",
        "sha256_before": hashlib.sha256(DRAFT.encode()).hexdigest(),
        "note": f"The call deletes {draft}: every line of the file is removed.",
    }
    assert draft.read_text() == DRAFT  # denied: nothing deleted


def test_ten_dry_runs_delete_in_a_copy_only_then_approve_deletes(tmp_path: Path) -> None:
    agent = demo_agent(tmp_path / "box", chunk_delay=0)
    draft = agent.sandbox / "draft.md"
    audit = tmp_path / "audit.jsonl"
    before = snapshot(agent.sandbox)

    async def scenario() -> list[dict[str, Any]]:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("Please tidy up my sandbox folder.")
        confirm = await confirm_deletion(session)
        lines_before = AuditLog(audit).records()
        results = []
        for _ in range(10):
            results.append((await session.act(msg(confirm, "dry_run")))["dry_run"])
            assert snapshot(agent.sandbox) == before  # byte for byte (and mtimes), after every dry run
            assert confirm.status == "open" and confirm.decision is None
            assert session.current is not None and session.current.status == "paused"
        assert AuditLog(audit).records() == lines_before  # a dry run is not an answer
        await session.act(msg(confirm, "approve"))
        final = await asyncio.wait_for(task, 10)
        assert final.get_text_content() == "Done. Deleted draft.md. The folder now holds: notes.txt, old_log.txt."
        return results

    results = run_async(scenario())
    assert all(r == results[0] for r in results)
    shown = results[0]
    assert shown["sandbox"] == "a temporary copy" and shown["state"] == "success"
    assert shown["summary"] == (
        "Dry run in a temporary copy of its folder: delete_file ran with the input Approve would run and ended "
        "with state success; 1 file deleted. The real files were not touched; the call still waits for your answer."
    )
    assert shown["output"] == "Deleted draft.md."
    (did,) = shown["files"]
    assert did["path"] == str(draft) and did["change"] == "deleted"
    assert shown["folder"] == str(draft.parent)  # the page names the file inside it: "draft.md"
    assert (
        did["diff"]["diff"] == f"--- {draft}\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-# Draft\n-\n-{DRAFT.splitlines()[2]}\n"
    )
    assert did["diff"]["note"] == "The dry run deleted this file."
    # Approve deleted the real file once; the other two are untouched
    assert not draft.exists()
    assert snapshot(agent.sandbox) == {k: v for k, v in before.items() if k != "draft.md"}


@pytest.mark.parametrize("what", ["changed", "vanished"])
def test_c42_deletion_of_a_file_changed_since_approval_is_asked_again(tmp_path: Path, what: str) -> None:
    """The file changes (or is deleted by someone else) between the card and Approve: nothing runs,
    a fresh card shows the deletion of the file as it is now, the model reads why; approving that
    card runs the call once."""
    agent = demo_agent(tmp_path / "box", chunk_delay=0)
    draft = agent.sandbox / "draft.md"
    audit = tmp_path / "audit.jsonl"
    added = "A second paragraph, written after the card was drawn.\n"

    async def scenario() -> str:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("Please tidy up my sandbox folder.")
        first = await confirm_deletion(session)
        assert first.file_change is not None and added not in first.file_change["diff"]
        if what == "changed":
            draft.write_text(DRAFT + added)
        else:
            draft.unlink()
        await session.act(msg(first, "approve"))
        (again,) = await parked(session, resumes=2)
        assert first.status == "expired" and first.reason is not None
        assert first.reason.startswith(f"Not run: the file {draft} changed after its card was drawn")
        assert again.tool_call_id == f"{first.tool_call_id}_r2" and again.status == "open"
        assert again.message is not None and again.message.startswith(
            f"The file {draft} changed after the card of this delete_file call was drawn"
        )
        change = again.to_view()["file_change"]
        assert change is not None
        if what == "changed":
            assert draft.read_text() == DRAFT + added  # nothing ran
            assert f"-{added}" in change["diff"] and change["note"].startswith(f"The call deletes {draft}")
            assert change["sha256_before"] == hashlib.sha256((DRAFT + added).encode()).hexdigest()
        else:
            assert change["diff"] == "" and change["sha256_before"] is None
            assert "which does not exist now: the tool would fail" in change["note"]
        await session.act(msg(again, "approve"))
        final = await asyncio.wait_for(task, 10)
        return str(final.get_text_content())

    final = run_async(scenario())
    assert not draft.exists()
    (result,) = tool_results(agent.model.calls[-1], "delete_file")  # run once, under the fresh id
    assert result.id.endswith("_r2")
    if what == "changed":
        assert result_text(result) == "Deleted draft.md."
        assert final == "Done. Deleted draft.md. The folder now holds: notes.txt, old_log.txt."
    else:
        assert result_text(result).startswith("Could not delete draft.md")
        assert final.startswith("The deletion did not happen (error): Could not delete draft.md")
        assert re.search(r"[.!?] The folder holds: ", final), final  # the tool's text ends as a sentence
    (hint,) = hints(agent)
    assert f"to delete_file was not run: the file {draft} changed after the person was shown it" in hint
    decisions = [r["decision"] for r in AuditLog(audit).records("answered")]
    assert decisions == ["answer", "approve", "file_changed", "approve"]


def test_c42_a_tool_that_declares_read_before_write_is_not_asked_again(tmp_path: Path) -> None:
    """The same deletion by a tool that declares it reads before it writes (``read_before_write``,
    nb_hitl.file_change): a file changed since the card is not asked about again; the model reads the
    tool's own words, the card says what happened, and nothing is deleted."""
    agent = demo_agent(tmp_path / "box", chunk_delay=0)
    run_async(agent.toolkit.get_tool("delete_file")).read_before_write = "Read the file with read_file first."
    draft = agent.sandbox / "draft.md"

    async def scenario() -> Any:
        session = Session(agent, display=False)
        task = session.start("Please tidy up my sandbox folder.")
        first = await confirm_deletion(session)
        draft.write_text(DRAFT + "more\n")
        await session.act(msg(first, "approve"))
        await asyncio.wait_for(task, 10)
        return first

    first = run_async(scenario())
    assert (
        first.reason
        == f"Not run: the file {draft} changed after its card was drawn. The agent was told to read it again."
    )
    assert draft.read_text() == DRAFT + "more\n"  # nothing was deleted
    (result,) = tool_results(agent.model.calls[-1], "delete_file")
    assert not result.id.endswith("_r2") and result_text(result).endswith("Read the file with read_file first.")
    assert hints(agent) == []


def test_a_tool_without_the_protocol_says_it_cannot_be_dry_run(tmp_path: Path) -> None:
    """The same deletion as a plain FunctionTool: no diff, no button, and a dry run is refused with why."""
    target = tmp_path / "a.txt"
    target.write_text("keep\n")

    def delete_file(path: str) -> str:
        """Delete a file.

        Args:
            path (str): the file.
        """
        Path(path).unlink()
        return "deleted"

    script = [Turn("Deleting.", [tool_call("delete_file", id="call_1", path=str(target))]), Turn("ok")]
    agent = scripted_agent(script, [FunctionTool(delete_file)], name="plain")

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("delete")
        pause = await parked_on(session, "confirm")
        assert pause.to_view()["dry_run"] is False and pause.to_view()["file_change"] is None
        # the label cuts a long path with "…" (a test process's temp folder can be long)
        with pytest.raises(
            DecisionError, match=r"^delete_file \(path=\"[^)]+\) cannot be dry-run: only AgentScope's Write"
        ):
            await session.act(msg(pause, "dry_run"))
        await session.act(msg(pause, "deny"))
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert target.read_text() == "keep\n"
