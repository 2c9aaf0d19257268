"""The DashScope and Ollama fakes on their own: wire format, errors, subprocess entry points.

Read back with the providers' own clients (``openai`` on DashScope's
compatible mode, ``ollama``), so the shapes are the ones AgentScope parses.
"""

from __future__ import annotations

import subprocess
import sys

import httpx
import ollama
import openai
import pytest

from nb_hitl.fakes import FakeDashScopeServer, FakeOllamaServer, RawToolCall, load_script
from nb_hitl.models import Turn, tool_call
from tests.support import run_async


def test_dashscope_serves_the_compatible_mode_path_and_its_401() -> None:
    with FakeDashScopeServer([Turn("hi")], api_key="sk-ds") as srv:
        assert srv.base_url.endswith("/compatible-mode/v1")
        client = openai.OpenAI(api_key="sk-ds", base_url=srv.base_url)
        done = client.chat.completions.create(model="qwen-plus", messages=[{"role": "user", "content": "x"}])
        assert done.choices[0].message.content == "hi"
        with pytest.raises(openai.AuthenticationError) as info:
            openai.OpenAI(api_key="bad", base_url=srv.base_url).chat.completions.create(model="m", messages=[])
        assert info.value.body["code"] == "invalid_api_key" and "request_id" in info.value.response.json()


def test_ollama_streams_ndjson_with_whole_tool_calls() -> None:
    turn = Turn("two words", [tool_call("delete_file", path="a.txt"), tool_call("AskUser", questions=[])])
    with FakeOllamaServer([turn, turn]) as srv:

        async def go() -> list:
            client = ollama.AsyncClient(host=srv.base_url)
            return [part async for part in await client.chat(model="llama3.1", messages=[], stream=True)]

        parts = run_async(go())
        whole = ollama.Client(host=srv.base_url).chat(model="llama3.1", messages=[], stream=False)
    assert "".join(p.message.content or "" for p in parts) == "two words"
    calls = [c for p in parts for c in (p.message.tool_calls or [])]
    assert [(c.function.name, dict(c.function.arguments)) for c in calls] == [
        ("delete_file", {"path": "a.txt"}),
        ("AskUser", {"questions": []}),
    ]
    assert parts[-1].done is True and parts[-1].eval_count == 2
    assert [c.function.name for c in whole.message.tool_calls] == ["delete_file", "AskUser"]


def test_ollama_answers_an_unparseable_tool_call_as_ollama_does() -> None:
    bad = Turn("", [RawToolCall(name="delete_file", arguments='{"path": ')])
    with FakeOllamaServer([bad, bad], api_key="k") as srv:
        client = ollama.Client(host=srv.base_url, headers={"Authorization": "Bearer k"})
        with pytest.raises(ollama.ResponseError, match="error parsing tool call") as info:
            client.chat(model="m", messages=[], stream=False)
        assert info.value.status_code == 500
        with pytest.raises(ollama.ResponseError, match="error parsing tool call"):
            list(client.chat(model="m", messages=[], stream=True))
        with pytest.raises(ollama.ResponseError, match="unauthorized") as info:
            ollama.Client(host=srv.base_url).chat(model="m", messages=[])
        assert info.value.status_code == 401


@pytest.mark.parametrize(
    ("module", "suffix", "path"),
    [("dashscope", "/compatible-mode/v1", "/models"), ("ollama", "", "/api/tags")],
)
def test_subprocess_entry_points(module: str, suffix: str, path: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", f"nb_hitl.fakes.{module}", "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith(suffix)
        r = httpx.get(base_url + path, headers={"Authorization": "Bearer sk-fake"})
        assert r.status_code == 200, r.text
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_load_script_names_what_is_wrong() -> None:
    assert load_script("nb_hitl.fakes.examples:confirm_delete")[0].tool_calls[0].name == "delete_file"
    with pytest.raises(ValueError, match="module:name"):
        load_script("nb_hitl.fakes.examples")
    with pytest.raises(ValueError, match="expected a list of turns"):
        load_script("nb_hitl.fakes.examples:__doc__")
