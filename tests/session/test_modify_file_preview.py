"""A Modify that retargets a file-editing call: the preview shows the file the edit writes, and the
approval is bound to that file as it was shown (C42 for Modify).

Real ``agentscope.agent.Agent``s on :class:`~nb_hitl.models.ScriptedChatModel` with AgentScope's
own ``Read`` and ``Write`` on a temporary folder. The model reads ``b.txt`` and asks to write
``a.txt``; the person edits ``file_path`` to ``b.txt``. Previews and answers go through
``Session.act`` (the path of the page's messages). Checked: the preview's file diff, what is on
disk, how often the tool ran, what the model read, and the audit line's ``file_shown``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agentscope.tool import Read, Write

from nb_hitl import Session
from nb_hitl.models import Turn, result_text, tool_call, tool_results
from nb_hitl.store import AuditLog
from tests.session.test_c42_file_changed_since_approval import RunsOn, msg, sha
from tests.support import parked_on, run_async
from tests.support_agents import scripted_agent

OTHER = "b, as someone else wrote it\n"


def retarget_agent(tmp_path: Path, runs_on: RunsOn) -> tuple[Any, Path, Path]:
    """An agent that reads ``b.txt``, asks to write ``a.txt``, then says the last result."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    b.write_text("b as it was\n")
    script: list[Any] = [
        Turn("Reading.", tool_calls=[tool_call("Read", id="call_r", file_path=str(b))]),
        Turn("Writing.", tool_calls=[tool_call("Write", id="call_1", file_path=str(a), content="new\n")]),
        lambda msgs: Turn("done: " + result_text(tool_results(msgs)[-1])),
    ]
    return scripted_agent(script, [Read(), Write(middlewares=[runs_on])], name="editor"), a, b


def edit_to(path: Path) -> str:
    return json.dumps({"file_path": str(path), "content": "new\n"})


def answered(audit: Path) -> list[tuple[str, str, Any]]:
    return [(r["tool_call_id"], r["decision"], r.get("file_shown")) for r in AuditLog(audit).records("answered")]


async def modify(agent: Any, audit: Path, edit: str, preview: str | None, between: Any = None) -> tuple[Any, Any]:
    """Run ``agent`` to its confirmation; preview ``preview`` (if any), call ``between()``, then send
    Modify with ``edit`` and let the reply end. Returns ``(the pause, the preview's answer or None)``."""
    session = Session(agent, display=False, audit_log=str(audit))
    task = session.start("write")
    pause = await parked_on(session, "confirm")
    shown = None
    if preview is not None:
        shown = (await session.act(msg(pause, "preview", input=preview)))["preview"]
        assert pause.status == "open" and AuditLog(audit).records("answered") == []  # not an answer
    if between is not None:
        between()
    await session.act(msg(pause, "modify", input=edit))
    await asyncio.wait_for(task, 10)
    return pause, shown


def test_preview_of_a_retargeting_modify_shows_the_new_files_diff_and_runs_it_once(tmp_path: Path) -> None:
    """(a) the preview carries the diff of the file the edit writes; (c) that file unchanged: the
    edited call runs once, on the content the preview showed; the audit says which file was shown."""
    runs_on = RunsOn()
    agent, a, b = retarget_agent(tmp_path, runs_on)
    audit = tmp_path / "audit.jsonl"
    pause, shown = run_async(modify(agent, audit, edit_to(b), edit_to(b)))
    assert pause.to_view()["file_change"]["path"] == str(a)  # the card showed the model's file
    assert f'-  "file_path": "{a}"' in shown["diff"].splitlines()
    change = shown["file_change"]
    assert change["path"] == str(b) and change["sha256_before"] == sha(b"b as it was\n")
    assert change["diff"] == f"--- {b}\n+++ {b}\n@@ -1 +1 @@\n-b as it was\n+new\n"
    assert runs_on.runs == [sha(b"b as it was\n")]  # once, on what the preview showed
    assert b.read_text() == "new\n" and not a.exists()
    assert pause.decision["file_shown"] == str(b)
    assert answered(audit) == [("call_1", "modify", str(b))]


def test_a_retargeted_file_changed_after_its_preview_runs_nothing(tmp_path: Path) -> None:
    """(b) someone writes the previewed file between the preview and Modify: nothing runs, the other
    write is kept, and the call is refused as an Approve of a changed file is (AgentScope's Write
    would refuse a file changed since the model read it: the model is told to read it again)."""
    runs_on = RunsOn()
    agent, a, b = retarget_agent(tmp_path, runs_on)
    audit = tmp_path / "audit.jsonl"
    not_run = f"Not run: the file {b} changed after its card was drawn. The agent was told to read it again."
    pause, _ = run_async(modify(agent, audit, edit_to(b), edit_to(b), lambda: b.write_text(OTHER)))
    assert runs_on.runs == [] and b.read_text() == OTHER and not a.exists()
    assert pause.status == "expired" and pause.reason == not_run
    (refused,) = tool_results(agent.model.calls[-1], "Write")
    told = result_text(refused)
    assert told.startswith(f"nb_hitl did not run Write: the file {b} changed after the person was shown it")
    assert told.endswith("You must read the file first before writing to it.")
    assert answered(audit) == [("call_1", "modify", str(b)), ("call_1", "file_changed", None)]


def test_a_modify_nobody_previewed_claims_no_diff(tmp_path: Path) -> None:
    """A retargeting Modify sent without a preview of that input (from code, or after a preview of
    another edit) binds nothing new, as before: the audit line and the card name no file shown."""
    for n, preview in enumerate([None, json.dumps({"file_path": "/elsewhere.txt", "content": "new\n"})]):
        runs_on = RunsOn()
        agent, a, b = retarget_agent(tmp_path / str(n), runs_on)
        audit = tmp_path / f"audit{n}.jsonl"
        pause, _ = run_async(modify(agent, audit, edit_to(b), preview))
        assert "file_shown" not in pause.decision
        assert answered(audit) == [("call_1", "modify", None)]
        assert b.read_text() == "new\n" and len(runs_on.runs) == 1


def test_a_previewed_modify_of_the_same_file_is_bound_to_the_cards_file(tmp_path: Path) -> None:
    """A previewed Modify that keeps the path is bound to the card's file as Approve is, so a change
    to it after the card was drawn runs nothing."""
    runs_on = RunsOn()
    agent, a, b = retarget_agent(tmp_path, runs_on)
    audit = tmp_path / "audit.jsonl"
    same = json.dumps({"file_path": str(a), "content": "newer\n"})
    pause, shown = run_async(modify(agent, audit, same, same, lambda: a.write_text("written meanwhile\n")))
    assert shown["file_change"]["path"] == str(a) and shown["file_change"]["diff"].endswith("+newer\n")
    assert runs_on.runs == [] and a.read_text() == "written meanwhile\n"
    assert pause.status == "expired"
    assert answered(audit)[0] == ("call_1", "modify", str(a))
