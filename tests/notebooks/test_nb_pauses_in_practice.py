"""notebooks/pauses_in_practice.ipynb runs headless, top to bottom, in a real kernel.

nbclient executes it on the venv's ``python3`` kernel (repository on
``PYTHONPATH`` via ``tests.harness.kernel.kernel_env``). With
``NB_HITL_ANSWER_FROM_CODE=1`` (``run_notebook``) the notebook answers its own
pauses with ``session.act`` (the handler a click reaches). Any cell
error fails the test; the teaching outputs are checked: a batch answered in
part, the second call of the same tool asked after the first, the refusal
naming the open pause, the interrupt, the restore from a checkpoint into a new
agent object, and the audit log table.
"""

from __future__ import annotations

import re

import pytest

from tests.harness import REPO_ROOT
from tests.support import cell_text, run_notebook, widget_views

NOTEBOOK = REPO_ROOT / "notebooks" / "pauses_in_practice.ipynb"

pytestmark = pytest.mark.kernel


def test_pauses_in_practice_notebook_runs_headless() -> None:
    nb, _ = run_notebook(NOTEBOOK, timeout=180)  # raises CellExecutionError on the first failing cell

    code = [c for c in nb.cells if c.cell_type == "code"]
    texts = [cell_text(c) for c in code]
    whole = "\n".join(texts)
    assert "ERROR" not in whole

    # a reply widget under every cell that started or resumed a reply, and the audit table
    views = widget_views(nb)
    assert len(views) == 5

    # 1. the batch: two calls open at once (the second deletion is pending), answered in part
    assert re.search(r"open: confirm\s+delete_file .*old_log\.txt", texts[3])
    assert re.search(r"open: ask_user AskUser", texts[3])
    assert "draft.md" not in texts[3]
    assert "parked on (from the agent's state): ['delete_file', 'AskUser']" in texts[3]
    assert "old_log.txt" in texts[4] and "AskUser" not in texts[4].split("model calls")[0]
    assert "model calls so far: 1" in texts[4]
    # the same tool, asked after the first was answered; deny one, approve the other
    assert re.search(r"open: confirm\s+delete_file .*draft\.md", texts[5])
    # the person reads AgentScope's words without its <system-reminder> tags
    assert '- delete_file: denied: The execution of tool "delete_file" is denied by user!' in texts[5]
    assert "system-reminder" not in texts[5]
    assert "- delete_file: denied:" in texts[5] and "- delete_file: success: Deleted draft.md." in texts[5]
    assert "files: ['notes.txt', 'old_log.txt']" in texts[5]
    assert texts[6].startswith("AlreadyDecidedError -> Already decided: delete_file")

    # 2. refused naming the open pause, then interrupted
    assert "refused: The agent 'tidy' is still waiting on delete_file (path=\"notes.txt\")." in texts[7]
    assert not re.search(r"call_[0-9a-f]{6}", texts[7])
    assert "reply: interrupted - Changed my mind." in texts[8]
    assert "PauseNotLiveError -> This pause is no longer live: Changed my mind." in texts[8]
    assert "notes.txt still there: True" in texts[8]

    # 3. checkpoint, restore into a new agent object, answer there
    assert "checkpoints: ['tidy-notebook.json']" in texts[9]
    assert "open: ask_user AskUser (Keep notes.txt?)" in texts[9]
    assert "restored session: tidy-notebook - a new agent object: True" in texts[10]
    assert "open: ask_user AskUser (Keep notes.txt?)" in texts[10], "the same pause re-rendered after restore"
    # pauses are named in words (tool and input), never by AgentScope's call ids or as raw dicts
    assert not re.search(r"call_[0-9a-f]{6}|input=\{", "\n".join(texts[i] for i in (3, 5, 9, 10)))
    assert '"Keep notes.txt?" -> Keep it' in texts[11]

    # 4. the audit log: four decisions, in order, and the call interrupted with no answer, saying why
    # (the question restored into a new session is the same call, answered there: no line of its own)
    assert "4 decisions in" in texts[12] and "- 1 pause(s) closed with no answer" in texts[12]
    rows = [line.split()[:3] for line in texts[12].splitlines()[1:]]
    # each decision in words: the choices, the call as a label, never the recorded dicts
    assert [line.split(maxsplit=3)[3] for line in texts[12].splitlines()[1:]] == [
        "summary.md",
        'delete_file (path="old_log.txt")',
        'delete_file (path="draft.md")',
        'delete_file (path="notes.txt"): Changed my mind.',
        "Keep it",
    ]
    assert [r[:2] for r in rows] == [
        ["AskUser", "answer"],
        ["delete_file", "deny"],
        ["delete_file", "approve"],
        ["delete_file", "expired"],
        ["AskUser", "answer"],
    ]
    assert [r[2] for r in rows if r[1] == "expired"] == ["nb_hitl"]
