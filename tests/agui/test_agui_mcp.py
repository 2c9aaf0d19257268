"""C41 over AG-UI: an MCP server's pauses (sampling, elicitation) are interrupts, answered from the notebook's AG-UI client.

The served agent is a real AgentScope ``Agent`` whose tool ``summarize_table``
is on a real MCP server (tests/mcp/db_server.py, the SDK's ``MCPServer``, a
stdio subprocess per thread, connected on the AG-UI server's own loop). The
server asks the agent's model for a completion (MCP sampling); the request,
then the model's answer, become interrupts of kind ``sampling``. The client
is :class:`~nb_hitl.agui.RemoteSession` with its default view (the
``ReplyWidget`` whose sampling card is the local one); its answers (approve,
edit, deny) go through the server's one answer pipeline: the pause's status,
the audit line (road ``agui``), what reaches the MCP server and the model.
The settings of the request reach a real AgentScope ``OpenAIChatModel`` on a
fake OpenAI server (nb_hitl.fakes), and a key it refuses is said truthfully.
An elicitation (the server's question) takes the same road.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.credential import OpenAICredential
from agentscope.model import OpenAIChatModel

from nb_hitl.agui import AguiServer, RemoteRunError, RemoteSession, serve_in_background
from nb_hitl.fakes import FakeOpenAIServer
from nb_hitl.models import Turn, tool_call
from nb_hitl.store import AuditLog
from tests.mcp.mcp_support import ASKED, SAW, SUMMARIZE, answers, db_client, dba_agent, mcp_agent, sampling_agent
from tests.support import run_async

SYSTEM = "You summarize database tables."


class McpThreads:
    """The AG-UI server's agent factory: each thread gets its own ``db_server.py`` (stdio)
    behind an ``AskingMCPClient`` connected on the server's loop, and the agent the test
    set for it in :attr:`agents` (``thread_id -> (tools) -> Agent``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.agents: dict[str, Callable[[list[Any]], Agent]] = {}
        self.stacks: list[AsyncExitStack] = []
        self.loop: asyncio.AbstractEventLoop | None = None

    def log(self, thread_id: str) -> Path:
        """What the thread's MCP server wrote (tests.mcp.mcp_support.answers reads it)."""
        return self.root / f"{thread_id}.jsonl"

    async def __call__(self, thread_id: str) -> Agent:
        self.loop = asyncio.get_running_loop()
        stack = AsyncExitStack()
        self.stacks.append(stack)
        mode = "legacy" if thread_id.startswith("legacy") else "auto"
        client = await stack.enter_async_context(db_client(self.log(thread_id), mode))
        return self.agents[thread_id](await client.list_tools())

    def close(self) -> None:
        if self.loop is None:
            return
        for stack in self.stacks:  # closed on the loop that connected them
            asyncio.run_coroutine_threadsafe(stack.aclose(), self.loop).result(30)


@pytest.fixture(scope="module")
def mcp_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, McpThreads, Path, AguiServer]]:
    """``(handle, threads, audit log, server)``: one AG-UI server on 127.0.0.1 for the module."""
    root = tmp_path_factory.mktemp("agui-mcp")
    threads, audit = McpThreads(root), root / "audit.jsonl"
    server = AguiServer(threads, session_kwargs={"audit_log": str(audit)})
    handle = serve_in_background(server, announce=False)
    try:
        yield handle, threads, audit, server
    finally:
        threads.close()
        handle.stop()


def remote_session(handle: Any, thread_id: str) -> RemoteSession:
    return RemoteSession(handle.url, token=handle.token, thread_id=thread_id, display=False)


def drawn(remote: RemoteSession) -> list[dict[str, Any]]:
    """The pause views the remote widget was given (what its sampling card draws)."""
    view = remote.current.view
    return list(view.widget.pauses)


