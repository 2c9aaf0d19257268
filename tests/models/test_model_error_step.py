"""A model call the server refuses stops the step's clock and names the fix.

AgentScope's real ``OpenAIChatModel`` (built by ``model_from_env`` from the
kernel's variables) against nb_hitl's fake OpenAI server, which answers a
wrong key with 401 ``invalid_api_key``. The reply ends in error, as before;
its ``step`` entry no longer stays ``calling`` (the page's "calling the
model… 46 s" kept counting): it is ``failed`` with the error's class and
its elapsed seconds, and a note under it names ``OPENAI_API_KEY`` and the
``OPENAI_BASE_URL`` the request went to. A server that does not answer
names the base URL; a cancelled call is ``stopped``.
"""

from __future__ import annotations

import asyncio
import socket

import httpx
import openai
import pytest
from agentscope.agent import Agent
from agentscope.tool import Toolkit

from nb_hitl import Session
from nb_hitl.fakes import FakeOpenAIServer
from nb_hitl.model_config import model_error_hint, model_from_env
from nb_hitl.models import Turn
from nb_hitl.session._transcript import Transcript
from nb_hitl.session._transcript_events import record_event
from tests.support import run_async


def _env(base_url: str, key: str) -> dict[str, str]:
    return {"NB_HITL_MODEL": "openai:gpt-4o-mini", "OPENAI_API_KEY": key, "OPENAI_BASE_URL": base_url}


def _run_to_error(monkeypatch: pytest.MonkeyPatch, base_url: str, key: str) -> tuple[Session, BaseException]:
    for name, value in _env(base_url, key).items():
        monkeypatch.setenv(name, value)  # the kernel's environment, as a person sets it
    agent = Agent(name="t", system_prompt="x", model=model_from_env(max_retries=0), toolkit=Toolkit(tools=[]))
    session = Session(agent, display=False)

    async def go() -> BaseException:
        with pytest.raises(Exception) as info:
            await session.run("hi")
        return info.value

    return session, run_async(go())


def _steps_and_notes(session: Session) -> tuple[list[dict], list[str]]:
    transcript = session.current.transcript
    return [e for e in transcript if e["kind"] == "step"], [e["text"] for e in transcript if e["kind"] == "note"]


def test_a_rejected_key_fails_the_step_and_names_the_key_and_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAIServer([Turn("never sent")], api_key="sk-right") as srv:
        session, error = _run_to_error(monkeypatch, srv.base_url, "sk-wrong-key-0000")
    assert isinstance(error, openai.AuthenticationError) and error.status_code == 401
    assert session.current.status == "error" and "AuthenticationError" in session.current.reason
    (step,) = steps = _steps_and_notes(session)[0]
    assert step["state"] == "failed", steps
    assert step["error"] == "AuthenticationError"
    assert isinstance(step["elapsed"], float) and step["elapsed"] >= 0
    (note,) = _steps_and_notes(session)[1]
    assert "OPENAI_API_KEY" in note and f"OPENAI_BASE_URL={srv.base_url}" in note and "401" in note
    assert "sk-wrong" not in note and "sk-right" not in note  # never the key itself
    # the card's header names the fix too, not only the error
    assert "OPENAI_API_KEY" in session.current.reason and "sk-wrong" not in session.current.reason


def test_a_server_that_does_not_answer_names_the_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        base_url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    session, error = _run_to_error(monkeypatch, base_url, "sk-any")
    assert isinstance(error, openai.APIConnectionError)
    (step,), (note,) = _steps_and_notes(session)
    assert step["state"] == "failed" and step["error"] == "APIConnectionError"
    assert f"OPENAI_BASE_URL={base_url}" in note and "did not answer" in note


def test_a_cancelled_model_call_is_stopped_with_no_note() -> None:
    from agentscope.event import ModelCallStartEvent

    tr = Transcript()
    record_event(tr, ModelCallStartEvent(reply_id="r", model_name="m"))
    tr.finish(asyncio.CancelledError())
    (step,) = tr
    assert step["state"] == "stopped" and isinstance(step["elapsed"], float)
    assert [e for e in tr if e["kind"] == "note"] == []


def test_the_hint_without_nb_hitl_model_says_where_model_from_env_reads_them() -> None:
    response = httpx.Response(401, request=httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions"))
    error = openai.AuthenticationError("Incorrect API key provided.", response=response, body=None)
    hint = model_error_hint(error, {})
    assert hint is not None and "OPENAI_API_KEY" in hint and "OPENAI_BASE_URL" in hint and "model_from_env" in hint
    assert model_error_hint(ValueError("not the model's configuration"), _env("http://x", "k")) is None
