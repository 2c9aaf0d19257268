"""The transcript streams to the page as append-only messages; group actions resume once.

* every change reaches the page once, as ``{"type": "nbh_transcript", "seq",
  "ops"}`` custom messages at most 20 per second, and the ``transcript``
  trait (the saved record) is not re-sent per delta;
* the last delta is sent within 100 ms even when the model then stalls
  (a trailing flush on the loop);
* ``transcript_sync`` gives the page every entry and the ``seq`` they include;
* "Approve all" on 50 confirmations is one page message, one
  ``UserConfirmResultEvent`` with 50 ``ConfirmResult``s and one model call.

Agents are real ``agentscope.agent.Agent``s on
:class:`~nb_hitl.models.ScriptedChatModel`; page messages go through the
widget's own comm handler.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from typing import Any

from agentscope.agent import Agent
from agentscope.message import TextBlock
from agentscope.model import ChatResponse
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import ToolBase, ToolChunk, Toolkit

from nb_hitl import Session
from nb_hitl.models import ScriptedChatModel, Turn, tool_call
from nb_hitl.session import Transcript
from tests.support import InputRecorder, StreamRecorder, apply_ops, parked, run_async, wait_until


# ------------------------------------------------------------- the model
def test_transcript_ops_rebuild_the_entries_and_merge_appends() -> None:
    tr = Transcript()
    rebuilt: list[dict[str, Any]] = []
    tr.text("b1")
    for word in ("Deleting ", "the ", "file."):
        tr.text("b1", word)
    tr.tool_call("c1", "delete_file")
    seq, ops = tr.take_ops()
    assert seq == 1 and [o["op"] for o in ops] == ["add", "add"]  # the deltas ride in the new entry
    apply_ops(rebuilt, ops)
    tr.tool_call("c1", input_text='{"path": ')
    tr.tool_call("c1", input_text='"a.txt"}')
    tr.tool_result("c1", state="running", name="delete_file")
    tr.tool_result("c1", "Deleted.")
    tr.tool_result("c1", state="success")
    tr.add("step", "step:1", text="", elapsed=1.5, input_tokens=10)
    tr.add("step", "step:1", output_tokens=7)
    seq, ops = tr.take_ops()
    assert seq == 2
    assert ops[0] == {"op": "append", "id": "call:c1", "text": '{"path": "a.txt"}'}
    apply_ops(rebuilt, ops)
    assert rebuilt == tr.view()
    assert tr.take_ops() == (2, [])  # nothing new: no message, same seq
    assert not tr.trait_dirty  # view() was taken


# ---------------------------------------------------- streaming in a reply
def test_a_long_reply_streams_deltas_not_the_whole_transcript() -> None:
    words = [f"w{i}" for i in range(2000)]
    agent = Agent(
        name="talker",
        system_prompt="Talk.",
        model=ScriptedChatModel([Turn(" ".join(words))], chunk_delay=0.0005, on_exhausted="raise"),
        toolkit=Toolkit(),
    )

    async def scenario() -> StreamRecorder:
        session = Session(agent, display=True)
        task = session.start("Talk a lot.")
        await wait_until(lambda: session.current is not None and session.current.widget is not None, "the widget")
        rec = StreamRecorder(session.current.widget)
        await asyncio.wait_for(task, 60)
        widget = session.current.widget
        assert rec.rebuilt() == widget.transcript == list(session.current.transcript)
        return rec

    rec = run_async(scenario())
    assert len(rec.stream) >= 3, "the reply streamed in several messages"
    # pacing batches text only: a step (the model call starting, ending) goes out at once, and
    # the end of the stream is flushed at once (with the reply's status), not on the timer
    step_ids = {e["id"] for e in rec.rebuilt() if e["kind"] == "step"}
    times = [
        t for t, m in rec.stream if not any(op.get("id", op.get("entry", {}).get("id")) in step_ids for op in m["ops"])
    ]
    gaps = [b - a for a, b in zip(times[:-2], times[1:-1], strict=True)]
    assert min(gaps) >= 0.045, f"at most 20 text messages per second (gaps {[round(g, 3) for g in gaps]})"
    text_ids = {e["id"] for e in rec.rebuilt() if e["kind"] == "text"}
    streamed = sum(
        len(op["text"]) if op["op"] == "append" else len(op["entry"]["text"])
        for _, m in rec.stream
        for op in m["ops"]
        if op["op"] in ("append", "add") and op.get("id", op.get("entry", {}).get("id")) in text_ids
    )
    assert streamed == len(" ".join(words)), "each character of the reply is sent once"
    assert rec.trait_sets <= 2, f"the transcript trait was set {rec.trait_sets} times (not per delta)"


class StallingModel(ScriptedChatModel):
    """Streams "Hello", then stalls ``stall`` seconds before " world"."""

    stall = 1.0

    async def _stream(self, text: TextBlock | None, calls: list[Any]) -> AsyncGenerator[ChatResponse, None]:
        assert text is not None
        for piece, wait in (("Hello", self.stall), (" world", 0.0)):
            yield ChatResponse(id="resp_stall", is_last=False, content=[TextBlock(id=text.id, text=piece)])
            await asyncio.sleep(wait)


def test_the_last_delta_is_sent_while_the_model_stalls() -> None:
    agent = Agent(
        name="staller",
        system_prompt="Pause.",
        model=StallingModel([Turn("Hello world")], on_exhausted="raise"),
        toolkit=Toolkit(),
    )

    async def scenario() -> None:
        session = Session(agent, display=True)
        started = time.monotonic()
        task = session.start("Say hello.")
        await wait_until(lambda: session.current is not None and session.current.widget is not None, "the widget")
        rec = StreamRecorder(session.current.widget)
        await wait_until(lambda: any("Hello" in str(m["ops"]) for _, m in rec.stream), "Hello on the page", 2)
        sent_at = next(t for t, m in rec.stream if "Hello" in str(m["ops"]))
        assert sent_at - started < 0.6, "Hello was sent during the stall, not after it"
        assert not task.done()
        await asyncio.wait_for(task, 10)
        assert rec.rebuilt()[-1]["text"] == "Hello world"

    run_async(scenario())


def test_transcript_sync_answers_every_entry_and_its_seq() -> None:
    agent = Agent(
        name="syncer",
        system_prompt="Talk.",
        model=ScriptedChatModel([Turn("one two three")], on_exhausted="raise"),
        toolkit=Toolkit(),
    )

    async def scenario() -> None:
        session = Session(agent, display=True)
        await session.run("Count.")
        widget = session.current.widget
        rec = StreamRecorder(widget)
        widget._on_page_message(widget, {"request_id": "s1", "action": "transcript_sync"}, [])
        reply = rec.replies[-1]
        assert reply["ok"] and reply["request_id"] == "s1"
        assert reply["entries"] == list(session.current.transcript)
        assert [e["text"] for e in reply["entries"] if e["kind"] == "text"] == ["one two three"]
        assert reply["seq"] == session.current.transcript.seq >= 1

    run_async(scenario())


# -------------------------------------------------------- Approve all (50)
class Stamp(ToolBase):
    """A tool that always asks, each call on its own: a safety ask (``bypass_immune``)
    is never de-duplicated against a sibling call's suggested rule, so
    AgentScope parks the reply on all 50 calls at once."""

    name = "stamp"
    description = "Stamp one form."
    input_schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    is_concurrency_safe = True
    is_read_only = False

    async def check_permissions(self, tool_input: dict[str, Any], context: Any) -> PermissionDecision:
        return PermissionDecision(
            behavior=PermissionBehavior.ASK, message=f"Stamp form {tool_input.get('n')}?", bypass_immune=True
        )

    async def __call__(self, n: int) -> ToolChunk:  # type: ignore[override]
        return ToolChunk(content=[TextBlock(text=f"stamped {n}")])


def test_approve_all_on_50_calls_resumes_once_and_calls_the_model_once() -> None:
    n = 50
    recorder = InputRecorder()
    model = ScriptedChatModel(
        [Turn("Stamping.", [tool_call("stamp", id=f"s{i}", n=i) for i in range(n)]), Turn("All stamped.")],
        on_exhausted="raise",
    )
    agent = Agent(
        name="stamper", system_prompt="Stamp.", model=model, toolkit=Toolkit(tools=[Stamp()]), middlewares=[recorder]
    )

    async def scenario() -> None:
        session = Session(agent, display=True)
        task = session.start("Stamp them all.")
        pauses = await parked(session)
        assert len(pauses) == n and model.call_count == 1
        widget = session.current.widget
        rec = StreamRecorder(widget)
        items = [{"action": "approve", "tool_call_id": p.tool_call_id, "reply_id": p.reply_id} for p in pauses]
        widget._on_page_message(widget, {"request_id": "all", "action": "batch", "items": items}, [])
        await asyncio.wait_for(task, 30)
        reply = next(r for r in rec.replies if r.get("request_id") == "all")
        assert reply["ok"] and [r["ok"] for r in reply["results"]] == [True] * n
        assert session.current.resumes == 1
        assert session.current.status == "finished"

    run_async(scenario())
    assert recorder.kinds() == ["UserMsg", "UserConfirmResultEvent"] or recorder.kinds()[1:] == [
        "UserConfirmResultEvent"
    ]
    assert len(recorder.inputs[1].confirm_results) == n
    assert all(r.confirmed for r in recorder.inputs[1].confirm_results)
    assert model.call_count == 2, "the model was called once after all 50 results"


def test_a_batch_refuses_bad_items_one_by_one_and_sends_the_rest() -> None:
    recorder = InputRecorder()
    model = ScriptedChatModel(
        [Turn("Two.", [tool_call("stamp", id="a", n=1), tool_call("stamp", id="b", n=2)]), Turn("Done.")],
        on_exhausted="raise",
    )
    agent = Agent(
        name="stamper2", system_prompt="Stamp.", model=model, toolkit=Toolkit(tools=[Stamp()]), middlewares=[recorder]
    )

    async def scenario() -> None:
        session = Session(agent, display=True)
        task = session.start("Stamp.")
        await parked(session)
        widget = session.current.widget
        rec = StreamRecorder(widget)
        widget._on_page_message(widget, {"request_id": "bad", "action": "batch", "items": "all"}, [])
        assert rec.replies[-1] == {
            "request_id": "bad",
            "ok": False,
            "error": rec.replies[-1]["error"],
            "code": rec.replies[-1]["code"],
            "field": "items",
        }
        items = [
            {"action": "approve", "tool_call_id": "a"},
            {"action": "approve", "tool_call_id": "nope"},
            {"action": "deny", "tool_call_id": "b"},
        ]
        widget._on_page_message(widget, {"request_id": "mix", "action": "batch", "items": items}, [])
        await asyncio.wait_for(task, 10)
        reply = next(r for r in rec.replies if r.get("request_id") == "mix")
        assert [r["ok"] for r in reply["results"]] == [True, False, True]
        assert reply["results"][1]["field"] == "tool_call_id"

    run_async(scenario())
    assert recorder.kinds()[1:] == ["UserConfirmResultEvent"]
    assert {r.tool_call.id: r.confirmed for r in recorder.inputs[1].confirm_results} == {"a": True, "b": False}


# ------------------------------------------------ ScriptedChatModel.calls
def test_scripted_model_keeps_the_last_max_calls_calls() -> None:
    model = ScriptedChatModel([Turn(f"answer {i}") for i in range(5)], on_exhausted="raise", max_calls=3)
    agent = Agent(name="counter", system_prompt="Count.", model=model, toolkit=Toolkit())

    async def scenario() -> None:
        session = Session(agent, display=False)
        for i in range(5):
            await session.run(f"question {i}")

    run_async(scenario())
    assert model.call_count == 5 and model.remaining == 0
    assert len(model.calls) == 3 and len(model.tools_seen) == 3
    last_user = [m for m in model.calls[-1] if m.role == "user"][-1]
    assert "question 4" in str(last_user.content)
    first_kept = [m for m in model.calls[0] if m.role == "user"][-1]
    assert "question 2" in str(first_kept.content)
