"""Checkpoint signing keys and checkpoint locks of these tests live in a
temporary folder (never the user's ``~/.config`` or ``~/.cache``); kernels
started by the tests inherit the environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nb_hitl.store import KEY_ENV, LOCK_DIR_ENV


@pytest.fixture(scope="session", autouse=True)
def _private_checkpoint_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    home = tmp_path_factory.mktemp("nb_hitl_user")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY_ENV, str(home / "checkpoint.key"))
        mp.setenv(LOCK_DIR_ENV, str(home / "locks"))
        yield
