"""Shared test setup.

Browser tests run last: Playwright's sync API leaves an event loop running in
the main thread for the rest of the session, and tests that call
``asyncio.run`` must come before it.
"""

from __future__ import annotations

import pytest

# the helpers' asserts (tests/support.py) report like the tests' own
pytest.register_assert_rewrite("tests.support")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: 1 if "/browser/" in str(item.fspath).replace("\\", "/") else 0)
