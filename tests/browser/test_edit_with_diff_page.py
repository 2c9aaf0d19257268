"""notebooks/edit_with_diff.ipynb clicked through in real JupyterLab + Chromium.

Run All without ``NB_HITL_ANSWER_FROM_CODE``: each cell after a card says what
to click and waits. A person reads each card's diff (drawn as text, one
classed line each) and presses Approve: the rename of ``greet.py``, the new
``test_greet.py``; then C42: the README's card was drawn before a teammate
saved the file, so the click on Approve runs nothing and a fresh card shows
the diff against the file as it is now; approving it (and the card the model
asks after AgentScope's own read check) finishes the reply. The notebook ends
with no error output and prints what the clicks did.
"""

from __future__ import annotations

import re
import shutil

from tests.harness import REPO_ROOT
from tests.harness.lab import (
    JupyterLabServer,
    card_locator,
    notebook_outputs,
    open_notebook,
    output_locator,
    run_all_cells,
    wait_execution_done,
)

NOTEBOOK = REPO_ROOT / "notebooks" / "edit_with_diff.ipynb"


def _diff_lines(card, testid: str = "nbh-file-diff") -> list[list[str]]:  # type: ignore[no-untyped-def]
    diff = card.locator(f'[data-testid="{testid}"]').first
    return diff.locator("span").evaluate_all("(ss) => ss.map((s) => [s.dataset.kind, s.textContent])")


def _approve(page, waiting: str, path_end: str):  # type: ignore[no-untyped-def]
    """Once the notebook says ``waiting``, the one open card (its path ends with ``path_end``): approved."""
    output_locator(page, f"Waiting for you: {waiting}").wait_for(timeout=90_000)
    card = card_locator(page, "confirm")
    card.wait_for(timeout=30_000)
    assert card.count() == 1
    assert card.locator('[data-testid="nbh-file-path"]').inner_text().endswith(f"{path_end}:")
    lines = _diff_lines(card)
    card.locator('[data-testid="nbh-approve"]').click()
    return lines


def test_edit_with_diff_clicked_through(page, lab: JupyterLabServer) -> None:
    shutil.copy(NOTEBOOK, lab.root / "edit_with_diff.ipynb")
    open_notebook(page, lab, "edit_with_diff.ipynb")
    run_all_cells(page)

    card = card_locator(page, "confirm")  # Try it first: the Edit in a temporary copy, the card stays open
    card.locator('[data-testid="nbh-dry-run"]').click(timeout=90_000)
    result = card.locator('[data-testid="nbh-dry-run-result"]')
    result.wait_for(timeout=60_000)
    assert result.get_attribute("data-state") == "success"
    assert card.locator('[data-testid="nbh-dry-run-file"]').inner_text().startswith("Changed in the copy: ")
    assert ["add", "+def welcome(name):"] in _diff_lines(
        card.locator('[data-testid="nbh-dry-run-result"]'), "nbh-dry-run-diff"
    )
    rename = _approve(page, "press Approve on the greet.py card above", "/greet.py")
    assert ["del", "-def greet(name):"] in rename and ["add", "+def welcome(name):"] in rename
    new_file = _approve(page, "press Approve on the test_greet.py card above", "/test_greet.py")
    assert new_file[0] == ["meta", "--- /dev/null"] and ["add", "+from greet import welcome"] in new_file

    seen = _approve(page, "press Approve on the README.md card above (it shows the old file)", "/README.md")
    assert not [line for line in seen if "docs team" in line[1]]  # drawn before the teammate's save
    fresh = _approve(page, "press Approve on the fresh README.md card above", "/README.md")
    assert ["context", " Maintained by the docs team."] in fresh  # the diff against the file as it is now
    assert ["add", "+Run `python greet.py`; test with `python -m pytest`."] in fresh
    _approve(page, "press Approve on the last README.md card above", "/README.md")

    output_locator(page, re.compile(r"file_changed")).wait_for(timeout=90_000)
    wait_execution_done(page, timeout=120)
    # the transcript in order: the approved call's result says why it did not run, the call asked again
    # has its card in its own entry (not below the reply's last text), and its result follows that card
    asked = page.locator('.jp-OutputArea-output [data-testid="nbh-card"][data-tool-call-id$="_r2"]')
    assert asked.count() == 1
    order = asked.evaluate(
        """(card) => {
          const reply = card.closest('[data-testid="nbh-reply"]');
          const all = Array.from(reply.querySelectorAll(
            '[data-testid="nbh-tool-call"], [data-testid="nbh-tool-result"], [data-testid="nbh-final-text"]'));
          const entry = card.closest('[data-testid="nbh-tool-call"]');
          const notRun = all.find((e) => e.matches('[data-testid="nbh-tool-result"]')
            && e.querySelector('.nbh-chip').textContent === 'not run');
          const final = reply.querySelector('[data-testid="nbh-final-text"]');
          const before = (a, b) => !!(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
          return {inEntry: !!entry, notRun: notRun ? notRun.querySelector('.nbh-pre').textContent : null,
                  afterNotRun: !!entry && before(notRun, entry), beforeFinal: before(card, final),
                  next: entry ? all[all.indexOf(entry) + 1].textContent : null};
        }"""
    )
    assert order["inEntry"] and order["afterNotRun"] and order["beforeFinal"], order
    assert re.match(
        r"Not run: the file \S+README\.md changed after the approval; it is asked again on the next card\.$",
        order["notRun"],
    )
    assert "must first read it" in order["next"]  # AgentScope's Edit: the file changed since the model read it
    outputs = notebook_outputs(page)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    whole = "\n".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
    assert "answers: your clicks in the widgets" in whole
    assert "greet.py now: def welcome(name):" in whole
    assert "README.md has the teammate's line and not the edit: True" in whole
    assert re.search(r"the approval of call_\w+: expired \(Not run: the file \S+README\.md changed after", whole)
    assert "Edit: Successfully replaced 1 occurrence" in whole
    decisions = [line.split()[2] for line in whole.splitlines() if re.match(r"(Edit|Write) +call_\w+ +\w+$", line)]
    assert decisions == ["approve", "approve", "approve", "file_changed", "approve", "approve"]
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
