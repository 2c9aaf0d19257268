"""C22: the server refuses one of two answers.

A remote reply with two interrupts (AskUser and a delete_file confirmation);
the person answers the question, then approves the deletion with an edited
input. An edit that breaks the tool's schema (an extra key) is refused by the
client before anything is sent; one only the server can refuse (an edit that
changes nothing) is refused by the server. Either way the reason is shown at
the card that caused it, in plain words, the other answer is kept, nothing
runs until the refused one is answered again, and a later cell cannot send
other choices for them.
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
                        "input": '{"path": "old_log.txt"}',  # changes nothing: only the server knows
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
    said = "The server refused your answer to delete_file. Your edit changes nothing: "
    assert str(refused).startswith(said) and str(refused).endswith(
        " Your other answers are kept; fix this one and answer it again."
    )
    assert refused.field == "input" and ".." not in str(refused) and "invalid_payload" not in str(refused)
    assert views["confirm"]["status"] == "open" and views["confirm"]["refused"].startswith(said)
    assert views["confirm"]["refused"].count("delete_file") == 1 and views["confirm"]["refused"].endswith("first.")
    # what the person typed goes back to the card, so the edit is fixed, not retyped
    assert views["confirm"]["refused_answer"] == {"action": "modify", "input": '{"path": "old_log.txt"}'}
    assert widget_views["confirm"]["refused_answer"] == views["confirm"]["refused_answer"]
    assert views["ask_user"]["status"] == "decided"  # the answer is kept
    assert widget_views["confirm"]["refused"] == views["confirm"]["refused"]
    assert unsent and fixed["sent"]
    assert final == "You chose to archive draft.md. Deleted old_log.txt."
    sent = {e.interrupt_id: e.payload for e in turn.runs[-1].resume}
    assert sent[views["ask_user"]["interrupt_id"]]["answers"][0]["selected"] == ["draft.md"]  # the kept answer
    assert sent[views["confirm"]["interrupt_id"]] == {"approved": True}
    assert [r.outcome for r in turn.runs] == ["interrupt", "error", "success"]


def test_C22_an_edit_that_breaks_the_tools_schema_is_refused_before_it_is_sent(tmp_path):
    server = AguiServer(two_pause_factory(tmp_path))
    with serve_in_background(server, announce=False) as handle:

        async def go():
            remote = RemoteSession(handle.url, token=handle.token, display=False)
            task = remote.start("Please tidy up.")
            pending = await remote.until_paused()
            ask = next(p for p in pending if p["kind"] == "ask_user")
            confirm = next(p for p in pending if p["kind"] == "confirm")
            answer = [{"question": QUESTION, "selected": ["draft.md"]}]
            await remote.act({"action": "answer", "tool_call_id": ask["tool_call_id"], "answers": answer})
            posts = remote.client.posts
            modify = {"action": "modify", "tool_call_id": confirm["tool_call_id"]}
            with pytest.raises(DecisionError) as extra:
                await remote.act({**modify, "input": '{"path": "old_log.txt", "extra": 1}'})
            with pytest.raises(DecisionError) as typed:
                await remote.act({**modify, "input": '{"path": 5}'})
            unsent = remote.client.posts == posts
            views = {v["kind"]: dict(v) for v in remote.current.pauses.values()}
            fixed = await remote.act({**modify, "input": '{"path": "draft.md"}'})
            return extra.value, typed.value, unsent, views, fixed, await task, remote.current

        extra, typed, unsent, views, fixed, final, turn = asyncio.run(go())
    assert str(extra) == "The input has a field the tool does not take: extra." and extra.field == "input"
    assert str(typed) == "The input does not match the tool's schema in field \"path\": 5 is not of type 'string'."
    assert typed.field == "input.path"
    assert unsent  # nothing reached the server: no run was made for either
    assert views["confirm"]["status"] == "open" and not views["confirm"].get("refused")
    assert views["ask_user"]["status"] == "decided"  # the answer is kept
    assert fixed["sent"] and final == "You chose to archive draft.md. Deleted draft.md."
    assert [r.outcome for r in turn.runs] == ["interrupt", "success"]


def test_a_run_error_reads_in_words_from_its_first_event() -> None:
    """A ``RUN_ERROR`` shows on the turn as the server's sentence, with no code in brackets, from
    the event on (the card is drawn at once, before the run's end rewords a refused resume):
    the code stays in the run's record for programs."""
    from ag_ui.core import RunErrorEvent, RunStartedEvent

    from nb_hitl.agui.turn import RemoteTurn, RunReader, RunRecord

    turn, record = RemoteTurn(prompt="hi"), RunRecord(run_id="r1")
    reader = RunReader(turn, record, "t1")
    reader.feed(RunStartedEvent(thread_id="t1", run_id="r1"))
    reader.feed(
        RunErrorEvent(message="Thread 't1' is running another run; send this one when it ends", code="thread_busy")
    )
    assert turn.status == "error"
    assert turn.reason == "Thread 't1' is running another run; send this one when it ends."
    assert record.error_code == "thread_busy"
