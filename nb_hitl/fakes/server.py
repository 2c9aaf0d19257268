"""The running part shared by the fake model servers: uvicorn in a thread.

:class:`FakeModelServer` serves a Starlette app on ``127.0.0.1`` with
uvicorn in a background thread (``with Server(script) as srv: srv.base_url``)
and records every request body. Each provider module (``openai``,
``dashscope``, ``ollama``) subclasses it with its routes and wire format.
:func:`serve_main` is the ``python -m nb_hitl.fakes.<provider>`` entry point
for running one as a subprocess. Only loopback addresses are served.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import socket
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .script import FakeScriptItem, ScriptPlayer

__all__ = ["FakeModelServer", "serve_main", "load_script"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class FakeModelServer(ABC):
    """A fake model API on 127.0.0.1, answering from a script.

    Use it as a context manager (it starts and stops itself)::

        with FakeOpenAIServer([Turn("hi")]) as srv:
            model = OpenAIChatModel(OpenAICredential(api_key=srv.api_key, base_url=srv.base_url), "gpt-4o-mini")

    Args:
        script: the turns, one per request (see
            :data:`nb_hitl.fakes.script.FakeScriptItem`).
        api_key: the only key accepted; any other gets HTTP 401 in the
            provider's error shape. ``None`` accepts any key.
        delay: seconds to wait before answering each request (time to first
            byte), e.g. to test a spinner or a client timeout.
        chunk_delay: seconds between streamed chunks.
        on_exhausted: ``"text"`` or ``"raise"`` (HTTP 400), see
            :class:`~nb_hitl.fakes.script.ScriptPlayer`.
        host: a loopback address (``127.0.0.1`` by default).
        port: the port; ``0`` (default) picks a free one.
        model: the model name reported in responses.

    Attributes:
        requests: every request body received (``list[dict]``), in order,
            including refused ones.
        player: the :class:`ScriptPlayer` (its ``messages`` are the wire
            messages of the played requests).

    Raises:
        ValueError: ``host`` is not a loopback address.
    """

    #: the path under the server's root that the provider's client is given as its base URL
    base_path: ClassVar[str] = ""

    def __init__(
        self,
        script: Sequence[FakeScriptItem],
        *,
        api_key: str | None = "sk-fake",
        delay: float = 0.0,
        chunk_delay: float = 0.0,
        on_exhausted: str = "text",
        host: str = "127.0.0.1",
        port: int = 0,
        model: str = "fake-model",
    ) -> None:
        if host not in _LOOPBACK:
            raise ValueError(f"a fake model server only listens on loopback, not {host!r}")
        self.player = ScriptPlayer(script, on_exhausted=on_exhausted)
        self.api_key = api_key
        self.delay = delay
        self.chunk_delay = chunk_delay
        self.host = host
        self.port = port
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    # -- provider hooks ---------------------------------------------------
    @abstractmethod
    def routes(self) -> list[Route]:
        """The provider's routes (each provider's subclass gives them)."""

    def app(self) -> Starlette:
        """The Starlette app serving :meth:`routes`."""
        return Starlette(routes=self.routes())

    def presented_key(self, request: Request) -> str | None:
        """The API key a request carries (default: ``Authorization: Bearer <key>``)."""
        auth = request.headers.get("authorization", "")
        return auth[7:] if auth.lower().startswith("bearer ") else None

    def unauthorized(self, key: str | None) -> Response:
        """The provider's 401 answer (subclasses override for its shape)."""
        return JSONResponse({"error": "unauthorized"}, status_code=401)

    def authorized(self, request: Request) -> bool:
        """Whether the request's key is the accepted one (always, when ``api_key`` is ``None``)."""
        return self.api_key is None or self.presented_key(request) == self.api_key

    async def pause(self, seconds: float) -> None:
        """Sleep ``seconds`` when positive (the ``delay``/``chunk_delay`` modes)."""
        if seconds > 0:
            await asyncio.sleep(seconds)

    # -- addresses --------------------------------------------------------
    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``: the server's root (after :meth:`start`)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The URL the provider's client takes as its base URL (root + :attr:`base_path`)."""
        return self.url + self.base_path

    # -- running ----------------------------------------------------------
    def start(self, timeout: float = 10.0) -> FakeModelServer:
        """Start serving in a daemon thread; returns ``self`` once it accepts connections.

        Raises:
            RuntimeError: already started, or uvicorn did not start within ``timeout`` seconds.
        """
        if self._thread is not None:
            raise RuntimeError("this fake server is already running")
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        self._socket = sock
        config = uvicorn.Config(
            self.app(), log_level="warning", lifespan="off", timeout_graceful_shutdown=2, access_log=False
        )
        server = uvicorn.Server(config)
        self._server = server
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name=f"{type(self).__name__}:{self.port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{type(self).__name__} did not start on {self.url}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread (open streams get ~2 s to finish)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def load_script(spec: str) -> list[FakeScriptItem]:
    """Load a script from ``"package.module:name"``.

    ``name`` is a list of items, or a callable taking no argument that returns one.

    Raises:
        ValueError: ``spec`` has no ``:``, or names something that is not a list.
        ImportError / AttributeError: the module or the name does not exist.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--script takes 'module:name', got {spec!r}")
    obj = getattr(importlib.import_module(module_name), attr)
    if callable(obj) and not isinstance(obj, list):
        obj = obj()
    if not isinstance(obj, list | tuple):
        raise ValueError(f"{spec} gave {type(obj).__name__}, expected a list of turns")
    return list(obj)


def serve_main(
    server_cls: type[FakeModelServer],
    argv: Sequence[str] | None = None,
    default_port: int = 0,
    default_api_key: str = "sk-fake",
) -> int:
    """``python -m nb_hitl.fakes.<provider>``: serve a script until stopped.

    Prints one line, ``<base_url>``, on stdout once the port is bound, so a
    parent process can read where to connect (useful with ``--port 0``).
    """
    parser = argparse.ArgumentParser(prog=f"python -m {server_cls.__module__}", description=server_cls.__doc__)
    parser.add_argument("--host", default="127.0.0.1", help="loopback address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=default_port, help="port; 0 picks a free one")
    parser.add_argument("--script", default="nb_hitl.fakes.examples:hello", help="module:name of the script")
    parser.add_argument("--api-key", default=default_api_key, help="the only key accepted ('' accepts any)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between streamed chunks")
    parser.add_argument("--model", default="fake-model", help="model name reported in responses")
    parser.add_argument("--on-exhausted", choices=["text", "raise"], default="text")
    args = parser.parse_args(argv)
    server = server_cls(
        load_script(args.script),
        api_key=args.api_key or None,
        delay=args.delay,
        chunk_delay=args.chunk_delay,
        on_exhausted=args.on_exhausted,
        host=args.host,
        port=args.port,
        model=args.model,
    )
    server.start()
    print(server.base_url, flush=True)
    try:
        assert server._thread is not None
        while server._thread.is_alive():
            server._thread.join(timeout=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run python -m nb_hitl.fakes.openai (or .dashscope, .ollama)")
