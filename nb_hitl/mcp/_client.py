"""AgentScope's ``MCPClient``, with the MCP SDK's elicitation and sampling callbacks.

AgentScope 2.0.11 builds ``mcp.Client(transport, mode="auto")`` with no
elicitation callback (``MCPClient._create_sdk_client``), so a server asking
the user fails the tool call. :class:`AskingMCPClient` is that same class
building the SDK client with :meth:`AskingMCPClient.on_elicitation` as its
``elicitation_callback``, in either protocol mode of the SDK 2.3:

* ``mode="legacy"`` (initialize handshake): the server sends a standalone
  ``elicitation/create`` request while the tool runs; the SDK calls the
  callback from its receive loop.
* ``mode="auto"`` (the current protocol when the server has it): the server
  returns an input-required result; the SDK's ``Client.call_tool`` runs its
  input-required driver (``mcp.client._input_required``), which dispatches
  each embedded request through the same callback
  (``ClientSession.dispatch_input_request``) and retries the call with the
  answers.

The callback finds the running tool call (:data:`nb_hitl._agentscope.RUNNING_CALL`,
set by the Session around every tool call; on a legacy connection the
callback runs outside the call's task, so the client keeps the calls it has
in flight) and asks the person through :func:`nb_hitl.mcp._ask.ask_person`.
A sampling request (``sampling/createMessage``) takes the same two roads to
:meth:`AskingMCPClient.on_sampling`: the person reviews the request, the
agent's own model answers, the person reviews the answer
(:mod:`nb_hitl.mcp._sampling`).
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from typing import Any, Literal

import mcp
import mcp_types as types
from agentscope.mcp import MCPClient, StdioMCPConfig
from agentscope.message import ToolCallBlock
from mcp import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from pydantic import PrivateAttr

from .._agentscope import RUNNING_CALL
from ._ask import ask_person, session_of
from ._sampling import review_sampling
from ._shutdown import watch_kernel_shutdown

__all__ = ["AskingMCPClient"]

log = logging.getLogger("nb_hitl.mcp")


class _SDKClient(mcp.Client):
    """The MCP SDK's ``Client``, noting which AgentScope tool call each
    ``call_tool`` serves (for a legacy connection's callback)."""

    in_flight: list[tuple[Any, Any] | None]

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None, *args: Any, **kwargs: Any) -> Any:
        running = RUNNING_CALL.get()  # None: a call outside a Session's agent
        self.in_flight.append(running)
        try:
            return await super().call_tool(name, arguments, *args, **kwargs)
        finally:
            self.in_flight.remove(running)


def _process_stderr() -> Any:
    """A stream with a file descriptor for a subprocess's stderr: the
    process's own (``sys.__stderr__``), else ``sys.stderr`` when it has one,
    else ``subprocess.DEVNULL``."""
    for stream in (sys.__stderr__, sys.stderr):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (OSError, ValueError, AttributeError):
            continue
    return subprocess.DEVNULL


async def _closed(session: Any, interval: float) -> str:
    """Return (the reason) once the connection of ``session`` (the SDK's
    ``ClientSession``) is closed: a ping every ``interval`` seconds; a ping
    failing with ``CONNECTION_CLOSED`` ends it. Other failures keep waiting
    (a server that does not answer pings is not taken for a stopped one)."""
    while True:
        await asyncio.sleep(interval)
        try:
            await session.send_ping()
        except MCPError as exc:
            if exc.error.code == types.CONNECTION_CLOSED:
                return exc.error.message
        except Exception:
            log.debug("a ping while asking failed", exc_info=True)


