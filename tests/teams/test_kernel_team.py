"""A ``TeamPipeline`` driven by ``Session`` in real ipykernels, clicked as the page clicks.

Cells build the teams notebook's pipeline (``nb_hitl.team_demo.team_demo``:
leader ``lead`` and member ``worker``, real AgentScope agents on the scripted
offline model) and a displaying ``Session``. The test finds the reply
widget's comm and answers the worker's cards with real shell ``comm_msg`` s
(``{"method": "custom", "content": {request_id, action, tool_call_id,
reply_id, ...}}``), as the page does.

* approve: AskUser then confirmation, both cards name the worker and carry
  its ``reply_id``; ``TeamAssign`` is a transcript step, never a card; the
  reply ends with the leader's final message; ``delete_file`` ran once.
* restore: kernel A parks on the worker's confirmation and is shut down;
  kernel B restores every agent of the team from the checkpoint, shows the
  card again, and the click there runs the deletion exactly once.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.harness import KernelHarness
from tests.support import kernel_json, wait_status

pytestmark = pytest.mark.kernel

QUESTION = "Which file should I delete?"
FINAL = "worker reported back (success): Done. Deleted draft.md. The folder now holds: notes.txt, old_log.txt."


def reply_widgets(k: KernelHarness) -> list[Any]:
    return [c for c in k.comms("AnyModel") if "pauses" in c.state and "transcript" in c.state]


def open_card(k: KernelHarness, kind: str) -> tuple[str, dict[str, Any]]:
    """Wait for a reply widget parked on an open card of ``kind``; ``(comm_id, card view)``."""

    def find() -> tuple[str, dict[str, Any]] | None:
        for c in reply_widgets(k):
            if c.state.get("status") != "paused":
                continue
            for p in c.state.get("pauses", []):
                if p.get("kind") == kind and p.get("status") == "open":
                    return c.comm_id, p
        return None

    return k.wait_for(find, 60, what=f"an open {kind} card")


def answer_ask(k: KernelHarness, comm_id: str, card: dict[str, Any], pick: str) -> None:
    reply = k.request(
        comm_id,
        "answer",
        tool_call_id=card["tool_call_id"],
        reply_id=card["reply_id"],
        answers=[{"question": QUESTION, "selected": [pick], "other": None}],
    )
    assert reply["ok"] is True, reply


SETUP = """
import json
from nb_hitl import Session
from nb_hitl.team_demo import team_demo
from nb_hitl.models import tool_results, result_text
SANDBOX, CKPT = {sandbox!r}, {ckpt!r}
"""


def test_team_approve_in_a_kernel(tmp_path: Path) -> None:
    with KernelHarness() as k:
        k.execute(SETUP.format(sandbox=str(tmp_path / "box"), ckpt=str(tmp_path / "ckpt"))).raise_for_error()
        k.execute(
            "team = team_demo(SANDBOX, chunk_delay=0)\n"
            "worker = team.members['worker'].agent\n"
            "session = Session(team)\n"
            "task = session.start('Please clean up the sandbox.')\n"
        ).raise_for_error()

        comm_id, ask = open_card(k, "ask_user")
        state = k.comm(comm_id).state
        assert state["agent_name"] == "lead"
        assert ask["agent"] == "worker"
        assert ask["reply_id"] == kernel_json(k, "worker.state.reply_id")
        assert ask["reply_id"] != kernel_json(k, "team.leader.state.reply_id")
        assert [p["tool_name"] for p in state["pauses"]] == ["AskUser"]
        steps = [e["text"] for e in k.comm(comm_id).transcript() if e["kind"] == "note"]
        assert any(s.startswith("lead assigned “Tidy up the sandbox folder") and s.endswith("to worker") for s in steps)
        answer_ask(k, comm_id, ask, "draft.md")

        comm2, confirm = open_card(k, "confirm")
        assert comm2 == comm_id and confirm["agent"] == "worker" and confirm["tool_name"] == "delete_file"
        # a reply_id of another agent is refused: the card belongs to the worker's reply
        wrong = k.request(
            comm_id,
            "approve",
            tool_call_id=confirm["tool_call_id"],
            reply_id=kernel_json(k, "team.leader.state.reply_id"),
        )
        assert wrong["ok"] is False and wrong["field"] == "reply_id"
        reply = k.request(comm_id, "approve", tool_call_id=confirm["tool_call_id"], reply_id=confirm["reply_id"])
        assert reply["ok"] is True, reply

        final_state = wait_status(k, comm_id, "finished")
        k.wait_for(lambda: k.comm(comm_id).final_text.endswith(FINAL), 20, what="final_text")
        final_state = k.comm(comm_id).state
        assert [p["tool_name"] for p in final_state["pauses"]] == ["AskUser", "delete_file"]
        assert kernel_json(k, "task.result().name") == "lead"
        assert kernel_json(k, "task.result().get_text_content()").endswith(FINAL)
        assert kernel_json(k, "team.runs") == ["draft.md"]
        assert kernel_json(k, "sorted(p.name for p in team.sandbox.iterdir())") == ["notes.txt", "old_log.txt"]
        assert kernel_json(k, "[len(team.leader.model.calls), len(worker.model.calls)]") == [2, 4]
        assert kernel_json(k, "result_text(tool_results(team.leader.model.calls[-1], 'TeamAssign')[-1])") == (
            "Done. Deleted draft.md. The folder now holds: notes.txt, old_log.txt."
        )


def test_team_restore_in_a_second_kernel(tmp_path: Path) -> None:
    setup = SETUP.format(sandbox=str(tmp_path / "box"), ckpt=str(tmp_path / "ckpt"))
    with KernelHarness() as a:
        a.execute(setup).raise_for_error()
        a.execute(
            "team = team_demo(SANDBOX, chunk_delay=0)\n"
            "session = Session(team, checkpoints=CKPT, session_id='team-1')\n"
            "task = session.start('Please clean up the sandbox.')\n"
        ).raise_for_error()
        comm_id, ask = open_card(a, "ask_user")
        answer_ask(a, comm_id, ask, "old_log.txt")
        _, confirm_a = open_card(a, "confirm")
        assert kernel_json(a, "team.runs") == []
    record = json.loads((tmp_path / "ckpt" / "team-1.json").read_text())
    assert sorted(record["state"]["agents"]) == ["lead", "worker"]

    with KernelHarness() as b:
        b.execute(setup).raise_for_error()
        b.execute(
            textwrap.dedent(
                """
                built = []
                def factory(states):
                    built.append(team_demo(SANDBOX, chunk_delay=0, states=states))
                    return built[-1]
                session = Session.restore(factory, CKPT, session_id='team-1')
                task = session.start_resume()
                """
            )
        ).raise_for_error()
        comm_id, confirm = open_card(b, "confirm")
        assert confirm["tool_call_id"] == confirm_a["tool_call_id"] and confirm["agent"] == "worker"
        assert [p["tool_name"] for p in b.comm(comm_id).state["pauses"]] == ["delete_file"]
        reply = b.request(comm_id, "approve", tool_call_id=confirm["tool_call_id"], reply_id=confirm["reply_id"])
        assert reply["ok"] is True, reply
        wait_status(b, comm_id, "finished")
        assert kernel_json(b, "built[0].runs") == ["old_log.txt"]
        assert kernel_json(b, "task.result().name") == "lead"
        assert "Deleted old_log.txt." in kernel_json(b, "task.result().get_text_content()")
        assert kernel_json(b, "sorted(p.name for p in built[0].sandbox.iterdir())") == ["draft.md", "notes.txt"]
        # the restored models were sent the checkpointed history: no question asked twice
        saw = kernel_json(b, "[r.name for r in tool_results(built[0].members['worker'].agent.model.calls[0])]")
        assert saw == ["list_files", "AskUser", "delete_file"]
