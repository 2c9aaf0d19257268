"""A local one-process AgentScope service for demos: ``python -m nb_hitl.service.embedded --port 8000``.

Storage is SQLite (``AsyncSQLAlchemyStorage`` over ``aiosqlite``) and the bus
is AgentScope's ``InMemoryMessageBus`` (single process only, which is all a
demo needs). The offline model server is mounted on the same port under
``/fake-openai``, so the credential's ``base_url`` is
``http://127.0.0.1:<port>/fake-openai/v1`` and AgentScope's real
``OpenAIChatModel`` talks to it over loopback.

:class:`ServiceProcess` starts a service (embedded, or a scale-out worker
with other settings) as a child process and waits until ``/health``
answers; the notebook, the tests and the benchmark use it.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

__all__ = ["ServiceProcess", "LocalRedis", "free_port", "fake_model_url", "main"]

FAKE_MODEL_PATH = "/fake-openai"


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fake_model_url(service_url: str) -> str:
    """The OpenAI ``base_url`` of the fake model mounted in an embedded service."""
    return service_url.rstrip("/") + FAKE_MODEL_PATH + "/v1"


def _fake_model_app() -> object:
    from .script import fake_model_app

    return fake_model_app()


class LocalRedis:
    """A throw-away ``redis-server`` on 127.0.0.1 (no persistence) for the
    service's message bus: with it the one-process service publishes its
    events where a console can follow them all over one connection.

    Attributes:
        url: ``redis://127.0.0.1:<port>/0`` once started.
        available: ``redis-server`` is installed.
    """

    def __init__(self, port: int | None = None) -> None:
        import shutil

        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.exe = shutil.which("redis-server")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def available(self) -> bool:
        """``redis-server`` is on the PATH."""
        return self.exe is not None

    def start(self, timeout: float = 20.0) -> LocalRedis:
        """Start it and wait until it accepts connections.

        Raises:
            RuntimeError: ``redis-server`` is not installed, exited, or did not answer within ``timeout`` s.
        """
        if self.exe is None:
            raise RuntimeError("redis-server is not installed (Debian: apt-get install redis-server).")
        args = ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen([self.exe, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited ({self.proc.returncode}).")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"redis-server did not answer within {timeout} s.")

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL after 10 s)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class ServiceProcess:
    """One service process on 127.0.0.1 (``uvicorn`` in a child process).

    Args:
        port: the port (``None``: a free one).
        data_dir: folder for the SQLite file, workspaces, ledger and log.
        storage: storage URL (default: SQLite in ``data_dir``).
        bus: ``memory`` (default) or ``redis://host:port/db``.
        scheduler: ``enable_scheduler`` for this process.
        embedded: also serve the fake model under ``/fake-openai``.
        env: extra environment variables.

    Attributes:
        url: ``http://127.0.0.1:<port>``.
        ledger: the file ``write_note`` appends to (one JSON line per run).
        log_path: the process's stdout and stderr.
    """

    def __init__(
        self,
        port: int | None = None,
        data_dir: str | os.PathLike[str] = "nb_hitl_service",
        *,
        storage: str | None = None,
        bus: str = "memory",
        scheduler: bool = True,
        embedded: bool = True,
        env: dict[str, str] | None = None,
    ) -> None:
        self._auto_port = port is None
        self.port = port or free_port()
        self.data_dir = Path(data_dir).absolute()
        self.storage = storage or f"sqlite+aiosqlite:///{self.data_dir / 'service.db'}"
        self.bus = bus
        self.scheduler = scheduler
        self.embedded = embedded
        self.extra_env = env or {}
        self.url = f"http://127.0.0.1:{self.port}"
        self.ledger = self.data_dir / "ledger.jsonl"
        self.log_path = self.data_dir / f"service-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        """The command line of the child process."""
        return [
            sys.executable,
            "-m",
            "nb_hitl.service.embedded",
            "--port",
            str(self.port),
            "--data-dir",
            str(self.data_dir),
        ] + ([] if self.embedded else ["--no-fake-model"])

    def start(self, timeout: float = 60.0) -> ServiceProcess:
        """Start the process and wait for ``GET /health``.

        A port picked by the OS may be taken again before the child binds it
        (another process's outgoing connection): then a new port is picked,
        at most three times.

        Raises:
            RuntimeError: it exited or did not answer within ``timeout`` s
                (the message holds the end of its log).
        """
        for attempt in range(3):
            try:
                return self._start(timeout)
            except RuntimeError:
                if not (self._auto_port and attempt < 2 and "address already in use" in self.log_tail(600)):
                    raise
                self.port = free_port()
                self.url = f"http://127.0.0.1:{self.port}"
                self.log_path = self.data_dir / f"service-{self.port}.log"
        raise AssertionError("unreachable")

    async def astart(self, timeout: float = 60.0) -> ServiceProcess:
        """:meth:`start` without blocking the event loop (for a notebook cell:
        ``await ServiceProcess(...).astart()``); same errors."""
        import asyncio

        self._spawn()
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=2) as client:
            while time.monotonic() < deadline:
                assert self.proc is not None
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the service exited ({self.proc.returncode}):\n{self.log_tail()}")
                try:
                    if (await client.get(self.url + "/health", headers={"X-User-ID": "health"})).status_code < 500:
                        return self
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.25)
        self.stop()
        raise RuntimeError(f"the service did not answer /health within {timeout} s:\n{self.log_tail()}")

    def _spawn(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "NB_HITL_SERVICE_STORAGE": self.storage,
            "NB_HITL_SERVICE_BUS": self.bus,
            "NB_HITL_SERVICE_WORKSPACES": str(self.data_dir / "workspaces"),
            "NB_HITL_SERVICE_SCHEDULER": "1" if self.scheduler else "0",
            "NB_HITL_SERVICE_LEDGER": str(self.ledger),
            **self.extra_env,
        }
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=env)
        log.close()

    def _start(self, timeout: float) -> ServiceProcess:
        self._spawn()
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the service exited ({self.proc.returncode}):\n{self.log_tail()}")
            try:
                if httpx.get(self.url + "/health", headers={"X-User-ID": "health"}, timeout=2).status_code < 500:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"the service did not answer /health within {timeout} s:\n{self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the process's log."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    @property
    def alive(self) -> bool:
        """True while the child process runs."""
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the process (a crashed worker) and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """Serve AgentScope's service on 127.0.0.1 (see the module docstring).

    Settings not given on the command line come from ``NB_HITL_SERVICE_*``
    (see :func:`nb_hitl.service.app.app_from_env`); the defaults make the
    embedded service: SQLite in ``--data-dir``, the in-memory bus, the fake
    model under ``/fake-openai``.
    """
    import uvicorn

    from .app import build_app
    from .required import policies_from_env

    parser = argparse.ArgumentParser(description="nb_hitl's local AgentScope service")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--data-dir", default="nb_hitl_service")
    parser.add_argument("--no-fake-model", action="store_true", help="do not mount the fake model")
    args = parser.parse_args(argv)
    data = Path(args.data_dir).absolute()
    data.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("NB_HITL_SERVICE_LEDGER", str(data / "ledger.jsonl"))
    app = build_app(
        os.environ.get("NB_HITL_SERVICE_STORAGE") or f"sqlite+aiosqlite:///{data / 'service.db'}",
        os.environ.get("NB_HITL_SERVICE_BUS", "memory"),
        os.environ.get("NB_HITL_SERVICE_WORKSPACES") or str(data / "workspaces"),
        scheduler=os.environ.get("NB_HITL_SERVICE_SCHEDULER", "1") == "1",
        extra_routes=[] if args.no_fake_model else [(FAKE_MODEL_PATH, _fake_model_app())],
        policies=policies_from_env(),
    )
    print(f"nb_hitl service on http://127.0.0.1:{args.port}", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
