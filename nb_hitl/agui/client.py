"""An AG-UI client: one run over HTTP POST + SSE, events parsed and nothing else.

:class:`AguiClient` POSTs a ``RunAgentInput`` and yields each ``data:``
frame of the ``text/event-stream`` answer as an ``ag_ui.core`` event
(``httpx`` and ``httpx-sse``). :class:`AguiClientError` is a peer that does
not speak AG-UI (HTTP error, not SSE, a frame that is not an event);
:class:`RemoteRunError` is a run that ended in ``RUN_ERROR``. The
conversation on top, with pause views and answers, is
:class:`~nb_hitl.agui.remote.RemoteSession`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
from ag_ui.core import (
    BaseEvent,
    Event,
    ResumeEntry,
    RunAgentInput,
)
from pydantic import TypeAdapter, ValidationError

from ..errors import NbHitlError

__all__ = ["AguiClient", "AguiClientError", "RemoteRunError", "SSEReader", "parse_event"]

_EVENT = TypeAdapter(Event)


class AguiClientError(NbHitlError):
    """The peer answered with something that is not an AG-UI run: an HTTP
    error status, a body that is not ``text/event-stream``, a frame that is
    not an AG-UI event, a stream that breaks the run's framing.

    Attributes:
        status: the HTTP status, when there was one.
    """

    code = "transport"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RemoteRunError(NbHitlError):
    """The remote run ended with ``RUN_ERROR`` (or broke off); ``code`` is the
    peer's ``RUN_ERROR.code`` when it sent one."""

    code = "run_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code:
            self.code = code


def parse_event(data: str) -> BaseEvent:
    """One SSE ``data:`` payload -> an ``ag_ui.core`` event model.

    Raises:
        AguiClientError: not JSON, or not an AG-UI event.
    """
    try:
        return _EVENT.validate_json(data)
    except ValidationError as exc:
        raise AguiClientError(
            f"The server sent a frame that is not an AG-UI event: {exc.errors()[0].get('msg')} in {data[:200]!r}"
        ) from None


