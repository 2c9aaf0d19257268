"""The fake OpenAI server against AgentScope's real ``OpenAIChatModel`` (in-process).

An ``Agent`` on ``OpenAIChatModel`` pointed at ``FakeOpenAIServer`` parks on
a tool that needs confirmation (``RequireUserConfirmEvent``), streaming and
not; AskUser parks as an external execution; a wrong key is a 401; the wire
format is OpenAI's (checked with the ``openai`` client's own types).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import openai
import pytest
from agentscope.agent import Agent
from agentscope.credential import OpenAICredential
from agentscope.event import (
    ConfirmResult,
    RequireExternalExecutionEvent,
    RequireUserConfirmEvent,
    UserConfirmResultEvent,
)
from agentscope.message import UserMsg
from agentscope.model import OpenAIChatModel
from agentscope.tool import AskUser, FunctionTool, Toolkit

from nb_hitl.fakes import FakeOpenAIServer, RawToolCall, truncated, wire_tool_results
from nb_hitl.models import Turn, tool_call
from tests.support import run_async


def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path (str): the file's name.
    """
    return f"Deleted {path}."


def _agent(srv: FakeOpenAIServer, *, stream: bool, key: str | None = None) -> Agent:
    model = OpenAIChatModel(
        OpenAICredential(api_key=key or srv.api_key or "x", base_url=srv.base_url),
        "gpt-4o-mini",
        stream=stream,
        max_retries=0,
    )
    return Agent(
        name="t",
        system_prompt="You delete files when asked.",
        model=model,
        toolkit=Toolkit(tools=[FunctionTool(delete_file), AskUser()]),
    )


async def _events(agent: Agent, msg_or_event) -> list:
    return [ev async for ev in agent.reply_stream(msg_or_event)]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_openai_model_parks_on_confirm_then_runs(stream: bool) -> None:
    script = [
        Turn("I will delete notes.txt.", [tool_call("delete_file", path="notes.txt")]),
        lambda messages: Turn(f"Result: {wire_tool_results(messages)[-1]}"),
    ]
    with FakeOpenAIServer(script, on_exhausted="raise") as srv:
        agent = _agent(srv, stream=stream)

        async def go() -> tuple[list, list]:
            first = await _events(agent, UserMsg(name="user", content="delete notes.txt"))
            confirm = next(e for e in first if isinstance(e, RequireUserConfirmEvent))
            (call,) = confirm.tool_calls
            resumed = await _events(
                agent,
                UserConfirmResultEvent(
                    reply_id=confirm.reply_id, confirm_results=[ConfirmResult(confirmed=True, tool_call=call)]
                ),
            )
            return first, resumed

        first, resumed = run_async(go())
        confirm = next(e for e in first if isinstance(e, RequireUserConfirmEvent))
        assert confirm.tool_calls[0].name == "delete_file"
        assert json.loads(confirm.tool_calls[0].input) == {"path": "notes.txt"}
        assert len(srv.requests) == 2
        assert srv.requests[0]["stream"] is stream
        assert [t["function"]["name"] for t in srv.requests[0]["tools"]] == ["delete_file", "AskUser"]
        # the model was sent the tool's real result on the second request
        assert wire_tool_results(srv.requests[1]["messages"]) == ["Deleted notes.txt."]
        final = agent.state.context[-1]
        assert "Result: Deleted notes.txt." in final.get_text_content()


def test_openai_model_ask_user_parks_as_external_execution() -> None:
    question = {
        "question": "Which file?",
        "header": "Cleanup",
        "options": [{"label": "a.txt", "description": "A"}, {"label": "b.txt", "description": "B"}],
    }
    with FakeOpenAIServer([Turn("Which?", [tool_call("AskUser", questions=[question])])]) as srv:
        events = run_async(_events(_agent(srv, stream=True), UserMsg(name="user", content="tidy")))
    ext = next(e for e in events if isinstance(e, RequireExternalExecutionEvent))
    assert ext.tool_calls[0].name == "AskUser"
    assert json.loads(ext.tool_calls[0].input)["questions"] == [question]


