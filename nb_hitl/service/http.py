"""HTTP + SSE calls to AgentScope's service (``agentscope.app.create_app``).

:class:`ServiceHTTP` is a thin async wrapper over ``httpx`` and
``httpx-sse``: one method per route the console uses, every call with the
``X-User-ID`` header the service trusts as the user (AgentScope verifies
nothing; put real credentials in ``headers`` or ``auth``). Answers are
AgentScope's own events serialised with ``model_dump(mode="json")``
(:func:`confirm_body`, :func:`external_body`).

Errors: a non-2xx status or a transport failure raises
:class:`ServiceError` with the status and the service's ``detail``. A 200
from ``POST /chat/`` says only that the body parsed: the outcome is judged
on the session's stream (:mod:`nb_hitl.service.outcome`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

import httpx
from agentscope.event import ConfirmResult, ExternalExecutionResultEvent, UserConfirmResultEvent
from agentscope.message import ToolResultBlock
from httpx_sse import aconnect_sse

from ..errors import NbHitlError

__all__ = ["ServiceHTTP", "ServiceError", "confirm_body", "denied_in", "external_body", "user_msg_body"]


class ServiceError(NbHitlError):
    """The service refused a call or could not be reached.

    Attributes:
        status: the HTTP status, or ``None`` for a transport failure.
    """

    code = "service"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def confirm_body(
    reply_id: str, results: Sequence[ConfirmResult], metadata: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``UserConfirmResultEvent(reply_id, confirm_results, metadata)`` as JSON (AgentScope's type)."""
    return UserConfirmResultEvent(reply_id=reply_id, confirm_results=list(results), metadata=metadata or {}).model_dump(
        mode="json"
    )


def denied_in(body: dict[str, Any]) -> list[str]:
    """The ``tool_call`` ids a :func:`confirm_body` denies (``confirmed: false``); ``[]`` for other bodies."""
    results = body.get("confirm_results") or []
    return [
        str((r.get("tool_call") or {}).get("id")) for r in results if isinstance(r, dict) and not r.get("confirmed")
    ]


