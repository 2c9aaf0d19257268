"""C41: an MCP server asks the notebook's model for a completion (MCP sampling), reviewed twice.

A real AgentScope ``Agent`` on the scripted model calls ``summarize_table``
of a real MCP server (tests/mcp/db_server.py, the SDK's ``MCPServer``, a
stdio subprocess, a ``Sample`` resolver) through ``AskingMCPClient``. The
request becomes a pause of kind ``sampling`` (stage ``request``); approved
or edited, the agent's own model is called (the scripted model's middle
turn, which says what it was sent); its answer becomes a second pause
(stage ``completion``); approved or edited, it goes back to the server,
which notes what it got. Both SDK protocol modes: ``auto`` (input-required
results) and ``legacy`` (a server-sent ``sampling/createMessage``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent

from nb_hitl import DecisionError, Session
from nb_hitl.mcp._shutdown import SHUTDOWN_REASON, WAITING, answer_pending
from nb_hitl.models import tool_call
from nb_hitl.pauses import Pause
from nb_hitl.store import AuditLog
from tests.mcp.mcp_support import (
    ASKED,
    MODES,
    SAW,
    SUMMARIZE,
    answers,
    card,
    db_client,
    http_client,
    http_server,
    mcp_agent,
    sampling_agent,
)
from tests.support import run_async, wait_until


@pytest.mark.parametrize("mode", MODES)
def test_c41_sampling_approved_twice_reaches_the_server(tmp_path: Path, mode: str) -> None:
    log, audit = tmp_path / "server.jsonl", tmp_path / "audit.jsonl"

    async def scenario() -> tuple[str, Agent, list[Pause]]:
        async with db_client(log, mode) as client:
            agent = sampling_agent(await client.list_tools())
            session = Session(agent, display=False, audit_log=str(audit))
            task = session.start("Summarize customers.")
            request = await card(session, "request")
            view = request.to_view()
            assert view["kind"] == "sampling" and view["tool_name"] == SUMMARIZE
            assert view["title"] == "The MCP server 'db' asks the notebook's model"
            assert view["tool_call_id"].endswith("~sampling-1")
            got = view["sampling"]
            assert got["messages"] == [{"role": "user", "text": ASKED}]
            assert got["system_prompt"] == "You summarize database tables."
            assert (got["model_hints"], got["priorities"]) == (["small"], {"speed": 0.8})
            assert (got["max_tokens"], got["temperature"], got["completion"]) == (50, 0.2, None)
            assert got["stop_sequences"] == ["END"]
            # the scripted model declares no generation parameters: the card says none is applied
            assert got["settings_note"] == (
                "Not applied: max tokens, temperature, stop sequences (ScriptedChatModel takes no such setting)."
            )
            assert agent.model.call_count == 1  # the model is not called before the person approves
            await session.act({"action": "approve", "tool_call_id": request.tool_call_id})
            completion = await card(session, "completion")
            assert completion.tool_call_id == request.tool_call_id + "~completion"
            assert completion.sampling["completion"] == SAW
            assert completion.sampling["model"] == "scripted"
            assert answers(log) == []  # nothing went back before the second approval
            await session.act({"action": "approve", "tool_call_id": completion.tool_call_id})
            final = (await asyncio.wait_for(task, 30)).get_text_content()
            return final, agent, [request, completion]

    final, agent, pauses = run_async(scenario())
    assert answers(log) == [{"tool": "summarize_table", "table": "customers", "text": SAW, "model": "scripted"}]
    assert final == f"{SUMMARIZE} success: Summary of customers: {SAW}"
    assert [p.status for p in pauses] == ["delivered", "delivered"]
    lines = [r for r in AuditLog(audit).records("answered") if r["kind"] == "sampling"]
    assert [(r["decision"], r["tool_call_id"]) for r in lines] == [("approve", p.tool_call_id) for p in pauses]


@pytest.mark.parametrize("mode", MODES)
def test_c41_sampling_edits_reach_the_model_and_the_server(tmp_path: Path, mode: str) -> None:
    log, audit = tmp_path / "server.jsonl", tmp_path / "audit.jsonl"
    mine = "Summarize the table customers, without names."

    async def scenario() -> str:
        async with db_client(log, mode) as client:
            agent = sampling_agent(await client.list_tools())
            session = Session(agent, display=False, audit_log=str(audit))
            task = session.start("Summarize customers.")
            request = await card(session, "request")
            for bad, field in (([], "messages"), ([mine, "x"], "messages"), (["  "], "messages")):
                with pytest.raises(DecisionError) as err:  # refused in the card, nothing called
                    session.act({"action": "edit", "tool_call_id": request.tool_call_id, "messages": bad})
                assert err.value.field == field and request.status == "open"
            with pytest.raises(DecisionError):  # another kind's action does not fit
                session.act({"action": "accept", "tool_call_id": request.tool_call_id})
            assert agent.model.call_count == 1
            await session.act({"action": "edit", "tool_call_id": request.tool_call_id, "messages": [mine]})
            completion = await card(session, "completion")
            assert completion.sampling["messages"] == [{"role": "user", "text": mine}]
            assert completion.sampling["completion"] == f"system: You summarize database tables. | user: {mine}"
            await session.act({"action": "edit", "tool_call_id": completion.tool_call_id, "output": "3 customers."})
            return (await asyncio.wait_for(task, 30)).get_text_content()

    assert run_async(scenario()) == f"{SUMMARIZE} success: Summary of customers: 3 customers."
    assert [e["text"] for e in answers(log)] == ["3 customers."]
    lines = [r for r in AuditLog(audit).records("answered") if r["kind"] == "sampling"]
    assert [(r["decision"], r.get("content")) for r in lines] == [
        ("edit", {"messages": [{"role": "user", "text": mine}]}),
        ("edit", {"text": "3 customers."}),
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stage", ["request", "completion"])
def test_c41_sampling_denied_is_an_honest_error_to_the_server_and_the_model(
    tmp_path: Path, mode: str, stage: str
) -> None:
    log = tmp_path / "server.jsonl"

    async def scenario() -> tuple[str, int]:
        async with db_client(log, mode) as client:
            agent = sampling_agent(await client.list_tools(), model_turns=1 if stage == "completion" else 0)
            session = Session(agent, display=False)
            task = session.start("Summarize customers.")
            if stage == "completion":
                await session.act({"action": "approve", "tool_call_id": (await card(session, "request")).tool_call_id})
            pause = await card(session, stage)
            await session.act({"action": "deny", "tool_call_id": pause.tool_call_id, "reason": "not today"})
            final = (await asyncio.wait_for(task, 30)).get_text_content()
            return final, agent.model.call_count

    final, calls = run_async(scenario())
    what = (
        "the notebook's model was not called"
        if stage == "request"
        else "the notebook's model answered, but its completion was withheld"
    )
    said = f"Sampling request refused: The person denied it; {what}. Their reason: not today"
    assert final.startswith(f"{SUMMARIZE} error: ") and said in final  # the model reads what happened
    assert calls == (2 if stage == "request" else 3)  # denied before: the model was never asked
    assert answers(log) == []  # the server got an error, never a completion


def test_c41_sampling_nobody_answers_before_the_deadline(tmp_path: Path) -> None:
    log, audit = tmp_path / "server.jsonl", tmp_path / "audit.jsonl"

    async def scenario() -> tuple[str, Pause]:
        async with db_client(log, "legacy") as client:
            agent = sampling_agent(await client.list_tools(), model_turns=0)
            session = Session(agent, display=False, audit_log=str(audit), deadline=0.5, on_deadline="deny")
            task = session.start("Summarize customers.")
            pause = await card(session, "request")
            return (await asyncio.wait_for(task, 30)).get_text_content(), pause

    final, pause = run_async(scenario())
    assert pause.decision == {"action": "timeout", "applied": "an error sent to the MCP server (no completion)"}
    assert "Nobody answered before the deadline; the notebook's model was not called." in final
    assert answers(log) == []
    lines = AuditLog(audit).records("answered")
    assert [(r["decision"], r["decided_by"]) for r in lines if r["kind"] == "sampling"] == [("timeout", "deadline")]


def test_c41_sampling_a_model_that_fails_is_said_on_the_delivered_card(tmp_path: Path) -> None:
    """The person approved the request and the notebook's model raised: the
    server gets an error, and the card the page was sent says why (its
    ``sampling.error`` and reason), delivered, with no button left."""
    log = tmp_path / "server.jsonl"

    def fails(msgs: list[Any]) -> Any:
        raise RuntimeError("the model is down")

    async def scenario() -> tuple[Pause, dict[str, Any]]:
        async with db_client(log, "legacy") as client:
            agent = mcp_agent(
                await client.list_tools(), [tool_call(SUMMARIZE, table="customers")], allow=SUMMARIZE, between=[fails]
            )
            session = Session(agent)  # displayed: what the page was sent is read below
            task = session.start("Summarize customers.")
            request = await card(session, "request")
            await session.act({"action": "approve", "tool_call_id": request.tool_call_id})
            await asyncio.wait_for(task, 30)
            sent = {v["tool_call_id"]: v for v in session.current.cards.views()}[request.tool_call_id]
            return request, sent

    pause, sent = run_async(scenario())
    assert pause.status == "delivered" and "RuntimeError: the model is down" in pause.sampling["error"]
    assert pause.reason.endswith("The MCP server was answered with an error (no completion).")
    assert (sent["status"], sent["reason"], sent["sampling"]["error"]) == (
        "delivered",
        pause.reason,
        pause.sampling["error"],
    )
    assert answers(log) == []


def test_c41_sampling_ends_with_an_error_when_the_session_closes(tmp_path: Path) -> None:
    """The reply stops while the request waits: the card says what the server was told; nothing hangs."""
    log = tmp_path / "server.jsonl"

    async def scenario() -> Pause:
        async with db_client(log, "legacy") as client:
            agent = sampling_agent(await client.list_tools(), model_turns=0)
            session = Session(agent)  # displayed: the card the page was sent says it too
            task = session.start("Summarize customers.")
            pause = await card(session, "request")
            session.close()
            try:  # a closed session's task is cancelled (or ends first)
                await asyncio.wait_for(task, 30)
            except asyncio.CancelledError:
                pass
            await wait_until(lambda: "answered with an error" in (pause.reason or ""), "the error told")
            sent = {v["tool_call_id"]: v for v in session.current.cards.views()}[pause.tool_call_id]
            assert (sent["status"], sent["reason"]) == ("expired", pause.reason)
            return pause

    pause = run_async(scenario())
    assert pause.status == "expired"
    assert pause.reason == "The session was closed. The MCP server was answered with an error (no completion)."
    assert answers(log) == []


@pytest.mark.parametrize("mode", MODES)
def test_c41_sampling_nobody_can_review_outside_a_session(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "server.jsonl"

    async def scenario() -> str:
        async with db_client(log, mode) as client:
            tool = await client.get_tool("summarize_table")
            try:
                chunk = await tool(table="customers")
            except Exception as exc:  # the SDK raises the error on the current protocol
                return f"raised: {exc}"
            return " ".join(getattr(b, "text", "") for b in chunk.content)

    said = run_async(scenario())
    assert "No person can answer this sampling request: the tool does not run for an agent" in said
    assert answers(log) == []


@pytest.mark.parametrize("mode", MODES)
def test_c41_sampling_over_streamable_http(tmp_path: Path, mode: str) -> None:
    """The same request from a server on 127.0.0.1 over streamable HTTP, approved twice."""
    log = tmp_path / "server.jsonl"

    async def scenario(url: str) -> str:
        async with http_client(url, mode) as client:
            agent = sampling_agent(await client.list_tools())
            session = Session(agent, display=False)
            task = session.start("Summarize customers.")
            await session.act({"action": "approve", "tool_call_id": (await card(session, "request")).tool_call_id})
            await session.act({"action": "approve", "tool_call_id": (await card(session, "completion")).tool_call_id})
            return (await asyncio.wait_for(task, 30)).get_text_content()

    with http_server(log) as url:
        final = run_async(scenario(url))
    assert final == f"{SUMMARIZE} success: Summary of customers: {SAW}"
    assert [e["text"] for e in answers(log)] == [SAW]


@pytest.mark.parametrize("mode", MODES)
def test_c41_a_kernel_shutting_down_answers_a_waiting_sampling_request_with_an_error(tmp_path: Path, mode: str) -> None:
    """What the kernel's ``do_shutdown`` runs first (``answer_pending``): the open request card
    expires saying why, the server gets an MCP error naming the shutdown (no completion), the
    model reads it in the tool's result; a request that comes later is refused at once, with no card."""
    log, audit = tmp_path / "server.jsonl", tmp_path / "audit.jsonl"

    async def scenario() -> tuple[str, Pause, int]:
        async with db_client(log, mode) as client:
            agent = sampling_agent(await client.list_tools(), model_turns=0)
            session = Session(agent, display=False, audit_log=str(audit))
            task = session.start("Summarize customers.")
            request = await card(session, "request")
            try:
                waiting = await answer_pending(timeout=10)
                final = (await asyncio.wait_for(task, 30)).get_text_content()
                later = Session(sampling_agent(await client.list_tools(), model_turns=0), display=False)
                again = (await asyncio.wait_for(later.run("Summarize customers."), 30)).get_text_content()
                assert again == final and later.current.pauses == {}  # refused at once: no card
            finally:
                WAITING.reason = None  # this process is not shutting down
            return final, request, waiting

    final, request, waiting = run_async(scenario())
    assert waiting == 1
    assert (
        final
        == f"{SUMMARIZE} error: Error occurred when calling MCP tool: Sampling request not answered: {SHUTDOWN_REASON}"
    )
    assert request.status == "expired"
    assert request.reason == f"{SHUTDOWN_REASON} The MCP server was answered with an error."
    assert answers(log) == []  # an error, never a completion
    [line] = [r for r in AuditLog(audit).records() if r.get("kind") == "sampling"]
    assert (line["decision"], line["reason"]) == ("expired", request.reason)
