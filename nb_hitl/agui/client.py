"""An AG-UI client: one run over HTTP POST + SSE, events parsed and nothing else.

:class:`AguiClient` POSTs a ``RunAgentInput`` and yields each ``data:``
frame of the ``text/event-stream`` answer as an ``ag_ui.core`` event
(``httpx``), reading no more than its :class:`~nb_hitl.guard.StreamBudget`
allows (bytes, events, seconds, one event's size: past a cap it stops,
closes the stream and raises :class:`~nb_hitl.guard.StreamLimitReached`).
:class:`AguiClientError` is a peer that does not speak AG-UI (HTTP error,
not SSE, a frame that is not an event); :class:`RemoteRunError` is a run
that ended in ``RUN_ERROR``. The
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
from ..guard import StreamBudget

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
        budget: the caps on reading one run (bytes, events, seconds, one
            event's size); default :class:`~nb_hitl.guard.StreamBudget`'s.
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
        budget: StreamBudget | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.timeout = httpx.Timeout(timeout, read=read_timeout)
        self.read_timeout = read_timeout
        self.budget = budget or StreamBudget()
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
            StreamLimitReached: the run passed a cap of :attr:`budget`.
        """
        async for event in self.stream(self.make_input(thread_id, messages, resume, **kwargs)):
            yield event

    async def stream(self, inp: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """POST ``inp`` and yield the run's events (see :meth:`run`).

        The loop stays responsive: every chunk read is a suspension point,
        and each wait is bounded by the time left.

        Raises:
            AguiClientError: also when no event (keep-alive comments do not
                count) arrives for ``read_timeout`` seconds.
            StreamLimitReached: the run passed a cap of :attr:`budget`
                (``max_seconds``, ``max_bytes``, ``max_events``,
                ``max_event_bytes``); the stream is closed.
        """
        body = inp.model_dump(mode="json", by_alias=True)
        own = self.http is None
        http = self.http or httpx.AsyncClient(timeout=self.timeout)
        self.posts += 1
        headers = {"Accept": "text/event-stream", **self.headers}
        loop = asyncio.get_running_loop()
        meter = self.budget.meter(loop.time())
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
                reader = SSEReader(self.budget)
                chunks = response.aiter_bytes()
                idle_until = loop.time() + self.read_timeout
                while True:
                    now = loop.time()
                    left = meter.time_left(now)
                    if now >= idle_until:
                        raise AguiClientError(
                            f"No event for {self.read_timeout:g} s (keep-alive comments only); giving up."
                        )
                    try:
                        chunk = await asyncio.wait_for(anext(chunks), min(left, idle_until - now))
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        continue  # the loop head says which limit passed
                    meter.add_bytes(len(chunk))
                    for data in reader.feed(chunk):
                        meter.add_event()
                        idle_until = loop.time() + self.read_timeout
                        yield parse_event(data)
                    await asyncio.sleep(0)  # a peer that floods the socket still lets the loop run
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

    Linear in the bytes fed: a line is searched for only in the bytes not
    searched yet, and an event's data lines are kept as parts, joined once.

    Args:
        budget: its ``max_event_bytes`` is the largest event (its pending
            bytes) accepted.
    """

    def __init__(self, budget: StreamBudget) -> None:
        self.budget = budget
        self.max_event_bytes = budget.max_event_bytes
        self._buffer = bytearray()
        self._scanned = 0  # bytes of _buffer known to hold no line end
        self._data: list[str] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[str]:
        """The ``data`` of every event completed by ``chunk``.

        Raises:
            StreamLimitReached: an event (or one line) passes
                ``max_event_bytes``.
        """
        self._buffer += chunk
        out: list[str] = []
        start = 0
        while True:
            cut = _line_end(self._buffer, max(start, self._scanned))
            if cut < 0 or (cut == len(self._buffer) - 1 and self._buffer[cut] == 0x0D):
                # no line end yet, or a CR whose LF may come in the next chunk
                self._scanned = max(start, cut if cut >= 0 else len(self._buffer))
                break
            line = bytes(self._buffer[start:cut])
            start = cut + (2 if self._buffer[cut : cut + 2] == b"\r\n" else 1)
            self._line(line.decode("utf-8", "replace"), out)
        if start:
            del self._buffer[:start]
            self._scanned -= start
        if self._size + len(self._buffer) > self.max_event_bytes:
            raise self.budget.event_too_large()
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
                raise self.budget.event_too_large()


def _line_end(buffer: bytearray, start: int) -> int:
    """The index of the first CR or LF in ``buffer`` from ``start``, or -1
    (a CR is looked for only before the LF found: each byte is read once)."""
    lf = buffer.find(b"\n", start)
    cr = buffer.find(b"\r", start, lf if lf >= 0 else len(buffer))
    return cr if cr >= 0 else lf
