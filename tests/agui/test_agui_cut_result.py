"""A tool result AgentScope cut to fit the model's context, over AG-UI.

The local transcript shows such a result as the model reads it (AgentScope's
part, ``<<<TRUNCATED>>>`` and its reminder). An AG-UI client (and
:class:`~nb_hitl.agui.RemoteSession`'s transcript) must not be told a
different result: the ``TOOL_CALL_RESULT`` content is what the model read.

The agent is a real ``agentscope.agent.Agent`` on ``ScriptedChatModel``
(its tool returns 1 MB); the server is nb_hitl's AG-UI server, run in process.
"""

from __future__ import annotations

import asyncio

from agentscope.agent import Agent

from nb_hitl.agui import AguiServer
from nb_hitl.agui.client import AguiClient
from nb_hitl.models import tool_results
from tests.agui_support import collect, user
from tests.session.test_long_entries import BIG, reader


def test_tool_call_result_content_is_what_the_model_read_when_agentscope_cut_it() -> None:
    agents: dict[str, Agent] = {}

    def factory(thread_id: str) -> Agent:
        agents[thread_id] = reader()
        return agents[thread_id]

    server = AguiServer(factory, token=False)
    inp = AguiClient.make_input("cut-1", [user("How long is the log?", "u1")])
    events = asyncio.run(asyncio.wait_for(collect(server, inp), 60))
    results = [e for e in events if e.type.value == "TOOL_CALL_RESULT"]
    assert len(results) == 1
    told = tool_results(agents["cut-1"].model.calls[-1], "dump")[-1].output[0].text
    assert "<<<TRUNCATED>>>" in told and len(told) < BIG
    content = results[0].content
    assert len(content) < BIG, f"AG-UI sent the tool's whole {len(content):,} characters; the model read {len(told):,}"
    assert "<<<TRUNCATED>>>" in content
