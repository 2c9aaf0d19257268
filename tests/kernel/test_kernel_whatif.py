""" "Replay" and "What if…" on a finished reply, in a real ipykernel, requested as the page requests them.

A kernel records a short session live (a real ``Agent`` on the scripted
model whose ``bump`` tool adds to a counter file and asks first; approved
with a comm message, as a click sends it). The test then sends the finished
reply's widget the page's ``replay``, ``what_if_list`` and ``what_if``
requests over its comm (no cell runs): each answers at once, the replay or
fork plays in the background as a new ``ReplyWidget`` named in the finished
reply's ``nested`` trait, the fork's pause is a live card answered through
its own comm, and the counter file never changes.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.harness import CommRecord, KernelHarness
from tests.support import kernel_json, open_pause, reply_widget, wait_status

pytestmark = pytest.mark.kernel

RECORD = textwrap.dedent(
    """
    import json
    from pathlib import Path
    from agentscope.agent import Agent
    from agentscope.message import TextBlock, ToolResultState
    from agentscope.tool import FunctionTool, ToolChunk, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results

    WORK = Path({work!r})
    COUNTER = WORK / "counter.txt"
    COUNTER.write_text("0")

    def bump(step: int) -> ToolChunk:
        '''Add to the counter.

        Args:
            step (int): how much to add.
        '''
        value = int(COUNTER.read_text()) + step
        COUNTER.write_text(str(value))
        return ToolChunk(content=[TextBlock(text=f"The counter is now {{value}}.")], state=ToolResultState.SUCCESS)

    def reads_last(messages):
        return Turn("I read: " + result_text(tool_results(messages)[-1]))

    agent = Agent(
        name="counter", system_prompt="Keep count.",
        model=ScriptedChatModel([Turn("Adding 2.", [tool_call("bump", step=2)]), reads_last]),
        toolkit=Toolkit(tools=[FunctionTool(bump)]),
    )
    session = Session(agent, checkpoints=WORK / "ckpt", audit_log=WORK / "audit.jsonl", session_id="counter")
    task = session.start("Add two to the counter, please.")
    """
)


def nested_widgets(k: KernelHarness, parent: CommRecord, count: int) -> list[CommRecord]:
    """The ``ReplyWidget`` comms the parent's ``nested`` trait names, once it names ``count``."""

    def find() -> list[CommRecord] | None:
        refs = [n["ref"] for n in k.comm(parent.comm_id).state.get("nested") or []]
        if len(refs) < count:
            return None
        return [k.comm(ref.removeprefix("IPY_MODEL_")) for ref in refs]

    return k.wait_for(find, 30, what=f"{count} nested replies")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Any:
    work = tmp_path_factory.mktemp("whatif")
    with KernelHarness() as k:
        k.execute(RECORD.format(work=str(work))).raise_for_error()
        rec = reply_widget(k, "counter")
        pause = open_pause(k, rec.comm_id, "confirm")
        assert k.request(rec.comm_id, "approve", tool_call_id=pause["tool_call_id"], reply_id=pause["reply_id"])["ok"]
        wait_status(k, rec.comm_id, "finished")
        assert (work / "counter.txt").read_text() == "2"
        yield k, rec, work, pause


def test_a_finished_recorded_reply_offers_replay(recorded: Any) -> None:
    k, rec, _, _ = recorded
    assert k.comm(rec.comm_id).state["replay"] == {"ready": True}
    assert k.comm(rec.comm_id).state.get("nested") == []


