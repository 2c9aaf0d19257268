"""Records that can be trusted: checkpoints, locks, the audit log.

* A checkpoint follows the state (written before and after each tool run and
  at reply end): restoring it never runs a tool again.
* One process (and, in a process, one session) drives a checkpoint: a second
  restore elsewhere is refused naming the holder; C24: a restore in the same
  kernel expires the old widget, so one call gets one answer.
* A decision recorded just before a new message is never silently dropped.
* Checkpoints are signed (HMAC); the audit log and checkpoints are 0600,
  never followed through a symlink, a torn line hides nothing, and each audit
  line says who decided.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import TextBlock, ToolResultState
from agentscope.state import AgentState
from agentscope.tool import FunctionTool, ToolChunk, Toolkit

from nb_hitl import PendingPauseError, Session
from nb_hitl.models import ScriptedChatModel, Turn, tool_call
from nb_hitl.store import (
    AuditLog,
    CheckpointIntegrityError,
    CheckpointLockedError,
    CheckpointStore,
    current_user,
    load_key,
)
from nb_hitl.widgets.audit import AuditLogTable
from tests.support import parked, run_async, wait_until, widget_replies

SID = "touch-1"


def touch_agent(runs: Path, script: list[Any], state: AgentState | None = None, on_run: Any = None) -> Agent:
    """A real Agent whose one tool (``touch``, asks first) appends a line to ``runs`` per run."""

    def touch(label: str) -> ToolChunk:
        """Record one run of the tool.

        Args:
            label (str): what to record.
        """
        if on_run is not None:
            on_run()
        with open(runs, "a", encoding="utf-8") as fh:
            fh.write(label + "\n")
        return ToolChunk(content=[TextBlock(text=f"touched {label}")], state=ToolResultState.SUCCESS)

    return Agent(
        name="toucher",
        system_prompt="x",
        model=ScriptedChatModel(script, on_exhausted="raise"),
        toolkit=Toolkit(tools=[FunctionTool(touch)]),
        state=state,
    )


def ran(runs: Path) -> list[str]:
    return runs.read_text(encoding="utf-8").splitlines() if runs.exists() else []


SCRIPT = [Turn("Touching.", [tool_call("touch", id="t1", label="a")]), Turn("Done.")]


def click(widget: Any, message: dict[str, Any]) -> None:
    widget._on_page_message(widget, {"request_id": f"r-{message.get('action')}", **message}, [])


# ----------------------------------------------------------------- checkpoints follow the state
def test_restore_after_a_finished_reply_runs_nothing_again(tmp_path: Path) -> None:
    runs, folder = tmp_path / "runs.txt", tmp_path / "ckpt"

    async def first() -> None:
        session = Session(touch_agent(runs, SCRIPT), display=False, checkpoints=str(folder), session_id=SID)
        task = session.start("touch a")
        [pause] = await parked(session)
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        final = await asyncio.wait_for(task, 10)
        assert final.get_text_content() == "Done."
        session.close()

    run_async(first())
    assert ran(runs) == ["a"]

    async def second() -> None:
        restored = Session.restore(
            lambda st: touch_agent(runs, [Turn("Nothing more.")], state=st), str(folder), display=False
        )
        assert restored.parked_tool_calls() == []  # the checkpoint knows t1 ran
        final = await asyncio.wait_for(restored.run("anything else?"), 10)
        assert final.get_text_content() == "Nothing more."

    run_async(second())
    assert ran(runs) == ["a"]


def test_a_checkpoint_taken_while_the_tool_runs_never_runs_it_again(tmp_path: Path) -> None:
    runs, folder, crash = tmp_path / "runs.txt", tmp_path / "ckpt", tmp_path / "crash"

    def copy_on_run() -> None:  # what a process killed during the tool leaves on disk
        import shutil

        shutil.copytree(folder, crash)

    async def first() -> None:
        session = Session(
            touch_agent(runs, SCRIPT, on_run=copy_on_run), display=False, checkpoints=str(folder), session_id=SID
        )
        task = session.start("touch a")
        [pause] = await parked(session)
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        await asyncio.wait_for(task, 10)
        session.close()

    run_async(first())
    assert ran(runs) == ["a"]
    record = CheckpointStore(crash).load(SID)
    # written before the agent got the approval: the call may run from here on
    assert record["state"]["middle_context"]["nb_hitl.delivered"]["t1"]["action"] == "approve"

    async def second() -> None:
        restored = Session.restore(lambda st: touch_agent(runs, [Turn("Ok.")], state=st), str(crash), display=False)
        assert restored.parked_tool_calls() == []
        results = [
            b
            for m in restored.agent.state.context
            if not isinstance(m.content, str)
            for b in m.content
            if getattr(b, "type", None) == "tool_result"
        ]
        assert [(r.id, r.state) for r in results] == [("t1", ToolResultState.INTERRUPTED)]
        await asyncio.wait_for(restored.run("and?"), 10)

    run_async(second())
    assert ran(runs) == ["a"]


# ----------------------------------------------------------------- locks
def test_a_restore_while_another_process_holds_the_checkpoint_names_it(tmp_path: Path) -> None:
    runs, folder = tmp_path / "runs.txt", tmp_path / "ckpt"

    async def park() -> None:
        session = Session(touch_agent(runs, SCRIPT), display=False, checkpoints=str(folder), session_id=SID)
        session.start("touch a")
        await parked(session)
        session.close()

    run_async(park())
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from nb_hitl.store import CheckpointStore
                CheckpointStore({str(folder)!r}).lock({SID!r})
                print("locked", flush=True)
                time.sleep(60)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(CheckpointLockedError) as refused:
            Session.restore(lambda st: touch_agent(runs, SCRIPT, state=st), str(folder), display=False)
        assert f"pid {holder.pid}" in str(refused.value) and current_user() in str(refused.value)
        assert refused.value.holder["pid"] == holder.pid
    finally:
        holder.kill()
        holder.wait()

    async def after() -> None:  # the holder is gone: the lock is free again
        restored = Session.restore(lambda st: touch_agent(runs, SCRIPT[1:], state=st), str(folder), display=False)
        task = restored.start_resume()
        [pause] = await parked(restored)
        await restored.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        await asyncio.wait_for(task, 10)

    run_async(after())
    assert ran(runs) == ["a"]


@pytest.mark.parametrize("first_click", ["old", "new"])
def test_C24_restore_in_the_same_kernel_expires_the_old_widget(tmp_path: Path, first_click: str) -> None:
    runs, folder = tmp_path / "runs.txt", tmp_path / "ckpt"

    async def scenario() -> None:
        old = Session(touch_agent(runs, SCRIPT), display=True, checkpoints=str(folder), session_id=SID)
        old.start("touch a")
        [pause] = await parked(old)
        old_widget = old.current.widget
        new = Session.restore(lambda st: touch_agent(runs, SCRIPT[1:], state=st), str(folder), display=True)
        task = new.start_resume()
        await parked(new)
        new_widget = new.current.widget
        # the old widget says at once that it is no longer live
        assert old_widget.status == "expired" and old_widget.pauses[0]["status"] == "expired"
        assert "Superseded" in old_widget.pauses[0]["reason"]
        message = {"action": "approve", "tool_call_id": pause.tool_call_id}
        replies = {id(old_widget): widget_replies(old_widget), id(new_widget): widget_replies(new_widget)}
        order = [old_widget, new_widget] if first_click == "old" else [new_widget, old_widget]
        for w in order:
            click(w, message)
            await asyncio.sleep(0.05)
        assert [(r["ok"], r.get("code")) for r in replies[id(old_widget)]] == [(False, "expired")]
        assert [r["ok"] for r in replies[id(new_widget)]] == [True]
        await asyncio.wait_for(task, 10)
        assert ran(runs) == ["a"]
        new.close()

    run_async(scenario())
    assert ran(runs) == ["a"]


# ----------------------------------------------------------------- decided just before a new message
@pytest.mark.parametrize("hops", [0, 1, 3, 10])
def test_a_decision_recorded_just_before_a_new_message(tmp_path: Path, hops: int) -> None:
    """Approved, then a new message ``hops`` loop steps later with
    interrupt_pending=True: the approval either reached the agent (the tool
    ran, its result is in the state) or is reported discarded (card and
    audit log); never dropped without a word."""
    runs, audit = tmp_path / "runs.txt", tmp_path / "audit.jsonl"
    agent = touch_agent(runs, [SCRIPT[0], Turn("Something else, then."), Turn("Something else, then.")])

    async def scenario() -> dict[str, Any]:
        session = Session(agent, display=True, audit_log=str(audit), decided_by="ana")
        session.start("touch a")
        [pause] = await parked(session)
        old_run = session.current
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        assert pause.status == "decided"  # recorded; the driving task has not resumed the agent yet
        with pytest.raises(PendingPauseError) as refused:
            session.start("something else")
        text = str(refused.value)
        assert "waiting on" not in text and "being delivered" in text and 'touch (label="a")' in text
        for _ in range(hops):
            await asyncio.sleep(0)
        final = await asyncio.wait_for(session.start("something else", interrupt_pending=True), 10)
        assert final.get_text_content() == "Something else, then."
        return old_run.widget.pauses[0]

    card = run_async(scenario())
    records = AuditLog(audit).records("answered")
    results = {
        b.id: b
        for m in agent.state.context
        if not isinstance(m.content, str)
        for b in m.content
        if getattr(b, "type", None) == "tool_result"
    }
    assert [(r["tool_call_id"], r["decision"], r["decided_by"]) for r in records][0] == ("t1", "approve", "ana")
    if ran(runs) == ["a"]:
        assert len(records) == 1 and card["status"] == "delivered"
        assert results["t1"].state == ToolResultState.SUCCESS
    else:
        assert ran(runs) == []
        assert [(r["tool_call_id"], r["decision"]) for r in records[1:]] == [("t1", "discarded")]
        assert card["status"] == "expired" and card["reason"].startswith("Decided, but the reply")
    if hops == 0:  # decided and a new message in the same step: discarded, deterministically
        assert ran(runs) == []


# ----------------------------------------------------------------- the audit log
def test_audit_and_checkpoint_files_are_private(tmp_path: Path) -> None:
    runs, folder, audit = tmp_path / "runs.txt", tmp_path / "ckpt", tmp_path / "logs" / "audit.jsonl"
    old_umask = os.umask(0o022)
    try:

        async def scenario() -> None:
            session = Session(
                touch_agent(runs, SCRIPT), display=False, checkpoints=str(folder), audit_log=str(audit), session_id=SID
            )
            task = session.start("touch a")
            [pause] = await parked(session)
            await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
            await asyncio.wait_for(task, 10)
            session.close()

        run_async(scenario())
    finally:
        os.umask(old_umask)
    for path in (audit, folder / f"{SID}.json", Path(os.environ["NB_HITL_CHECKPOINT_KEY"])):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_records_are_never_written_or_read_through_a_symlink(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("not a log\n")
    link = tmp_path / "audit.jsonl"
    link.symlink_to(elsewhere)
    log = AuditLog(link)
    with pytest.raises(OSError):
        log.append({"decision": "approve"})
    with pytest.raises(ValueError, match="symbolic link"):
        log.records()
    assert elsewhere.read_text() == "not a log\n"

    store = CheckpointStore(tmp_path / "ckpt")
    store.save("s", "toucher", AgentState().model_dump_json())
    real = store.path("s")
    moved = tmp_path / "moved.json"
    real.rename(moved)
    real.symlink_to(moved)
    with pytest.raises(ValueError, match="symbolic link"):
        store.load("s")
    store.save("s", "toucher", AgentState().model_dump_json())  # replaces the link itself
    assert not real.is_symlink() and store.load("s")["agent_name"] == "toucher"


def test_a_torn_last_line_never_hides_the_next_decision(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.append({"tool_call_id": "a", "decision": "approve"})
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"tool_call_id": "b", "decis')  # a crash mid-write
    log.append({"tool_call_id": "c", "decision": "deny"})
    assert [(r["tool_call_id"], r["decision"]) for r in log.records("answered")] == [("a", "approve"), ("c", "deny")]
    table = AuditLogTable(log)
    assert [row.get("decision") for row in table.rows][-1] == "deny"


def test_audit_lines_say_who_decided(tmp_path: Path) -> None:
    runs, audit = tmp_path / "runs.txt", tmp_path / "audit.jsonl"
    script = [
        Turn("One.", [tool_call("touch", id="t1", label="a")]),
        Turn("Two.", [tool_call("touch", id="t2", label="b")]),
        Turn("Ok."),
    ]

    async def scenario() -> None:
        session = Session(touch_agent(runs, script), display=False, audit_log=str(audit))
        task = session.start("touch")
        await parked(session)
        await session.act({"action": "approve", "tool_call_id": "t1"})
        await parked(session, resumes=1)
        await session.act(
            {"action": "deny", "tool_call_id": "t2", "reason": "not b"}, decided_by="reviewer@example.org"
        )
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert [(r["tool_call_id"], r["decided_by"]) for r in AuditLog(audit).records("answered")] == [
        ("t1", current_user()),
        ("t2", "reviewer@example.org"),
    ]
    # the table lists every call's check too, with what decided it (nobody: the mode asked); it
    # names each call by tool and input, not by its ids, and shows the reason a person gave
    table = AuditLogTable(audit)
    assert table.columns == ["time", "tool_name", "input", "decision", "detail", "who"]
    assert [(row["input"], row["decision"], row["detail"], row["who"]) for row in table.rows] == [
        ('label="a"', "ask", "reason: Mode: default", "mode default"),
        ('label="a"', "approve", "", current_user()),
        ('label="b"', "ask", "reason: Mode: default", "mode default"),
        ('label="b"', "deny", "reason: not b", "reviewer@example.org"),
    ]


def test_a_deadline_whose_audit_fails_leaves_the_pause_open(tmp_path: Path) -> None:
    runs, audit = tmp_path / "runs.txt", tmp_path / "audit.jsonl"
    audit.write_text("")
    broken = tmp_path / "broken.jsonl"

    async def scenario() -> None:
        session = Session(touch_agent(runs, SCRIPT), display=False, audit_log=str(audit), deadline=0.2)
        task = session.start("touch a")
        [pause] = await parked(session)
        audit.unlink()
        audit.symlink_to(broken)  # every write now fails (O_NOFOLLOW)
        await wait_until(lambda: "audit log could not be written" in (pause.reason or ""), "the deadline")
        assert pause.status == "open" and session.current.queue == []
        assert "the default was not applied" in pause.reason
        audit.unlink()  # the log works again: a person can still answer
        result = await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        assert result["status"] == "decided"
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert ran(runs) == ["a"] and not broken.exists()
    assert [(r["decision"], r["decided_by"]) for r in AuditLog(audit).records("answered")] == [
        ("approve", current_user())
    ]


def test_a_deadline_is_decided_by_the_deadline(tmp_path: Path) -> None:
    runs, audit = tmp_path / "runs.txt", tmp_path / "audit.jsonl"

    async def scenario() -> None:
        session = Session(touch_agent(runs, SCRIPT), display=False, audit_log=str(audit), deadline=0.1)
        await asyncio.wait_for(session.run("touch a"), 10)

    run_async(scenario())
    assert [(r["decision"], r["decided_by"]) for r in AuditLog(audit).records("answered")] == [("timeout", "deadline")]
    assert ran(runs) == []


# ----------------------------------------------------------------- signed checkpoints
def _parked_checkpoint(tmp_path: Path) -> tuple[Path, Path]:
    runs, folder = tmp_path / "runs.txt", tmp_path / "ckpt"

    async def park() -> None:
        session = Session(touch_agent(runs, SCRIPT), display=False, checkpoints=str(folder), session_id=SID)
        session.start("touch a")
        await parked(session)
        session.close()

    run_async(park())
    return runs, folder


def _tamper_allow(record: dict[str, Any]) -> None:
    record["state"]["permission_context"]["allow_rules"]["touch"] = [
        {"tool_name": "touch", "rule_content": None, "behavior": "allow"}
    ]


def _tamper_bypass(record: dict[str, Any]) -> None:
    record["state"]["permission_context"]["mode"] = "bypass_permissions"


def _tamper_inject(record: dict[str, Any]) -> None:
    last = record["state"]["context"][-1]
    call = next(b for b in last["content"] if b.get("type") == "tool_call")
    last["content"].append({**call, "id": "injected", "input": '{"label": "evil"}', "state": "allowed"})


@pytest.mark.parametrize("tamper", [_tamper_allow, _tamper_bypass, _tamper_inject], ids=["allow", "bypass", "inject"])
def test_a_tampered_checkpoint_is_refused(tmp_path: Path, tamper: Any) -> None:
    runs, folder = _parked_checkpoint(tmp_path)
    path = folder / f"{SID}.json"
    record = json.loads(path.read_text())
    tamper(record)
    path.write_text(json.dumps(record))
    built: list[Any] = []
    with pytest.raises(CheckpointIntegrityError, match="changed after nb_hitl wrote it"):
        Session.restore(lambda st: built.append(st) or touch_agent(runs, SCRIPT, state=st), str(folder))
    assert built == [] and ran(runs) == []
    # the untampered content still restores (the signature covers the content, not the bytes)
    record_ok = json.loads(path.read_text())
    assert record_ok["hmac"]


def test_signing_key_is_per_user_outside_the_folder_and_overridable(tmp_path: Path) -> None:
    runs, folder = _parked_checkpoint(tmp_path)
    key_file = Path(os.environ["NB_HITL_CHECKPOINT_KEY"])
    assert key_file.exists() and folder not in key_file.parents
    other = tmp_path / "other.key"
    with pytest.raises(CheckpointIntegrityError):
        CheckpointStore(folder, key_path=other).load(SID)  # another user's key: not theirs to restore
    assert stat.S_IMODE(other.stat().st_mode) == 0o600 and load_key(other) != load_key(key_file)
    assert CheckpointStore(folder, key=load_key(key_file)).load(SID)["session_id"] == SID
    record = json.loads((folder / f"{SID}.json").read_text())
    del record["hmac"]
    (folder / f"{SID}.json").write_text(json.dumps(record))
    with pytest.raises(CheckpointIntegrityError, match="not signed"):
        CheckpointStore(folder).load(SID)


def test_restore_and_replay_of_a_folder_with_no_checkpoint_say_so(tmp_path: Path) -> None:
    """Both roads that take "the newest session" when none is named find it the same way."""
    empty = tmp_path / "none"
    with pytest.raises(FileNotFoundError, match=f"No checkpoint in {empty}"):
        Session.restore(lambda st: touch_agent(tmp_path / "runs.txt", [], state=st), str(empty), display=False)
    with pytest.raises(FileNotFoundError, match=f"No checkpoint in {empty}"):
        Session.replay(str(empty), audit_log=str(tmp_path / "audit.jsonl"))
    assert CheckpointStore(empty).session("named") == "named"
