"""notebooks/permission_explorer.ipynb runs headless, top to bottom, in a real kernel.

The notebook is executed with nbclient on the venv's ``python3`` kernel, with
the notebook's folder as the working directory and the repository on
``PYTHONPATH`` (``tests.harness.kernel.kernel_env``). Any cell error fails
the test; the key teaching outputs are checked.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

from tests.harness.kernel import kernel_env  # noqa: E402

NOTEBOOK = REPO / "notebooks" / "permission_explorer.ipynb"

pytestmark = pytest.mark.kernel


def _text(nb: nbformat.NotebookNode) -> str:
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                out.append(o.get("text", ""))
            elif o.get("output_type") == "error":
                out.append(f"ERROR {o.get('ename')}: {o.get('evalue')}")
    return "\n".join(out)


def test_committed_notebook_has_no_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


def test_permission_explorer_notebook_runs_headless(monkeypatch):
    for key, value in kernel_env().items():
        monkeypatch.setenv(key, value)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()  # raises CellExecutionError on the first failing cell

    text = _text(nb)
    assert "ERROR" not in text
    # the explorer widget was displayed
    views = [
        o for c in nb.cells for o in c.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert views
    # the five modes side by side, straight from the engine
    assert "Bash {'command': 'rm -rf /'}                 ask!          ask!          deny          allow         deny" in text
    assert "live mode of the agent is still: default" in text
    # the traps, each with the engine's decision and the reason
    assert "substring rule" in text and "after `sudo`" in text
    assert "prefix rule" in text and "a space is required" in text
    assert "crosses `/`" in text
    assert "The pattern is relative and the path absolute" in text
    assert "only a whole-tool rule (rule_content null) matches" in text
    # safety asks are bypass-immune even with an allow-all Bash rule
    assert "'rm -rf /'           -> ask, bypass_immune=True" in text
    # "Always allow" from a confirmation shows up in the explorer and applies
    assert "('allow delete_file', 'suggested')" in text
    assert "asked again? False" in text
    # a malformed rules file is refused with line and field
    assert "refused: line 2, rule 1, field 'behavior'" in text
