"""A fake Ollama server, for AgentScope's ``OllamaChatModel``.

AgentScope's ``OllamaChatModel`` uses the ``ollama`` client
(``pip install nb_hitl[ollama]``), which posts to ``/api/chat`` at
``OllamaCredential.host`` (or ``OLLAMA_HOST``). Ollama streams
newline-delimited JSON: ``message.content`` pieces, each tool call whole in
one chunk with ``arguments`` as a JSON *object* (Ollama parses the model's
text itself), then a ``done: true`` line with token counts. A tool call
whose arguments are not a JSON object (:class:`~nb_hitl.fakes.script.RawToolCall`)
is answered as Ollama does: ``{"error": "error parsing tool call: ..."}``.
With ``api_key`` set (as for a hosted Ollama; the client sends
``OLLAMA_API_KEY`` as a bearer token) a wrong key gets 401 ``{"error": "unauthorized"}``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..models import Turn
from .script import FakeScriptItem, RawToolCall
from .server import FakeModelServer, serve_main

__all__ = ["FakeOllamaServer", "main"]


class ToolCallParseError(ValueError):
    """A scripted tool call's arguments are not a JSON object (Ollama's own error)."""


def _arguments(turn: Turn) -> list[dict[str, Any]]:
    out = []
    for spec in turn.tool_calls:
        if isinstance(spec, RawToolCall):
            try:
                value = json.loads(spec.arguments)
            except ValueError as exc:
                raise ToolCallParseError(f"error parsing tool call: raw='{spec.arguments}', err={exc}") from None
            if not isinstance(value, dict):
                raise ToolCallParseError(f"error parsing tool call: raw='{spec.arguments}', err=not an object")
            out.append(value)
        else:
            out.append(dict(spec.input))
    return out


class FakeOllamaServer(FakeModelServer):
    """A scripted Ollama ``/api/chat`` on 127.0.0.1.

    Give AgentScope's model ``OllamaCredential(host=srv.base_url)``. Same
    arguments as :class:`~nb_hitl.fakes.server.FakeModelServer`, except that
    ``api_key`` defaults to ``None`` (a local Ollama asks for no key).

    Answers: 200 with one JSON object or an NDJSON stream; 401 for a wrong
    key; 400 ``{"error": ...}`` for a bad body or a script error; a tool
    call that cannot be parsed: 500 ``{"error": "error parsing tool
    call..."}`` when not streaming, an ``{"error": ...}`` line when streaming.
    """

    def __init__(self, script: Sequence[FakeScriptItem], *, api_key: str | None = None, **kwargs: Any) -> None:
        super().__init__(script, api_key=api_key, **kwargs)

    def routes(self) -> list[Route]:
        return [
            Route("/api/chat", self.chat, methods=["POST"]),
            Route("/api/tags", self.tags, methods=["GET"]),
            Route("/api/version", self.version, methods=["GET"]),
        ]

    def unauthorized(self, key: str | None) -> Response:
        return JSONResponse({"error": "unauthorized"}, status_code=401)

    async def version(self, request: Request) -> Response:
        return JSONResponse({"version": "0.0.0-nb_hitl-fake"})

    async def tags(self, request: Request) -> Response:
        if not self.authorized(request):
            return self.unauthorized(self.presented_key(request))
        return JSONResponse({"models": [{"name": self.model, "model": self.model, "size": 0, "digest": "fake"}]})

    async def chat(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"error": "invalid JSON body"}, status_code=400)
        if not isinstance(body, dict):
            return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
        self.requests.append(body)
        if not self.authorized(request):
            return self.unauthorized(self.presented_key(request))
        await self.pause(self.delay)
        try:
            turn = self.player.next_turn(list(body.get("messages") or []))
        except Exception as exc:  # noqa: BLE001 - a script error becomes the client's 400, never a crash
            return JSONResponse({"error": f"fake server script: {exc}"}, status_code=400)
        model = str(body.get("model") or self.model)
        # Ollama streams unless told not to
        if body.get("stream", True):
            return StreamingResponse(self._stream(turn, model), media_type="application/x-ndjson")
        try:
            return JSONResponse(self.whole(turn, model))
        except ToolCallParseError as exc:
            return JSONResponse({"error": str(exc)}, status_code=500)

    # -- wire format ------------------------------------------------------
    @staticmethod
    def _head(model: str) -> dict[str, Any]:
        return {"model": model, "created_at": datetime.now(UTC).isoformat().replace("+00:00", "Z")}

    @staticmethod
    def _done(turn: Turn) -> dict[str, Any]:
        return {
            "done": True,
            "done_reason": "stop",
            "total_duration": 1_000_000,
            "load_duration": 0,
            "prompt_eval_count": 10,
            "prompt_eval_duration": 0,
            "eval_count": max(1, len(turn.text.split())),
            "eval_duration": 0,
        }

    @staticmethod
    def _tool_calls(turn: Turn) -> list[dict[str, Any]]:
        return [
            {"function": {"index": i, "name": spec.name, "arguments": args}}
            for i, (spec, args) in enumerate(zip(turn.tool_calls, _arguments(turn), strict=True))
        ]

    def whole(self, turn: Turn, model: str) -> dict[str, Any]:
        """The non-streaming ``/api/chat`` answer for ``turn``.

        Raises:
            ToolCallParseError: a tool call's arguments are not a JSON object.
        """
        message: dict[str, Any] = {"role": "assistant", "content": turn.text}
        if turn.tool_calls:
            message["tool_calls"] = self._tool_calls(turn)
        return self._head(model) | {"message": message} | self._done(turn)

    async def _stream(self, turn: Turn, model: str) -> AsyncIterator[bytes]:
        lines: list[dict[str, Any]] = []
        words = turn.text.split(" ") if turn.text else []
        for i, word in enumerate(words):
            piece = word if i == len(words) - 1 else word + " "
            lines.append({"message": {"role": "assistant", "content": piece}, "done": False})
        try:
            if turn.tool_calls:
                calls = self._tool_calls(turn)
                lines.append({"message": {"role": "assistant", "content": "", "tool_calls": calls}, "done": False})
            lines.append({"message": {"role": "assistant", "content": ""}} | self._done(turn))
        except ToolCallParseError as exc:
            lines.append({"error": str(exc)})
        for i, line in enumerate(lines):
            if i:
                await self.pause(self.chunk_delay)
            head = self._head(model) if "error" not in line else {}
            yield (json.dumps(head | line, ensure_ascii=False) + "\n").encode()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m nb_hitl.fakes.ollama [--port N] [--script module:name] [--delay S]`` (no key by default)."""
    return serve_main(FakeOllamaServer, argv, default_port=0, default_api_key="")


if __name__ == "__main__":
    raise SystemExit(main())
