"""A fake OpenAI Chat Completions server, for AgentScope's ``OpenAIChatModel``.

Serves ``POST /v1/chat/completions`` (streaming as server-sent events and
not) and ``GET /v1/models`` on 127.0.0.1, answering from a script of
:class:`~nb_hitl.models.Turn` objects. Streaming follows OpenAI's wire
format: text in ``delta.content`` pieces; each tool call's ``id`` and
``function.name`` in its first chunk with empty ``arguments``, then the
argument string split over several chunks; ``finish_reason`` last; a
usage-only chunk when ``stream_options.include_usage``; ``data: [DONE]``.

Run it in a thread (``with FakeOpenAIServer(script) as srv: srv.base_url``)
or as a subprocess: ``python -m nb_hitl.fakes.openai --port 8765 --script
mymodule:script`` (prints the base URL, serves until stopped).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..models import Turn
from .script import arguments_of
from .server import FakeModelServer, serve_main

__all__ = ["FakeOpenAIServer", "split_arguments", "main"]


def split_arguments(arguments: str, pieces: int = 3) -> list[str]:
    """Cut an argument string into up to ``pieces`` consecutive parts (at least one, maybe ``""``)."""
    if not arguments:
        return [""]
    size = max(1, -(-len(arguments) // pieces))
    return [arguments[i : i + size] for i in range(0, len(arguments), size)]


def _error(message: str, status: int, type_: str = "invalid_request_error", code: str | None = None) -> Response:
    # OpenAI's error body: {"error": {"message", "type", "param", "code"}}
    return JSONResponse({"error": {"message": message, "type": type_, "param": None, "code": code}}, status_code=status)


class FakeOpenAIServer(FakeModelServer):
    """A scripted OpenAI-compatible ``/v1/chat/completions`` on 127.0.0.1.

    Give AgentScope's model ``OpenAICredential(api_key=srv.api_key,
    base_url=srv.base_url)``. See :class:`~nb_hitl.fakes.server.FakeModelServer`
    for the arguments (``script``, ``api_key``, ``delay``, ``chunk_delay``,
    ``on_exhausted``, ``port``, ``model``) and the ``requests`` record.

    Answers, in OpenAI's shapes: 200 with a ``chat.completion`` or an SSE
    stream of ``chat.completion.chunk``; 401 ``invalid_api_key`` for a
    wrong key; 400 for a body that is not JSON, a script that is over
    (``on_exhausted="raise"``) or a callable turn that raised.
    """

    base_path = "/v1"

    def routes(self) -> list[Route]:
        return [
            Route(self.base_path + "/chat/completions", self.chat_completions, methods=["POST"]),
            Route(self.base_path + "/models", self.list_models, methods=["GET"]),
        ]

    def unauthorized(self, key: str | None) -> Response:
        shown = "none" if not key else (key[:3] + "*" * max(0, len(key) - 7) + key[-4:] if len(key) > 7 else "***")
        return _error(f"Incorrect API key provided: {shown}.", 401, code="invalid_api_key")

    async def list_models(self, request: Request) -> Response:
        if not self.authorized(request):
            return self.unauthorized(self.presented_key(request))
        return JSONResponse(
            {"object": "list", "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "nb_hitl"}]}
        )

    async def chat_completions(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return _error("We could not parse the JSON body of your request.", 400)
        if not isinstance(body, dict):
            return _error("The request body must be a JSON object.", 400)
        self.requests.append(body)
        if not self.authorized(request):
            return self.unauthorized(self.presented_key(request))
        await self.pause(self.delay)
        try:
            turn = self.player.next_turn(list(body.get("messages") or []))
        except Exception as exc:  # noqa: BLE001 - a script error becomes the client's 400, never a crash
            return _error(f"fake server script: {exc}", 400, code="script_error")
        model = str(body.get("model") or self.model)
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(self._stream(turn, model, include_usage), media_type="text/event-stream")
        return JSONResponse(self.completion(turn, model))

    # -- wire format ------------------------------------------------------
    @staticmethod
    def _call_ids(turn: Turn) -> list[str]:
        return [spec.id or f"call_{uuid.uuid4().hex[:24]}" for spec in turn.tool_calls]

    @staticmethod
    def _usage(turn: Turn) -> dict[str, int]:
        out = len(turn.text.split()) + sum(len(arguments_of(s)) // 4 for s in turn.tool_calls)
        return {"prompt_tokens": 10, "completion_tokens": out, "total_tokens": 10 + out}

    def completion(self, turn: Turn, model: str) -> dict[str, Any]:
        """The non-streaming ``chat.completion`` object for ``turn``."""
        ids = self._call_ids(turn)
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None, "refusal": None}
        if turn.tool_calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": spec.name, "arguments": arguments_of(spec)}}
                for cid, spec in zip(ids, turn.tool_calls, strict=True)
            ]
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if turn.tool_calls else "stop",
                }
            ],
            "usage": self._usage(turn),
            "system_fingerprint": None,
        }

    def chunks(self, turn: Turn, model: str, include_usage: bool = False) -> list[dict[str, Any]]:
        """The ``chat.completion.chunk`` objects streamed for ``turn``, in order."""
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
        }
        base |= {"model": model, "system_fingerprint": None}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return base | {"choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

        out = [chunk({"role": "assistant", "content": "", "refusal": None})]
        words = turn.text.split(" ") if turn.text else []
        for i, word in enumerate(words):
            out.append(chunk({"content": word if i == len(words) - 1 else word + " "}))
        for index, (cid, spec) in enumerate(zip(self._call_ids(turn), turn.tool_calls, strict=True)):
            first = {"index": index, "id": cid, "type": "function", "function": {"name": spec.name, "arguments": ""}}
            out.append(chunk({"tool_calls": [first]}))
            for piece in split_arguments(arguments_of(spec)):
                if piece:
                    out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        out.append(chunk({}, "tool_calls" if turn.tool_calls else "stop"))
        if include_usage:
            out.append(base | {"choices": [], "usage": self._usage(turn)})
        return out

    async def _stream(self, turn: Turn, model: str, include_usage: bool) -> AsyncIterator[bytes]:
        for i, data in enumerate(self.chunks(turn, model, include_usage)):
            if i:
                await self.pause(self.chunk_delay)
            yield f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
        yield b"data: [DONE]\n\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m nb_hitl.fakes.openai [--port N] [--script module:name] [--api-key K] [--delay S]``."""
    return serve_main(FakeOpenAIServer, argv)


if __name__ == "__main__":
    raise SystemExit(main())