def sampling_lines(audit: Path, thread_id: str) -> list[dict[str, Any]]:
    return [
        r
        for r in AuditLog(audit).records("answered")
        if r["kind"] == "sampling" and r.get("origin", {}).get("thread_id") == thread_id
    ]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_c41_sampling_approved_twice_over_agui(mcp_served: Any, mode: str) -> None:
    handle, threads, audit, _ = mcp_served
    tid = f"{mode}-approve"
    threads.agents[tid] = sampling_agent

    async def scenario() -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
        remote = remote_session(handle, tid)
        task = remote.start("Summarize customers.")
        [request] = await remote.until_paused()
        assert request["kind"] == "sampling" and request["tool_name"] == SUMMARIZE
        s = request["sampling"]
        assert (s["stage"], s["messages"], s["system_prompt"]) == ("request", [{"role": "user", "text": ASKED}], SYSTEM)
        assert (s["max_tokens"], s["temperature"], s["stop_sequences"]) == (50, 0.2, ["END"])
        assert s["settings_note"].startswith("Not applied: max tokens, temperature, stop sequences")
        assert answers(threads.log(tid)) == []
        await remote.act({"action": "approve", "tool_call_id": request["tool_call_id"]})
        [completion] = await remote.until_paused()
        assert (completion["sampling"]["stage"], completion["sampling"]["completion"]) == ("completion", SAW)
        assert answers(threads.log(tid)) == []  # nothing went back before the second approval
        cards = drawn(remote)
        await remote.act({"action": "approve", "tool_call_id": completion["tool_call_id"]})
        return await asyncio.wait_for(task, 60), cards, drawn(remote)

    final, cards, after = run_async(scenario())
    assert final == f"{SUMMARIZE} success: Summary of customers: {SAW}"
    assert answers(threads.log(tid)) == [
        {"tool": "summarize_table", "table": "customers", "text": SAW, "model": "scripted"}
    ]
    # the remote widget drew the request (delivered) and the completion (open) with the sampling card's data
    assert [(c["kind"], c["status"], c["sampling"]["stage"]) for c in cards] == [
        ("sampling", "delivered", "request"),
        ("sampling", "open", "completion"),
    ]
    assert [c["decision"] for c in after] == [{"action": "approve"}, {"action": "approve"}]
    lines = sampling_lines(audit, tid)
    assert [(r["decision"], r["origin"]["road"]) for r in lines] == [("approve", "agui"), ("approve", "agui")]


def test_c41_sampling_edits_over_agui_reach_the_model_and_the_server(mcp_served: Any) -> None:
    handle, threads, audit, _ = mcp_served
    tid = "edit"
    threads.agents[tid] = sampling_agent
    mine = "Summarize the table customers, without names."

    async def scenario() -> str:
        remote = remote_session(handle, tid)
        task = remote.start("Summarize customers.")
        [request] = await remote.until_paused()
        with pytest.raises(Exception, match="messages"):  # checked in the client, nothing sent
            await remote.act({"action": "edit", "tool_call_id": request["tool_call_id"], "messages": "not a list"})
        await remote.act({"action": "edit", "tool_call_id": request["tool_call_id"], "messages": [mine]})
        [completion] = await remote.until_paused()
        assert completion["sampling"]["messages"] == [{"role": "user", "text": mine}]
        assert completion["sampling"]["completion"] == f"system: {SYSTEM} | user: {mine}"
        await remote.act({"action": "edit", "tool_call_id": completion["tool_call_id"], "output": "3 customers."})
        assert [c["decision"]["content"] for c in drawn(remote)] == [
            {"messages": [mine]},
            {"text": "3 customers."},
        ]
        return await asyncio.wait_for(task, 60)

    assert run_async(scenario()) == f"{SUMMARIZE} success: Summary of customers: 3 customers."
    assert [e["text"] for e in answers(threads.log(tid))] == ["3 customers."]
    assert [(r["decision"], r.get("content")) for r in sampling_lines(audit, tid)] == [
        ("edit", {"messages": [{"role": "user", "text": mine}]}),
        ("edit", {"text": "3 customers."}),
    ]


@pytest.mark.parametrize("stage", ["request", "completion"])
def test_c41_sampling_denied_over_agui_is_an_honest_error(mcp_served: Any, stage: str) -> None:
    handle, threads, audit, _ = mcp_served
    tid = f"deny-{stage}"
    threads.agents[tid] = lambda tools: sampling_agent(tools, model_turns=1 if stage == "completion" else 0)

    async def scenario() -> str:
        remote = remote_session(handle, tid)
        task = remote.start("Summarize customers.")
        [pause] = await remote.until_paused()
        if stage == "completion":
            await remote.act({"action": "approve", "tool_call_id": pause["tool_call_id"]})
            [pause] = await remote.until_paused()
        await remote.act({"action": "deny", "tool_call_id": pause["tool_call_id"], "reason": "not today"})
        return await asyncio.wait_for(task, 60)

    final = run_async(scenario())
    what = "was not called" if stage == "request" else "answered, but its completion was withheld"
    assert final.startswith(f"{SUMMARIZE} error: ")
    assert f"Sampling request refused: The person denied it; the notebook's model {what}." in final
    assert "Their reason: not today" in final
    assert answers(threads.log(tid)) == []  # the server got an error, never a completion
    assert [r["decision"] for r in sampling_lines(audit, tid)][-1] == "deny"


def fake_model_agent(srv: FakeOpenAIServer) -> Callable[[list[Any]], Agent]:
    """The agent on AgentScope's own OpenAIChatModel, talking to the fake server ``srv``."""

    def build(tools: list[Any]) -> Agent:
        credential = OpenAICredential(api_key=srv.api_key, base_url=srv.base_url)
        model = OpenAIChatModel(credential, srv.model, stream=False, max_retries=0)
        return dba_agent(model, tools, allow=SUMMARIZE)

    return build


