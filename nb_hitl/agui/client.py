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
from httpx_sse import SSEError, aconnect_sse
from pydantic import TypeAdapter, ValidationError

from ..errors import NbHitlError

__all__ = ["AguiClient", "AguiClientError", "RemoteRunError", "parse_event"]

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
        headers: extra request headers (e.g. authorization).
        timeout: connect/write timeout in seconds; reads wait up to
            ``read_timeout`` between two frames.
        read_timeout: seconds between frames before giving up.
        http: an ``httpx.AsyncClient`` to use (else one per run).

    Attributes:
        posts: how many runs were POSTed (for tests: a refused resume sends
            nothing).
    """

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        timeout: float = 30.0,
        read_timeout: float = 300.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.timeout = httpx.Timeout(timeout, read=read_timeout)
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
        """POST ``inp`` and yield the run's events (see :meth:`run`)."""
        body = inp.model_dump(mode="json", by_alias=True)
        own = self.http is None
        http = self.http or httpx.AsyncClient(timeout=self.timeout)
        self.posts += 1
        try:
            async with aconnect_sse(http, "POST", self.url, json=body, headers=dict(self.headers)) as source:
                response = source.response
                if response.status_code >= 400:
                    detail = (await response.aread()).decode("utf-8", "replace")[:500]
                    raise AguiClientError(
                        f"The server answered HTTP {response.status_code}: {detail}", status=response.status_code
                    )
                try:
                    async for sse in source.aiter_sse():
                        if not sse.data:
                            continue
                        yield parse_event(sse.data)
                except SSEError as exc:
                    raise AguiClientError(str(exc), status=response.status_code) from None
        except httpx.HTTPError as exc:
            raise AguiClientError(f"{type(exc).__name__}: {exc}") from None
        finally:
            if own:
                await http.aclose()
