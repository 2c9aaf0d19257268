"""C22: the server refuses one of two answers.

A remote reply with two interrupts (AskUser and a delete_file confirmation);
the person answers the question, then approves the deletion with an edited
input the client accepts but the server refuses (an extra key: the tool's
schema check runs on the server). The reason is shown at the card that
caused it, the other answer is kept, nothing runs until the refused one is
answered again, and a later cell cannot send other choices for them.
"""

from __future__ import annotations

import asyncio

import pytest
from ag_ui.core import ResumeEntry

from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
from nb_hitl.agui.demo import two_pause_factory
from nb_hitl.errors import AlreadyDecidedError, DecisionError

QUESTION = "Which file should I archive?"


def test_C22_a_refused_answer_is_shown_at_its_card_and_the_others_are_kept(tmp_path):
    factory = two_pause_factory(tmp_path)
    server = AguiServer(factory)
    with serve_in_background(server, announce=False) as handle:

        async def go():
            remote = RemoteSession(handle.url, token=handle.token, thread_id="c22", display=False)
            task = remote.start("Please tidy up.")
            pending = await remote.until_paused()
            ask = next(p for p in pending if p["kind"] == "ask_user")
            confirm = next(p for p in pending if p["kind"] == "confirm")
            answer = [{"question": QUESTION, "selected": ["draft.md"]}]
            first = await remote.act({"action": "answer", "tool_call_id": ask["tool_call_id"], "answers": answer})
            with pytest.raises(DecisionError) as refused:
                await remote.act(
                    {
                        "action": "modify",
                        "tool_call_id": confirm["tool_call_id"],
                        "input": '{"path": "old_log.txt", "x": 1}',
                    }
                )
            turn = remote.current
            views = {v["kind"]: dict(v) for v in turn.pauses.values()}
            widget_views = {v["kind"]: v for v in turn.widget.pauses}
            # a later cell: other choices for the same interrupts are refused, nothing is sent
            posts = remote.client.posts
            ids = {v["kind"]: v["interrupt_id"] for v in views.values()}
            other = [{"question": QUESTION, "selected": ["notes.txt"]}]
            with pytest.raises(AlreadyDecidedError):
                remote.resume(
                    [
                        ResumeEntry(interrupt_id=ids["ask_user"], status="resolved", payload={"answers": other}),
                        ResumeEntry(interrupt_id=ids["confirm"], status="resolved", payload={"approved": True}),
                    ]
                )
            with pytest.raises(AlreadyDecidedError):
                await remote.act({"action": "answer", "tool_call_id": ask["tool_call_id"], "answers": other})
            unsent = remote.client.posts == posts
            # fixing the refused answer sends both, the kept one unchanged
            fixed = await remote.act({"action": "approve", "tool_call_id": confirm["tool_call_id"]})
            return first, refused.value, views, widget_views, unsent, fixed, await task, turn

        first, refused, views, widget_views, unsent, fixed, final, turn = asyncio.run(go())
    assert not first["sent"]
    assert "delete_file" in str(refused) and "other answers are kept" in str(refused)
    assert views["confirm"]["status"] == "open" and "Refused by the server" in views["confirm"]["refused"]
    assert views["ask_user"]["status"] == "decided"  # the answer is kept
    assert widget_views["confirm"]["refused"] == views["confirm"]["refused"]
    assert unsent and fixed["sent"]
    assert final == "You chose to archive draft.md. Deleted old_log.txt."
    sent = {e.interrupt_id: e.payload for e in turn.runs[-1].resume}
    assert sent[views["ask_user"]["interrupt_id"]]["answers"][0]["selected"] == ["draft.md"]  # the kept answer
    assert sent[views["confirm"]["interrupt_id"]] == {"approved": True}
    assert [r.outcome for r in turn.runs] == ["interrupt", "error", "success"]
