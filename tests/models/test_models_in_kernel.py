"""AgentScope's real model classes against the fake servers, through ``Session`` in a real kernel.

One ipykernel for the module. The fake servers run in the test process (a
uvicorn thread on 127.0.0.1); the kernel builds the model with
``nb_hitl.model_config.model_from_env`` from ``NB_HITL_MODEL`` and the
provider's own variables (``OpenAIChatModel``, ``DashScopeChatModel``,
``OllamaChatModel``), runs a real ``Agent`` with the demo's sandbox tools in
a ``Session``, and the test answers each pause with a real comm message, as
the page does. Covered per provider: a confirmation (streaming and not),
AskUser, a truncated argument string (what AgentScope runs, and what the
pause shows), an unparseable one, and a wrong key (HTTP 401: the step fails,
a note names the variables to fix).
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

from nb_hitl.fakes import (
    FakeDashScopeServer,
    FakeModelServer,
    FakeOllamaServer,
    FakeOpenAIServer,
    RawToolCall,
    truncated,
    wire_tool_results,
)
from nb_hitl.models import Turn, tool_call
from tests.harness import KernelHarness
from tests.support import kernel_json, open_pause, reply_widget, wait_status

pytestmark = pytest.mark.kernel

KEY = "sk-fake-test-key"


def _openai_env(srv: FakeModelServer, key: str) -> dict[str, str]:
    return {"NB_HITL_MODEL": "openai:gpt-4o-mini", "OPENAI_API_KEY": key, "OPENAI_BASE_URL": srv.base_url}


def _dashscope_env(srv: FakeModelServer, key: str) -> dict[str, str]:
    return {"NB_HITL_MODEL": "dashscope:qwen-plus", "DASHSCOPE_API_KEY": key, "DASHSCOPE_BASE_URL": srv.base_url}


def _ollama_env(srv: FakeModelServer, key: str) -> dict[str, str]:
    return {"NB_HITL_MODEL": "ollama:llama3.1", "OLLAMA_HOST": srv.base_url, "OLLAMA_API_KEY": key}


#: provider -> (fake server class, the kernel's variables for it)
PROVIDERS: dict[str, tuple[type[FakeModelServer], Callable[[FakeModelServer, str], dict[str, str]]]] = {
    "openai": (FakeOpenAIServer, _openai_env),
    "dashscope": (FakeDashScopeServer, _dashscope_env),
    "ollama": (FakeOllamaServer, _ollama_env),
}
#: what each provider's 401 reads like once it reaches the widget
UNAUTHORIZED = {"openai": "Incorrect API key", "dashscope": "Incorrect API key", "ollama": "unauthorized"}

SETUP = textwrap.dedent(
    """
    import json
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.model_config import model_from_env

    RUNS = {}

    def start(name, env, prompt, stream=True):
        box = make_sandbox()
        model = model_from_env(env=env, stream=stream, max_retries=0)
        agent = Agent(name=name, system_prompt="You tidy folders.", model=model, toolkit=Toolkit(tools=sandbox_tools(box)))
        session = Session(agent)
        RUNS[name] = (agent, session, session.start(prompt), box)
        return type(model).__name__

    def files(name):
        return sorted(p.name for p in RUNS[name][3].iterdir())
    """
)


@pytest.fixture(scope="module")
def kernel():
    with KernelHarness() as k:
        k.execute(SETUP).raise_for_error()
        yield k


def _start(k: KernelHarness, provider: str, srv: FakeModelServer, name: str, *, stream: bool = True, key: str = KEY):
    env = PROVIDERS[provider][1](srv, key)
    res = k.execute(f"start({name!r}, {json.dumps(env)}, 'Tidy my folder.', stream={stream})").raise_for_error()
    expected = {"openai": "OpenAIChatModel", "dashscope": "DashScopeChatModel", "ollama": "OllamaChatModel"}
    assert res.text.endswith(repr(expected[provider])), res.text
    return reply_widget(k, name, require_esm=True)


def _server(provider: str, script: list[Any], **kwargs: Any) -> FakeModelServer:
    cls = PROVIDERS[provider][0]
    return cls(script, api_key=KEY, on_exhausted="raise", **kwargs)


def _final(k: KernelHarness, comm_id: str, text: str) -> None:
    k.wait_for(lambda: k.comm(comm_id).final_text == text, 30, what=f"final_text {text!r}")


def _report(messages: list[dict[str, Any]]) -> Turn:
    return Turn("Result: " + (wire_tool_results(messages) or ["(no tool result)"])[-1])


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_confirm_approved_by_a_comm_message(kernel: KernelHarness, provider: str, stream: bool) -> None:
    name = f"confirm_{provider}_{stream}"
    script = [Turn("I will delete notes.txt.", [tool_call("delete_file", path="notes.txt")]), _report]
    with _server(provider, script) as srv:
        rec = _start(kernel, provider, srv, name, stream=stream)
        confirm = open_pause(kernel, rec.comm_id, "confirm")
        assert confirm["tool_name"] == "delete_file"
        assert json.loads(confirm["input_text"]) == {"path": "notes.txt"}
        reply = kernel.request(
            rec.comm_id, "approve", tool_call_id=confirm["tool_call_id"], reply_id=confirm["reply_id"]
        )
        assert reply["ok"] is True, reply
        wait_status(kernel, rec.comm_id, "finished")
        _final(kernel, rec.comm_id, "Result: Deleted notes.txt.")
    assert [r.get("stream", True) for r in srv.requests] == [stream, stream]
    assert wire_tool_results(srv.requests[1]["messages"]) == ["Deleted notes.txt."]
    assert kernel_json(kernel, f"files({name!r})") == ["draft.md", "old_log.txt"]


QUESTION = {
    "question": "Which file should I delete?",
    "header": "Cleanup",
    "options": [{"label": "draft.md", "description": "a draft"}, {"label": "notes.txt", "description": "notes"}],
}


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_ask_user_answered_by_a_comm_message(kernel: KernelHarness, provider: str) -> None:
    name = f"ask_{provider}"
    with _server(provider, [Turn("Which one?", [tool_call("AskUser", questions=[QUESTION])]), _report]) as srv:
        rec = _start(kernel, provider, srv, name)
        ask = open_pause(kernel, rec.comm_id, "ask_user")
        assert [o["label"] for o in ask["ask_user"]["questions"][0]["options"]] == ["draft.md", "notes.txt"]
        answers = [{"question": QUESTION["question"], "selected": ["draft.md"], "other": None}]
        reply = kernel.request(rec.comm_id, "answer", tool_call_id=ask["tool_call_id"], answers=answers)
        assert reply["ok"] is True, reply
        _final(kernel, rec.comm_id, f'Result: The user answered:\n- "{QUESTION["question"]}" -> draft.md')
    # the answer reached the model over the provider's wire format
    assert wire_tool_results(srv.requests[1]["messages"]) == [
        f'The user answered:\n- "{QUESTION["question"]}" -> draft.md'
    ]


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_wrong_key_is_a_readable_error(kernel: KernelHarness, provider: str) -> None:
    name = f"badkey_{provider}"
    with _server(provider, [Turn("never sent")]) as srv:
        rec = _start(kernel, provider, srv, name, key="sk-wrong-key-0000")
        state = wait_status(kernel, rec.comm_id, "error")
    assert "401" in state["status_reason"] and UNAUTHORIZED[provider] in state["status_reason"], state["status_reason"]
    assert srv.player.messages == []  # refused before the script moved
    assert kernel_json(kernel, f"files({name!r})") == ["draft.md", "notes.txt", "old_log.txt"]
    # the page's step stops counting: the model call failed; a note under it names the key variable
    entries = kernel.comm(rec.comm_id).transcript()
    (step,) = [e for e in entries if e["kind"] == "step"]
    assert step["state"] == "failed" and isinstance(step["elapsed"], float), step
    notes = [e["text"] for e in entries if e["kind"] == "note"]
    assert any("API_KEY" in n and "401" in n for n in notes), notes


def test_a_rejected_key_set_in_the_kernel_names_the_variables_to_fix(kernel: KernelHarness) -> None:
    """A person sets the variables in the kernel's environment and runs the cell: the page's
    step says the model call failed, and the note names OPENAI_API_KEY and the base URL used."""
    name = "badkey_environ"
    with _server("openai", [Turn("never sent")]) as srv:
        env = _openai_env(srv, "sk-wrong-key-0000")
        kernel.execute(f"import os\nos.environ.update({json.dumps(env)})").raise_for_error()
        try:
            rec = _start(kernel, "openai", srv, name, key="sk-wrong-key-0000")
            wait_status(kernel, rec.comm_id, "error")
        finally:
            kernel.execute(f"for k in {sorted(env)!r}: os.environ.pop(k, None)").raise_for_error()
    entries = kernel.comm(rec.comm_id).transcript()
    (step,) = [e for e in entries if e["kind"] == "step"]
    assert (step["state"], step["error"]) == ("failed", "AuthenticationError")
    (note,) = [e["text"] for e in entries if e["kind"] == "note"]
    assert note.startswith("The model server refused the API key (401): set OPENAI_API_KEY")
    assert f"OPENAI_BASE_URL={srv.base_url}" in note and "sk-wrong" not in note


CUT = truncated(tool_call("delete_file", path="notes.txt"))  # '{"path": "notes.t'


@pytest.mark.parametrize("provider", ["openai", "dashscope"])
def test_truncated_arguments_are_repaired_and_run_by_agentscope(kernel: KernelHarness, provider: str) -> None:
    """AgentScope asks about the call and, once approved, runs ``json_repair``'s reading of it: ``path="notes.t"``."""
    assert CUT.arguments == '{"path": "notes.t'
    name = f"cut_{provider}"
    with _server(provider, [Turn("Deleting.", [CUT]), _report]) as srv:
        rec = _start(kernel, provider, srv, name)
        confirm = open_pause(kernel, rec.comm_id, "confirm")
        raw = kernel_json(kernel, f"RUNS[{name!r}][0].state.get_awaiting_tool_calls({name!r})[0].input")
        assert raw == CUT.arguments  # AgentScope keeps the model's string as it came
        reply = kernel.request(rec.comm_id, "approve", tool_call_id=confirm["tool_call_id"])
        assert reply["ok"] is True, reply
        wait_status(kernel, rec.comm_id, "finished")
    (result,) = wire_tool_results(srv.requests[1]["messages"])
    assert result.startswith("Could not delete notes.t:"), result  # the repaired input ran
    assert kernel_json(kernel, f"files({name!r})") == ["draft.md", "notes.txt", "old_log.txt"]


