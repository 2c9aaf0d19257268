"""The replay's frame is converted a piece at a time (so pandas never holds the
interpreter lock for a whole column); each column keeps the dtype pandas infers
for all of it, whatever its pieces look like."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from nb_hitl.audit import rule_replay as replay_module

COLUMNS = [
    ["a", "b", "c", "d", "e", "f", "g"],
    [None, None, None, "x", "y", "z", None],  # a first piece all None: object alone, str with the rest
    [True, False, True, True, False, False, True],
    [{"command": "ls"}, {"path": "a"}, None, {"b": [1]}, {}, {"c": 2}, {"d": None}],
    [1, 2, 3, None, 5, 6, 7],
    ["1", 2, "3", None, "x", 5.0, "y"],
]


@pytest.mark.parametrize("values", COLUMNS, ids=["str", "none-then-str", "bool", "dicts", "ints-and-none", "mixed"])
def test_a_column_built_in_pieces_equals_it_built_whole(values: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay_module, "FRAME_PIECE", 3)
    turns = []

    async def turn() -> None:
        turns.append(1)

    built = asyncio.run(replay_module._column(values, turn))
    pd.testing.assert_series_equal(built, pd.Series(values))
    assert len(turns) == 3  # a turn offered after each piece of 3


def test_the_per_call_columns_worked_out_in_pieces_equal_them_worked_out_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay_module, "FRAME_PIECE", 3)
    recorded = ["ask", "allow", "deny", None, "ask", "ask", "allow", "deny"]
    person = ["deny", None, "allow", "deny", "allow", "deny", None, "deny"]
    candidate = np.array(["allow", "allow", "unknown", "allow", "ask", "deny", "deny", "allow"], dtype=object)
    turns = []

    async def turn() -> None:
        turns.append(1)

    changed, change, denied = asyncio.run(
        replay_module._per_call({"recorded": recorded, "person": person}, candidate, turn)
    )
    whole_changed, whole_change = replay_module._changes(recorded, candidate)
    assert changed.tolist() == whole_changed.tolist() == [True, False, False, True, False, True, True, True]
    assert change.tolist() == whole_change.tolist()
    assert change.tolist()[:3] == ["ask -> allow", "", ""]
    assert denied.tolist() == [True, False, False, True, False, False, False, True]
    assert len(turns) == 3  # a turn offered after each piece of 3


def test_the_package_gives_the_replay_function_whatever_was_imported_first() -> None:
    """``from nb_hitl.audit import replay`` is the function even when a module that
    imports the replay's submodule (the explorer's views) was imported first: a
    submodule's import sets its name on the package, so it is not named ``replay``."""
    code = (
        "import nb_hitl.audit.views\n"
        "from nb_hitl.audit import replay\n"
        "import inspect\n"
        "print(inspect.iscoroutinefunction(replay))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "True", out.stderr[-2000:]
