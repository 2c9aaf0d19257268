"""Run an ASGI app (an :class:`~nb_hitl.agui.server.AguiServer`) with uvicorn
in a background thread, from a notebook or a test.

:func:`serve_in_background` binds a loopback socket, starts uvicorn on its
own event loop in a daemon thread (the caller's loop, e.g. a kernel's, is
never touched) and returns a :class:`ServerHandle` with the endpoint's
``url``, ``token`` and ``stop()``. :func:`serve` runs in the foreground (a
command line). Both use uvicorn's h11 protocol with a header-read and a
body-read timeout (:func:`timed_h11`), ``timeout_keep_alive`` and
``h11_max_incomplete_event_size`` against slow clients.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["ServerHandle", "serve", "serve_in_background", "timed_h11", "uvicorn_config"]


@dataclass
class ServerHandle:
    """A uvicorn server running in a background thread.

    Attributes:
        url: the AG-UI endpoint, ``http://127.0.0.1:<port><path>``.
        host: the loopback address served.
        port: the port (chosen by the OS when 0 was asked).
        token: the app's token (:attr:`AguiServer.token`), for clients.
    """

    url: str
    host: str
    port: int
    server: Any
    thread: threading.Thread
    sock: socket.socket
    token: str | None = None

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to exit and wait for its thread (idempotent)."""
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(timeout)
        try:
            self.sock.close()
        except OSError:
            pass

    @property
    def running(self) -> bool:
        """True while the server thread serves."""
        return self.thread.is_alive() and bool(self.server.started)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_in_background(
    app: Any,
    port: int = 0,
    *,
    host: str = "127.0.0.1",
    log_level: str = "warning",
    startup_timeout: float = 30.0,
    header_timeout: float = 10.0,
    keep_alive: int = 5,
    body_timeout: float | None = None,
    announce: bool = True,
) -> ServerHandle:
    """Serve an ASGI app with uvicorn in a daemon thread (its own event loop;
    the caller's loop, e.g. a notebook kernel's, is never touched).

    Args:
        app: the ASGI app (an :class:`AguiServer`, or any other).
        port: the TCP port; 0 lets the OS choose a free one.
        host: a loopback address (``127.0.0.1``, ``::1``): the endpoint has
            no authentication and drives an agent that may run tools.
        log_level: uvicorn's log level.
        startup_timeout: seconds to wait for uvicorn to start.
        header_timeout: seconds a connection may take to send its request
            line and headers (slow clients are dropped).
        keep_alive: uvicorn's ``timeout_keep_alive`` (idle seconds).
        body_timeout: seconds a request body may take after its headers
            (see :func:`timed_h11`); default: the app's ``limits.body_timeout``
            (an :class:`AguiServer`'s), else 30.
        announce: print the endpoint and a generated token (as Jupyter does).

    Returns:
        ServerHandle: ``.url`` (with the app's ``path`` when it is an
        :class:`AguiServer`) and ``.stop()``.

    Raises:
        ValueError: ``host`` is not a loopback address.
        RuntimeError: uvicorn did not start in time (its thread died or hung).
    """
    import uvicorn

    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        raise ValueError(f"serve_in_background only serves on loopback, not {host!r}.")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    bound_port = sock.getsockname()[1]
    config = uvicorn_config(
        app, log_level=log_level, header_timeout=header_timeout, keep_alive=keep_alive, body_timeout=body_timeout
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"nb_hitl-agui-{bound_port}", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive():
            sock.close()
            raise RuntimeError("uvicorn stopped before it started serving; see its log.")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"uvicorn did not start within {startup_timeout} s.")
        time.sleep(0.01)
    path = getattr(app, "path", "/")
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    token = getattr(app, "token", None)
    handle = ServerHandle(
        url=f"http://{shown}:{bound_port}{path}",
        host=host,
        port=bound_port,
        server=server,
        thread=thread,
        sock=sock,
        token=token,
    )
    links = getattr(app, "links", None)  # an AguiServer's approval links: made for this address
    if links is not None and getattr(links, "base_url", 0) is None:
        links.base_url = handle.url
    if announce and token and getattr(app, "token_generated", False):
        print(f"AG-UI server at {handle.url} (token: {token}; send it as 'Authorization: Bearer <token>')")
    return handle


