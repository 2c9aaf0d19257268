"""What a click on Approve sends, in order, from a real ipykernel, when no cell runs.

The reply runs in the background (the cell returned the task of
``session.start(...)``), so ipykernel frames the click's ``comm_msg`` with
iopub ``status`` ``busy`` and ``idle``. The agent's next event (the approved
call's tool result) and the click's card must leave the kernel before that
``idle``, as a plain ipywidgets button's update does: the page handles
messages in order, and an ``idle`` ahead of the result delayed it
(``benchmarks/click_to_resume.py``). A new card (the agent's next call) travels
as one ``nbh_cards`` op, never as the whole ``pauses`` trait. The widget's comm
leads to the kernel's IOPub thread, which ``let_out`` waits for.
"""

from __future__ import annotations

import pytest

from benchmarks._lab import STEP_TOOL_SOURCE
from tests.harness import KernelHarness
from tests.support import open_pause, reply_widget

pytestmark = pytest.mark.kernel

AGENT = (
    STEP_TOOL_SOURCE
    + """
agent = Agent(
    name="steps",
    system_prompt="Run the steps one by one.",
    model=ScriptedChatModel([Turn(f"Step {i}.", [tool_call("step", i=i)]) for i in range(3)] + [Turn("All steps done.")]),
    toolkit=Toolkit(tools=[FunctionTool(step)]),
    react_config=ReActConfig(max_iters=10),
)
session = Session(agent)
task = session.start("Run every step.")
"""
)


def kinds_after(k: KernelHarness, comm_id: str, click: str, since: int) -> list[str]:
    """The iopub messages from index ``since`` on, named: ``busy`` / ``idle`` (of the
    click's message), ``answer``, ``result`` (a tool result entry added),
    ``cards:<status>,...`` (an ``nbh_cards`` message's views), ``pauses`` (an update
    holding the ``pauses`` trait), ``other``."""
    names: list[str] = []
    for m in k.messages()[since:]:
        content = m.get("content") or {}
        if m["msg_type"] == "status":
            parent = (m.get("parent_header") or {}).get("msg_id")
            names.append(content["execution_state"] if parent == click else "other")
            continue
        data = content.get("data") or {}
        if m["msg_type"] != "comm_msg" or content.get("comm_id") != comm_id:
            names.append("other")
        elif data.get("method") == "update":
            names.append("pauses" if "pauses" in (data.get("state") or {}) else "other")
        elif (c := data.get("content") or {}).get("request_id") is not None:
            names.append("answer")
        elif c.get("type") == "nbh_transcript":
            added = [op["entry"]["kind"] for op in c["ops"] if op["op"] == "add"]
            names.append("result" if "tool_result" in added else "other")
        elif c.get("type") == "nbh_cards":
            names.append("cards:" + ",".join(op["view"]["status"] for op in c["ops"] if op["op"] == "card"))
        else:
            names.append("other")
    return names


def test_a_clicks_idle_follows_the_agents_next_event_and_a_new_card_is_one_op() -> None:
    with KernelHarness() as k:
        k.execute(AGENT).raise_for_error()
        rec = reply_widget(k, "steps")
        # what a view does when drawn; from then on the cards go as ops
        connected = k.request(rec.comm_id, "sync", transcript_seq=0, cards_seq=0)
        assert connected["ok"] is True, connected
        after_connect = len(k.messages())
        for n in range(3):
            pause = open_pause(k, rec.comm_id, "confirm")
            since = len(k.messages())
            click = k.send_custom(
                rec.comm_id,
                {
                    "request_id": f"r{n}",
                    "action": "approve",
                    "tool_call_id": pause["tool_call_id"],
                    "reply_id": pause["reply_id"],
                },
            )
            k.wait_for(
                lambda c=click, s=since: "idle" in kinds_after(k, rec.comm_id, c, s), 30, what="the click's idle"
            )
            got = [x for x in kinds_after(k, rec.comm_id, click, since) if x != "other"]
            idle = got.index("idle")
            assert got[0] == "busy", got
            # the answer, the tool result and the click's card all before the idle
            assert {"answer", "result"} <= set(got[:idle]), got
            assert got.index("answer") < got.index("result"), got
            assert any(x.startswith("cards:") and "delivered" in x for x in got[:idle]), got
        k.wait_for(lambda: k.comm(rec.comm_id).state.get("status") == "finished", 30, what="the reply's end")
        state = k.comm(rec.comm_id).state
        assert [p["status"] for p in state["pauses"]] == ["delivered"] * 3
        # once connected, every card reached the page as ops: the pauses trait never went
        updates = [
            m
            for m in k.messages()[after_connect:]
            if m["msg_type"] == "comm_msg"
            and m["content"].get("comm_id") == rec.comm_id
            and "pauses" in ((m["content"].get("data") or {}).get("state") or {})
        ]
        assert updates == []
        added = [
            op["view"]["tool_call_id"]
            for c in k.comm(rec.comm_id).custom
            if isinstance(c, dict) and c.get("type") == "nbh_cards"
            for op in c["ops"]
            if op["op"] == "card" and op["view"]["status"] == "open"
        ]
        # the cards added after the first answer: each once, alone (the first may have
        # come before the connect, as the record)
        ids = [p["tool_call_id"] for p in state["pauses"]]
        assert added[-2:] == ids[1:] and len(added) == len(set(added)), (added, ids)
        assert k.execute("print(task.result().get_text_content())").stdout.strip() == "All steps done."
        # the wait that lets the agent's next event out before the agent runs on finds the kernel's IOPub thread
        waited = k.execute(
            "from nb_hitl.widgets._iopub import let_out\nprint(let_out(session.current.widget, 5.0))"
        ).stdout.strip()
        assert waited == "True", waited