def test_c41_the_requests_settings_reach_the_notebooks_model(mcp_served: Any) -> None:
    """maxTokens, temperature and stopSequences go with the sampling call only (the card says so);
    the agent's own calls keep the model's settings."""
    handle, threads, _, _ = mcp_served
    tid = "settings"
    script = [Turn("On it.", [tool_call(SUMMARIZE, table="customers")]), Turn("3 customers."), Turn("Done.")]
    with FakeOpenAIServer(script) as srv:
        threads.agents[tid] = fake_model_agent(srv)

        async def scenario() -> tuple[str, str]:
            remote = remote_session(handle, tid)
            task = remote.start("Summarize customers.")
            [request] = await remote.until_paused()
            note = request["sampling"]["settings_note"]
            await remote.act({"action": "approve", "tool_call_id": request["tool_call_id"]})
            [completion] = await remote.until_paused()
            assert completion["sampling"]["completion"] == "3 customers."
            await remote.act({"action": "approve", "tool_call_id": completion["tool_call_id"]})
            return await asyncio.wait_for(task, 60), note

        final, note = run_async(scenario())
        sent = srv.requests
    assert note == "Applied to the notebook's model (OpenAIChatModel): max tokens, temperature, stop sequences."
    assert final == "Done."
    agent_call, sampling_call, last_call = sent
    assert (sampling_call["max_completion_tokens"], sampling_call["temperature"], sampling_call["stop"]) == (
        50,
        0.2,
        ["END"],
    )
    assert [m["content"][0]["text"] for m in sampling_call["messages"]] == [SYSTEM, ASKED]
    for own in (agent_call, last_call):  # the agent's model keeps its own settings
        assert not {"max_completion_tokens", "temperature", "stop"} & set(own)
    assert answers(threads.log(tid))[-1]["text"] == "3 customers."


def test_c41_a_model_that_fails_is_said_on_the_card_and_to_the_server(mcp_served: Any) -> None:
    """The fake server stops taking the key once the request is shown: the sampling call fails
    with a 401. The request's card says what failed and what to set, the MCP server gets an
    error saying the same (the model reads it in the tool's result), and nothing hangs: the
    agent's own next call fails on the same key and the run ends with that error."""
    handle, threads, _, server = mcp_served
    tid = "model-fails"
    script = [Turn("On it.", [tool_call(SUMMARIZE, table="customers")]), Turn("never"), Turn("never")]
    with FakeOpenAIServer(script) as srv:
        threads.agents[tid] = fake_model_agent(srv)

        async def scenario() -> tuple[RemoteRunError, dict[str, Any]]:
            remote = remote_session(handle, tid)
            task = remote.start("Summarize customers.")
            [request] = await remote.until_paused()
            srv.api_key = "sk-rotated"  # the key the model was given is no longer accepted
            await remote.act({"action": "approve", "tool_call_id": request["tool_call_id"]})
            with pytest.raises(RemoteRunError) as err:
                await asyncio.wait_for(task, 60)
            local = server.threads[tid].session.current.pauses[request["tool_call_id"]]  # the notebook's card
            return err.value, local.sampling

        err, local = run_async(scenario())
        sent = srv.requests
    assert "401" in str(err) and "OPENAI_API_KEY" in str(err)  # the reply's own error says what to set
    failed = "The notebook's model (fake-model) failed: AuthenticationError:"
    hint = "The model server refused the API key (401)"
    tool_result = next(m["content"] for m in sent[-1]["messages"] if m["role"] == "tool")
    assert failed in tool_result and hint in tool_result  # what the MCP server was told, as the model read it
    assert "The MCP server was answered with an error (no completion)." in tool_result
    assert local["error"].startswith(failed) and hint in local["error"]
    assert answers(threads.log(tid)) == []


def test_c41_an_elicitation_over_agui_is_answered_while_the_tool_runs(mcp_served: Any) -> None:
    """The run ends with the question's interrupt while the tool call still runs; the resume's
    answer reaches the server, and the model reads the tool's result."""
    handle, threads, audit, _ = mcp_served
    tid = "elicit"
    delete = "mcp__db__delete_rows"
    threads.agents[tid] = lambda tools: mcp_agent(tools, [tool_call(delete, table="customers")], allow=delete)

    async def scenario() -> str:
        remote = remote_session(handle, tid)
        task = remote.start("Clear the customers table.")
        [question] = await remote.until_paused()
        assert (question["kind"], question["message"]) == ("elicitation", "Delete all rows of customers?")
        # the card goes in the running call's transcript entry, as on the local road
        assert question["tool_call_id"] == f"{question['parent_tool_call_id']}~elicitation-1"
        await remote.act({"action": "accept", "tool_call_id": question["tool_call_id"], "content": {"confirm": True}})
        return await asyncio.wait_for(task, 60)

    assert run_async(scenario()) == f"{delete} success: Deleted all rows of customers."
    assert answers(threads.log(tid)) == [
        {"tool": "delete_rows", "table": "customers", "action": "accept", "data": {"confirm": True}}
    ]
    lines = [r for r in AuditLog(audit).records("answered") if r.get("origin", {}).get("thread_id") == tid]
    assert [(r["kind"], r["decision"], r["origin"]["road"]) for r in lines] == [("elicitation", "accept", "agui")]
