"""notebooks/edit_with_diff.ipynb runs headless, top to bottom, in a real kernel.

nbclient executes it with ``NB_HITL_ANSWER_FROM_CODE=1`` (``run_notebook``):
the notebook answers its own cards with ``session.act``. Checked: the diffs
the cards carried (an ``Edit`` of ``greet.py``, a ``Write`` of a new file),
a dry run of the first (in a temporary copy; nothing on disk changes), the files on disk, and C42: an
approval given after the file changed on disk runs nothing and is not asked again (AgentScope's ``Edit``
would refuse it): the approved card says the agent was told to read the file again, the model reads it
and asks anew with the diff against the file as it is then, and the audit log records ``file_changed``.
Person-facing lines name calls by tool and input, never by id.
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
    assert re.search(r'^Edit \(file_path="/\S+/greet\.py", replace_all=true, old_string\S*\): approve$', texts[4], re.M)
    assert re.search(r"card: Write /\S+/test_greet\.py\n--- /dev/null\n", texts[4])
    assert "+from greet import welcome\n" in texts[4]
    assert "greet.py now: def welcome(name):" in texts[5]
    assert "files: ['README.md', 'greet.py', 'test_greet.py']" in texts[5]

    # 2. C42: the file changed after its card was drawn
    assert "-Run `python greet.py`.\n+Run `python greet.py`; test with `python -m pytest`.\n" in texts[6]
    assert "docs team" not in texts[6]
    readme_edit = re.compile(r'^Edit \(file_path="/\S+/README\.md", old_string="Run `python gre…\): approve$', re.M)
    assert readme_edit.search(texts[7])
    assert "README.md has the teammate's line and not the edit: True" in texts[7]
    assert " \n Maintained by the docs team.\n" in texts[7]  # the new card's diff: against the file as it is now
    assert "changed after the card of this Edit call was drawn" not in texts[7]  # not asked again on a card of nb_hitl's
    assert re.search(
        r"the approved card: expired \(Not run: the file \S+README\.md changed after its card was drawn\. "
        r"The agent was told to read it again\.\)",
        texts[7],
    )
    assert readme_edit.search(texts[8])
    assert "- Edit: nb_hitl did not run Edit: the file " in texts[9]  # what the model read, then it read again
    assert texts[9].index("- Edit: nb_hitl did not run") < texts[9].rindex("- Read:") < texts[9].index(
        "- Edit: Successfully replaced 1 occurrence"
    )
    assert "must first read" not in texts[9]  # the tool itself never refused: it ran once, on the file shown
    assert "test with `python -m pytest`.\n\nMaintained by the docs team.\n" in texts[9]

    assert "call_" not in "\n".join(texts)  # no internal call id in what a person reads
    rows = [line.split(" ", 1) for line in texts[10].splitlines()]
    assert [(r[0], r[1].split()[0]) for r in rows] == [
        ("approve", "Edit"),
        ("approve", "Write"),
        ("approve", "Edit"),
        ("file_changed", "Edit"),
        ("", "by"),
        ("approve", "Edit"),
    ]
    assert re.match(
        r" +by nb_hitl: Not run: the file \S+README\.md changed after its card was drawn\. The agent was told to read it again\.$",
        texts[10].splitlines()[4],
    )
