"""The HTTP side of the AG-UI server: admit, read the body within limits, stream SSE.

:func:`handle_run` is the ``POST`` endpoint of
:class:`~nb_hitl.agui.server.AguiServer`: the access rules first
(:func:`~nb_hitl.agui.guard.admit`: host, origin, token, JSON), then the
body, read chunk by chunk and refused with 413 as soon as it passes the
limit (a chunked 50 MB upload is never buffered) or with 408 when it
trickles in slower than the body timeout, then the run's events as
Server-Sent Events through ``sse-starlette``, with ``: ping`` comments while
a long tool runs so proxies and clients keep the stream open.
:func:`handle_close` is ``DELETE <path>/threads/<thread_id>``: the owner
closes its thread, under the same access rules. :func:`close_unread` closes
the connection of any response sent before its request's body was read.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from ag_ui.core import BaseEvent, RunAgentInput
from pydantic import ValidationError
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .guard import Access, Denied, admit

__all__ = ["Limits", "close_unread", "handle_close", "handle_run", "read_body"]


class Limits:
    """Resource limits of the HTTP endpoint.

    Attributes:
        max_body: bytes a request body may have (413 beyond).
        body_timeout: seconds to receive the whole body (408 beyond).
        ping: seconds between SSE keep-alive comments (``None``: none).
    """

    def __init__(self, max_body: int = 1024 * 1024, body_timeout: float = 30.0, ping: float | None = 15.0) -> None:
        self.max_body = max_body
        self.body_timeout = body_timeout
        self.ping = ping


async def read_body(request: Request, limit: int, timeout: float) -> bytes:
    """The request body, refused as soon as it passes ``limit`` bytes.

    Raises:
        Denied: 413 ``too_large`` (declared or received size), 408
            ``body_timeout`` (not all received within ``timeout`` seconds).
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Denied(413, "too_large", f"The request body is larger than {limit} bytes.")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise Denied(413, "too_large", f"The request body is larger than {limit} bytes.")
                chunks.append(chunk)
    except TimeoutError:
        raise Denied(408, "body_timeout", f"The request body did not arrive within {timeout} s.") from None
    return b"".join(chunks)


def _refuse(exc: Denied) -> Response:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    # close the connection: an unread body must not be taken for the next request
    return JSONResponse(
        {"error": str(exc), "code": exc.code},
        status_code=exc.status,
        headers={**(headers or {}), "Connection": "close"},
    )


async def handle_run(
    request: Request,
    access: Access,
    limits: Limits,
    run: Callable[[RunAgentInput, str], AsyncIterator[BaseEvent]],
) -> Response:
    """The ``POST`` endpoint: refusals as JSON (401/403/408/413/415/422),
    else the run's events as SSE.

    Args:
        request: the request.
        access: the access rules.
        limits: body size, body timeout, ping interval.
        run: ``(input, principal) -> events`` (the server's run).
    """
    try:
        principal = await admit(request, access)
        body = await read_body(request, limits.max_body, limits.body_timeout)
    except Denied as exc:
        return _refuse(exc)
    try:
        inp = RunAgentInput.model_validate_json(body)
    except ValidationError as exc:
        return JSONResponse(
            {"error": "The body is not an AG-UI RunAgentInput.", "detail": json.loads(exc.json())[:5]},
            status_code=422,
        )

    async def frames() -> AsyncIterator[dict[str, Any]]:
        async for event in run(inp, principal):
            yield {"data": event.model_dump_json(by_alias=True)}

    return EventSourceResponse(
        frames(),
        ping=limits.ping,
        sep="\n",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def handle_close(
    request: Request, access: Access, close: Callable[[str, str], None], refused: type[Exception]
) -> Response:
    """``DELETE <path>/threads/<thread_id>``: close a thread for its owner.

    Args:
        request: the request (``thread_id`` in its path parameters).
        access: the access rules (a body is not needed).
        close: ``(thread_id, principal) -> None``, raising ``refused``.
        refused: the refusal type ``close`` raises (``code``, message).

    Returns:
        200 ``{"status": "closed", "thread_id"}``; 404 ``thread_not_found``
        (none, or another principal's); 409 ``thread_busy``; the access
        refusals (401/403) as for a run.
    """
    try:
        principal = await admit(request, access, needs_json=False)
    except Denied as exc:
        return _refuse(exc)
    thread_id = request.path_params["thread_id"]
    try:
        close(thread_id, principal)
    except refused as exc:
        code = str(getattr(exc, "code", "refused"))
        status = 404 if code == "thread_not_found" else 409
        return JSONResponse({"error": str(exc), "code": code}, status_code=status)
    return JSONResponse({"status": "closed", "thread_id": thread_id})


def close_unread(app: Any) -> Callable[[Any, Any, Any], Any]:
    """Wrap an ASGI app: a response that starts before its request's body was
    all received (a 404 or 405, a refusal) says ``Connection: close``, so the
    server closes the connection instead of keeping it open for a body nobody
    reads (under any ASGI server, not only
    :func:`~nb_hitl.agui.background.serve_in_background`)."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length", b"0").strip()
        pending = [b"transfer-encoding" in headers or (length.isdigit() and int(length) > 0)]

        async def receiving() -> Any:
            message = await receive()
            if message.get("type") == "http.disconnect" or not message.get("more_body", False):
                pending[0] = False
            return message

        async def sending(message: Any) -> None:
            if message.get("type") == "http.response.start" and pending[0]:
                kept = [(k, v) for k, v in message.get("headers") or [] if k.lower() != b"connection"]
                message = {**message, "headers": [*kept, (b"connection", b"close")]}
            await send(message)

        await app(scope, receiving, sending)

    return wrapped
