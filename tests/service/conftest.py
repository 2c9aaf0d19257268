"""Session-scoped servers for the service-console tests: ONE Redis, ONE
PostgreSQL, one fake model and ONE pair of AgentScope workers per test
session (worker start-up is 5-19 s each), all on free loopback ports."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.service.cluster import Cluster, FakeModel, PostgresServer, RedisServer


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
