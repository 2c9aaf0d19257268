"""notebooks/replay_and_fork.ipynb runs headless, top to bottom, in a real kernel.

With ``NB_HITL_ANSWER_FROM_CODE=1`` (``run_notebook``) the notebook answers its
own pauses with ``session.act``. Checked: the live recording changes the
counter file; the replay shows the pause again saying what was answered then
and leaves the counter unchanged, ten replays too; the fork at the approval
is denied, the model reads the denial and the counter stays.
"""

from __future__ import annotations

import re

import pytest

from tests.harness import REPO_ROOT
from tests.support import cell_text, run_notebook, widget_views

NOTEBOOK = REPO_ROOT / "notebooks" / "replay_and_fork.ipynb"

pytestmark = pytest.mark.kernel


def test_replay_and_fork_notebook_runs_headless() -> None:
    nb, _ = run_notebook(NOTEBOOK, timeout=120)
    texts = [cell_text(c) for c in nb.cells if c.cell_type == "code"]
    assert "ERROR" not in "\n".join(texts)
    assert len(widget_views(nb)) == 3  # the recording, the replay, the fork

    assert "answers: given by the cells" in texts[0]
    # 1. live: approved, the counter file changed
    assert "card: bump {'step': 2} -" in texts[2]
    assert "answered: approve" in texts[2]
    assert "I read: The counter is now 2." in texts[2] and "counter file: 2" in texts[2]
    # 2. the replay: the card says what was answered then; nothing ran
    assert re.search(r"card: bump \{'step': 2\} - Recorded answer: approve, by \S+, \d{4}-\d\d-\d\d", texts[4])
    assert "I read: The counter is now 2." in texts[4]
    assert "counter file: 2 (unchanged: nothing ran)" in texts[4]
    assert "last replay said: I read: The counter is now 2." in texts[5]
    assert "counter file after 10 replays: 2" in texts[5]
    # 3. the fork: denied this time, the model reads the denial
    assert "card: bump {'step': 2} - What if: answer this pause differently. Recorded answer: approve" in texts[7]
    assert "answered: deny" in texts[7]
    assert re.search(r"I read: The user denied your call to bump, saying: not today", texts[7])
    assert "counter file: 2 (unchanged)" in texts[7]
