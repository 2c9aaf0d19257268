"""Shared test setup.

Checkpoint signing keys and checkpoint locks of every test live in a
temporary folder (never the user's ``~/.config`` or ``~/.cache``); kernels
and JupyterLab servers started by the tests inherit the environment.

Browser tests run last: Playwright's sync API leaves an event loop running in
the main thread for the rest of the session, and tests that call
``asyncio.run`` must come before it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nb_hitl.store import KEY_ENV, LOCK_DIR_ENV

# the helpers' asserts (tests/support.py) report like the tests' own
pytest.register_assert_rewrite("tests.support")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: 1 if "/browser/" in str(item.fspath).replace("\\", "/") else 0)


@pytest.fixture(scope="session", autouse=True)
def _private_checkpoint_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    home = tmp_path_factory.mktemp("nb_hitl_user")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY_ENV, str(home / "checkpoint.key"))
        mp.setenv(LOCK_DIR_ENV, str(home / "locks"))
        yield
