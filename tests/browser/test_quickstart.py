"""The quickstart notebook, end to end, in real JupyterLab + Debian Chromium.

A person opens ``notebooks/quickstart.ipynb``, runs all cells, and picks a
file in the AskUser panel. The confirmation card shows the deletion as a diff
(every line of the file removed, and a note that says the call deletes it).
A cell appends a line to the file while that card is open (someone else's
edit); the person presses Approve as the cell says, and nothing is deleted
(C42, a tool without its own read-before-write check): the card says "Not
run", and a fresh card asks again with the diff of the file as it is now.
On the fresh card the person presses "Dry run", which deletes the file in a
throw-away copy of the sandbox (the card shows it deleted there; every byte
of the real sandbox is kept, and the card stays open). An edit that is not
JSON is refused in the card (C05), and the card stays open. Then Approve:
the agent resumes in the same kernel (a cell awaits it at top level), the
file is really deleted, once, and the agent's answer shows in the widget and
in the cell's printed output. Every pause the notebook meets is clicked.

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
    diff_lines,
    dry_run,
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


def _assert_opens_unmodified(page) -> None:  # type: ignore[no-untyped-def]
    """Opening the committed notebook with its kernel started leaves it unmodified: JupyterLab
    found the kernelspec and ``language_info`` it writes already there. The Python version is
    the one thing a committed notebook cannot match everywhere (JupyterLab rewrites it)."""
    committed = json.loads(NOTEBOOK.read_text())["metadata"]["language_info"]["version"]
    dirty, version = page.evaluate(
        """async () => {
            const w = window.jupyterapp.shell.currentWidget;
            const kernel = w.sessionContext.session.kernel;
            // the panel writes the metadata when these settle (its handlers were attached first)
            await Promise.all([kernel.info, kernel.spec]);
            await new Promise((resolve) => setTimeout(resolve, 500));
            return [w.context.model.dirty, w.context.model.getMetadata("language_info").version];
        }"""
    )
    if version == committed:
        assert dirty is False, "quickstart.ipynb reads as modified right after opening"
    else:
        assert dirty is True, f"kernel Python {version}, committed {committed}: JupyterLab rewrites it"


def test_quickstart_end_to_end(page, lab: JupyterLabServer) -> None:
    shutil.copy(NOTEBOOK, lab.root / "quickstart.ipynb")
    open_notebook(page, lab, "quickstart.ipynb")
    _assert_opens_unmodified(page)
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
    # what the deletion does: the whole file removed
    draft = sandbox / "draft.md"
    assert confirm.locator('[data-testid="nbh-file-path"]').inner_text() == f"Changes to {draft}:"
    assert confirm.locator('[data-testid="nbh-file-note"]').inner_text() == (
        f"The call deletes {draft}: every line of the file is removed."
    )
    removed = [
        ["meta", f"--- {draft}"],
        ["meta", "+++ /dev/null"],
        ["hunk", "@@ -1,3 +0,0 @@"],
        ["del", "-# Draft"],
        ["del", "-"],
        ["del", "-A first paragraph nobody has read yet."],
    ]
    assert diff_lines(confirm) == removed
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

    # -- C42: the file changes while the card is open; Approve runs nothing, a fresh card asks again ----
    output_locator(page, "Press Approve on the card above (it shows the file as it was).").wait_for(timeout=60_000)
    assert draft.read_text().endswith("A second paragraph, added by someone else.\n")
    assert diff_lines(confirm) == removed  # the card still shows the file as it was
    confirm.locator('[data-testid="nbh-approve"]').click()
    refused = card_locator(page, "confirm", "expired")
    refused.wait_for(timeout=60_000)
    assert f"Not run: the file {draft} changed after its card was drawn; it is asked again on the next card." in (
        refused.inner_text()
    )
    confirm = card_locator(page, "confirm")
    confirm.wait_for(timeout=60_000)
    assert confirm.count() == 1
    assert (
        f"The file {draft} changed after the card of this delete_file call was drawn, before it ran, so nothing ran."
        in (confirm.inner_text())
    )
    removed = [
        ["meta", f"--- {draft}"],
        ["meta", "+++ /dev/null"],
        ["hunk", "@@ -1,4 +0,0 @@"],
        ["del", "-# Draft"],
        ["del", "-"],
        ["del", "-A first paragraph nobody has read yet."],
        ["del", "-A second paragraph, added by someone else."],
    ]
    assert diff_lines(confirm) == removed  # the file as it is now
    assert sorted(p.name for p in sandbox.iterdir()) == ["draft.md", "notes.txt", "old_log.txt"]
    output_locator(page, "Press Dry run on the fresh card above").wait_for(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "quickstart-C42-asked-again.png"))

    # -- Dry run: the deletion in a throw-away copy; the real sandbox keeps every byte ---------------
    kept = {p.name: p.read_bytes() for p in sandbox.iterdir()}
    result = dry_run(confirm)
    assert (
        result.locator('[data-testid="nbh-dry-run-summary"]')
        .inner_text()
        .startswith("Dry run in a temporary copy of its folder: delete_file ran with the input Approve would run")
    )
    assert confirm.locator('[data-testid="nbh-dry-run-file"]').inner_text() == "Deleted in the copy: draft.md"
    assert diff_lines(result, "nbh-dry-run-diff")[1:] == removed[1:]
    assert result.locator('[data-testid="nbh-dry-run-output"]').inner_text() == "Deleted draft.md."
    assert {p.name: p.read_bytes() for p in sandbox.iterdir()} == kept
    assert confirm.get_attribute("data-status") == "open"
    page.screenshot(path=str(ARTIFACTS / "quickstart-dry-run.png"))

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

    # -- Approve: the file is deleted for real ------------------------------------------------
    confirm.locator('[data-testid="nbh-modify-cancel"]').click()
    confirm.locator('[data-testid="nbh-approve"]').click()

    final_text = "Done. Deleted draft.md. The folder now holds: notes.txt, old_log.txt."
    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert final.inner_text() == final_text
    decided = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"]:not([data-status="expired"])')
    assert decided.locator('[data-testid="nbh-decision"]').inner_text().startswith("Approved")
    status = page.locator(f'{OUT} [data-testid="nbh-status"]')
    assert status.get_attribute("data-status") == "finished"

    wait_execution_done(page, timeout=60)
    output_locator(page, f"FINAL: {final_text}").wait_for(timeout=30_000)
    output_locator(page, "files left: ['notes.txt', 'old_log.txt']").wait_for(timeout=30_000)
    # the real file system: the chosen file is gone, the others are kept byte for byte
    assert {p.name: p.read_bytes() for p in sandbox.iterdir()} == {k: v for k, v in kept.items() if k != "draft.md"}
    audit = output_locator(page, re.compile(r"^AskUser answer")).first.inner_text()
    assert [line.rstrip() for line in audit.splitlines()[1:]] == [
        "delete_file approve",
        "delete_file file_changed (by nb_hitl: nothing ran)",
        "delete_file approve",
    ]
    page.screenshot(path=str(ARTIFACTS / "quickstart-done.png"))
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
