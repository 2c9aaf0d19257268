"""Fake model servers on 127.0.0.1, for demos and tests without a real model.

Each fake speaks one provider's HTTP API well enough for AgentScope's own
model class to talk to it, and answers from a script of
:class:`~nb_hitl.models.Turn` objects (the same turns as
:class:`~nb_hitl.models.ScriptedChatModel`)::

    from agentscope.credential import OpenAICredential
    from agentscope.model import OpenAIChatModel
    from nb_hitl import Turn, tool_call
    from nb_hitl.fakes import FakeOpenAIServer

    with FakeOpenAIServer([Turn("Deleting.", [tool_call("delete_file", path="a.txt")])]) as srv:
        model = OpenAIChatModel(OpenAICredential(api_key=srv.api_key, base_url=srv.base_url), "gpt-4o-mini")

Modes: a wrong API key gets HTTP 401 (``api_key=``); ``delay=`` /
``chunk_delay=`` slow answers down; :class:`RawToolCall` / :func:`truncated`
send a malformed argument string. As a subprocess:
``python -m nb_hitl.fakes.openai --port 8765 --script module:name``
(also ``.dashscope`` and ``.ollama``: :class:`FakeDashScopeServer` serves
DashScope's OpenAI-compatible mode, :class:`FakeOllamaServer` Ollama's
``/api/chat``; AgentScope's ``OllamaChatModel`` needs ``nb_hitl[ollama]``).
"""

try:  # the servers are an extra: pip install "nb_hitl[fakes]"
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as _exc:
    raise ImportError(
        f'nb_hitl.fakes needs the "fakes" extra ({_exc.name} is not installed): pip install "nb_hitl[fakes]"'
    ) from _exc

from .dashscope import FakeDashScopeServer
from .ollama import FakeOllamaServer
from .openai import FakeOpenAIServer
from .script import FakeScriptItem, RawToolCall, ScriptPlayer, arguments_of, truncated, wire_tool_results
from .server import FakeModelServer, load_script

__all__ = [
    "FakeModelServer",
    "FakeOpenAIServer",
    "FakeDashScopeServer",
    "FakeOllamaServer",
    "FakeScriptItem",
    "RawToolCall",
    "ScriptPlayer",
    "arguments_of",
    "truncated",
    "wire_tool_results",
    "load_script",
]
