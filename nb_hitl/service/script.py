"""The offline model's script for the service demos: the user's words say what it does.

Served by nb_hitl's fake OpenAI server (:class:`nb_hitl.fakes.FakeOpenAIServer`),
which AgentScope's real ``OpenAIChatModel`` reaches over loopback. A service
has many sessions talking to one model, so instead of a fixed list of turns
every request is answered by :func:`directive_turn` from its own messages:

* a user message with lines ``call: <tool> <json input>`` -> those tool calls;
* the model's last tool calls answered -> ``Done: <the last tool result>``;
* anything else -> ``You said: <text>``.

Run it alone with ``python -m nb_hitl.fakes.openai --script
nb_hitl.service.script:directives --api-key ''`` (a port per ``--port``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..fakes.script import FakeScriptItem, wire_tool_results
from ..models import ToolCallSpec, Turn

__all__ = ["directive_turn", "directives", "fake_model_app"]

_CALL = re.compile(r"^\s*call:\s*(?P<name>[A-Za-z_][\w.-]*)\s*(?P<args>\{.*\})?\s*$")
SCRIPT_LENGTH = 100_000
"""Turns the server can hand out (each request takes one)."""


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def directive_turn(messages: list[dict[str, Any]]) -> Turn:
    """The turn answering OpenAI wire ``messages`` (see the module docstring)."""
    tail: list[dict[str, Any]] = []
    for m in reversed(messages):
        if m.get("role") == "assistant":
            break
        tail.insert(0, m)
    if any(m.get("role") == "tool" for m in tail):
        return Turn("Done: " + (wire_tool_results(tail) or [""])[-1][:200])
    text = "\n".join(_text(m.get("content")) for m in tail if m.get("role") == "user")
    calls = []
    for line in text.splitlines():
        m = _CALL.match(line)
        if m:
            try:
                args = json.loads(m["args"] or "{}")
            except ValueError:
                args = {}
            calls.append(ToolCallSpec(m["name"], args if isinstance(args, dict) else {}))
    if calls:
        return Turn("", calls)
    said = [ln for ln in text.splitlines() if ln.strip() and "system-reminder" not in ln and not ln.startswith("<")]
    return Turn("You said: " + " ".join(said)[:200])


def directives() -> list[FakeScriptItem]:
    """The script: :func:`directive_turn` for each of :data:`SCRIPT_LENGTH`
    requests (``--script nb_hitl.service.script:directives``)."""
    return [directive_turn] * SCRIPT_LENGTH


def fake_model_app() -> Any:
    """The fake OpenAI server's Starlette app playing :func:`directives`, any
    API key accepted (the embedded service mounts it)."""
    from ..fakes import FakeOpenAIServer

    return FakeOpenAIServer(directives(), api_key=None).app()
