"""C39: the page is reloaded WITHOUT saving while a cell awaits a pause, in real JupyterLab + Chromium.

The reloaded notebook has no outputs (they were never saved), yet the kernel
still awaits ``await session.run(...)``. JupyterLab's widget manager restores
the kernel's live widget models with no view; the reply's page code notices a
reply that waits and is shown nowhere, and a banner names the one action that
brings the card back ("Show the card here"). Answering the card there ends
the reply and frees the kernel; the tool runs once. (The quickstart edits
the file while its card is open, C42: that approval runs nothing and a fresh
card in the same panel asks again; that one is approved too.)

Second road: the notebook is reopened (a fresh page, nothing saved) while its
kernel still waits on the old pause, and Run All is chosen. The queued cells
wait behind the awaiting cell; the banner says so and the card is reachable.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from nb_hitl.store import AuditLog
from tests.harness.lab import (
    REPO_ROOT,
    JupyterLabServer,
    card_locator,
    new_page,
    open_notebook,
    output_locator,
    run_all_cells,
    run_new_cell,
    wait_execution_done,
    wait_kernel_idle,
    write_notebook,
)
from tests.support_agents import deletion_cell

OUT = ".jp-OutputArea-output"
NOTEBOOK = REPO_ROOT / "notebooks" / "quickstart.ipynb"
BANNER = '[data-testid="nbh-waiting"]'
#: autosave off: the notebook on disk keeps no outputs, as when the page is reloaded within autosave's 120 s
NO_AUTOSAVE = ("@jupyterlab/docmanager-extension:plugin", {"autosave": False})


def _no_outputs_on_disk(lab: JupyterLabServer, name: str) -> bool:
    return all(not cell.get("outputs") for cell in lab.notebook_json(name)["cells"])


def test_c39_reload_without_saving_gives_the_card_back_and_a_click_finishes_the_reply(
    page, lab: JupyterLabServer
) -> None:
    lab.write_user_settings(*NO_AUTOSAVE)
    shutil.copy(NOTEBOOK, lab.root / "c39.ipynb")
    open_notebook(page, lab, "c39.ipynb")
    run_all_cells(page)
    printed = output_locator(page, re.compile(r"^sandbox: ")).first
    printed.wait_for(timeout=60_000)
    sandbox = Path(printed.text_content().strip().splitlines()[0].removeprefix("sandbox: ").strip())
    ask = card_locator(page, "ask_user")
    ask.wait_for(timeout=60_000)
    ask.locator('[data-testid="nbh-option"][data-label="draft.md"]').click()
    ask.locator('[data-testid="nbh-answer-submit"]').click()
    card_locator(page, "confirm").wait_for(timeout=60_000)
    assert _no_outputs_on_disk(lab, "c39.ipynb")

    page.on("dialog", lambda dialog: dialog.accept())  # "leave the page with unsaved changes?"
    page.reload()
    page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(state="visible", timeout=60_000)
    banner = page.locator(BANNER)
    banner.wait_for(timeout=60_000)
    # what the case describes: no output, no card in the notebook
    assert page.locator(f"{OUT} [data-testid='nbh-card']").count() == 0
    text = banner.locator('[data-testid="nbh-waiting-text"]').inner_text()
    assert "is waiting for your answer (1 open pause)" in text
    show = banner.locator('[data-testid="nbh-waiting-show"]')
    assert show.inner_text() == "Show the card here"
    cells = banner.locator('[data-testid="nbh-waiting-cells"]').inner_text()
    # the quickstart awaits the reply in a later cell than the one that started it (and drew its widget)
    assert cells == "The kernel is running a cell: cells you run wait until it ends."

    show.click()  # action 1, named by the banner
    panel = banner.locator('[data-testid="nbh-waiting-panel"]')
    confirm = card_locator(panel, "confirm", outputs=False)
    assert json.loads(confirm.locator('[data-testid="nbh-input"]').inner_text()) == {"path": "draft.md"}
    assert "added by someone else" in (sandbox / "draft.md").read_text()  # the quickstart's edit, before the click
    confirm.locator('[data-testid="nbh-approve"]').click()  # action 2, the card's own
    # the quickstart edits draft.md while that card is open (C42): the approval runs nothing, and a fresh
    # card in the same panel asks again with the file as it is now; approving it deletes the file once
    card_locator(panel, "confirm", "expired", outputs=False).wait_for(timeout=60_000)
    fresh = card_locator(panel, "confirm", outputs=False)
    fresh.wait_for(timeout=60_000)
    assert "changed after the card of this delete_file call was drawn" in fresh.inner_text()
    fresh.locator('[data-testid="nbh-approve"]').click()

    final = panel.locator('[data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert "Deleted draft.md" in final.inner_text()
    assert panel.locator('[data-testid="nbh-status"]').get_attribute("data-status") == "finished"
    wait_kernel_idle(lab, path="c39.ipynb")  # the awaiting cell (and the cells queued behind it) ended
    # the tool ran once: the file is gone, the others kept; the refused approval and the one that ran
    assert sorted(p.name for p in sandbox.iterdir()) == ["notes.txt", "old_log.txt"]
    audit = sandbox.parent / (sandbox.name + "-audit.jsonl")
    records = AuditLog(audit).records("answered")
    assert [(r["tool_name"], r["decision"]) for r in records if r["tool_name"] == "delete_file"] == [
        ("delete_file", "approve"),
        ("delete_file", "file_changed"),
        ("delete_file", "approve"),
    ]
    # the banner says the reply no longer waits; a new cell runs at once
    assert "no longer waits" in banner.locator('[data-testid="nbh-waiting-text"]').inner_text()
    run_new_cell(page, "print('kernel free')")
    output_locator(page, "kernel free").wait_for(timeout=60_000)


def test_c39_reopen_and_run_all_while_the_kernel_waits_says_cells_wait_and_shows_the_card(
    page, lab: JupyterLabServer
) -> None:
    lab.write_user_settings(*NO_AUTOSAVE)
    write_notebook(lab.root / "c39_reopen.ipynb", [deletion_cell("c39"), "reply = await session.run('tidy up')"])
    open_notebook(page, lab, "c39_reopen.ipynb")
    run_all_cells(page)
    card_locator(page, "confirm").wait_for(timeout=60_000)
    assert _no_outputs_on_disk(lab, "c39_reopen.ipynb")
    page.close()  # the tab is gone; the kernel still awaits the pause

    second = new_page(page.context.browser)
    try:
        open_notebook(second, lab, "c39_reopen.ipynb", wait_kernel=False)
        run_all_cells(second)  # both cells queue behind the cell that still awaits
        banner = second.locator(BANNER)
        banner.wait_for(timeout=60_000)
        assert (
            banner.locator('[data-testid="nbh-waiting-cells"]')
            .inner_text()
            .startswith("Cells you run wait until this reply ends")
        )
        assert second.locator(".jp-CodeCell .jp-InputArea-prompt:has-text('[*]')").count() == 2
        banner.locator('[data-testid="nbh-waiting-show"]').click()
        card_locator(banner, "confirm", outputs=False).locator('[data-testid="nbh-approve"]').click()
        banner.locator('[data-testid="nbh-final-text"]').wait_for(timeout=60_000)
        # the queued cells run now: the new reply's card is in the cell's output, not behind a banner
        fresh = card_locator(second, "confirm")
        fresh.wait_for(timeout=60_000)
        fresh.locator('[data-testid="nbh-approve"]').click()
        wait_execution_done(second)
        assert second.locator(f'{OUT} [data-testid="nbh-final-text"]').inner_text() == "All done."
        assert second.locator(BANNER).count() == 1  # only the old reply's, which ended
    finally:
        second.context.close()
