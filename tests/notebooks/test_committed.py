"""Every notebook under ``notebooks/`` is committed clean: no code cell has
outputs or an execution count, and its metadata is what JupyterLab would write
on opening it with the venv's ``python3`` kernel (``kernelspec`` and the
kernel's ``language_info``), so opening it does not mark it modified (a new
notebook is covered without a line here)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.manager import start_new_kernel

from tests.harness import REPO_ROOT

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks() -> None:
    assert len(NOTEBOOKS) >= 12, NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_has_no_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert dirty == [], f"{path.name}: code cells {dirty} have outputs or an execution count"


@pytest.fixture(scope="module")
def python3_kernel() -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """The venv's ``python3`` kernel: (the kernelspec JupyterLab writes, its ``language_info``)."""
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60)
    try:
        info = kc.kernel_info(reply=True, timeout=60)["content"]["language_info"]
        spec = km.kernel_spec
        assert spec is not None
        yield {"name": "python3", "display_name": spec.display_name, "language": spec.language}, info
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_has_kernel_metadata(
    path: Path, python3_kernel: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    """``language_info.version`` is the Python it was written with (JupyterLab rewrites it, and
    marks the notebook modified, under another Python); every other field is the kernel's."""
    spec, info = python3_kernel
    meta = nbformat.read(path, as_version=4).metadata
    assert meta.get("kernelspec") == spec, f"{path.name}: kernelspec {meta.get('kernelspec')!r}"
    language_info = dict(meta.get("language_info", {}))
    assert re.fullmatch(r"3\.\d+\.\d+", str(language_info.pop("version", ""))), f"{path.name}: {language_info!r}"
    assert language_info == {k: v for k, v in info.items() if k != "version"}, f"{path.name}: {language_info!r}"
