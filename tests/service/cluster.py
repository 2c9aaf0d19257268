"""Real servers for the service-console tests: Redis, PostgreSQL 15, the fake
model and AgentScope workers, each a child process on a free loopback port.

PostgreSQL refuses to run as root: when the tests run as root the cluster is
made and started as the ``postgres`` user (``runuser``) in a folder that
user owns; otherwise as the current user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from nb_hitl.service.embedded import ServiceProcess, free_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _wait(predicate, what: str, timeout: float) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


class RedisServer:
    """``redis-server`` without persistence on 127.0.0.1."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.folder = folder
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        exe = shutil.which("redis-server")
        if exe is None:
            raise RuntimeError("redis-server is not installed: run .ci/install-services")
        self.proc = subprocess.Popen(
            [
                exe,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.folder),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        client = redis.Redis(host="127.0.0.1", port=self.port)

        def up() -> bool:
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        _wait(up, "redis-server", 20)
        return self

    def client(self):  # type: ignore[no-untyped-def]
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def restart(self) -> None:
        """Stop redis-server and start it again on the same port (no
        persistence: what it held is gone, as after a crash)."""
        self.stop()
        self.start()


class PostgresServer:
    """A throw-away PostgreSQL 15 cluster (``initdb`` + ``pg_ctl``) with database ``nbhitl``."""

    def __init__(self) -> None:
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="nbh-pg-"))
        self.data = self.folder / "data"
        self.as_postgres = os.geteuid() == 0
        self.url = f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/nbhitl"

    def _run(self, *args: str) -> None:
        cmd = (["runuser", "-u", "postgres", "--"] if self.as_postgres else []) + list(args)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)

    def start(self) -> PostgresServer:
        if not (PG_BIN / "initdb").exists():
            raise RuntimeError("PostgreSQL 15 is not installed: run .ci/install-services")
        if self.as_postgres:
            shutil.chown(self.folder, user="postgres")
        self._run(str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        self._pg_start()
        subprocess.run(
            [str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "nbhitl"],
            check=True,
            timeout=60,
        )
        return self

    def _pg_start(self) -> None:
        opts = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300"
        self._run(
            str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-o", opts, "-l", str(self.folder / "log"), "-w", "start"
        )

    def restart(self) -> None:
        """Stop PostgreSQL at once (``-m immediate``: every connection is cut,
        as in a crash) and start it again on the same port and data."""
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        self._pg_start()

    def stop(self) -> None:
        try:
            self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        except subprocess.SubprocessError:
            pass
        shutil.rmtree(self.folder, ignore_errors=True)


class FakeModel:
    """nb_hitl's fake OpenAI server playing the service script, on a free port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> FakeModel:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "nb_hitl.fakes.openai",
                "--port",
                str(self.port),
                "--script",
                "nb_hitl.service.script:directives",
                "--api-key",
                "",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        def up() -> bool:
            try:
                return httpx.get(self.base_url + "/models", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        _wait(up, "the fake model", 120)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


class Cluster:
    """Two AgentScope workers (A with the scheduler, B without) on one Redis bus,
    storage in PostgreSQL, one shared data folder (workspaces, tool ledger,
    ``sandboxes/<user>``: the demo's sandbox tools for a user who has one).
    ``env``: more settings of both workers; ``bus_db``: the Redis database of
    their bus (another pair on the same Redis takes none of their work)."""

    def __init__(
        self,
        redis: RedisServer,
        pg: PostgresServer,
        model: FakeModel,
        folder: Path,
        *,
        env: dict[str, str] | None = None,
        bus_db: int = 0,
    ) -> None:
        self.redis = redis
        self.pg = pg
        self.model = model
        self.folder = folder
        self.env = env or {}
        self.bus = f"redis://127.0.0.1:{redis.port}/{bus_db}"
        self.a = self._worker(scheduler=True)
        self.b = self._worker(scheduler=False)

    def _worker(self, scheduler: bool, port: int | None = None) -> ServiceProcess:
        return ServiceProcess(
            port,
            self.folder,
            storage=self.pg.url,
            bus=self.bus,
            scheduler=scheduler,
            embedded=False,
            env={"NB_HITL_SERVICE_SANDBOXES": str(self.sandboxes), **self.env},
        )

    @property
    def sandboxes(self) -> Path:
        """The folder of the users' sandboxes (``<user_id>/``, made by the test)."""
        return self.folder / "sandboxes"

    @property
    def ledger(self) -> Path:
        return self.a.ledger

    def notes(self, text: str) -> list[dict]:
        """Runs of ``write_note`` with this text (one JSON line each)."""
        import json

        if not self.ledger.exists():
            return []
        out = []
        for line in self.ledger.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("text") == text:
                out.append(rec)
        return out

    def start(self) -> Cluster:
        # one after the other: the first creates the tables (two at once race
        # on PostgreSQL's CREATE TABLE)
        try:
            self.a.start(timeout=120)
            self.b.start(timeout=120)
        except BaseException:
            self.stop()
            raise
        return self

    def revive(self) -> None:
        """Restart a worker that a test killed (same port, same settings)."""
        for name in ("a", "b"):
            w = getattr(self, name)
            if not w.alive:
                setattr(self, name, self._worker(w.scheduler, w.port).start(timeout=120))

    def restart_workers(self) -> None:
        """Stop both workers and start them again (same ports and settings),
        one after the other."""
        for name in ("a", "b"):
            w = getattr(self, name)
            w.stop()
            setattr(self, name, self._worker(w.scheduler, w.port).start(timeout=120))

    def worker_by_pid(self, pid: int) -> ServiceProcess | None:
        for w in (self.a, self.b):
            if w.proc is not None and w.proc.pid == pid:
                return w
        return None

    def stop(self) -> None:
        for w in (self.a, self.b):
            w.stop()


async def park_many(
    urls: list[str],
    model_url: str,
    user: str,
    n: int,
    agents: int = 10,
    *,
    ask_every: int = 0,
    prefix: str = "inbox",
    allow_failed: int = 0,
) -> list[tuple[str, str]]:
    """Park ``n`` sessions of ``user`` over ``agents`` agents (one workspace
    each: the service gives one session per user, agent and workspace), the
    chats posted through the workers in turn: ``write_note`` confirmations
    (text ``f"{prefix}-{session_id}"``), and an ``AskUser`` question for every
    ``ask_every``-th one. Returns ``[(agent_id, session_id)]`` of the parked
    ones once all are parked, or (with ``allow_failed``) once at most that
    many are missing and 20 s passed without one more parking.
    """
    import asyncio
    import json
    import uuid

    from nb_hitl.service.http import ServiceError, ServiceHTTP, user_msg_body

    https = [ServiceHTTP(u, user, timeout=60) for u in urls]
    first = https[0]
    cred = await first.create_credential(model_url)
    agent_ids = [await first.create_agent(f"agent-{i}") for i in range(agents)]
    limit = asyncio.Semaphore(8)

    async def make(i: int) -> tuple[str, str]:
        async with limit:
            aid = agent_ids[i % agents]
            sid = await first.create_session(aid, cred, name=f"s{i}", workspace_id=f"ws-{uuid.uuid4().hex[:10]}")
            return aid, sid

    sessions = list(await asyncio.gather(*(make(i) for i in range(n))))
    question = {
        "questions": [
            {
                "question": "Ship it?",
                "header": "Ship",
                "options": [{"label": "yes", "description": "ship"}, {"label": "no", "description": "wait"}],
            }
        ]
    }

    async def start(i: int, aid: str, sid: str) -> None:
        asks = ask_every and i % ask_every == ask_every - 1
        prompt = (
            ("call: AskUser " + json.dumps(question))
            if asks
            else ("call: write_note " + json.dumps({"text": f"{prefix}-{sid}"}))
        )
        async with limit:
            await https[i % len(https)].chat(aid, sid, user_msg_body(prompt))

    await asyncio.gather(*(start(i, a, s) for i, (a, s) in enumerate(sessions)))
    statuses: dict[str, str] = {}
    parked, still = 0, 0
    for _ in range(600):  # at most ~10 min on a loaded machine
        await asyncio.sleep(1.0)
        try:  # workers busy with hundreds of runs answer slowly: ask again
            statuses = {v["session"]["id"]: v["status"] for a in agent_ids for v in await first.list_sessions(a)}
        except ServiceError:
            continue
        now = sum(s.startswith("awaiting") for s in statuses.values())
        still = still + 1 if now == parked else 0
        parked = now
        if parked == n or (parked >= n - allow_failed and still >= 20):
            break
    else:
        raise RuntimeError(f"only {parked} of {n} sessions parked")
    # a loaded worker may fail to prepare a session (AgentScope's "setup" error): that chat ends idle
    sessions = [(a, s) for a, s in sessions if statuses.get(s, "").startswith("awaiting")]
    for h in https:
        await h.aclose()
    return sessions
