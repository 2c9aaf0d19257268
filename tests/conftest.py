"""Shared test setup.

Checkpoint signing keys and checkpoint locks of every test live in a
temporary folder (never the user's ``~/.config`` or ``~/.cache``); kernels
and JupyterLab servers started by the tests inherit the environment.

``./run test`` runs the suite in two runs, the tests not marked ``browser``
and then the browser tests, each in two processes (pytest-xdist, ``--dist
loadfile``: a module's tests stay in one process); session-scoped fixtures
are per process.

The service's servers (``redis_server``, ``postgres``, ``fake_model``,
``cluster``, ``workers``: tests/service/cluster.py) are session-scoped and
started only by the tests that ask for them: in each process, tests/service/
and the service road of tests/contract/ share ONE Redis, ONE PostgreSQL, one
fake model and ONE pair of AgentScope workers (worker start-up is 5-19 s each).

Browser tests (tests/browser, tests/frontends) run last and share one
Chromium (``browser``, session): Playwright's sync API leaves an event loop running in
the main thread for the rest of the session, and tests that call
``asyncio.run`` must come before it. The sort below keeps that order in one
process; xdist does not keep it (it hands out the largest modules first), so
``./run test`` runs the browser tests apart.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from nb_hitl.store import KEY_ENV, LOCK_DIR_ENV
from tests.harness.lab import CHROMIUM, launch_chromium
from tests.service.cluster import Cluster, FakeModel, PostgresServer, RedisServer

# the helpers' asserts (tests/support.py) report like the tests' own
pytest.register_assert_rewrite("tests.support")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def last(item: pytest.Item) -> int:
        path = str(item.fspath).replace("\\", "/")
        return 1 if "/browser/" in path or "/frontends/" in path else 0

    items.sort(key=last)


@pytest.fixture(scope="session", autouse=True)
def _private_checkpoint_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    home = tmp_path_factory.mktemp("nb_hitl_user")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY_ENV, str(home / "checkpoint.key"))
        mp.setenv(LOCK_DIR_ENV, str(home / "locks"))
        yield


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    rep = yield
    setattr(item, f"nbh_rep_{rep.when}", rep)
    return rep


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"{CHROMIUM} not found: browser tests need Debian's Chromium "
            "(apt-get install -y chromium). They never skip.",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = launch_chromium(pw)
        try:
            yield b
        finally:
            b.close()


# ------------------------------------------------- the service's servers
@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    folder = Path(tempfile.mkdtemp(prefix="nbh-redis-"))
    server = RedisServer(folder).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def fake_model() -> Iterator[FakeModel]:
    model = FakeModel().start()
    try:
        yield model
    finally:
        model.stop()


@pytest.fixture(scope="session")
def cluster(redis_server: RedisServer, postgres: PostgresServer, fake_model: FakeModel) -> Iterator[Cluster]:
    folder = Path(tempfile.mkdtemp(prefix="nbh-workers-"))
    c = Cluster(redis_server, postgres, fake_model, folder).start()
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture
def workers(cluster: Cluster) -> Cluster:
    """The worker pair, both alive (a test that killed one gets it back)."""
    cluster.revive()
    return cluster
