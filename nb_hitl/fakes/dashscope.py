"""A fake DashScope server, for AgentScope's ``DashScopeChatModel``.

AgentScope's ``DashScopeChatModel`` talks to DashScope's OpenAI-compatible
mode with the ``openai`` client (``DashScopeCredential.base_url`` defaults
to ``https://dashscope.aliyuncs.com/compatible-mode/v1``), sending
DashScope's own fields (``enable_thinking``, ``top_k``...) in the body. So
this fake is :class:`~nb_hitl.fakes.openai.FakeOpenAIServer` under
``/compatible-mode/v1``, with DashScope's 401 body (it adds a
``request_id``). Run it in a thread or as
``python -m nb_hitl.fakes.dashscope --port N --script module:name``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from starlette.responses import JSONResponse, Response

from .openai import FakeOpenAIServer
from .server import serve_main

__all__ = ["FakeDashScopeServer", "main"]


class FakeDashScopeServer(FakeOpenAIServer):
    """A scripted DashScope OpenAI-compatible endpoint on 127.0.0.1.

    Give AgentScope's model ``DashScopeCredential(api_key=srv.api_key,
    base_url=srv.base_url)``. Same arguments, modes and answers as
    :class:`~nb_hitl.fakes.openai.FakeOpenAIServer`.
    """

    base_path = "/compatible-mode/v1"

    def unauthorized(self, key: str | None) -> Response:
        return JSONResponse(
            {
                "error": {
                    "message": "Incorrect API key provided. ",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                },
                "request_id": str(uuid.uuid4()),
            },
            status_code=401,
        )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m nb_hitl.fakes.dashscope [--port N] [--script module:name] [--api-key K] [--delay S]``."""
    return serve_main(FakeDashScopeServer, argv)


if __name__ == "__main__":
    raise SystemExit(main())
