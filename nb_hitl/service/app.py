"""AgentScope's own service (``agentscope.app.create_app``), configured for nb_hitl.

One factory, :func:`build_app`, used both by the embedded one-process service
(:mod:`nb_hitl.service.embedded`: SQLite through ``aiosqlite`` and AgentScope's
``InMemoryMessageBus``) and by scale-out workers (uvicorn processes sharing a
``RedisMessageBus``, storage in PostgreSQL through ``asyncpg`` or in Redis).
:func:`app_from_env` reads the same settings from ``NB_HITL_SERVICE_*``
environment variables so ``uvicorn --factory nb_hitl.service.app:app_from_env``
starts a worker.

The demo tools (:func:`demo_tools`) are added with ``extra_agent_tools``
(AgentScope's stock toolkit has no ``AskUser``): ``AskUser``, ``write_note``
(a side effect that needs confirmation: one JSON line per run in a ledger
file, then an optional hold) and ``slow_job`` (sleeps; over 10 s AgentScope's
``ToolOffloadMiddleware`` moves it to the background). With
``NB_HITL_SERVICE_SANDBOXES`` set, a user who has a folder there also gets the
local demo's ``list_files`` and ``delete_file`` (:func:`nb_hitl.demo.sandbox_tools`)
over that folder, so the same answers can be played against the service and a
local agent. Every agent also gets :class:`~nb_hitl.service.told.ToldMiddleware`
(``extra_agent_middlewares``): the model reads who denied a call and why, as
the console sends it; with policies, :class:`~nb_hitl.service.required.RequiredMiddleware`
first: a call short of the approvals they ask for is not run.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlparse

__all__ = ["build_app", "app_from_env", "demo_tools", "user_sandbox", "make_storage", "make_bus"]


def _ledger_path() -> Path:
    return Path(os.environ.get("NB_HITL_SERVICE_LEDGER") or Path.cwd() / "nb_hitl_service_ledger.jsonl")


async def write_note(text: str, hold_seconds: float = 0.0) -> str:
    """Write a note: appends one JSON line ``{"text", "pid", "ts"}`` to the
    service's ledger file (the side effect the tests count), then waits
    ``hold_seconds`` (0-30) before answering.

    Args:
        text: the note.
        hold_seconds: seconds to wait after writing (a tool still running
            when its worker dies).
    """
    path = _ledger_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"text": text, "pid": os.getpid(), "ts": time.time()}) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    if hold_seconds > 0:
        await asyncio.sleep(min(float(hold_seconds), 30.0))
    return f"Wrote note {text!r}."


async def slow_job(seconds: float = 12.0) -> str:
    """Run a slow job: sleeps ``seconds`` (0-60) and says so.

    Args:
        seconds: how long the job takes.
    """
    await asyncio.sleep(min(max(float(seconds), 0.0), 60.0))
    return f"Slow job finished after {seconds} s."


_USER_FOLDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""User ids that name a sandbox folder (the id is whatever ``X-User-ID`` says)."""


def user_sandbox(user_id: str) -> Path | None:
    """The user's folder under ``NB_HITL_SERVICE_SANDBOXES`` when that is set,
    the id is a plain name (:data:`_USER_FOLDER`) and the folder exists; else ``None``."""
    root = os.environ.get("NB_HITL_SERVICE_SANDBOXES")
    if not root or not _USER_FOLDER.fullmatch(user_id):
        return None
    folder = Path(root) / user_id
    return folder.resolve() if folder.is_dir() else None


async def demo_tools(user_id: str, _agent_id: str, _session_id: str) -> list[Any]:
    """AgentScope ``extra_agent_tools`` factory: ``AskUser``, ``write_note``,
    ``slow_job``, and ``list_files`` / ``delete_file`` over the user's sandbox
    (:func:`user_sandbox`) when there is one.

    Returns:
        ``list[agentscope.tool.ToolBase]``.
    """
    from agentscope.tool import AskUser, FunctionTool

    tools: list[Any] = [
        AskUser(),
        # FunctionTool turns a plain ``str`` return into its ToolChunk (its
        # annotations name only ToolChunk returns)
        FunctionTool(cast(Any, write_note), is_concurrency_safe=False),
        FunctionTool(cast(Any, slow_job)),
    ]
    sandbox = user_sandbox(user_id)
    if sandbox is not None:
        from ..demo import sandbox_tools

        tools += [t for t in sandbox_tools(sandbox) if not isinstance(t, AskUser)]
    return tools


