"""A tool result over AG-UI is what the model read.

The local transcript shows a tool result as the model reads it: AgentScope's
part of a long one (``<<<TRUNCATED>>>`` and its reminder), or nb_hitl's note
carrying a person's deny reason. An AG-UI client (and
:class:`~nb_hitl.agui.RemoteSession`'s transcript) must not be told a
different result: the ``TOOL_CALL_RESULT`` content is what the model read.

Agents are real ``agentscope.agent.Agent``s on ``ScriptedChatModel`` (a tool
that returns 1 MB; the two-pause demo agent); the server is nb_hitl's AG-UI
server, run in process.
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


def test_tool_call_result_of_a_call_denied_with_a_reason_is_what_the_model_read(tmp_path) -> None:
    from ag_ui.core import ResumeEntry

    from nb_hitl.agui.mapping import META_KEY
    from tests.agui_support import Factory

    factory = Factory(tmp_path)
    server = AguiServer(factory, token=False)
    thread = "deny-reason"

    async def go() -> list:
        first = await collect(server, AguiClient.make_input(thread, [user("go", "m1")]))
        entries = []
        for interrupt in first[-1].outcome.interrupts:
            kind = interrupt.metadata[META_KEY]["kind"]
            payload = (
                {"approved": False, "reason": "Keep that log, it is evidence."}
                if kind == "confirm"
                else {"answers": [{"question": "Which file should I archive?", "selected": ["notes.txt"]}]}
            )
            entries.append(ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=payload))
        return await collect(server, AguiClient.make_input(thread, [user("go", "m1")], entries))

    second = asyncio.run(asyncio.wait_for(go(), 60))
    agent = factory.agents[thread]
    delete_id = next(
        b.id for m in agent.state.context for b in m.get_content_blocks("tool_call") if b.name == "delete_file"
    )
    results = {e.tool_call_id: e.content for e in second if e.type.value == "TOOL_CALL_RESULT"}
    read = tool_results(agent.model.calls[-1], "delete_file")[-1].output
    read_text = read if isinstance(read, str) else "".join(getattr(b, "text", "") for b in read)
    assert "evidence" in read_text, read_text  # the model read the person's reason
    assert "evidence" in results[delete_id], (
        f"AG-UI told the client {results[delete_id]!r}; the model read {read_text!r}"
    )
