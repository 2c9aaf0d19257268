"""notebooks/edit_with_diff.ipynb clicked through in real JupyterLab + Chromium.

Run All without ``NB_HITL_ANSWER_FROM_CODE``: each cell after a card says what
to click and waits. A person reads each card's diff (drawn as text, one
classed line each) and presses Approve: the rename of ``greet.py``, the new
``test_greet.py``; then C42: the README's card was drawn before a teammate
saved the file, so the click on Approve runs nothing, and the call is not
asked again (AgentScope's ``Edit`` would refuse it): its card and its result
entry say the agent was told to read the file again; the model reads it and
asks anew, and that card shows the diff against the file as it is now;
approving it runs the edit once. The notebook ends with no error output and
prints what the clicks did, naming calls by tool and input.
"""

from __future__ import annotations

import re
import shutil

from tests.harness import REPO_ROOT
from tests.harness.lab import (
    JupyterLabServer,
    card_locator,
    diff_lines,
    dry_run,
    notebook_outputs,
    open_notebook,
    output_locator,
    run_all_cells,
    wait_execution_done,
)

NOTEBOOK = REPO_ROOT / "notebooks" / "edit_with_diff.ipynb"


def _approve(page, waiting: str, path_end: str):  # type: ignore[no-untyped-def]
    """Once the notebook says ``waiting``, the one open card (its path ends with ``path_end``): approved."""
    output_locator(page, f"Waiting for you: {waiting}").wait_for(timeout=90_000)
    card = card_locator(page, "confirm")
    card.wait_for(timeout=30_000)
    assert card.count() == 1
    assert card.locator('[data-testid="nbh-file-path"]').inner_text().endswith(f"{path_end}:")
    lines = diff_lines(card)
    card.locator('[data-testid="nbh-approve"]').click()
    return lines


def test_edit_with_diff_clicked_through(page, lab: JupyterLabServer) -> None:
    shutil.copy(NOTEBOOK, lab.root / "edit_with_diff.ipynb")
    open_notebook(page, lab, "edit_with_diff.ipynb")
    run_all_cells(page)

    card = card_locator(page, "confirm")  # Try it first: the Edit in a temporary copy, the card stays open
    card.wait_for(timeout=90_000)
    tried = output_locator(page, "Try it: press Dry run on the greet.py card above.")
    tried.wait_for(timeout=30_000)
    # nothing is tried before the click: the cell says what to press, and reports no dry run's outcome
    assert tried.inner_text().strip() == "Try it: press Dry run on the greet.py card above."
    result = dry_run(card, 90_000)
    assert card.locator('[data-testid="nbh-dry-run-file"]').inner_text().startswith("Changed in a copy of ")
    assert ["add", "+def welcome(name):"] in diff_lines(result, "nbh-dry-run-diff")
    rename = _approve(page, "press Approve on the greet.py card above", "/greet.py")
    assert ["del", "-def greet(name):"] in rename and ["add", "+def welcome(name):"] in rename
    new_file = _approve(page, "press Approve on the test_greet.py card above", "/test_greet.py")
    assert new_file[0] == ["meta", "--- /dev/null"] and ["add", "+from greet import welcome"] in new_file

    seen = _approve(page, "press Approve on the README.md card above (it shows the old file)", "/README.md")
    assert not [line for line in seen if "docs team" in line[1]]  # drawn before the teammate's save
    fresh = _approve(page, "press Approve on the new README.md card above", "/README.md")
    assert ["context", " Maintained by the docs team."] in fresh  # the diff against the file as it is now
    assert ["add", "+Run `python greet.py`; test with `python -m pytest`."] in fresh

    output_locator(page, re.compile(r"file_changed")).wait_for(timeout=90_000)
    wait_execution_done(page, timeout=120)
    # the approved card says what happened; in the transcript its result entry says it too, then the
    # model reads the file again and its new call's card sits in that call's entry, with the edit's result
    approved = card_locator(page, "confirm", "expired")
    assert approved.count() == 1
    not_run = re.compile(
        r"Not run: the file \S+README\.md changed after its card was drawn\. The agent was told to read it again\."
    )
    assert not_run.search(approved.inner_text())
    order = page.locator('.jp-OutputArea-output [data-testid="nbh-reply"]').last.evaluate(
        """(reply) => {
          const all = Array.from(reply.querySelectorAll(
            '[data-testid="nbh-tool-call"], [data-testid="nbh-tool-result"], [data-testid="nbh-final-text"]'));
          const i = all.findIndex((e) => e.matches('[data-testid="nbh-tool-result"]')
            && e.querySelector('.nbh-chip').textContent === 'not run');
          return {
            notRun: i < 0 ? null : all[i].querySelector('.nbh-pre').textContent,
            after: all.slice(i + 1).map((e) => [e.dataset.testid,
              !!e.querySelector('[data-testid="nbh-card"]'), e.textContent]),
          };
        }"""
    )
    assert order["notRun"] is not None and not_run.match(order["notRun"]), order
    kinds = [(testid, has_card) for testid, has_card, _ in order["after"]]
    assert kinds == [
        ("nbh-tool-call", False),  # Read, again
        ("nbh-tool-result", False),
        ("nbh-tool-call", True),  # the new Edit, its card in its entry
        ("nbh-tool-result", False),
        ("nbh-final-text", False),
    ], order
    assert "Successfully replaced 1 occurrence" in order["after"][3][2]  # run once, on the file shown
    outputs = notebook_outputs(page)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    whole = "\n".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
    assert "answers: your clicks in the widgets" in whole
    assert "greet.py now: def welcome(name):" in whole
    assert "README.md has the teammate's line and not the edit: True" in whole
    assert re.search(r"the approved card: expired \(Not run: the file \S+README\.md changed after", whole)
    assert "- Edit: Successfully replaced 1 occurrence" in whole
    assert "call_" not in whole  # calls are named by tool and input
    decisions = [line.split()[0] for line in whole.splitlines() if re.match(r"\w+ +(Edit|Write) \(file_path=", line)]
    assert decisions == ["approve", "approve", "approve", "file_changed", "approve"]
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
