"""notebooks/agui_remote.ipynb runs headless, top to bottom, in a real kernel.

The notebook starts the AG-UI server in a background thread of the kernel,
connects with ``RemoteSession`` and answers two interrupts in one resume
(with ``NB_HITL_ANSWER_FROM_CODE=1``, set by ``run_notebook``, a later cell
answers through the widget's own handler, as a click would).
Executed with nbclient on the venv's ``python3`` kernel with the repository
on ``PYTHONPATH`` (``tests.harness.kernel.kernel_env``).
"""

from __future__ import annotations

import pytest

from tests.harness import REPO_ROOT
from tests.support import run_notebook, widget_views

NOTEBOOK = REPO_ROOT / "notebooks" / "agui_remote.ipynb"

pytestmark = pytest.mark.kernel


def test_agui_remote_notebook_runs_headless():
    nb, text = run_notebook(NOTEBOOK, timeout=180)  # raises CellExecutionError on the first failing cell
    assert "ERROR" not in text
    assert "AG-UI endpoint: http://127.0.0.1:" in text
    # the remote run was drawn in a ReplyWidget
    views = widget_views(nb)
    assert views
    assert "the first run ended with: interrupt - 2 interrupts" in text
    assert "ask_user -> answer | resume sent: False" in text
    assert "confirm -> approve | resume sent: True" in text
    assert "FINAL: You chose to archive notes.txt. Deleted old_log.txt." in text
    assert "runs: ['interrupt', 'success']" in text
    assert "one resume with 2 entries: True" in text
    assert "reason=tool_call" in text and "reason=input_required" in text
    # each interrupt and resume entry is named by its call in words, not by its ids
    assert 'resume delete_file (path="old_log.txt") resolved' in text
    assert "nbh-" not in text and "tool_call_id=" not in text
    assert "answer schema properties: ['acceptedRules', 'approved', 'editedArgs', 'reason']" in text
    assert "sandbox now holds: ['draft.md', 'notes.txt']" in text
    assert "server stopped: True" in text
