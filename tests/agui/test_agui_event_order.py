"""Parallel tool calls streamed interleaved stay a valid AG-UI stream.

A model that streams two tool calls at once, their argument chunks
interleaved (as real APIs do for parallel calls): AgentScope ends a call's
block each time the model switches to the other and starts it again. The
stream the server sends must still open each call once, end it once, and
pass ag-ui-validate; the arguments must arrive whole.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any

from agentscope.agent import Agent
from agentscope.message import TextBlock, ToolCallBlock
from agentscope.model import ChatResponse
from agentscope.tool import Toolkit

from nb_hitl.agui import AguiServer, serve_in_background
from nb_hitl.agui.client import AguiClient
from nb_hitl.demo import make_sandbox, sandbox_tools
from nb_hitl.models import ScriptedChatModel, Turn, tool_call
from tests.agui_support import post_run, user


class InterleavedModel(ScriptedChatModel):
    """The scripted model, streaming the calls of a turn side by side: every
    call's name first, then the arguments in pieces, call after call."""

    async def _stream(self, text: TextBlock | None, calls: list[ToolCallBlock]) -> AsyncGenerator[ChatResponse, None]:
        if len(calls) < 2:
            async for chunk in super()._stream(text, calls):
                yield chunk
            return
        for call in calls:
            yield ChatResponse(id="r", is_last=False, content=[ToolCallBlock(id=call.id, name=call.name, input="")])
        pieces = {c.id: [c.input[i : i + 5] for i in range(0, len(c.input), 5)] for c in calls}
        for n in range(max(len(p) for p in pieces.values())):
            for call in calls:
                if n < len(pieces[call.id]):
                    part = pieces[call.id][n]
                    yield ChatResponse(
                        id="r", is_last=False, content=[ToolCallBlock(id=call.id, name=call.name, input=part)]
                    )


def interleaved_agent(thread_id: str) -> Agent:
    return Agent(
        name="parallel",
        system_prompt="Tidy.",
        model=InterleavedModel(
            [Turn("", [tool_call("list_files"), tool_call("delete_file", path="old_log.txt")]), Turn("Done.")]
        ),
        toolkit=Toolkit(tools=sandbox_tools(make_sandbox())),
    )


def test_interleaved_parallel_tool_calls_stay_a_valid_stream():
    server = AguiServer(interleaved_agent)
    with serve_in_background(server, announce=False) as handle:
        cap = asyncio.run(post_run(handle, AguiClient.make_input("par-1", [user("tidy", "u1")])))
    assert cap.status == 200
    assert cap.report.summary.errors == 0, cap.findings()
    started: list[str] = []
    ended: list[str] = []
    args: dict[str, str] = {}
    for e in cap.events:
        kind = e.type.value
        if kind == "TOOL_CALL_START":
            assert e.tool_call_id not in started and e.tool_call_id not in ended
            started.append(e.tool_call_id)
        elif kind == "TOOL_CALL_ARGS":
            assert e.tool_call_id in started and e.tool_call_id not in ended
            args[e.tool_call_id] = args.get(e.tool_call_id, "") + e.delta
        elif kind == "TOOL_CALL_END":
            assert e.tool_call_id in started and e.tool_call_id not in ended
            ended.append(e.tool_call_id)
    assert len(started) == 2 and sorted(started) == sorted(ended)
    decoded: list[Any] = [json.loads(a) for a in args.values()]
    assert {"path": "old_log.txt"} in decoded  # the chunks reassemble whole
    # the interleaving really happened: a call's ARGS came between the other's
    order = [e.tool_call_id for e in cap.events if e.type.value == "TOOL_CALL_ARGS"]
    assert any(a != b for a, b in zip(order, order[1:], strict=False))
    assert cap.last().type.value == "RUN_FINISHED" and cap.last().outcome.type == "interrupt"
