"""C12, the kernel restarted *before* the save, in real JupyterLab + Debian Chromium.

pauses_in_practice.ipynb is run (Run All) until its first card waits for a
click; the kernel is restarted, then the notebook is saved, then the page is
reloaded. JupyterLab's widget manager saves only models whose comm is live, so
the restart used to drop the reply from the saved widget state while the cell's
output still named it: the reloaded notebook showed "Error displaying widget:
model not found" (and the same in the browser console) where the card was.
Now the drawn reply stays saved (``js/lib/keep_saved.ts``): the reloaded page
draws the saved card read-only, says its kernel is gone and to run the cell
again. Second road: after the restart, Run All gives a fresh live card, and
nothing says "model not found".
"""

from __future__ import annotations

import re
import shutil

from playwright.sync_api import expect

from tests.harness.lab import (
    REPO_ROOT,
    JupyterLabServer,
    card_locator,
    open_notebook,
    output_locator,
    restart_kernel,
    run_all_cells,
    save_notebook,
    screenshot,
)

OUT = ".jp-OutputArea-output"
NOTEBOOK = REPO_ROOT / "notebooks" / "pauses_in_practice.ipynb"
NOT_FOUND = re.compile("model not found|Error displaying widget", re.IGNORECASE)
QUESTION = "What should the summary file be called?"


def _saved_replies(lab: JupyterLabServer, name: str) -> list[dict]:
    """The reply widgets' states in the notebook's saved widget state."""
    meta = lab.notebook_json(name)["metadata"].get("widgets") or {}
    models = meta.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return [m["state"] for m in models.values() if "pauses" in m["state"]]


def _no_model_not_found(page) -> None:  # type: ignore[no-untyped-def]
    assert output_locator(page, NOT_FOUND).count() == 0
    assert not [e for e in page.nbh_errors if NOT_FOUND.search(e)], page.nbh_errors


def test_c12_restart_then_save_then_reload_shows_the_saved_card_read_only(page, lab: JupyterLabServer) -> None:
    shutil.copy(NOTEBOOK, lab.root / "c12_restart_save.ipynb")
    open_notebook(page, lab, "c12_restart_save.ipynb")
    run_all_cells(page)
    card_locator(page, "ask_user").wait_for(timeout=90_000)
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]').first.wait_for(timeout=30_000)

    restart_kernel(page, lab)
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="false"]').first.wait_for(timeout=30_000)
    save_notebook(page)
    # what the page shows is what the notebook saved: the reply, its cards as the page holds them
    (saved,) = _saved_replies(lab, "c12_restart_save.ipynb")
    assert sorted(p["tool_name"] for p in saved["pauses"] if p["status"] == "open") == ["AskUser", "delete_file"]

    page.on("dialog", lambda dialog: dialog.accept())
    page.reload()
    root = page.locator(f'{OUT} [data-testid="nbh-reply"]')
    root.first.wait_for(timeout=60_000)
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="false"]').first.wait_for(timeout=30_000)
    banner = root.first.locator('[data-testid="nbh-live-banner"]')
    expect(banner).to_contain_text(re.compile("Not answering|No longer live"), timeout=15_000)
    expect(banner).to_contain_text("Run the cell again")
    root.first.scroll_into_view_if_needed()
    # the saved card, read-only: its question is readable, nothing can be sent
    ask = root.first.locator('[data-testid="nbh-card"][data-kind="ask_user"]')
    expect(ask).to_contain_text(QUESTION)
    expect(ask).to_contain_text(re.compile("Not answering|No longer live"))
    submit = ask.locator('[data-testid="nbh-answer-submit"]')
    assert submit.count() == 0 or submit.is_disabled()
    interrupt = root.first.locator('[data-testid="nbh-interrupt"]')
    assert interrupt.count() == 0 or interrupt.is_disabled()
    _no_model_not_found(page)
    screenshot(page, "C12-restart-save-reload")

    # saved again from the reloaded page: still there (a record restored from the notebook stays saved)
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.context.model.dirty = true; }")
    save_notebook(page)
    assert len(_saved_replies(lab, "c12_restart_save.ipynb")) == 1


def test_c12_restart_then_run_all_gives_a_live_card_and_no_model_not_found(page, lab: JupyterLabServer) -> None:
    shutil.copy(NOTEBOOK, lab.root / "c12_restart_rerun.ipynb")
    open_notebook(page, lab, "c12_restart_rerun.ipynb")
    run_all_cells(page)
    card_locator(page, "ask_user").wait_for(timeout=90_000)

    restart_kernel(page, lab)
    run_all_cells(page)
    live = page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]')
    live.first.wait_for(timeout=90_000)
    card_locator(page, "ask_user").wait_for(timeout=60_000)
    # the old reply's output was cleared by the run: one reply, the new one, live
    assert page.locator(f'{OUT} [data-testid="nbh-reply"]').count() == 1
    save_notebook(page)
    (saved,) = _saved_replies(lab, "c12_restart_rerun.ipynb")  # the old, dead reply is not saved with it
    assert saved["status"] == "paused"
    _no_model_not_found(page)
