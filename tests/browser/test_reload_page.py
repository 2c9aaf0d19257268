"""Reloading the browser page while a pause waits (C23), in real JupyterLab + Chromium.

A cell runs an agent that pauses on a confirmation, either awaiting it
(``await session.run(...)``) or in the background (``session.start(...)``).
The test reloads the page mid-pause: the card must render again (not
"Loading widget..." forever), answering it by a click must finish the reply,
and the tool must run exactly once.
"""

from __future__ import annotations

import pytest

from tests.harness.lab import (
    JupyterLabServer,
    open_notebook,
    restart_kernel,
    run_all_cells,
    run_new_cell,
    save_notebook,
    wait_execution_done,
    write_notebook,
)
from tests.support_agents import deletion_cell

OUT = ".jp-OutputArea-output"

SETUP = deletion_cell("c23")

AWAITING = "reply = await session.run('tidy up')"
BACKGROUND = "handle = session.start('tidy up')"
AFTER_BACKGROUND = "reply = await handle"
CHECK = "print('EXISTS:', (box / 'old_log.txt').exists())"


def _confirm(page, status: str = "open"):  # type: ignore[no-untyped-def]
    return page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="{status}"]')


@pytest.mark.parametrize("pattern", ["awaiting", "background"])
def test_C23_reload_mid_pause_renders_the_card_and_a_click_finishes_the_reply(
    page, lab: JupyterLabServer, pattern: str
) -> None:
    name = f"c23_{pattern}.ipynb"
    cells = [SETUP, AWAITING] if pattern == "awaiting" else [SETUP, BACKGROUND, AFTER_BACKGROUND]
    write_notebook(lab.root / name, cells)
    open_notebook(page, lab, name)
    run_all_cells(page)
    _confirm(page).wait_for(timeout=60_000)

    save_notebook(page)  # what autosave does: the reloaded page shows the saved outputs
    page.reload()
    page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(state="visible", timeout=60_000)
    card = _confirm(page)
    card.wait_for(timeout=60_000)
    assert page.locator(f"{OUT}:has-text('Loading widget')").count() == 0
    card.locator('[data-testid="nbh-approve"]').click()

    page.locator(f'{OUT} [data-testid="nbh-final-text"]').first.wait_for(timeout=60_000)
    assert page.locator(f'{OUT} [data-testid="nbh-final-text"]').first.inner_text() == "All done."
    # the kernel is free again: a new cell runs and sees the tool ran once
    run_new_cell(page, CHECK)
    # the new cell ran (the cells run before the reload keep no count: their
    # execute_reply went to the page that was reloaded, as in plain JupyterLab)
    page.locator(f"{OUT}:has-text('EXISTS: False')").first.wait_for(timeout=60_000)
    delivered = _confirm(page, "delivered")
    assert delivered.count() == 1
    assert "Approved" in delivered.inner_text()


RESTART_CELLS = [SETUP, BACKGROUND]


def test_restart_in_the_same_page_says_the_kernel_restarted(page, lab: JupyterLabServer) -> None:
    """Kernel > Restart with a live card in the page: the card says the kernel
    restarted (not "waiting for you"), and Approve cannot send into the void."""
    write_notebook(lab.root / "restart.ipynb", RESTART_CELLS)
    open_notebook(page, lab, "restart.ipynb")
    run_all_cells(page)
    card = _confirm(page)
    card.wait_for(timeout=60_000)
    reply = page.locator(f'{OUT} [data-testid="nbh-reply"]')
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]').wait_for(timeout=30_000)

    restart_kernel(page, lab)

    page.locator(f'{OUT} [data-testid="nbh-reply"][data-kernel="gone"]').wait_for(timeout=30_000)
    banner = reply.locator('[data-testid="nbh-live-banner"]')
    assert banner.is_visible()
    assert "The kernel restarted or stopped" in banner.inner_text()
    assert reply.locator('[data-testid="nbh-status"]').get_attribute("data-status") == "not-live"
    # what a screen reader last heard of the reply follows the chip: not "waiting for you"
    said = reply.locator('[data-testid="nbh-announce"]').first.text_content() or ""
    assert said.endswith(": not live"), said
    assert card.locator('[data-testid="nbh-approve"]').is_disabled()
    assert "Could not reach the kernel" not in reply.inner_text()


BUSY = "import time\ntime.sleep(10)  # a cell that blocks: the kernel answers nothing meanwhile"


def test_a_busy_kernel_is_checked_again_and_the_card_comes_back_live(page, lab: JupyterLabServer) -> None:
    """The first liveness check meets a blocking cell: the reply is marked not
    live, then checked again; once the cell ends it is live and a click works."""
    write_notebook(lab.root / "busy.ipynb", [SETUP, BACKGROUND, BUSY, AFTER_BACKGROUND])
    open_notebook(page, lab, "busy.ipynb")
    run_all_cells(page)
    reply = page.locator(f'{OUT} [data-testid="nbh-reply"]')
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="false"]').wait_for(timeout=60_000)
    assert "does not answer" in reply.locator('[data-testid="nbh-live-banner"]').inner_text()
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]').wait_for(timeout=60_000)
    assert reply.locator('[data-testid="nbh-live-banner"]').is_hidden()
    card = _confirm(page)
    card.locator('[data-testid="nbh-approve"]').click()
    page.locator(f'{OUT} [data-testid="nbh-final-text"]').first.wait_for(timeout=60_000)
    wait_execution_done(page)


def test_kernel_interrupt_stops_the_wait_and_the_card_still_finishes_the_reply(page, lab: JupyterLabServer) -> None:
    """Kernel > Interrupt while ``await session.run(...)`` waits on a card: the cell ends at
    once with nb_hitl's note (not a CancelledError later), the card stays live, and a click
    finishes the reply; the tool runs once."""
    write_notebook(lab.root / "interrupt.ipynb", [SETUP, AWAITING])
    open_notebook(page, lab, "interrupt.ipynb")
    run_all_cells(page)
    card = _confirm(page)
    card.wait_for(timeout=60_000)
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]').wait_for(timeout=30_000)

    page.evaluate("() => { window.jupyterapp.commands.execute('kernelmenu:interrupt'); }")
    page.locator(f"{OUT}:has-text('Kernel > Interrupt stopped this cell from waiting')").first.wait_for(timeout=15_000)
    wait_execution_done(page)  # no cell is left at [*]
    # the note alone: no CancelledError traceback into nb_hitl's internals
    assert page.locator(f"{OUT}:has-text('CancelledError')").count() == 0
    assert page.locator(f"{OUT}:has-text('nb_hitl/session')").count() == 0
    assert page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]').count() == 1

    card.locator('[data-testid="nbh-approve"]').click()
    page.locator(f'{OUT} [data-testid="nbh-final-text"]').first.wait_for(timeout=60_000)
    run_new_cell(page, CHECK)
    page.locator(f"{OUT}:has-text('EXISTS: False')").first.wait_for(timeout=60_000)
    assert _confirm(page, "delivered").count() == 1
