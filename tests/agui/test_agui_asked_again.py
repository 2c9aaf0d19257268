"""On the AG-UI road: an approved call whose input a middleware changes before it runs is asked
again as a new interrupt (a new tool call id, so a new interrupt id), and what that second
answer approves is what runs. In process (``AguiServer.run``), real agent and tools."""

from __future__ import annotations

import asyncio
from typing import Any

from ag_ui.core import ResumeEntry

from nb_hitl.agui import AguiServer
from nb_hitl.agui.client import AguiClient
from nb_hitl.agui.mapping import META_KEY
from nb_hitl.models import result_text, tool_results
from tests.agui_support import collect, user
from tests.session.test_promise_confirm import RewriteAfterApproval, note_agent


def outcome_interrupts(events: list[Any]) -> list[Any]:
    last = events[-1]
    assert last.type.value == "RUN_FINISHED"
    return list(last.outcome.interrupts) if last.outcome is not None and last.outcome.type == "interrupt" else []


def test_an_approved_call_changed_by_a_middleware_is_a_new_interrupt_on_the_agui_road() -> None:
    received: list[dict[str, Any]] = []
    agents: list[Any] = []

    def factory(thread_id: str) -> Any:
        agent = note_agent(
            '{"path": "notes.txt"}', received, middlewares=[RewriteAfterApproval('{"path": "precious.txt"}', True)]
        )
        agents.append(agent)
        return agent

    server = AguiServer(factory, interrupt_ttl=600)
    tid = "asked-again"
    approve = {"approved": True}

    async def scenario() -> list[Any]:
        first = await collect(server, AguiClient.make_input(tid, [user("note", "u1")]))
        (asked,) = outcome_interrupts(first)
        assert asked.tool_call_id == "call_1"
        resume = [ResumeEntry(interrupt_id=asked.id, status="resolved", payload=approve)]
        second = await collect(server, AguiClient.make_input(tid, [user("note", "u1")], resume))
        (again,) = outcome_interrupts(second)
        assert received == []  # nothing ran
        assert again.id != asked.id and again.tool_call_id == "call_1_r2"
        meta = again.metadata[META_KEY]
        assert meta["kind"] == "confirm" and '"precious.txt"' in str(meta)
        resume = [ResumeEntry(interrupt_id=again.id, status="resolved", payload=approve)]
        return await collect(server, AguiClient.make_input(tid, [user("note", "u1")], resume))

    third = asyncio.run(scenario())
    assert outcome_interrupts(third) == []
    assert received == [{"path": "precious.txt", "count": 1}]
    (result,) = tool_results(agents[0].model.calls[-1], "write_note")
    assert (result.id, result_text(result)) == ("call_1_r2", "wrote precious.txt x1")
