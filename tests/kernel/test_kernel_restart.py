"""Checkpoints and the audit log across real kernel processes.

* Restart: kernel A runs the demo agent to its AskUser pause with
  ``Session(checkpoints=dir, audit_log=file)`` and is shut down. Kernel B (a
  second process) calls ``Session.restore(...)`` + ``start_resume()``: the
  open pause is re-rendered in a new widget (its synced state), answering it
  through the comm resumes the agent, and the reply completes with the real
  effect on disk.
* SIGKILL: the page's click is answered, then the kernel is killed with
  SIGKILL at once; every decision that reached the agent has its audit line
  on disk (``AuditLog.append`` fsyncs before the agent is resumed, and the
  page's answer is sent after that).

Every widget message goes through the kernel exactly as JupyterLab sends it
(``tests.harness.kernel.KernelHarness.request``: a shell ``comm_msg`` with
``method: custom``).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from nb_hitl.store import AuditLog
from tests.harness import KernelHarness

pytestmark = pytest.mark.kernel

QUESTION = "Which file should I delete?"

# The demo's ScriptedChatModel plays its turns by position and a new process
# starts it at turn 0, while a real model reads the restored history. The
# factory therefore continues the script after the turns the history already
# holds (one text block per demo turn). See the report: demo_agent(state=...)
# alone replays the script from the start.
FACTORY = textwrap.dedent(
    """
    from nb_hitl.demo import demo_agent

    def restored_demo(state):
        agent = demo_agent(SANDBOX, state=state, chunk_delay=0)
        played = sum(
            1 for m in state.context if m.role == "assistant" and not isinstance(m.content, str)
            for b in m.content if getattr(b, "type", None) == "text"
        )
        agent.model.script = agent.model.script[played:]
        return agent
    """
)


def setup_code(sandbox: Path, ckpt: Path, audit: Path) -> str:
    return f"SANDBOX, CKPT, AUDIT = {str(sandbox)!r}, {str(ckpt)!r}, {str(audit)!r}\n"


def reply_widgets(k: KernelHarness) -> list[Any]:
    return [c for c in k.comms("AnyModel") if "pauses" in c.state and "transcript" in c.state]


def open_pause(k: KernelHarness, kind: str, comm_id: str | None = None) -> tuple[str, dict[str, Any]]:
    """Wait for a reply widget showing an open pause of ``kind``; (comm_id, pause view)."""

    def find() -> tuple[str, dict[str, Any]] | None:
        for c in reply_widgets(k):
            if comm_id is not None and c.comm_id != comm_id:
                continue
            for p in c.state.get("pauses", []):
                if p.get("kind") == kind and p.get("status") == "open" and c.state.get("status") == "paused":
                    return c.comm_id, p
        return None

    return k.wait_for(find, 60, what=f"an open {kind} pause in a reply widget")


def audit_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return AuditLog(path).records("answered")  # the answers (permission checks are lines too)


def test_checkpoint_restore_in_a_second_kernel(tmp_path: Path) -> None:
    sandbox, ckpt, audit = tmp_path / "box", tmp_path / "ckpt", tmp_path / "audit.jsonl"
    head = setup_code(sandbox, ckpt, audit)

    # ---- kernel A: run to the AskUser pause, then shut down
    with KernelHarness() as a:
        a.execute(
            head
            + textwrap.dedent(
                """
                from nb_hitl import Session
                from nb_hitl.demo import demo_agent
                agent = demo_agent(SANDBOX, chunk_delay=0)
                session = Session(agent, checkpoints=CKPT, audit_log=AUDIT, session_id="tidy-1")
                task = session.start("Please tidy up my sandbox folder.")
                """
            )
        ).raise_for_error()
        _, pause_a = open_pause(a, "ask_user")
        pid_a = a.pid
        checkpoint = json.loads((ckpt / "tidy-1.json").read_text())
        assert checkpoint["agent_name"] == "tidy"
    assert not any(audit_lines(audit)), "nothing was decided in kernel A"
    awaiting = [
        b
        for m in checkpoint["state"]["context"]
        if m["role"] == "assistant" and not isinstance(m["content"], str)
        for b in m["content"]
        if b.get("type") == "tool_call" and b.get("state") == "submitted"
    ]
    assert [b["id"] for b in awaiting] == [pause_a["tool_call_id"]]
    assert sorted(p.name for p in sandbox.iterdir()) == ["draft.md", "notes.txt", "old_log.txt"]

    # ---- kernel B: a new process restores and resumes
    with KernelHarness() as b:
        assert b.pid != pid_a
        res = b.execute(
            head
            + FACTORY
            + textwrap.dedent(
                """
                from nb_hitl import Session
                session = Session.restore(restored_demo, CKPT, audit_log=AUDIT)
                task = session.start_resume()
                print(session.session_id, session.agent.name, [tc.id for tc in session.parked_tool_calls()])
                """
            )
        ).raise_for_error()
        assert res.stdout.split()[:2] == ["tidy-1", "tidy"]
        comm_id, pause = open_pause(b, "ask_user")
        # the open pause re-renders from the widget state alone
        state = b.comm(comm_id).state
        assert state["prompt"] == "(resumed)" and state["reply_id"] == pause_a["reply_id"]
        assert pause["tool_call_id"] == pause_a["tool_call_id"] and pause["reply_id"] == pause_a["reply_id"]
        question = pause["ask_user"]["questions"][0]
        assert question["question"] == QUESTION
        assert [o["label"] for o in question["options"]] == ["draft.md", "notes.txt", "old_log.txt"]
        assert pause["ask_user"] == pause_a["ask_user"]

        reply = b.request(
            comm_id,
            "answer",
            tool_call_id=pause["tool_call_id"],
            reply_id=pause["reply_id"],
            answers=[{"question": QUESTION, "selected": ["old_log.txt"], "other": None}],
        )
        assert reply["ok"] is True, reply
        _, confirm = open_pause(b, "confirm", comm_id)
        assert confirm["tool_name"] == "delete_file" and json.loads(confirm["input_text"]) == {"path": "old_log.txt"}
        reply = b.request(comm_id, "approve", tool_call_id=confirm["tool_call_id"], reply_id=confirm["reply_id"])
        assert reply["ok"] is True, reply
        b.wait_for(lambda: b.comm(comm_id).final_text, 60, what="the restored reply to finish")
        assert b.comm(comm_id).state["status"] == "finished"
        final = b.comm(comm_id).final_text
        assert final == "Done. Deleted old_log.txt. The folder now holds: draft.md, notes.txt."
        out = b.execute("print(session.current.resumes, session.current.status)").raise_for_error()
        assert out.stdout.split() == ["2", "finished"]

    assert sorted(p.name for p in sandbox.iterdir()) == ["draft.md", "notes.txt"]
    lines = audit_lines(audit)
    assert [(r["decision"], r["tool_name"], r["session_id"]) for r in lines] == [
        ("answer", "AskUser", "tidy-1"),
        ("approve", "delete_file", "tidy-1"),
    ]
    assert lines[0]["answers"] == [{"question": QUESTION, "selected": ["old_log.txt"], "other": None}]
    assert lines[1]["original_input"] == {"path": "old_log.txt"} and lines[1]["who"]


def test_sigkill_right_after_the_click_loses_no_decision(tmp_path: Path) -> None:
    sandbox, ckpt, audit = tmp_path / "box", tmp_path / "ckpt", tmp_path / "audit.jsonl"
    with KernelHarness() as k:
        k.execute(
            setup_code(sandbox, ckpt, audit)
            + textwrap.dedent(
                """
                from nb_hitl import Session
                from nb_hitl.demo import demo_agent
                agent = demo_agent(SANDBOX, chunk_delay=0)
                session = Session(agent, checkpoints=CKPT, audit_log=AUDIT, session_id="killed")
                task = session.start("Please tidy up my sandbox folder.")
                """
            )
        ).raise_for_error()
        comm_id, ask = open_pause(k, "ask_user")
        reply = k.request(
            comm_id,
            "answer",
            tool_call_id=ask["tool_call_id"],
            answers=[{"question": QUESTION, "selected": ["notes.txt"]}],
        )
        assert reply["ok"] is True
        _, confirm = open_pause(k, "confirm", comm_id)

        reply = k.request(comm_id, "approve", tool_call_id=confirm["tool_call_id"])
        k.kill()  # SIGKILL as soon as the page got its answer
        assert reply["ok"] is True
        assert not k.is_alive()

    lines = audit_lines(audit)
    decided = {r["tool_call_id"]: r["decision"] for r in lines}
    # both decisions reached the agent's queue before the page was answered: both are on disk
    assert decided == {ask["tool_call_id"]: "answer", confirm["tool_call_id"]: "approve"}
    # whatever the kill interrupted, a deletion on disk always has its approval logged
    if not (sandbox / "notes.txt").exists():
        assert decided[confirm["tool_call_id"]] == "approve"
    # and the last checkpoint says where the call was: still asking (a restore asks it
    # again), or finished with its deletion done (a restore does not run it again); a
    # loaded machine lets the kernel get that far before the kill lands
    checkpoint = json.loads((ckpt / "killed.json").read_text())
    states = {
        b["id"]: b.get("state")
        for m in checkpoint["state"]["context"]
        if m["role"] == "assistant" and not isinstance(m["content"], str)
        for b in m["content"]
        if b.get("type") == "tool_call"
    }
    asking = [call_id for call_id, state in states.items() if state == "asking"]
    if states[confirm["tool_call_id"]] == "finished":
        assert asking == [] and not (sandbox / "notes.txt").exists()
    else:
        assert asking == [confirm["tool_call_id"]]
