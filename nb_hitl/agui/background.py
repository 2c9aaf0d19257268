"""Run an ASGI app (an :class:`~nb_hitl.agui.server.AguiServer`) with uvicorn
in a background thread, from a notebook or a test.

:func:`serve_in_background` binds a loopback socket, starts uvicorn on its
own event loop in a daemon thread (the caller's loop, e.g. a kernel's, is
never touched) and returns a :class:`ServerHandle` with the endpoint's
``url`` and ``stop()``.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["ServerHandle", "serve_in_background"]


@dataclass
class ServerHandle:
    """A uvicorn server running in a background thread.

    Attributes:
        url: the AG-UI endpoint, ``http://127.0.0.1:<port><path>``.
        host: the loopback address served.
        port: the port (chosen by the OS when 0 was asked).
    """

    url: str
    host: str
    port: int
    server: Any
    thread: threading.Thread
    sock: socket.socket

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
    config = uvicorn.Config(app, log_level=log_level, lifespan="off", loop="asyncio", access_log=False)
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
    return ServerHandle(
        url=f"http://{shown}:{bound_port}{path}", host=host, port=bound_port, server=server, thread=thread, sock=sock
    )
