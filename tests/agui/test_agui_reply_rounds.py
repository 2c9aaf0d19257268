"""nb_hitl.agui.events.reply_rounds: the one rule that splits an assistant ``Msg`` into rounds,
read by ``messages_snapshot`` (one AG-UI assistant message per round) and ``last_reply_text``
(what a restarted server reports as the reply's result): both agree on a real agent's history
and on the edge cases of hand-built histories of AgentScope blocks.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ag_ui.core import AssistantMessage
from agentscope.message import Msg, TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock

from nb_hitl.agui.client import AguiClient
from nb_hitl.agui.events import Round, last_reply_text, messages_snapshot, reply_rounds
from nb_hitl.agui.server import AguiServer
from tests.agui.test_agui_mapping import deny_and_pick_notes
from tests.agui_support import Factory, collect, user


def text(t: str, id: str) -> TextBlock:
    return TextBlock(text=t, id=id)


def call(id: str) -> ToolCallBlock:
    return ToolCallBlock(id=id, name="delete_file", input='{"path": "a"}')


def result(id: str) -> ToolResultBlock:
    return ToolResultBlock(id=id, name="delete_file", output=[TextBlock(text="Deleted a.")], state="success")


def said(blocks: list[Any]) -> list[Msg]:
    return [
        Msg(name="user", role="user", content=[TextBlock(text="go")], id="u1"),
        Msg(name="agent", role="assistant", content=blocks, id="a1"),
    ]


def shape(parts: list[Round | ToolResultBlock]) -> list[Any]:
    return [
        ([t.text for t in p.texts], [c.id for c in p.calls]) if isinstance(p, Round) else ("result", p.id)
        for p in parts
    ]


def test_a_text_after_tool_calls_starts_a_round_and_a_result_ends_one() -> None:
    blocks = [
        text("Let me look. ", "t1"),
        call("c1"),
        call("c2"),
        text("Meanwhile: ", "t2"),
        ThinkingBlock(thinking="which first?"),
        call("c3"),
        result("c1"),
        result("c3"),
        text("Done", "t3"),
        text(".", "t4"),
    ]
    assert shape(reply_rounds(blocks)) == [
        (["Let me look. "], ["c1", "c2"]),
        (["Meanwhile: "], ["c3"]),
        ("result", "c1"),
        ("result", "c3"),
        (["Done", "."], []),
    ]
    snap = messages_snapshot(said(blocks))
    assert [(m.role, m.id) for m in snap] == [
        ("user", "u1"),
        ("assistant", "t1"),
        ("assistant", "t2"),
        ("tool", "a1:result:c1"),
        ("tool", "a1:result:c3"),
        ("assistant", "t3"),
    ]
    assert [c.id for c in snap[1].tool_calls] == ["c1", "c2"] and snap[5].content == "Done."
    assert last_reply_text(said(blocks)) == "Done." == snap[-1].content


def test_the_last_reply_text_is_the_last_round_without_a_call() -> None:
    assert last_reply_text(said([text("Asking first.", "t1"), call("c1")])) == ""  # ends asking a tool
    assert last_reply_text(said([text("Asking.", "t1"), call("c1"), result("c1")])) == ""  # ends on a result
    assert last_reply_text(said([])) == ""
    assert last_reply_text(said([result("c1"), ThinkingBlock(thinking="so"), text("So.", "t2")])) == "So."
    answered = said([text("Hi.", "t1")]) + [Msg(name="user", role="user", content=[TextBlock(text="and?")], id="u2")]
    assert last_reply_text(answered) is None  # a user message came after the reply
    assert last_reply_text([]) is None
    # a round without text is named after its message and its number
    snap = messages_snapshot(said([call("c1"), result("c1"), call("c2")]))
    assert [m.id for m in snap if isinstance(m, AssistantMessage)] == ["a1:0", "a1:1"]
    assert shape(reply_rounds([call("c1"), result("c1"), call("c2")])) == [([], ["c1"]), ("result", "c1"), ([], ["c2"])]


def test_a_real_replys_rounds_snapshot_and_last_text_agree(tmp_path) -> None:
    server = AguiServer(Factory(tmp_path))
    thread = "t-rounds"

    async def go() -> tuple[Any, list[Msg]]:
        first = await collect(server, AguiClient.make_input(thread, [user("go", "m1")]))
        entries = deny_and_pick_notes(first[-1].outcome.interrupts)
        second = await collect(server, AguiClient.make_input(thread, [user("go", "m1")], entries))
        return second[-1], server.threads[thread].agent.state.context

    finished, context = asyncio.run(go())
    assert finished.outcome.type == "success"
    (reply,) = [m for m in context if m.role == "assistant"]
    parts = reply_rounds(reply.content)
    rounds = [p for p in parts if isinstance(p, Round)]
    assert len(rounds) == 2 and {c.name for c in rounds[0].calls} == {"AskUser", "delete_file"}
    assert not rounds[1].calls and [type(p) for p in parts[1:3]] == [ToolResultBlock, ToolResultBlock]
    snap = messages_snapshot(context)
    assistants = [m for m in snap if isinstance(m, AssistantMessage)]
    assert [m.content or "" for m in assistants] == ["".join(t.text for t in r.texts) for r in rounds]
    # what the reply's final Msg said (the run's result) is what a restarted server would report
    assert finished.result == last_reply_text(context) == assistants[-1].content
    assert "You denied the deletion" in finished.result
