"""notebooks/teams.ipynb runs headless, top to bottom, in a real kernel.

nbclient executes it on the venv's ``python3`` kernel with ``NB_HITL_ANSWER_FROM_CODE=1``
(``run_notebook``), so the notebook answers the worker's cards itself with
``session.act`` (the handler a click
reaches). Checked from the printed outputs: the cards name the worker and
carry its ``reply_id``, the ``TeamAssign`` step, the leader's final message,
the one deletion, what each model was sent, the audit log's agent column,
and the interrupt that ends the whole team's reply.
"""

from __future__ import annotations

import pytest

from tests.harness import REPO_ROOT
from tests.support import cell_text, run_notebook, widget_views

NOTEBOOK = REPO_ROOT / "notebooks" / "teams.ipynb"

pytestmark = pytest.mark.kernel


def test_teams_notebook_runs_headless() -> None:
    nb, whole = run_notebook(NOTEBOOK, timeout=180)
    texts = [cell_text(c) for c in nb.cells if c.cell_type == "code"]
    assert "Error" not in whole

    assert len(widget_views(nb)) == 2  # one reply widget per started reply
    assert "worker asks: ask_user AskUser (Which file should I delete?) (in the worker's reply)" in texts[1]
    assert (
        "steps: ['lead assigned “Tidy up the sandbox folder: ask the user which file to delete, "
        "then delete it.” to worker']" in texts[1]
    )
    assert 'worker asks: confirm delete_file (path="draft.md") (in the worker\'s reply)' in texts[2]
    assert "deleted so far: []" in texts[2]
    assert (
        "FINAL: lead - worker reported back (success): Done. Deleted draft.md. "
        "The folder now holds: notes.txt, old_log.txt." in texts[3]
    )
    assert "status: finished" in texts[3]
    assert "delete_file ran: ['draft.md']" in texts[3]
    assert "files left: ['notes.txt', 'old_log.txt']" in texts[3]

    assert "leader model calls: 2 - worker model calls: 4" in texts[4]
    assert "leader got: Done. Deleted draft.md." in texts[4]
    assert (
        "worker got AskUser: success" in texts[4] and "worker got delete_file: success: Deleted draft.md." in texts[4]
    )

    rows = [line.split()[:3] for line in texts[5].splitlines()]
    assert rows == [["worker", "AskUser", "answer"], ["worker", "delete_file", "approve"]]

    assert "reply: interrupted - Not now." in texts[6]
    assert "still parked: False" in texts[6]
    assert "delete_file ran: ['draft.md']" in texts[6]
