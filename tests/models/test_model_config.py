"""``nb_hitl.model_config``: the offline model by default, AgentScope's real classes by one setting.

Each provider is built with AgentScope's own class and credential from the
variables its client reads, and answers through the matching fake server
(so the settings are proven to reach the wire: base URL, key, model name).
"""

from __future__ import annotations

import sys

import pytest
from agentscope.message import UserMsg
from agentscope.model import DashScopeChatModel, OllamaChatModel, OpenAIChatModel

from nb_hitl.demo import demo_agent
from nb_hitl.fakes import FakeDashScopeServer, FakeOllamaServer, FakeOpenAIServer
from nb_hitl.model_config import ModelConfigError, describe_model, model_from_env, parse_model_spec
from nb_hitl.models import ScriptedChatModel, Turn
from tests.support import run_async


def test_unset_gives_the_default_and_calls_a_factory_only_then() -> None:
    offline = ScriptedChatModel([])
    assert model_from_env(offline, env={}) is offline
    assert model_from_env(lambda: offline, env={"NB_HITL_MODEL": "  "}) is offline
    with pytest.raises(ModelConfigError, match="set NB_HITL_MODEL"):
        model_from_env(env={})


@pytest.mark.parametrize(
    ("value", "provider", "model"),
    [("openai:gpt-4o-mini", "openai", "gpt-4o-mini"), ("Ollama:qwen3:14b", "ollama", "qwen3:14b")],
)
def test_parse_model_spec(value: str, provider: str, model: str) -> None:
    spec = parse_model_spec(value)
    assert (spec.provider, spec.model) == (provider, model)


@pytest.mark.parametrize(
    ("value", "needle"),
    [("gpt-4o", "is not '<provider>:<model>'"), ("openai:", "is not"), ("anthropic:claude", "unknown provider")],
)
def test_bad_values_are_named(value: str, needle: str) -> None:
    with pytest.raises(ModelConfigError, match=needle) as info:
        model_from_env(ScriptedChatModel([]), env={"NB_HITL_MODEL": value})
    assert "NB_HITL_MODEL" in str(info.value)


@pytest.mark.parametrize(("provider", "var"), [("openai", "OPENAI_API_KEY"), ("dashscope", "DASHSCOPE_API_KEY")])
def test_missing_key_names_the_variable(provider: str, var: str) -> None:
    with pytest.raises(ModelConfigError, match=f"needs the API key in {var}"):
        model_from_env(env={"NB_HITL_MODEL": f"{provider}:m"})


def test_missing_ollama_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ollama", None)  # import ollama -> ImportError
    with pytest.raises(ModelConfigError, match=r'pip install "nb_hitl\[ollama\]"'):
        model_from_env(env={"NB_HITL_MODEL": "ollama:llama3.1"})


def test_dashscope_default_base_url_is_agentscopes() -> None:
    model = model_from_env(env={"NB_HITL_MODEL": "dashscope:qwen-plus", "DASHSCOPE_API_KEY": "k"})
    assert isinstance(model, DashScopeChatModel) and model.model == "qwen-plus"
    assert model.credential.base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"


async def _text(model) -> str:
    res = await model([UserMsg(name="user", content="hi")])
    if not hasattr(res, "content"):
        last = None
        async for chunk in res:
            last = chunk
        res = last
    return "".join(getattr(b, "text", "") for b in res.content)


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("server_cls", "cls", "env"),
    [
        (FakeOpenAIServer, OpenAIChatModel, lambda s: {"OPENAI_API_KEY": s.api_key, "OPENAI_BASE_URL": s.base_url}),
        (
            FakeDashScopeServer,
            DashScopeChatModel,
            lambda s: {"DASHSCOPE_API_KEY": s.api_key, "DASHSCOPE_BASE_URL": s.base_url},
        ),
        (FakeOllamaServer, OllamaChatModel, lambda s: {"OLLAMA_HOST": s.base_url}),
    ],
    ids=["openai", "dashscope", "ollama"],
)
def test_each_provider_reaches_its_fake(server_cls, cls, env, stream: bool) -> None:
    provider = cls.__name__.removesuffix("ChatModel").lower()
    with server_cls([Turn("Hello from the fake.")], on_exhausted="raise") as srv:
        model = model_from_env(env={"NB_HITL_MODEL": f"{provider}:some-model", **env(srv)}, stream=stream)
        assert type(model) is cls
        assert describe_model(model).startswith(f"{cls.__name__} some-model at http://127.0.0.1:")
        assert run_async(_text(model)) == "Hello from the fake."
    (body,) = srv.requests
    assert body["model"] == "some-model" and body.get("stream", True) is stream


def test_demo_agent_takes_the_model_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    assert isinstance(demo_agent(tmp_path / "a").model, ScriptedChatModel)
    monkeypatch.setenv("NB_HITL_MODEL", "openai:gpt-4o-mini")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        demo_agent(tmp_path / "b")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    agent = demo_agent(tmp_path / "c", stream=False)
    assert isinstance(agent.model, OpenAIChatModel) and agent.model.stream is False
    assert "AskUser" in agent._system_prompt and "list_files" in agent._system_prompt