def test_streamed_tool_call_follows_openai_chunking() -> None:
    """Name and id in the first chunk, arguments over several: read back by the openai client's own stream."""
    with FakeOpenAIServer([Turn("hi there", [tool_call("delete_file", id="call_1", path="notes.txt")])]) as srv:

        async def go() -> list:
            client = openai.AsyncClient(api_key=srv.api_key, base_url=srv.base_url)
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], stream=True
            )
            return [chunk async for chunk in stream]

        chunks = run_async(go())
    calls = [c.choices[0].delta.tool_calls for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert calls[0][0].id == "call_1" and calls[0][0].function.name == "delete_file"
    assert calls[0][0].function.arguments == ""
    pieces = [c[0].function.arguments for c in calls[1:]]
    assert len(pieces) >= 2 and all(c[0].function.name is None for c in calls[1:])
    assert json.loads("".join(pieces)) == {"path": "notes.txt"}
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "hi there"
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_wrong_key_is_a_401_authentication_error() -> None:
    with FakeOpenAIServer([Turn("never")], api_key="sk-right") as srv:
        agent = _agent(srv, stream=True, key="sk-wrong-key-123")
        with pytest.raises(openai.AuthenticationError) as info:
            run_async(_events(agent, UserMsg(name="user", content="hi")))
        assert info.value.status_code == 401
        assert "Incorrect API key" in str(info.value)
        assert srv.player.messages == []  # the script did not move


def test_raw_and_truncated_arguments_are_sent_verbatim() -> None:
    raw = RawToolCall(name="delete_file", arguments='{"path": ')
    cut = truncated(tool_call("delete_file", path="notes.txt"))
    assert cut.arguments == '{"path": "notes.t'[: len(cut.arguments)] and not cut.arguments.endswith("}")
    with FakeOpenAIServer([Turn("", [raw]), Turn("", [cut])]) as srv:
        r = httpx.post(
            srv.base_url + "/chat/completions",
            json={"model": "m", "messages": []},
            headers={"Authorization": f"Bearer {srv.api_key}"},
        )
        assert r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == '{"path": '
        r = httpx.post(
            srv.base_url + "/chat/completions",
            json={"model": "m", "messages": [], "stream": True},
            headers={"Authorization": f"Bearer {srv.api_key}"},
        )
        args = "".join(
            tc["function"].get("arguments", "")
            for line in r.text.splitlines()
            if line.startswith("data: {")
            for ch in json.loads(line[6:])["choices"]
            for tc in ch["delta"].get("tool_calls", [])
        )
        assert args == cut.arguments


def test_delay_holds_the_answer() -> None:
    with FakeOpenAIServer([Turn("slow")], delay=0.4) as srv:
        start = time.monotonic()
        r = httpx.post(
            srv.base_url + "/chat/completions",
            json={"model": "m", "messages": []},
            headers={"Authorization": f"Bearer {srv.api_key}"},
        )
        assert r.status_code == 200 and time.monotonic() - start >= 0.4


def test_exhausted_script_raise_is_a_400() -> None:
    with FakeOpenAIServer([], on_exhausted="raise") as srv:
        agent = _agent(srv, stream=False)
        with pytest.raises(openai.BadRequestError, match="script has 0 turns"):
            run_async(_events(agent, UserMsg(name="user", content="hi")))


def test_subprocess_entry_point_serves_a_named_script() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nb_hitl.fakes.openai",
            "--port",
            "0",
            "--script",
            "nb_hitl.fakes.examples:confirm_delete",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        r = httpx.post(
            base_url + "/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
            headers={"Authorization": "Bearer sk-fake"},
        )
        call = r.json()["choices"][0]["message"]["tool_calls"][0]["function"]
        assert call == {"name": "delete_file", "arguments": '{"path": "notes.txt"}'}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_server_refuses_non_loopback_host() -> None:
    with pytest.raises(ValueError, match="loopback"):
        FakeOpenAIServer([], host="0.0.0.0")


def test_servers_stop_and_free_their_port() -> None:
    srv = FakeOpenAIServer([Turn("x")]).start()
    url = srv.base_url
    srv.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/models", timeout=2)
