"""Shared fixtures of the AG-UI tests: a served agent on 127.0.0.1 with a settable clock."""

from __future__ import annotations

import pytest

from nb_hitl.agui import AguiServer, serve_in_background
from tests.agui_support import Factory


class Clock:
    """A settable clock for ``expires_at`` (no sleeping in tests)."""

    def __init__(self) -> None:
        import time

        self.offset = 0.0
        self._time = time.time

    def __call__(self) -> float:
        return self._time() + self.offset


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One served agent per test module: ``(handle, server, factory, clock)``;
    ``clock.offset`` moves the server's time (interrupt expiry)."""
    factory = Factory(tmp_path_factory.mktemp("agui"))
    clock = Clock()
    server = AguiServer(factory, interrupt_ttl=600, clock=clock)
    handle = serve_in_background(server)
    yield handle, server, factory, clock
    handle.stop()
