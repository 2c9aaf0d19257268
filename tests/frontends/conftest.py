"""Fixtures for the front-end tests (Notebook 7, marimo) in Debian's Chromium (Playwright, sync API).

- ``browser`` (session, from tests/conftest.py): one Chromium for every browser test.
- ``page`` (function): a fresh context (1300x900) with ``page.nbh_errors``;
  a failing test leaves ``test-artifacts/<test>-failure.png``.

Each test module starts its own server once (a module fixture). The tests of
``test_notebook7.py`` and ``test_marimo.py`` are marked ``browser``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.lab import page_for_test

_HERE = Path(__file__).resolve().parent
_BROWSER_MODULES = {"test_notebook7.py", "test_marimo.py"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path)).resolve()
        if _HERE in path.parents and path.name in _BROWSER_MODULES:
            item.add_marker(pytest.mark.browser)


@pytest.fixture
def page(browser, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    with page_for_test(browser, request) as p:
        yield p
