"""Our AG-UI client against a server this project did not write.

ag-ui-langgraph serves a small LangGraph graph (agent -> ToolNode -> agent,
``InMemorySaver``) whose ``delete_file`` tool calls ``interrupt()`` with its
tool call id and a ``response_schema``; the chat model is an offline fake
that streams its tool call in two chunks (name, then arguments), as
``../shared/notes/agui.md`` explains. ``enable_legacy_on_interrupt_event=False``
makes the server pause with the AG-UI 1.0 interrupt outcome alone.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Annotated, Any

import pytest
from ag_ui.core import ResumeEntry
from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt

from nb_hitl.agui import AguiClient, RemoteSession, ResumeError, serve_in_background
from nb_hitl.errors import DecisionError

SCHEMA = {
    "type": "object",
    "title": "Delete the file?",
    "properties": {
        "approved": {"type": "boolean", "title": "Approve"},
        "note": {"type": "string", "maxLength": 200},
    },
    "required": ["approved"],
    "additionalProperties": False,
}

RECEIVED: list[Any] = []  # what the tool got back from interrupt(), in order


@tool
def delete_file(path: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
    """Delete a file (asks a person first)."""
    answer = interrupt(
        {"reason": "tool_call", "message": f"Delete {path}?", "tool_call_id": tool_call_id, "response_schema": SCHEMA}
    )
    RECEIVED.append(answer)
    approved = isinstance(answer, dict) and answer.get("approved") is True
    return f"deleted {path}" if approved else f"kept {path}"


class ScriptedLangChainModel(BaseChatModel):
    """Offline: first a ``delete_file`` call, then a sentence about its result."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _turn(self, messages: list[Any]) -> AIMessage:
        last = messages[-1]
        mid = f"ai-{uuid.uuid4().hex[:8]}"
        if isinstance(last, ToolMessage):
            return AIMessage(content=f"Result: {last.content}", id=mid)
        call = {"name": "delete_file", "args": {"path": "a.txt"}, "id": f"call_{uuid.uuid4().hex[:8]}"}
        return AIMessage(content="", id=mid, tool_calls=[call])

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._turn(messages))])

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        message = self._turn(messages)
        if message.tool_calls:
            call = message.tool_calls[0]
            # the name first, then the arguments: the server streams TOOL_CALL_ARGS from the second chunk
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content="",
                    id=message.id,
                    tool_call_chunks=[{"name": call["name"], "args": "", "id": call["id"], "index": 0}],
                )
            )
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content="",
                    id=message.id,
                    tool_call_chunks=[{"name": None, "args": json.dumps(call["args"]), "id": None, "index": 0}],
                )
            )
            return
        for word in message.content.split(" "):
            yield ChatGenerationChunk(message=AIMessageChunk(content=word + " ", id=message.id))


def build_graph():
    model = ScriptedLangChainModel()

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([delete_file]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=InMemorySaver())


@pytest.fixture(scope="module")
def langgraph_server():
    graph = build_graph()
    app = FastAPI()
    add_langgraph_fastapi_endpoint(
        app, LangGraphAgent(name="lg", graph=graph, enable_legacy_on_interrupt_event=False), "/agent"
    )
    handle = serve_in_background(app)
    yield handle.url.rstrip("/") + "/agent", graph
    handle.stop()


def paused_on_interrupt(graph, thread_id: str) -> bool:
    state = graph.get_state({"configurable": {"thread_id": thread_id}})
    return any(task.interrupts for task in state.tasks)


def test_client_answers_a_langgraph_interrupt_through_the_form(langgraph_server):
    url, graph = langgraph_server
    RECEIVED.clear()

    async def go():
        remote = RemoteSession(url, thread_id="lg-form", display=False, agent_name="langgraph")
        task = remote.start("Please delete a.txt")
        (view,) = await remote.until_paused()
        # not one of ours: a form generated from the interrupt's response_schema
        assert view["kind"] == "form" and view["response_schema"] == SCHEMA
        assert view["message"] == "Delete a.txt?" and view["tool_name"] == "delete_file"
        assert view["input_text"] == '{\n  "path": "a.txt"\n}'  # one key a line, as a local card
        assert view["tool_call_id"] == remote.current.interrupts[view["interrupt_id"]].tool_call_id
        widget = remote.current.widget
        assert widget.pauses[0]["kind"] == "form" and widget.status == "paused"
        posts = remote.client.posts
        # checked with jsonschema before anything is sent
        for bad, field in (({"approved": "yes"}, "approved"), ({"approved": True, "extra": 1}, None), ({}, None)):
            with pytest.raises(DecisionError) as err:
                await remote.act({"action": "submit", "tool_call_id": view["tool_call_id"], "value": bad})
            if field:
                assert err.value.field == field
        assert remote.client.posts == posts and paused_on_interrupt(graph, "lg-form")
        out = await widget._handler(
            {"action": "submit", "tool_call_id": view["tool_call_id"], "value": {"approved": True, "note": "ok"}}
        )
        assert out["sent"] is True
        final = await task
        turn = remote.current
        assert [r.outcome for r in turn.runs] == ["interrupt", "success"]
        assert [e.interrupt_id for e in turn.runs[1].resume] == [view["interrupt_id"]]
        assert remote.client.posts == posts + 1
        # the re-announced tool call did not duplicate its arguments in the transcript
        call = next(e for e in widget.transcript if e["kind"] == "tool_call")
        assert json.loads(call["text"]) == {"path": "a.txt"}
        return final

    assert asyncio.run(go()).strip() == "Result: deleted a.txt"
    assert RECEIVED == [{"approved": True, "note": "ok"}]
    assert not paused_on_interrupt(graph, "lg-form")


def test_client_refuses_a_wrong_interrupt_id_that_the_server_would_accept(langgraph_server):
    url, graph = langgraph_server
    RECEIVED.clear()

    async def go():
        remote = RemoteSession(url, thread_id="lg-wrong", display=False)
        task = remote.start("Please delete a.txt")
        (view,) = await remote.until_paused()
        wrong = ResumeEntry(interrupt_id="not-" + view["interrupt_id"], status="resolved", payload={"approved": True})
        posts = remote.client.posts
        with pytest.raises(ResumeError) as refused:
            remote.resume([wrong])
        assert refused.value.code == "unknown_interrupt" and refused.value.interrupt_ids == [wrong.interrupt_id]
        with pytest.raises(ResumeError) as twice:
            right = ResumeEntry(interrupt_id=view["interrupt_id"], status="resolved", payload={"approved": True})
            remote.resume([right, right])
        assert twice.value.code == "duplicate_interrupt"
        assert remote.client.posts == posts  # nothing was sent
        assert paused_on_interrupt(graph, "lg-wrong") and RECEIVED == []

        # The same wrong entry sent raw (no client-side check): ag-ui-langgraph
        # does not check interrupt ids, resumes the graph and finishes the run.
        raw = AguiClient(url)
        events = [e async for e in raw.run("lg-wrong", remote.messages, [wrong])]
        task.cancel()
        return events

    events = asyncio.run(go())
    types = [e.type.value for e in events]
    assert "RUN_ERROR" not in types and types[-1] == "RUN_FINISHED"
    assert events[-1].outcome is None or events[-1].outcome.type == "success"
    assert RECEIVED == [{"approved": True}]  # the wrong id reached the tool as an answer
    assert not paused_on_interrupt(graph, "lg-wrong")
