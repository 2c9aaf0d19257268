"""C41: an MCP server asks the person while its tool runs (MCP elicitation), in-process.

A real AgentScope ``Agent`` on the scripted model calls a tool of a real MCP
server (tests/mcp/db_server.py: the MCP SDK's ``MCPServer``, a stdio
subprocess) through nb_hitl's ``AskingMCPClient`` (AgentScope's
``MCPClient`` with the SDK's elicitation callback). The server asks "Delete
all rows of customers?" with a boolean field; the question becomes a pause
of kind ``elicitation``; the answer goes through ``Session.act`` (the same
front door as a click). Both protocol modes of the SDK: ``auto`` (the
current protocol: an input-required result, the SDK's input-required
driver) and ``legacy`` (a server-sent ``elicitation/create`` request).

Checked: what reaches the server (it writes what it got to a file), that the
tool completes, what the model reads next, a wrong value refused in the card
with nothing sent, two questions in one call, and the honest ``cancel`` when
nobody answers (deadline, interrupt, closed session).
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from nb_hitl import DecisionError, PauseNotLiveError, Session
from nb_hitl.models import result_text, tool_call, tool_results
from nb_hitl.pauses import Pause
from nb_hitl.store import AuditLog
from tests.mcp.mcp_support import MODES, answers, db_client, http_client, http_server, mcp_agent, question, server_pid
from tests.support import InputRecorder, run_async, wait_until

DELETE = "mcp__db__delete_rows"


async def approve_the_call(session: Session) -> None:
    """AgentScope's MCPTool asks before a tool that is not read-only runs: approve it."""
    confirm = await wait_until(lambda: session.pending and session.pending[0], "the confirmation")
    assert confirm.kind == "confirm" and confirm.tool_name == DELETE
    await session.act({"action": "approve", "tool_call_id": confirm.tool_call_id})


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "answer, server_saw, model_reads",
    [
        (
            {"action": "accept", "content": {"confirm": True}},
            {"action": "accept", "data": {"confirm": True}},
            "Deleted all rows of customers.",
        ),
        (
            {"action": "accept", "content": {"confirm": False}},
            {"action": "accept", "data": {"confirm": False}},
            "Kept the rows of customers: the user said no.",
        ),
        ({"action": "decline"}, {"action": "decline"}, "Nothing deleted: the user chose decline."),
        ({"action": "cancel"}, {"action": "cancel"}, "Nothing deleted: the user chose cancel."),
    ],
)
def test_c41_answers_reach_the_server_and_the_model_reads_the_tool_result(
    tmp_path: Path, mode: str, answer: dict[str, Any], server_saw: dict[str, Any], model_reads: str
) -> None:
    log = tmp_path / "server.jsonl"
    audit = tmp_path / "audit.jsonl"
    recorder = InputRecorder()

    async def scenario() -> tuple[str, Pause, Any]:
        async with db_client(log, mode) as client:
            tools = await client.list_tools()
            agent = mcp_agent(tools, [tool_call(DELETE, table="customers")], recorder=recorder)
            session = Session(agent, display=False, audit_log=str(audit))
            task = session.start("Clear the customers table.")
            await approve_the_call(session)
            pause = await question(session)
            view = pause.to_view()
            assert view["kind"] == "elicitation" and view["tool_name"] == DELETE
            assert view["message"] == "Delete all rows of customers?"
            assert view["title"] == "The MCP server 'db' asks"
            assert view["response_schema"]["properties"]["confirm"]["type"] == "boolean"
            assert view["form_error"] is None
            assert answers(log) == []  # nothing reached the server yet
            out = await session.act({**answer, "tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id})
            assert out["status"] == "decided"
            final = await asyncio.wait_for(task, 30)
            return final.get_text_content(), pause, agent

    final, pause, agent = run_async(scenario())
    assert answers(log) == [{"tool": "delete_rows", "table": "customers", **server_saw}]
    # the tool completed, and the model's next call read what the server made of the answer
    assert final == f"{DELETE} success: {model_reads}"
    assert result_text(tool_results(agent.model.calls[-1], DELETE)[-1]) == model_reads
    assert recorder.kinds() == ["Msg", "UserConfirmResultEvent"]  # the agent was never resumed for the question
    assert pause.status == "delivered"
    assert pause.decision["action"] == answer["action"]
    lines = AuditLog(audit).records("answered")
    asked = [r for r in lines if r["kind"] == "elicitation"]
    assert len(asked) == 1 and asked[0]["decision"] == answer["action"]
    assert asked[0].get("content") == answer.get("content")


def test_c41_the_question_is_placed_in_its_tool_call_not_after_its_result(tmp_path: Path) -> None:
    """The card is drawn in the transcript entry of the call the server asked during (its
    ``parent_tool_call_id``), which comes before that call's result and the model's next
    call: live, and in the view the page draws after the reply ended (or a reload)."""
    log = tmp_path / "server.jsonl"

    async def scenario() -> tuple[dict[str, Any], Any]:
        async with db_client(log) as client:
            agent = mcp_agent(await client.list_tools(), [tool_call(DELETE, table="customers")])
            session = Session(agent, display=False)
            task = session.start("Clear the customers table.")
            await approve_the_call(session)
            pause = await question(session)
            run = session.current
            call_id = pause.to_view()["parent_tool_call_id"]
            assert call_id == next(iter(session.current.pauses.values())).tool_call_id  # the confirmed call
            assert run.transcript.by_id(f"call:{call_id}") is not None
            result = run.transcript.by_id(f"result:{call_id}")
            assert result is None or result["state"] == "running"  # asked while the call runs
            await session.act({"action": "decline", "tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id})
            await asyncio.wait_for(task, 30)
            return pause.to_view(), run.transcript

    view, transcript = run_async(scenario())
    call_id = view["parent_tool_call_id"]
    ids = [e["id"] for e in transcript]
    # the slot the page draws the card in is the call's entry: before its result and the next model call
    at = ids.index(f"call:{call_id}")
    assert at < ids.index(f"result:{call_id}") < ids.index("step:2")
    assert view["status"] == "delivered" and view["tool_call_id"] == f"{call_id}~elicitation-1"


@pytest.mark.parametrize("mode", MODES)
def test_c41_a_wrong_value_is_refused_in_the_card_and_nothing_is_sent(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "server.jsonl"

    async def scenario() -> str:
        async with db_client(log, mode) as client:
            tools = await client.list_tools()
            agent = mcp_agent(tools, [tool_call(DELETE, table="customers")], allow=DELETE)
            session = Session(agent, display=False)
            task = session.start("Clear the customers table.")
            pause = await question(session)
            for content, field in (({"confirm": "yes"}, "value.confirm"), ({}, "value.confirm")):
                with pytest.raises(DecisionError) as err:
                    session.act({"action": "accept", "tool_call_id": pause.tool_call_id, "content": content})
                assert err.value.field == field
                assert pause.status == "open"
            with pytest.raises(DecisionError):  # another kind's action does not fit (C06)
                session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
            assert answers(log) == []  # nothing was sent
            await session.act({"action": "accept", "tool_call_id": pause.tool_call_id, "content": {"confirm": True}})
            with pytest.raises(Exception) as again:  # exactly once
                session.act({"action": "decline", "tool_call_id": pause.tool_call_id})
            assert type(again.value).__name__ in ("AlreadyDecidedError", "PauseNotLiveError")
            return (await asyncio.wait_for(task, 30)).get_text_content()

    assert run_async(scenario()) == f"{DELETE} success: Deleted all rows of customers."
    assert [e["action"] for e in answers(log)] == ["accept"]


@pytest.mark.parametrize("mode", MODES)
def test_c41_a_server_that_asks_twice_in_one_call(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "server.jsonl"
    rename = "mcp__db__rename_table"

    async def scenario() -> tuple[str, list[str]]:
        async with db_client(log, mode) as client:
            tools = await client.list_tools()
            agent = mcp_agent(tools, [tool_call(rename, table="customers")], allow=rename)
            session = Session(agent, display=False)
            task = session.start("Rename customers.")
            first = await question(session, 1)
            assert first.message == "Rename customers?"
            await session.act({"action": "accept", "tool_call_id": first.tool_call_id, "content": {"confirm": True}})
            second = await question(session, 2)
            assert second.message == "New name for customers?"
            assert set(second.response_schema["properties"]) == {"name"}
            with pytest.raises(DecisionError) as err:  # the server's own limits (maxLength) are checked
                session.act({"action": "accept", "tool_call_id": second.tool_call_id, "content": {"name": "x" * 41}})
            assert err.value.field == "value.name"
            await session.act({"action": "accept", "tool_call_id": second.tool_call_id, "content": {"name": "clients"}})
            final = (await asyncio.wait_for(task, 30)).get_text_content()
            return final, [p.status for p in session.current.pauses.values()]

    final, statuses = run_async(scenario())
    assert final == f"{rename} success: Renamed customers to clients."
    assert statuses == ["delivered", "delivered"]
    got = answers(log)
    # on the current protocol the SDK re-runs a resolver on every round (its answer rides request_state),
    # so the server may note the first answer more than once; it got each answer, and only those
    assert {(e["step"], e["action"]) for e in got} == {("first", "accept"), ("second", "accept")}
    assert got[-1] == {"tool": "rename_table", "step": "second", "action": "accept", "data": {"name": "clients"}}


@pytest.mark.parametrize("mode", MODES)
def test_c41_nobody_answers_before_the_deadline_the_server_reads_cancel(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "server.jsonl"
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> str:
        async with db_client(log, mode) as client:
            tools = await client.list_tools()
            agent = mcp_agent(tools, [tool_call(DELETE, table="customers")], allow=DELETE)
            session = Session(agent, display=False, audit_log=str(audit), deadline=0.5, on_deadline="deny")
            task = session.start("Clear the customers table.")
            pause = await question(session)
            final = (await asyncio.wait_for(task, 30)).get_text_content()
            assert pause.decision == {"action": "timeout", "applied": "cancel sent to the MCP server"}
            with pytest.raises(PauseNotLiveError, match="deadline"):
                session.act({"action": "accept", "tool_call_id": pause.tool_call_id, "content": {"confirm": True}})
            return final

    assert run_async(scenario()) == f"{DELETE} success: Nothing deleted: the user chose cancel."
    assert [e["action"] for e in answers(log)] == ["cancel"]
    lines = AuditLog(audit).records("answered")
    assert [(r["decision"], r["decided_by"]) for r in lines if r["kind"] == "elicitation"] == [("timeout", "deadline")]


@pytest.mark.parametrize("how", ["interrupt", "close"])
def test_c41_an_interrupted_or_closed_session_answers_cancel_and_never_hangs(tmp_path: Path, how: str) -> None:
    """The reply ends while the server waits (legacy: its request is open): the
    question expires saying why and what the server was told; the MCP client
    still works afterwards."""
    log = tmp_path / "server.jsonl"

    async def scenario() -> tuple[Pause, str]:
        async with db_client(log, "legacy") as client:
            tools = await client.list_tools()
            agent = mcp_agent(tools, [tool_call(DELETE, table="customers")], allow=DELETE)
            session = Session(agent)  # displayed: the card the page was sent says it too
            task = session.start("Clear the customers table.")
            pause = await question(session)
            if how == "interrupt":
                await session.interrupt("Stopped by the user.")
            else:
                session.close()
            try:  # an interrupted reply ends with its message, a closed session's task is cancelled
                await asyncio.wait_for(task, 30)
            except asyncio.CancelledError:
                assert how == "close"
            assert session.current.status == ("interrupted" if how == "interrupt" else "expired")
            await wait_until(lambda: "answered 'cancel'" in (pause.reason or ""), "the cancel told")
            sent = {v["tool_call_id"]: v for v in session.current.cards.views()}[pause.tool_call_id]
            assert (sent["status"], sent["reason"]) == ("expired", pause.reason)
            # the connection is still usable: a read-only tool answers
            count = await client.get_tool("count_rows")
            chunk = await count(table="customers")
            return pause, chunk.content[0].text

    pause, counted = run_async(scenario())
    assert pause.status == "expired"
    assert ("Stopped by the user." if how == "interrupt" else "The session was closed.") in pause.reason
    assert pause.reason.endswith("The MCP server was answered 'cancel'.")
    assert counted == "customers has 3 rows."
    assert all(e["action"] == "cancel" for e in answers(log))  # never an invented accept or decline


@pytest.mark.parametrize("mode", MODES)
def test_c41_a_server_that_dies_while_asking_expires_the_card_with_a_reason(tmp_path: Path, mode: str) -> None:
    """Legacy: the server's request dies with it; current protocol: the server holds no request,
    the client's watcher sees the connection close. Either way the card says why, and the tool
    call ends with AgentScope's error (the model reads that the call failed)."""
    log = tmp_path / "server.jsonl"

    async def scenario() -> tuple[Pause, str]:
        async with db_client(log, mode, watch_interval=0.2) as client:
            tools = await client.list_tools()
            agent = mcp_agent(tools, [tool_call(DELETE, table="customers")], allow=DELETE)
            session = Session(agent, display=False)
            task = session.start("Clear the customers table.")
            pause = await question(session)
            os.kill(server_pid(log), signal.SIGKILL)
            await wait_until(lambda: pause.status == "expired", "the card expired", timeout=30)
            with pytest.raises(PauseNotLiveError):
                session.act({"action": "accept", "tool_call_id": pause.tool_call_id, "content": {"confirm": True}})
            return pause, (await asyncio.wait_for(task, 30)).get_text_content()

    pause, final = run_async(scenario())
    assert pause.reason.startswith("The MCP server 'db' ")
    assert "stopped" in pause.reason and pause.reason.endswith("nothing was sent.")
    assert final.startswith(f"{DELETE} error: ") and "Connection closed" in final
    assert answers(log) == []


@pytest.mark.parametrize("mode", MODES)
def test_c41_over_streamable_http(tmp_path: Path, mode: str) -> None:
    """The same question from a server on 127.0.0.1 over streamable HTTP."""
    log = tmp_path / "server.jsonl"

    async def scenario(url: str) -> str:
        async with http_client(url, mode) as client:
            tools = await client.list_tools()
            agent = mcp_agent(tools, [tool_call(DELETE, table="customers")], allow=DELETE)
            session = Session(agent, display=False)
            task = session.start("Clear the customers table.")
            pause = await question(session)
            await session.act({"action": "decline", "tool_call_id": pause.tool_call_id})
            return (await asyncio.wait_for(task, 30)).get_text_content()

    with http_server(log) as url:
        final = run_async(scenario(url))
    assert final == f"{DELETE} success: Nothing deleted: the user chose decline."
    assert answers(log) == [{"tool": "delete_rows", "table": "customers", "action": "decline"}]


def test_c41_c17_a_deadline_that_interrupts_ends_the_reply_and_tells_the_model_and_the_person(tmp_path: Path) -> None:
    """``on_deadline="interrupt"`` while a tool runs: the question expires, the reply is interrupted
    (not left to finish as if nothing happened), and the server was answered cancel. As for a
    pause's deadline (C17), the model reads for the running call that nobody answered before the
    deadline and that it may have taken effect (never "interrupted by the user"); the person's
    transcript shows the same text and the reply's final text says why it stopped. The audit log
    has one answer line for the question: the deadline's."""
    log = tmp_path / "server.jsonl"
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> tuple[Pause, Session, str]:
        async with db_client(log, "legacy") as client:
            tools = await client.list_tools()
            agent = mcp_agent(tools, [tool_call(DELETE, table="customers")], allow=DELETE)
            session = Session(agent, display=False, audit_log=str(audit), deadline=0.5, on_deadline="interrupt")
            task = session.start("Clear the customers table.")
            pause = await question(session)
            final = (await asyncio.wait_for(task, 30)).get_text_content()
            await wait_until(lambda: "answered 'cancel'" in (pause.reason or ""), "the cancel told")
            return pause, session, final

    pause, session, final = run_async(scenario())
    assert session.current.status == "interrupted"
    assert pause.status == "expired" and pause.reason.startswith("The deadline passed; the reply was interrupted.")
    assert all(e["action"] == "cancel" for e in answers(log))
    (result,) = tool_results(session.agent.state.context, DELETE)
    told = result_text(result)
    assert "was running when the reply was stopped, so it may or may not have taken effect" in told
    assert "Nobody answered the MCP question about" in told and "before the deadline" in told
    assert "interrupted by the user" not in told
    (shown,) = [e for e in session.current.transcript.view() if e["kind"] == "tool_result"]
    assert shown["text"] == told and shown["state"] == "interrupted"
    assert final == f"Nobody answered the MCP question about {DELETE} before the deadline, so the reply was stopped."
    lines = [r for r in AuditLog(audit).records("answered") if r["tool_call_id"] == pause.tool_call_id]
    assert [(r["decision"], r["applied"]) for r in lines] == [("timeout", "reply interrupted")], lines


@pytest.mark.parametrize("mode", MODES)
def test_c41_a_question_nobody_can_answer_gets_an_error_not_an_invented_answer(tmp_path: Path, mode: str) -> None:
    """The MCP tool called directly, outside any Session: no card, no person; the server gets an
    MCP error (never accept, decline or cancel), and the call says so."""
    log = tmp_path / "server.jsonl"

    async def scenario() -> str:
        async with db_client(log, mode) as client:
            tool = await client.get_tool("delete_rows")
            try:
                chunk = await tool(table="customers")
            except Exception as exc:  # the SDK raises the error on the current protocol
                return f"raised: {exc}"
            return " ".join(getattr(b, "text", "") for b in chunk.content)

    said = run_async(scenario())
    assert "No person can answer this question: the tool does not run for an agent an nb_hitl Session drives" in said
    assert answers(log) == []