def external_body(
    reply_id: str, results: Sequence[ToolResultBlock], metadata: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``ExternalExecutionResultEvent(reply_id, execution_results, metadata)`` as JSON (AgentScope's type)."""
    return ExternalExecutionResultEvent(
        reply_id=reply_id, execution_results=list(results), metadata=metadata or {}
    ).model_dump(mode="json")


def user_msg_body(text: str, name: str = "user") -> dict[str, Any]:
    """A user ``Msg`` as JSON (``agentscope.message.Msg``)."""
    from agentscope.message import Msg, TextBlock

    return Msg(name=name, role="user", content=[TextBlock(text=text)]).model_dump(mode="json")


def _detail(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:300]
    detail = body.get("detail", body) if isinstance(body, dict) else body
    return json.dumps(detail)[:300] if not isinstance(detail, str) else detail[:300]


class ServiceHTTP:
    """Async calls to one AgentScope service as one user.

    Args:
        base_url: e.g. ``"http://127.0.0.1:8000"``, or several workers of one
            scaled-out service: a call that cannot connect is retried on the
            next one (each once), and the one that answered is used from then on.
        user_id: sent as ``X-User-ID`` on every call.
        headers: extra headers (e.g. ``{"Authorization": "Bearer ..."}``).
        auth: an ``httpx.Auth`` or a hook ``(httpx.Request) -> httpx.Request``
            applied to every request (httpx's ``auth=``).
        timeout: seconds per call (streams have no read timeout).
        transport: an ``httpx.AsyncBaseTransport`` (tests, proxies).
    """

    def __init__(
        self,
        base_url: str | Sequence[str],
        user_id: str,
        *,
        headers: dict[str, str] | None = None,
        auth: httpx.Auth | Callable[[httpx.Request], httpx.Request] | None = None,
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        if not urls:
            raise ValueError("ServiceHTTP needs at least one base URL.")
        self.base_urls = [u.rstrip("/") for u in urls]
        self.base_url = self.base_urls[0]
        self.user_id = user_id
        self._headers = {"X-User-ID": user_id, **(headers or {})}
        self._auth = auth
        self._timeout = timeout
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        """The shared ``httpx.AsyncClient`` (created on first use, on the running loop)."""
        if self._client is None or self._client.is_closed:
            self._client = httpx.AsyncClient(
                headers=self._headers,
                auth=self._auth,
                timeout=self._timeout,
                transport=self._transport,
                limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
            )
        return self._client

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            await self._client.aclose()

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """One call; the parsed JSON body (``None`` for an empty one).

        Raises:
            ServiceError: transport failure or a non-2xx status.
        """
        resp = None
        for url in self._failover():
            try:
                resp = await self.client.request(method, url + path, **kwargs)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                failure: Exception = exc
                continue
            except httpx.HTTPError as exc:
                raise ServiceError(f"{method} {path} at {url} failed: {type(exc).__name__} {exc}".rstrip()) from None
            self.base_url = url
            break
        if resp is None:
            raise ServiceError(f"The service could not be reached at {', '.join(self.base_urls)}: {failure}") from None
        if resp.status_code >= 400:
            raise ServiceError(f"{method} {path}: {resp.status_code} {_detail(resp)}", status=resp.status_code)
        return resp.json() if resp.content else None

    def _failover(self) -> list[str]:
        i = self.base_urls.index(self.base_url) if self.base_url in self.base_urls else 0
        return self.base_urls[i:] + self.base_urls[:i]

    # -- reading -------------------------------------------------------------
    async def list_agents(self) -> list[dict[str, Any]]:
        """``GET /agent/``: the user's agents (``AgentView`` JSON)."""
        body = await self.request("GET", "/agent/")
        agents = body.get("agents", []) if isinstance(body, dict) else body
        return [a for a in agents or [] if isinstance(a, dict)]

    async def list_sessions(self, agent_id: str) -> list[dict[str, Any]]:
        """``GET /sessions/?agent_id=``: ``SessionView`` JSON, each with ``status``."""
        body = await self.request("GET", "/sessions/", params={"agent_id": agent_id})
        return list(body.get("sessions", []))

    async def status(self, agent_id: str, session_id: str) -> str:
        """``GET /sessions/{id}/status``: ``running`` | ``idle`` |
        ``awaiting_permission`` | ``awaiting_external_result``."""
        body = await self.request("GET", f"/sessions/{session_id}/status", params={"agent_id": agent_id})
        return str(body["status"])

    async def messages(self, agent_id: str, session_id: str, limit: int = 50) -> dict[str, Any]:
        """``GET /sessions/{id}/messages``: ``{"messages", "event_cursor", "is_running", "has_more"}``."""
        return await self.request(
            "GET", f"/sessions/{session_id}/messages", params={"agent_id": agent_id, "limit": limit}
        )

    async def stream(
        self, agent_id: str, session_id: str, after: str | None = None
    ) -> AsyncGenerator[dict[str, Any], None]:
        """``GET /sessions/{id}/stream``: each SSE ``data:`` frame as a dict
        (AgentScope events as JSON). Runs until the caller stops iterating.

        Raises:
            ServiceError: the stream could not be opened.
        """
        params = {"agent_id": agent_id, **({"after": after} if after else {})}
        timeout = httpx.Timeout(self._timeout, read=None)
        try:
            async with aconnect_sse(
                self.client, "GET", f"{self.base_url}/sessions/{session_id}/stream", params=params, timeout=timeout
            ) as source:
                if source.response.status_code >= 400:
                    await source.response.aread()
                    raise ServiceError(
                        f"stream {session_id}: {source.response.status_code} {_detail(source.response)}",
                        status=source.response.status_code,
                    )
                async for sse in source.aiter_sse():
                    if not sse.data:
                        continue
                    try:
                        frame = json.loads(sse.data)
                    except ValueError:
                        continue
                    if isinstance(frame, dict):
                        yield frame
        except httpx.HTTPError as exc:
            raise ServiceError(
                f"The stream of session {session_id} broke: {type(exc).__name__} {exc}".rstrip()
            ) from None

    # -- acting --------------------------------------------------------------
    async def chat(self, agent_id: str, session_id: str, inp: Any) -> dict[str, Any]:
        """``POST /chat/`` with ``input`` (a ``Msg``, a ``UserConfirmResultEvent``
        or an ``ExternalExecutionResultEvent`` as JSON). 200 means it parsed."""
        return await self.request("POST", "/chat/", json={"agent_id": agent_id, "session_id": session_id, "input": inp})

    async def interrupt(self, agent_id: str, session_id: str) -> None:
        """``POST /sessions/{id}/interrupt`` (202)."""
        await self.request("POST", f"/sessions/{session_id}/interrupt", params={"agent_id": agent_id})

    # -- set-up (demos, tests) -------------------------------------------------
    async def create_credential(self, base_url: str, api_key: str = "offline") -> str:
        """``POST /credential/`` an ``openai_credential`` with ``base_url``; its id."""
        body = await self.request(
            "POST",
            "/credential/",
            json={"data": {"type": "openai_credential", "api_key": api_key, "base_url": base_url}},
        )
        return str(body.get("credential_id") or body.get("id"))

    async def create_agent(self, name: str, system_prompt: str = "You are a helpful assistant.") -> str:
        """``POST /agent/``; the agent's id."""
        body = await self.request("POST", "/agent/", json={"name": name, "system_prompt": system_prompt})
        return str(body.get("agent_id") or body.get("id"))

    async def create_session(
        self,
        agent_id: str,
        credential_id: str,
        *,
        model: str = "fake",
        name: str | None = None,
        workspace_id: str | None = None,
    ) -> str:
        """``POST /sessions/`` with an ``openai_chat`` model config; the session id.

        One session per (user, agent, workspace): a distinct ``workspace_id``
        gives the same agent another session.
        """
        payload: dict[str, Any] = {
            "agent_id": agent_id,
            "chat_model_config": {
                "type": "openai_credential",
                "credential_id": credential_id,
                "model": model,
                "model_class": "openai_chat",
                "parameters": {},
            },
        }
        if name is not None:
            payload["name"] = name
        if workspace_id is not None:
            payload["workspace_id"] = workspace_id
        body = await self.request("POST", "/sessions/", json=payload)
        return str(body["session_id"])
