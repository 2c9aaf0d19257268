"""Fixtures for the front-end tests (Notebook 7, marimo) in Debian's Chromium (Playwright, sync API).

- ``browser`` (session): ``/usr/bin/chromium``; its absence FAILS the test.
- ``page`` (function): a fresh context (1300x900) with ``page.nbh_errors``;
  a failing test leaves ``test-artifacts/<test>-failure.png``.

Each test module starts its own server once (a module fixture). The tests of
``test_notebook7.py`` and ``test_marimo.py`` are marked ``browser``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.lab import CHROMIUM, launch_chromium, new_page, screenshot

_HERE = Path(__file__).resolve().parent
_BROWSER_MODULES = {"test_notebook7.py", "test_marimo.py"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path)).resolve()
        if _HERE in path.parents and path.name in _BROWSER_MODULES:
            item.add_marker(pytest.mark.browser)


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


@pytest.fixture
def page(browser, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    p = new_page(browser)
    try:
        yield p
    finally:
        rep = getattr(request.node, "nbh_rep_call", None)
        if rep is not None and rep.failed:
            try:
                screenshot(p, f"{request.node.name}-failure")
            except Exception:
                pass
        p.context.close()
