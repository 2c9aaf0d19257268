"""A tiny OpenAI-compatible chat server on 127.0.0.1, for offline demos and tests.

AgentScope's real ``OpenAIChatModel`` talks to it through a stored
``openai_credential`` whose ``base_url`` points here. It is scripted by the
user's own words, so a demo or a test says in its message what the model
should do:

* a user message with lines ``call: <tool> <json input>`` -> one assistant
  message with those tool calls (ids ``call_<12 hex>``);
* the last message a tool result -> the text ``Done: <first 200 chars of the
  result>``;
* anything else -> ``You said: <text>``.

Both streaming (SSE ``chat.completion.chunk``) and plain responses are
served, as the OpenAI Chat Completions API does. Run it with
``python -m nb_hitl.service.fake_openai --port 0`` (prints the port).
"""

from __future__ import annotations

import argparse
import json
import re
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = ["create_fake_openai_app", "script_reply"]

_CALL = re.compile(r"^\s*call:\s*(?P<name>[A-Za-z_][\w.-]*)\s*(?P<args>\{.*\})?\s*$")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def script_reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """What the scripted model answers to an OpenAI ``messages`` list.

    Returns:
        ``{"content": str | None, "tool_calls": [{"id", "name", "arguments"}]}``.
    """
    # what came after the model's last turn (AgentScope may append system
    # reminders as further user messages)
    tail: list[dict[str, Any]] = []
    for m in reversed(messages):
        if m.get("role") == "assistant":
            break
        tail.insert(0, m)
    results = [m for m in tail if m.get("role") == "tool"]
    if results:
        return {"content": "Done: " + _text(results[-1].get("content"))[:200], "tool_calls": []}
    text = "\n".join(_text(m.get("content")) for m in tail if m.get("role") == "user")
    calls = []
    for line in text.splitlines():
        m = _CALL.match(line)
        if m:
            calls.append({"id": f"call_{uuid.uuid4().hex[:12]}", "name": m["name"], "arguments": m["args"] or "{}"})
    if calls:
        return {"content": None, "tool_calls": calls}
    said = [ln for ln in text.splitlines() if ln.strip() and "system-reminder" not in ln and not ln.startswith("<")]
    return {"content": f"You said: {' '.join(said)[:200]}", "tool_calls": []}


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> str:
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


async def _stream(model: str, reply: dict[str, Any]) -> AsyncIterator[str]:
    yield _chunk(model, {"role": "assistant", "content": ""})
    if reply["content"]:
        yield _chunk(model, {"content": reply["content"]})
    for i, call in enumerate(reply["tool_calls"]):
        fn = {"name": call["name"], "arguments": call["arguments"]}
        yield _chunk(model, {"tool_calls": [{"index": i, "id": call["id"], "type": "function", "function": fn}]})
    yield _chunk(model, {}, "tool_calls" if reply["tool_calls"] else "stop")
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    yield f"data: {json.dumps({'id': 'chatcmpl-fake', 'object': 'chat.completion.chunk', 'created': int(time.time()), 'model': model, 'choices': [], 'usage': usage})}\n\n"
    yield "data: [DONE]\n\n"


async def _completions(request: Request) -> Response:
    body = await request.json()
    model = str(body.get("model", "fake"))
    reply = script_reply(list(body.get("messages") or []))
    if body.get("stream"):
        return StreamingResponse(_stream(model, reply), media_type="text/event-stream")
    message: dict[str, Any] = {"role": "assistant", "content": reply["content"]}
    if reply["tool_calls"]:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in reply["tool_calls"]
        ]
    return JSONResponse(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply["tool_calls"] else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


def create_fake_openai_app() -> Starlette:
    """The Starlette app: ``POST /v1/chat/completions`` and ``GET /v1/models``."""

    async def models(_request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "fake", "object": "model"}]})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", _completions, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
        ]
    )


def main() -> None:  # pragma: no cover - command line
    """``python -m nb_hitl.service.fake_openai --port N`` (127.0.0.1 only)."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    uvicorn.run(create_fake_openai_app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