def test_replay_from_the_page_plays_below_the_reply_and_changes_nothing(recorded: Any) -> None:
    k, rec, work, pause = recorded
    before = len(k.comm(rec.comm_id).state.get("nested") or [])
    answer = k.request(rec.comm_id, "replay")
    assert answer["ok"] is True, answer
    assert answer["started"].startswith("Replay of this reply")
    child = nested_widgets(k, rec, before + 1)[-1]
    state = wait_status(k, child.comm_id, "finished")
    assert state["agent_name"] == "counter"
    assert k.comm(child.comm_id).final_text == "I read: The counter is now 2."
    # the pause showed again and was given its recorded answer
    (card,) = state["pauses"]
    assert card["tool_call_id"] == pause["tool_call_id"] and card["status"] == "delivered"
    assert k.comm(rec.comm_id).state["nested"][-1]["title"] == answer["started"]
    assert (work / "counter.txt").read_text() == "2"
    # the kernel stayed free: a cell runs at once
    assert kernel_json(k, "1 + 1") == 2


def test_what_if_lists_the_pauses_by_tool_and_input_and_forks(recorded: Any) -> None:
    k, rec, work, pause = recorded
    listed = k.request(rec.comm_id, "what_if_list")
    assert listed["ok"] is True, listed
    (choice,) = listed["pauses"]
    assert choice["tool_call_id"] == pause["tool_call_id"]
    assert choice["summary"] == "bump (step=2)"
    assert choice["answered"].startswith("Recorded answer: approve, by ")
    assert pause["tool_call_id"] not in choice["summary"] + choice["answered"]
    assert listed["live"] == ""  # the live session knows its real tools

    before = len(k.comm(rec.comm_id).state.get("nested") or [])
    answer = k.request(rec.comm_id, "what_if", tool_call_id=pause["tool_call_id"], live=False)
    assert answer["ok"] is True, answer
    assert answer["started"] == "What if: bump (step=2) answered differently (the tools give their recorded results)"
    child = nested_widgets(k, rec, before + 1)[-1]
    card = open_pause(k, child.comm_id, "confirm")
    assert card["tool_call_id"] == pause["tool_call_id"]
    assert card["permission_message"] is None or isinstance(card["permission_message"], str)
    denied = k.request(
        child.comm_id, "deny", tool_call_id=card["tool_call_id"], reply_id=card["reply_id"], reason="not today"
    )
    assert denied["ok"] is True, denied
    state = wait_status(k, child.comm_id, "finished")
    (done,) = state["pauses"]
    assert done["status"] == "delivered"
    told = [e["text"] for e in k.comm(child.comm_id).transcript() if e["kind"] == "tool_result"]
    assert any("not today" in t for t in told), told  # the model read the new answer
    # a what-if continuation is not recorded: its buttons are off, saying why
    assert state["replay"]["reason"].startswith("A what-if continuation is not recorded")
    assert (work / "counter.txt").read_text() == "2"


def test_requests_that_cannot_be_answered_say_why(recorded: Any) -> None:
    k, rec, _, _ = recorded
    bad = k.request(rec.comm_id, "what_if", tool_call_id="", live=False)
    assert bad["ok"] is False and bad["field"] == "tool_call_id"
    unknown = k.request(rec.comm_id, "what_if", tool_call_id="no-such-call", live=False)
    assert (
        unknown["ok"] is False and unknown["error"] == "This pause of the reply has no recorded answer to go back to."
    )
    # a session with no record: no buttons, and a request is refused naming the fix
    k.execute(
        "plain = Session(Agent(name='plain', system_prompt='x', model=ScriptedChatModel([Turn('Hello.')]),"
        " toolkit=Toolkit(tools=[])))\nplain_task = plain.start('hi')"
    ).raise_for_error()
    other = reply_widget(k, "plain")
    state = wait_status(k, other.comm_id, "finished")
    assert state["replay"] == {}
    refused = k.request(other.comm_id, "replay")
    assert refused["ok"] is False
    assert refused["error"] == "This session keeps no record to replay: make it with Session(..., audit_log=...)."


def test_the_audit_log_holds_only_the_recorded_session(recorded: Any) -> None:
    _, _, work, _ = recorded
    lines = [json.loads(line) for line in Path(work / "audit.jsonl").read_text().splitlines() if line.strip()]
    # replays and forks write nothing to the recorded session's audit log: one answer, the approval
    assert [line["decision"] for line in lines if line.get("event") == "answered"] == ["approve"]
