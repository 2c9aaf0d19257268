"""Fixtures for tests that drive real JupyterLab in Debian's Chromium (Playwright, sync API).

- ``lab`` (session): a :class:`~tests.harness.lab.JupyterLabServer` whose
  ``lab.root`` is a temp dir; tests write notebooks there
  (``tests.harness.lab.write_notebook(lab.root / "x.ipynb", [...])``).
  Widget ``saveState`` is on.
- ``browser`` (session): ``/usr/bin/chromium``; its absence FAILS the test.
- ``page`` (function): a fresh context (1300x900); ``page.nbh_errors`` lists
  console errors and page errors. After the test the page's kernels are shut
  down, user settings (theme...) reset, and a failing test leaves ``test-artifacts/<test>-failure.png``.

Every test in this folder is marked ``browser``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[2]
if str(_REPO) not in sys.path:  # until pytest `pythonpath = ["."]`
    sys.path.insert(0, str(_REPO))

from tests.harness.lab import (  # noqa: E402
    JupyterLabServer,
    page_for_test,
)

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLabServer]:
    server = JupyterLabServer(tmp_path_factory.mktemp("lab-root"))
    server.start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def page(browser, lab: JupyterLabServer, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    try:
        with page_for_test(browser, request) as p:
            yield p
    finally:
        lab.shutdown_kernels()
        lab.reset_user_settings()
