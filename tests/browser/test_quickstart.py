"""The quickstart notebook, end to end, in real JupyterLab + Debian Chromium.

A person opens ``notebooks/quickstart.ipynb``, runs all cells, picks a file
in the AskUser panel, clicks Modify, changes the path to another file that
exists, and clicks "Approve modified input". The agent resumes in the same
kernel (the cell awaits it at top level), the edited file is really deleted,
the file first chosen is kept, and the agent's answer shows in the widget and
in the cell's printed output. Before the good edit, an edit that is not JSON
is refused in the card (C05), and the card stays open.

The screenshot taken while the confirmation card shows is the README's
``test-artifacts/quickstart-pause.png`` (copied to ``docs/screenshot-pause.png``,
the README's picture, when ``NB_HITL_UPDATE_DOCS=1``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from tests.harness.lab import (
    ARTIFACTS,
    REPO_ROOT,
    JupyterLabServer,
    card_locator,
    open_notebook,
    output_locator,
    wait_execution_done,
)

NOTEBOOK = REPO_ROOT / "notebooks" / "quickstart.ipynb"
DOCS_SCREENSHOT = REPO_ROOT / "docs" / "screenshot-pause.png"
OUT = ".jp-OutputArea-output"


def run_all_cells(page) -> None:  # type: ignore[no-untyped-def]
    """Run > Run All Cells without awaiting the command.

    ``tests.harness.lab.run_all_cells`` awaits ``commands.execute(...)``,
    whose promise only settles when every cell has run; here a cell awaits
    the agent, which waits for the clicks this test has yet to make.
    """
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def test_quickstart_end_to_end(page, lab: JupyterLabServer) -> None:
    shutil.copy(NOTEBOOK, lab.root / "quickstart.ipynb")
    open_notebook(page, lab, "quickstart.ipynb")
    run_all_cells(page)

    printed = output_locator(page, re.compile(r"^sandbox: ")).first
    printed.wait_for(timeout=60_000)
    sandbox = Path(printed.text_content().strip().splitlines()[0].removeprefix("sandbox: ").strip())
    assert sorted(p.name for p in sandbox.iterdir()) == ["draft.md", "notes.txt", "old_log.txt"]

    # -- the AskUser panel --------------------------------------------------------
    ask = card_locator(page, "ask_user")
    ask.wait_for(timeout=60_000)
    assert ask.locator('[data-testid="nbh-header"]').inner_text() == "Cleanup"
    assert ask.locator('[data-testid="nbh-question"]').get_attribute("data-question") == "Which file should I delete?"
    assert "notes.txt" in ask.locator('[data-testid="nbh-context"]').inner_text()
    labels = [el.get_attribute("data-label") for el in ask.locator('[data-testid="nbh-option"]').all()]
    assert labels == ["draft.md", "notes.txt", "old_log.txt"]
    option = ask.locator('[data-testid="nbh-option"][data-label="draft.md"]')
    option.click()
    assert option.locator("input").is_checked()
    # single-select with previews: the chosen option's preview shows beside the options
    assert "# Draft" in ask.locator('[data-testid="nbh-preview"]').inner_text()
    ask.locator('[data-testid="nbh-answer-submit"]').click()

    # -- the confirmation card ----------------------------------------------------------
    confirm = card_locator(page, "confirm")
    confirm.wait_for(timeout=60_000)
    answered = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="ask_user"]')
    assert "Which file should I delete? → draft.md" in answered.locator('[data-testid="nbh-decision"]').inner_text()
    assert json.loads(confirm.locator('[data-testid="nbh-input"]').inner_text()) == {"path": "draft.md"}
    assert "Permission required for delete_file" in confirm.inner_text()
    for testid in ("nbh-approve", "nbh-deny", "nbh-modify", "nbh-always"):
        assert confirm.locator(f'[data-testid="{testid}"]').is_enabled()
    # the README's screenshot: the notebook with the pause at the bottom of the view
    page.evaluate("() => { const s = window.jupyterapp.shell; if (!s.leftCollapsed) s.collapseLeft(); }")
    confirm.evaluate("el => el.scrollIntoView({block: 'end'})")
    page.wait_for_timeout(300)  # let the layout settle after the sidebar closed (a picture, not an assertion)
    confirm.evaluate("el => el.scrollIntoView({block: 'end'})")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "quickstart-pause.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size < 400_000
    if os.environ.get("NB_HITL_UPDATE_DOCS") == "1":  # refresh the README's picture on request only
        shutil.copy(shot, DOCS_SCREENSHOT)

    # -- C05: an edit that is not JSON is refused in the card, which stays open -----------------
    confirm.locator('[data-testid="nbh-modify"]').click()
    area = confirm.locator('[data-testid="nbh-modify-input"]')
    assert json.loads(area.input_value()) == {"path": "draft.md"}
    area.fill('{"path": "notes.txt"')
    confirm.locator('[data-testid="nbh-modify-submit"]').click()
    error = confirm.locator('[data-testid="nbh-error"]')
    error.wait_for(timeout=15_000)
    assert "not valid JSON" in error.inner_text() and "line 1, column 21" in error.inner_text()
    assert confirm.get_attribute("data-status") == "open"
    assert area.input_value() == '{"path": "notes.txt"', "the typed edit must survive a refusal"
    page.screenshot(path=str(ARTIFACTS / "quickstart-C05-refused.png"))
    assert sorted(p.name for p in sandbox.iterdir()) == ["draft.md", "notes.txt", "old_log.txt"]

    # -- the good edit: another existing file ---------------------------------------------------
    area.fill(json.dumps({"path": "notes.txt"}, indent=2))
    confirm.locator('[data-testid="nbh-modify-submit"]').click()

    final_text = "Done. Deleted notes.txt. The folder now holds: draft.md, old_log.txt."
    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert final.inner_text() == final_text
    decided = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"]')
    assert (
        'Approved with modified input: {"path":"notes.txt"}'
        in decided.locator('[data-testid="nbh-decision"]').inner_text()
    )
    status = page.locator(f'{OUT} [data-testid="nbh-status"]')
    assert status.get_attribute("data-status") == "finished"

    wait_execution_done(page, timeout=60)
    output_locator(page, f"FINAL: {final_text}").wait_for(timeout=30_000)
    output_locator(page, "files left: ['draft.md', 'old_log.txt']").wait_for(timeout=30_000)
    # the real file system: the edited path is gone, the file first chosen is kept
    assert sorted(p.name for p in sandbox.iterdir()) == ["draft.md", "old_log.txt"]
    audit = output_locator(page, re.compile(r"^AskUser answer")).first.inner_text()
    assert "delete_file modify {'path': 'notes.txt'}" in audit
    page.screenshot(path=str(ARTIFACTS / "quickstart-done.png"))
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