@pytest.mark.parametrize("provider", ["openai", "dashscope"])
def test_truncated_arguments_pause_shows_the_input_agentscope_runs(kernel: KernelHarness, provider: str) -> None:
    """The card shows json_repair's reading, the input AgentScope will run (case C25), and says it differs."""
    name = f"cutview_{provider}"
    with _server(provider, [Turn("Deleting.", [CUT]), _report]) as srv:
        rec = _start(kernel, provider, srv, name)
        confirm = open_pause(kernel, rec.comm_id, "confirm")
        try:
            try:
                shown = json.loads(confirm["input_text"])
            except ValueError:
                shown = None
            assert shown == {"path": "notes.t"}, confirm["input_text"]
        finally:
            kernel.request(rec.comm_id, "deny", tool_call_id=confirm["tool_call_id"])
            wait_status(kernel, rec.comm_id, "finished")
    assert srv.requests


@pytest.mark.parametrize("provider", ["openai", "dashscope"])
def test_unparseable_arguments_never_pause(kernel: KernelHarness, provider: str) -> None:
    """AgentScope sends its JSON error back to the model as the tool result; nothing is asked."""
    name = f"garbage_{provider}"
    garbage = RawToolCall(name="delete_file", arguments="delete notes.txt please")
    with _server(provider, [Turn("Deleting.", [garbage]), _report]) as srv:
        rec = _start(kernel, provider, srv, name)
        state = wait_status(kernel, rec.comm_id, "finished")
    assert state["pauses"] == []
    (result,) = wire_tool_results(srv.requests[1]["messages"])
    assert "JSONDecodeError" in result and "delete notes.txt please" in result
    assert kernel_json(kernel, f"files({name!r})") == ["draft.md", "notes.txt", "old_log.txt"]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_ollama_unparseable_tool_call_is_a_readable_error(kernel: KernelHarness, stream: bool) -> None:
    """Ollama parses tool calls itself and answers ``{"error": "error parsing tool call..."}``."""
    name = f"ollama_garbage_{stream}"
    with _server("ollama", [Turn("Deleting.", [CUT])]) as srv:
        rec = _start(kernel, "ollama", srv, name, stream=stream)
        state = wait_status(kernel, rec.comm_id, "error")
    assert "ResponseError" in state["status_reason"] and "error parsing tool call" in state["status_reason"]
