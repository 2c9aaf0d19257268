"""notebooks/edit_with_diff.ipynb runs headless, top to bottom, in a real kernel.

nbclient executes it with ``NB_HITL_ANSWER_FROM_CODE=1`` (``run_notebook``):
the notebook answers its own cards with ``session.act``. Checked: the diffs
the cards carried (an ``Edit`` of ``greet.py``, a ``Write`` of a new file),
a dry run of the first (in a temporary copy; nothing on disk changes), the files on disk, and C42: an approval given after the file changed on disk
runs nothing, the call is asked again with the diff against the file as it
is then, and the audit log records ``file_changed``.
"""

from __future__ import annotations

import re

import pytest

from tests.harness import REPO_ROOT
from tests.support import cell_text, run_notebook, widget_views

NOTEBOOK = REPO_ROOT / "notebooks" / "edit_with_diff.ipynb"

pytestmark = pytest.mark.kernel


def test_edit_with_diff_notebook_runs_headless() -> None:
    nb, whole = run_notebook(NOTEBOOK, timeout=120)  # raises CellExecutionError on the first failing cell
    texts = [cell_text(c) for c in nb.cells if c.cell_type == "code"]
    assert "Traceback" not in whole and "Waiting for you" not in whole
    assert len(widget_views(nb)) == 2  # one reply widget per session.start

    # 1. an Edit's diff, then a new file's
    assert "answers: given by the cells" in texts[0]
    assert re.search(r"card: Edit /\S+/greet\.py\n", texts[2])
    assert "-def greet(name):\n+def welcome(name):\n" in texts[2]
    assert '-    print(greet("world"))\n+    print(welcome("world"))\n' in texts[2]
    # Try it first: a dry run in a temporary copy; nothing on disk changes, the card stays open
    assert "temporary copy" in texts[3] and "changed in the copy: greet.py" in texts[3]
    assert "greet.py on disk unchanged: True | the card is still open" in texts[3]
    assert re.search(r"Edit call_\w+: approve", texts[4])
    assert re.search(r"card: Write /\S+/test_greet\.py\n--- /dev/null\n", texts[4])
    assert "+from greet import welcome\n" in texts[4]
    assert "greet.py now: def welcome(name):" in texts[5]
    assert "files: ['README.md', 'greet.py', 'test_greet.py']" in texts[5]

    # 2. C42: the file changed after its card was drawn
    assert "-Run `python greet.py`.\n+Run `python greet.py`; test with `python -m pytest`.\n" in texts[6]
    assert "docs team" not in texts[6]
    first = re.search(r"Edit (call_\w+): approve", texts[7]).group(1)
    assert "README.md has the teammate's line and not the edit: True" in texts[7]
    assert "changed after this Edit call was approved, before it ran, so nothing ran" in texts[7]
    assert f"changed after call {first}" not in texts[7] and f"asked again as {first}" not in texts[7]
    assert " \n Maintained by the docs team.\n" in texts[7]  # the fresh diff is against the file as it is now
    assert re.search(rf"the approval of {first}: expired \(Not run: the file \S+README\.md changed after", texts[7])
    assert f"Edit {first}_r2: approve" in texts[8]
    assert "Edit: Error: To edit a file, you must first read it" in texts[9]
    assert "Edit: Successfully replaced 1 occurrence" in texts[9]
    assert "test with `python -m pytest`.\n\nMaintained by the docs team.\n" in texts[9]

    rows = [line.split() for line in texts[10].splitlines()]
    assert [(r[0], r[2]) for r in rows] == [
        ("Edit", "approve"),
        ("Write", "approve"),
        ("Edit", "approve"),
        ("Edit", "file_changed"),
        ("Edit", "approve"),
        ("Edit", "approve"),
    ]
    assert rows[3][1] == rows[4][1] == f"{first}_r2"