class AskingMCPClient(MCPClient):
    """AgentScope's ``MCPClient`` whose servers may ask the person (MCP elicitation, form and URL modes)
    and the notebook's model, reviewed by the person (MCP sampling).

    Use it as AgentScope's: ``await client.connect()``, ``await
    client.list_tools()`` into the agent's ``Toolkit``, ``await
    client.close()``. A server's question while a tool runs under an
    nb_hitl :class:`~nb_hitl.session.Session` becomes a card of kind
    ``elicitation`` under the reply; the tool's result (what the server made
    of the answer) is what the model reads.

    Args (besides AgentScope's):
        mode: the SDK's protocol negotiation, ``"auto"`` (AgentScope's
            choice: the current protocol, input-required results) or
            ``"legacy"`` (the initialize handshake, server-sent requests).

    In a Jupyter kernel that is shut down or restarted (not killed), the
    requests still waiting for a person are answered with an MCP error first
    (:mod:`nb_hitl.mcp._shutdown`), so the server's tool does not wait for ever.

    A question that no person can answer (the tool runs outside a Session,
    or, on a legacy connection, two calls of this client are in flight and
    the question cannot be told apart) gets an MCP error, not an invented
    answer.

    URL mode (the server sends the person to a page: a sign-in, a payment):
    the card shows the address as text, with its host set apart, opens it
    only when the person clicks (a new tab, no opener), then takes "Done"
    (MCP's ``accept``) or "Decline". The address is never passed to the
    model: the server reads which answer it was, and the model the tool's
    result (which the server writes).
    """

    mode: Literal["auto", "legacy"] = "auto"
    watch_interval: float = 2.0
    """Seconds between the pings that tell whether the server still answers while
    a person is asked (on the current protocol the server holds no request open,
    so a server that stopped is noticed only this way)."""
    _in_flight: list[tuple[Any, Any] | None] = PrivateAttr(default_factory=list)

    def _create_stdio_transport(self) -> Any:
        """AgentScope's stdio transport, with the server's stderr on the
        process's own stderr (``sys.__stderr__``).

        The SDK's ``stdio_client`` takes ``errlog=sys.stderr`` as bound when
        ``mcp.client.stdio`` was imported; in a Jupyter kernel that is the
        kernel's output stream, which has no file descriptor, and starting
        the server fails with ``UnsupportedOperation: fileno``. The
        parameters are AgentScope's (``MCPClient._create_stdio_transport``).
        """
        config = self.mcp_config
        assert isinstance(config, StdioMCPConfig)
        params = StdioServerParameters(
            command=config.command,
            args=config.args or [],
            env=config.env,
            cwd=str(config.cwd) if config.cwd else None,
            encoding="utf-8",
            encoding_error_handler=config.encoding_error_handler,
        )
        return stdio_client(params, errlog=_process_stderr())

    def _create_sdk_client(self) -> mcp.Client:
        """AgentScope's transport choice, the SDK client with the callbacks and ``mode``."""
        if self.mcp_config.type == "stdio_mcp":
            transport = self._create_stdio_transport()
        else:
            transport = self._create_http_client()
        client = _SDKClient(
            transport, mode=self.mode, elicitation_callback=self.on_elicitation, sampling_callback=self.on_sampling
        )
        client.in_flight = self._in_flight
        watch_kernel_shutdown(self)  # a kernel shutting down answers this client's waiting requests
        return client

    def _asker(self, what: str) -> tuple[Any, Any, ToolCallBlock] | types.ErrorData:
        """``(session, agent, tool_call)`` of the running call a server's request is about,
        or the MCP error saying nobody can answer ``what``."""
        running = RUNNING_CALL.get()  # the current protocol: the callback runs in the call's task
        if running is None:
            calls = list(self._in_flight)  # legacy: from the SDK's receive loop
            if len(calls) > 1:
                return self._nobody(what, "several calls of this client are in flight and the request names none")
            running = calls[0] if calls else None
        session = session_of(running[0]) if running is not None else None
        if running is None or session is None:
            return self._nobody(what, "the tool does not run for an agent an nb_hitl Session drives")
        return session, running[0], running[1]

    def _nobody(self, what: str, why: str) -> types.ErrorData:
        log.warning("MCP server %r asked, but %s: answered with an error", self.name, why)
        return types.ErrorData(code=types.INVALID_REQUEST, message=f"No person can answer {what}: {why}.")

    async def on_elicitation(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """The SDK's ``elicitation_callback`` (both protocol modes).

        Returns:
            the person's ``ElicitResult`` (``cancel`` when the pause ended
            unanswered), or ``ErrorData`` when nobody can be asked.
        """
        found = self._asker("this question")
        if isinstance(found, types.ErrorData):
            return found
        session, agent, tool_call = found
        return await ask_person(
            session,
            agent,
            tool_call,
            server=self.name,
            message=params.message,
            schema=params.requested_schema if isinstance(params, types.ElicitRequestFormParams) else None,
            url=params.url if isinstance(params, types.ElicitRequestURLParams) else None,
            gone=lambda: _closed(context.session, self.watch_interval),
        )

    async def on_sampling(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        """The SDK's ``sampling_callback`` (both protocol modes): the person reviews the
        request, the agent's own model answers, the person reviews the answer
        (:func:`nb_hitl.mcp._sampling.review_sampling`).

        Returns:
            the reviewed ``CreateMessageResult``, or ``ErrorData`` (denied,
            unanswered, the model failed, nobody can be asked).
        """
        found = self._asker("this sampling request")
        if isinstance(found, types.ErrorData):
            return found
        session, agent, tool_call = found
        return await review_sampling(
            session,
            agent,
            tool_call,
            server=self.name,
            params=params,
            gone=lambda: _closed(context.session, self.watch_interval),
        )
