"""notebooks/quickstart.ipynb runs headless, top to bottom, in a real kernel.

nbclient executes it with ``NB_HITL_ANSWER_FROM_CODE=1`` (``run_notebook``):
the notebook answers its own cards with ``session.act``. Checked: the
deletion's card carried the diff of the whole file removed; the file changed
while that card was open, so its Approve ran nothing and a fresh card asked
again with the diff of the file as it was then (C42, for a tool without a
read-before-write check of its own); a dry run on the fresh card deleted the
file in a copy of the sandbox only (the card stayed open), its Approve deleted
it for real, once, and the audit log has the refused approval.
"""

from __future__ import annotations

import re

import pytest

from tests.harness import REPO_ROOT
from tests.support import cell_text, run_notebook, widget_views

NOTEBOOK = REPO_ROOT / "notebooks" / "quickstart.ipynb"

pytestmark = pytest.mark.kernel


def test_quickstart_notebook_runs_headless() -> None:
    nb, whole = run_notebook(NOTEBOOK, timeout=120)  # raises CellExecutionError on the first failing cell
    texts = [cell_text(c) for c in nb.cells if c.cell_type == "code"]
    assert "Traceback" not in whole and "Press " not in whole
    assert len(widget_views(nb)) == 1  # the reply's widget, under session.start

    sandbox = re.match(r"sandbox: (\S+)\n", texts[0]).group(1)
    assert "['draft.md', 'notes.txt', 'old_log.txt']" in texts[0]
    assert "Which file should I delete? -> draft.md" in texts[1]
    # the card's diff: the whole file removed, and the note says it is a deletion
    assert texts[2].startswith(
        f"The call deletes {sandbox}/draft.md: every line of the file is removed.\n"
        f"--- {sandbox}/draft.md\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-# Draft\n-\n"
        "-A first paragraph nobody has read yet.\n"
    )
    # C42: the file changed while the card was open; the approval ran nothing, a fresh card asks again
    draft = f"{sandbox}/draft.md"
    assert texts[3] == (
        "draft.md changed after its card was drawn\n"
        f"Not run: the file {draft} changed after its card was drawn; it is asked again on the next card.\n"
        "files: ['draft.md', 'notes.txt', 'old_log.txt']\n"
        "the fresh card:\n"
        f"--- {draft}\n+++ /dev/null\n@@ -1,4 +0,0 @@\n-# Draft\n-\n"
        "-A first paragraph nobody has read yet.\n-A second paragraph, added by someone else.\n\n"
    )
    # the dry run of the fresh card: deleted in a copy of the folder; the sandbox byte-identical, the card open
    assert "Dry run in a temporary copy of its folder: delete_file ran" in texts[4]
    assert "1 file deleted. The real files were not touched" in texts[4]
    assert "deleted in the copy: draft.md" in texts[4]
    assert "sandbox unchanged by the dry run: True | the card is still open" in texts[4]
    assert "FINAL: Done. Deleted draft.md. The folder now holds: notes.txt, old_log.txt." in texts[5]
    assert "files left: ['notes.txt', 'old_log.txt']" in texts[6]
    assert [line.rstrip() for line in texts[7].splitlines()] == [
        "AskUser answer draft.md",  # the choices in words, not the recorded dicts
        "delete_file approve",
        "delete_file file_changed (by nb_hitl: nothing ran)",
        "delete_file approve",
    ]