class AguiClient:
    """Run an AG-UI agent over HTTP POST + SSE.

    Args:
        url: the endpoint (``POST``).
        token: sent as ``Authorization: Bearer <token>`` (the token an
            :class:`~nb_hitl.agui.server.AguiServer` prints or was given).
        headers: extra request headers.
        timeout: connect/write timeout in seconds; reads wait up to
            ``read_timeout`` between two frames.
        read_timeout: seconds between two events before giving up
            (keep-alive comments do not count).
        deadline: seconds a whole run may take.
        max_event_bytes: the largest SSE event accepted.
        http: an ``httpx.AsyncClient`` to use (else one per run).

    Attributes:
        posts: how many runs were POSTed (for tests: a refused resume sends
            nothing).
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 30.0,
        read_timeout: float = 300.0,
        deadline: float = 3600.0,
        max_event_bytes: int = 8 * 1024 * 1024,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.timeout = httpx.Timeout(timeout, read=read_timeout)
        self.read_timeout = read_timeout
        self.deadline = deadline
        self.max_event_bytes = max_event_bytes
        self.http = http
        self.posts = 0

    @staticmethod
    def make_input(
        thread_id: str,
        messages: Sequence[Any],
        resume: Sequence[ResumeEntry] | None = None,
        *,
        run_id: str | None = None,
        state: Any = None,
        tools: Sequence[Any] | None = None,
        context: Sequence[Any] | None = None,
        forwarded_props: Any = None,
    ) -> RunAgentInput:
        """A ``RunAgentInput`` (``protocol_version="1.0"``, a fresh ``run_id``
        unless given; ``state``, ``tools``, ``context``, ``forwarded_props``
        default to empty, as AG-UI's own clients send them)."""
        return RunAgentInput(
            thread_id=thread_id,
            run_id=run_id or f"run-{uuid.uuid4().hex}",
            protocol_version="1.0",
            state=state if state is not None else {},
            messages=list(messages),
            tools=list(tools or []),
            context=list(context or []),
            forwarded_props=forwarded_props if forwarded_props is not None else {},
            resume=list(resume) if resume else None,
        )

    async def run(
        self,
        thread_id: str,
        messages: Sequence[Any],
        resume: Sequence[ResumeEntry] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[BaseEvent]:
        """Start a run and yield its events as they arrive.

        Args:
            thread_id: the conversation.
            messages: the AG-UI messages (the whole history, as AG-UI
                clients send it).
            resume: resume entries, for a run that answers interrupts.
            **kwargs: more :meth:`make_input` arguments (``run_id``...).

        Yields:
            ``ag_ui.core`` events.

        Raises:
            AguiClientError: see the class.
        """
        async for event in self.stream(self.make_input(thread_id, messages, resume, **kwargs)):
            yield event

    async def stream(self, inp: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """POST ``inp`` and yield the run's events (see :meth:`run`).

        Raises:
            AguiClientError: also when the run passes ``deadline``, when no
                event (keep-alive comments do not count) arrives for
                ``read_timeout`` seconds, or when one event is larger than
                ``max_event_bytes``.
        """
        body = inp.model_dump(mode="json", by_alias=True)
        own = self.http is None
        http = self.http or httpx.AsyncClient(timeout=self.timeout)
        self.posts += 1
        headers = {"Accept": "text/event-stream", **self.headers}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.deadline
        try:
            async with http.stream("POST", self.url, json=body, headers=headers) as response:
                if response.status_code >= 400:
                    detail = (await _head(response, 4096)).decode("utf-8", "replace")[:500]
                    raise AguiClientError(
                        f"The server answered HTTP {response.status_code}: {detail}", status=response.status_code
                    )
                kind = response.headers.get("content-type", "")
                if "text/event-stream" not in kind:
                    raise AguiClientError(
                        f"The server answered with Content-Type {kind[:80]!r}, not text/event-stream.",
                        status=response.status_code,
                    )
                reader = SSEReader(self.max_event_bytes)
                chunks = response.aiter_bytes()
                idle_until = loop.time() + self.read_timeout
                while True:
                    now = loop.time()
                    if now >= deadline:
                        raise AguiClientError(f"The run did not end within its deadline of {self.deadline:g} s.")
                    if now >= idle_until:
                        raise AguiClientError(
                            f"No event for {self.read_timeout:g} s (keep-alive comments only); giving up."
                        )
                    try:
                        chunk = await asyncio.wait_for(anext(chunks), min(deadline, idle_until) - now)
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        continue  # the loop head says which limit passed
                    for data in reader.feed(chunk):
                        idle_until = loop.time() + self.read_timeout
                        yield parse_event(data)
        except httpx.HTTPError as exc:
            raise AguiClientError(f"{type(exc).__name__}: {exc}") from None
        finally:
            if own:
                await http.aclose()


async def _head(response: httpx.Response, limit: int) -> bytes:
    """At most ``limit`` bytes of a response body (an error page may be huge)."""
    out = b""
    async for chunk in response.aiter_bytes():
        out += chunk
        if len(out) >= limit:
            break
    return out[:limit]


class SSEReader:
    """Server-Sent Events decoding with a size limit (WHATWG "event stream
    interpretation": ``data:`` lines joined by ``\n``, a blank line
    dispatches, ``:`` lines are comments; other fields are ignored).

    Args:
        max_event_bytes: the largest event (its pending bytes) accepted.
    """

    def __init__(self, max_event_bytes: int) -> None:
        self.max_event_bytes = max_event_bytes
        self._buffer = b""
        self._data: list[str] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[str]:
        """The ``data`` of every event completed by ``chunk``.

        Raises:
            AguiClientError: an event (or one line) passes the size limit.
        """
        self._buffer += chunk
        out: list[str] = []
        while True:
            cut = min((i for i in (self._buffer.find(b"\n"), self._buffer.find(b"\r")) if i >= 0), default=-1)
            if cut < 0 or (cut == len(self._buffer) - 1 and self._buffer.endswith(b"\r")):
                break  # no line end yet, or a CR whose LF may come in the next chunk
            line = self._buffer[:cut]
            skip = 2 if self._buffer[cut : cut + 2] == b"\r\n" else 1
            self._buffer = self._buffer[cut + skip :]
            self._line(line.decode("utf-8", "replace"), out)
        if self._size + len(self._buffer) > self.max_event_bytes:
            raise AguiClientError(f"The server sent an event larger than {self.max_event_bytes} bytes; refused.")
        return out

    def _line(self, line: str, out: list[str]) -> None:
        if not line:
            if self._data:
                out.append("\n".join(self._data))
            self._data, self._size = [], 0
            return
        if line.startswith(":"):
            return
        name, _, value = line.partition(":")
        if name == "data":
            value = value[1:] if value.startswith(" ") else value
            self._data.append(value)
            self._size += len(value)
            if self._size > self.max_event_bytes:
                raise AguiClientError(f"The server sent an event larger than {self.max_event_bytes} bytes; refused.")
