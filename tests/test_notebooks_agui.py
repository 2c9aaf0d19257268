"""notebooks/agui_remote.ipynb runs headless, top to bottom, in a real kernel.

The notebook starts the AG-UI server in a background thread of the kernel,
connects with ``RemoteSession`` and answers two interrupts in one resume
(a later cell answers through the widget's own handler, as a click would).
Executed with nbclient on the venv's ``python3`` kernel with the repository
on ``PYTHONPATH`` (``tests.harness.kernel.kernel_env``).
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

NOTEBOOK = REPO / "notebooks" / "agui_remote.ipynb"

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


def test_agui_remote_notebook_runs_headless(monkeypatch):
    for key, value in kernel_env().items():
        monkeypatch.setenv(key, value)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()  # raises CellExecutionError on the first failing cell

    text = _text(nb)
    assert "ERROR" not in text
    assert "AG-UI endpoint: http://127.0.0.1:" in text
    # the remote run was drawn in a ReplyWidget
    views = [
        o for c in nb.cells for o in c.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert views
    assert "the first run ended with: interrupt - 2 interrupts" in text
    assert "ask_user -> answer | resume sent: False" in text
    assert "confirm -> approve | resume sent: True" in text
    assert "FINAL: You chose to archive notes.txt. Deleted old_log.txt." in text
    assert "runs: ['interrupt', 'success']" in text
    assert "one resume with 2 entries: True" in text
    assert "reason=tool_call" in text and "reason=input_required" in text
    assert "answer schema properties: ['acceptedRules', 'approved', 'editedArgs']" in text
    assert "sandbox now holds: ['draft.md', 'notes.txt']" in text
    assert "server stopped: True" in text