def serve(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    log_level: str = "info",
    header_timeout: float = 10.0,
    keep_alive: int = 5,
) -> None:
    """Serve ``app`` with uvicorn in the foreground (a command line), with
    the slow-client limits of :func:`uvicorn_config`.

    Raises:
        ValueError: ``host`` is not loopback and the app checks no token
            and has no auth hook (anyone on the network could run the agent).
    """
    import uvicorn

    access = getattr(app, "access", None)
    guarded = access is not None and (access.token is not None or access.auth is not None)
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback and not guarded:
        raise ValueError(f"Refusing to serve on {host!r} without a token or an auth hook.")
    config = uvicorn_config(app, log_level=log_level, header_timeout=header_timeout, keep_alive=keep_alive)
    config.host, config.port = host, port
    uvicorn.Server(config).run()


BODY_GRACE = 1.0
"""Seconds past ``body_timeout`` before the protocol closes a connection
whose body is still arriving: the endpoint's own 408 is written first."""


def uvicorn_config(
    app: Any,
    *,
    log_level: str = "warning",
    header_timeout: float = 10.0,
    keep_alive: int = 5,
    body_timeout: float | None = None,
) -> Any:
    """A ``uvicorn.Config`` for ``app`` with the slow-client limits: the
    h11 protocol with header and body read timeouts (:func:`timed_h11`;
    ``body_timeout`` defaults to the app's ``limits.body_timeout``, else 30),
    ``timeout_keep_alive`` for idle connections and
    ``h11_max_incomplete_event_size`` for request lines and headers."""
    import uvicorn

    if body_timeout is None:
        limits = getattr(app, "limits", None)
        body_timeout = float(getattr(limits, "body_timeout", 30.0))

    return uvicorn.Config(
        app,
        log_level=log_level,
        lifespan="off",
        loop="asyncio",
        access_log=False,
        http=timed_h11(header_timeout, body_timeout + BODY_GRACE),
        timeout_keep_alive=keep_alive,
        h11_max_incomplete_event_size=64 * 1024,
    )


def timed_h11(header_timeout: float, body_timeout: float | None = None) -> type:
    """uvicorn's h11 protocol with read deadlines uvicorn does not have.

    * Headers: a request's line and headers must all arrive within
      ``header_timeout`` seconds of the connection opening, or of the
      previous response on a kept-alive connection.
    * Body: a request's body must all arrive within ``body_timeout`` seconds
      of its headers (``None``: no limit). The AG-UI endpoint answers 408 at
      its own ``body_timeout`` (:func:`~nb_hitl.agui.http.read_body`); this
      closes every other connection still receiving a body: a 404 or 405 is
      answered without reading it, and uvicorn's keep-alive timer restarts
      with every byte received, so a client trickling a body to an unknown
      path would hold the connection forever.

    Either deadline passed, the connection is closed.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class TimedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _body_timer: asyncio.TimerHandle | None = None
        _before: Any = None  # the cycle before the request awaited (None: the first)

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._await_headers()

        def _await_headers(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
            self._before = self.cycle
            self._header_timer = self.loop.call_later(header_timeout, self._headers_too_slow)

        def handle_events(self) -> None:
            super().handle_events()
            if self._header_timer is not None and self.cycle is not self._before:
                self._header_timer.cancel()  # a new request's headers are in
                self._header_timer = None
                if body_timeout is not None and self.conn.their_state is h11.SEND_BODY:
                    self._body_timer = self.loop.call_later(body_timeout, self._body_too_slow)
            if self._body_timer is not None and self.conn.their_state is not h11.SEND_BODY:
                self._body_timer.cancel()
                self._body_timer = None

        def on_response_complete(self) -> None:
            if not self.transport.is_closing():
                self._await_headers()  # the next request on this connection, if any
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            for timer in (self._header_timer, self._body_timer):
                if timer is not None:
                    timer.cancel()
            super().connection_lost(exc)

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if self.cycle is self._before and not self.transport.is_closing():
                self.transport.close()

        def _body_too_slow(self) -> None:
            self._body_timer = None
            if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
                self.transport.close()

    return TimedH11Protocol
