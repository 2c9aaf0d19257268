"""Every notebook under ``notebooks/`` is committed clean: no code cell has
outputs or an execution count (a new notebook is covered without a line here)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from tests.harness import REPO_ROOT

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks() -> None:
    assert len(NOTEBOOKS) >= 12, NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_has_no_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert dirty == [], f"{path.name}: code cells {dirty} have outputs or an execution count"