def make_storage(url: str) -> Any:
    """A storage backend from a URL.

    Args:
        url: ``redis://host:port/db`` -> ``RedisStorage``; any SQLAlchemy
            async URL (``sqlite+aiosqlite:///file.db``,
            ``postgresql+asyncpg://user@host:port/db``) ->
            ``AsyncSQLAlchemyStorage(url, create_tables=True)``, its pooled
            connections checked before use (``pool_pre_ping``: after a
            database restart a worker's next call works instead of failing
            once per stale connection).
    """
    if url.startswith("redis://"):
        from agentscope.app.storage import RedisStorage

        u = urlparse(url)
        return RedisStorage(host=u.hostname or "127.0.0.1", port=u.port or 6379, db=int((u.path or "/0")[1:] or 0))
    from agentscope.app.storage import AsyncSQLAlchemyStorage

    return AsyncSQLAlchemyStorage(url, create_tables=True, engine_kwargs={"pool_pre_ping": True})


def make_bus(url: str) -> Any:
    """A message bus: ``memory`` -> ``InMemoryMessageBus`` (one process only);
    ``redis://host:port/db`` -> ``RedisMessageBus``."""
    from agentscope.app.message_bus import InMemoryMessageBus, RedisMessageBus

    if url == "memory":
        return InMemoryMessageBus()
    u = urlparse(url)
    return RedisMessageBus(host=u.hostname or "127.0.0.1", port=u.port or 6379, db=int((u.path or "/0")[1:] or 0))


def build_app(
    storage_url: str,
    bus_url: str = "memory",
    workspaces: str | os.PathLike[str] = "nb_hitl_workspaces",
    *,
    scheduler: bool = True,
    extra_routes: list[tuple[str, Any]] | None = None,
    policies: Iterable[Any] = (),
) -> Any:
    """AgentScope's FastAPI service with the demo tools.

    Args:
        storage_url: see :func:`make_storage`.
        bus_url: see :func:`make_bus`.
        workspaces: folder for ``LocalWorkspaceManager``'s workdirs.
        scheduler: ``enable_scheduler`` (True on one replica only).
        extra_routes: ``[(path, asgi_app)]`` mounted beside the service
            (the embedded service mounts the fake model there).
        policies: :class:`~nb_hitl.policy.Policy` objects the service
            enforces itself: a confirmation short of the approvals they ask
            for is not run (:mod:`nb_hitl.service.required`).

    Returns:
        ``fastapi.FastAPI``.
    """
    from agentscope.app import create_app
    from agentscope.app.workspace_manager import LocalWorkspaceManager

    from .required import service_middlewares

    Path(workspaces).mkdir(parents=True, exist_ok=True)
    app = create_app(
        storage=make_storage(storage_url),
        message_bus=make_bus(bus_url),
        workspace_manager=LocalWorkspaceManager(str(workspaces)),
        extra_agent_tools=demo_tools,
        extra_agent_middlewares=service_middlewares(policies),
        enable_scheduler=scheduler,
        enable_channel_worker=False,
    )
    for path, sub in extra_routes or []:
        app.mount(path, sub)
    return app


def app_from_env() -> Any:
    """:func:`build_app` from ``NB_HITL_SERVICE_STORAGE`` (required),
    ``NB_HITL_SERVICE_BUS`` (default ``memory``), ``NB_HITL_SERVICE_WORKSPACES``,
    ``NB_HITL_SERVICE_SCHEDULER`` (``1``/``0``, default ``1``) and
    ``NB_HITL_SERVICE_POLICIES`` (a JSON or TOML file of policies the service
    enforces, :func:`~nb_hitl.service.required.load_policies`); for
    ``uvicorn --factory nb_hitl.service.app:app_from_env``.

    Raises:
        RuntimeError: ``NB_HITL_SERVICE_STORAGE`` is not set.
        OSError, ValueError: the policy file cannot be read or is wrong.
    """
    from .required import policies_from_env

    storage = os.environ.get("NB_HITL_SERVICE_STORAGE")
    if not storage:
        raise RuntimeError("Set NB_HITL_SERVICE_STORAGE (an SQLAlchemy async URL or redis://host:port/db).")
    return build_app(
        storage,
        os.environ.get("NB_HITL_SERVICE_BUS", "memory"),
        os.environ.get("NB_HITL_SERVICE_WORKSPACES", "nb_hitl_workspaces"),
        scheduler=os.environ.get("NB_HITL_SERVICE_SCHEDULER", "1") == "1",
        policies=policies_from_env(),
    )
