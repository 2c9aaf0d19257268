"""notebooks/pauses_in_practice.ipynb clicked through in real JupyterLab + Chromium.

Run All without ``NB_HITL_ANSWER_FROM_CODE`` (C40): each cell after a pause
says what to click and waits. A person answers the batch of section 1 by
clicks in the widget (the question, then Deny on the first deletion, then
Approve on the second), presses Interrupt in section 2 and answers the
restored question of section 3; the notebook finishes with no error output
(no ``StopIteration``, no ``NameError``) and prints what the clicks did.
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
    restart_kernel,
    run_all_cells,
    wait_execution_done,
)

OUT = ".jp-OutputArea-output"
NOTEBOOK = REPO_ROOT / "notebooks" / "pauses_in_practice.ipynb"


def _run_cells(page, first: int, last: int | None = None) -> None:  # type: ignore[no-untyped-def]
    """Queue cells ``first..last`` (to the end when ``last`` is None), not awaited."""
    page.evaluate(
        """([first, last]) => {
            const w = window.jupyterapp.shell.currentWidget;
            const end = last === null ? w.content.widgets.length - 1 : last;
            for (let i = first; i <= end; i++) {
                w.content.activeCellIndex = i;
                window.jupyterapp.commands.execute('notebook:run-cell');
            }
        }""",
        [first, last],
    )


def _wait_cell_done(page, index: int, timeout: float = 120_000) -> None:  # type: ignore[no-untyped-def]
    """Wait until the cell at ``index`` shows an execution count (not ``[*]`` or ``[ ]``)."""
    page.wait_for_function(
        """(i) => {
            const cell = window.jupyterapp.shell.currentWidget.content.widgets[i];
            const prompt = cell && cell.node.querySelector(".jp-InputArea-prompt");
            return !!prompt && /\\[\\d+\\]/.test(prompt.textContent || "");
        }""",
        arg=index,
        timeout=timeout,
    )


def _reply(page, index: int):  # type: ignore[no-untyped-def]
    return page.locator(f'{OUT} [data-testid="nbh-reply"]').nth(index)


def _wait_in_view(page, card) -> None:  # type: ignore[no-untyped-def]
    """Wait until the top of ``card`` shows in the notebook's scrolled area: Run All leaves the
    notebook scrolled to its last cell, and the card that waits for the person brings itself into view."""
    page.wait_for_function(
        """(el) => {
            const r = el.getBoundingClientRect();
            const box = el.closest(".jp-WindowedPanel-outer").getBoundingClientRect();
            return r.top >= box.top - 1 && r.top + Math.min(48, r.height) <= box.bottom + 1;
        }""",
        arg=card.element_handle(),
        timeout=10_000,
    )


def _click_sections_1_and_2(page) -> None:  # type: ignore[no-untyped-def]
    """Section 1: the question, Deny the first deletion, Approve the second; section 2: Interrupt."""
    ask = card_locator(page, "ask_user")
    ask.wait_for(timeout=90_000)
    output_locator(page, "Waiting for you: in the widget above, pick summary.md").wait_for(timeout=30_000)
    _wait_in_view(page, ask)
    ask.locator('[data-testid="nbh-option"][data-label="summary.md"] input').check()
    ask.locator('[data-testid="nbh-answer-submit"]').click()
    card_locator(page, "ask_user", "delivered").or_(card_locator(page, "ask_user", "decided")).first.wait_for(
        timeout=60_000
    )
    output_locator(page, "Waiting for you: press Deny on the old_log.txt card above.").wait_for(timeout=30_000)
    card_locator(page, "confirm").first.locator('[data-testid="nbh-deny"]').click()
    # AgentScope asks the second deletion once the first is answered
    output_locator(page, "Waiting for you: press Approve on the draft.md card above.").wait_for(timeout=60_000)
    card_locator(page, "confirm").first.locator('[data-testid="nbh-approve"]').click()
    # attached, not "visible": Run All goes on to section 2, whose card brings itself into view, and
    # the first reply's cell, scrolled away, may be left unlaid-out (content-visibility) with its
    # final text drawn inside it
    _reply(page, 0).locator('[data-testid="nbh-final-text"]').wait_for(state="attached", timeout=60_000)

    output_locator(page, "Waiting for you: press Interrupt in the widget above.").wait_for(timeout=60_000)
    _reply(page, 1).locator('[data-testid="nbh-interrupt"]').click()
    output_locator(page, "notes.txt still there: True").wait_for(timeout=60_000)


def test_pauses_in_practice_clicked_through(page, lab: JupyterLabServer) -> None:
    shutil.copy(NOTEBOOK, lab.root / "pauses_in_practice.ipynb")
    open_notebook(page, lab, "pauses_in_practice.ipynb")
    run_all_cells(page)
    _click_sections_1_and_2(page)

    # section 3: the restored session's card (the old widget no longer answers)
    page.locator(f"{OUT}:has-text('restored session:')").first.wait_for(timeout=60_000)
    restored = page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]').last
    ask = restored.locator('[data-testid="nbh-card"][data-kind="ask_user"][data-status="open"]')
    ask.wait_for(timeout=60_000)
    ask.locator('[data-testid="nbh-option"][data-label="Keep it"] input').check()
    ask.locator('[data-testid="nbh-answer-submit"]').click()

    output_locator(page, re.compile(r"decisions in ")).wait_for(timeout=120_000)
    wait_execution_done(page, timeout=240)
    outputs = notebook_outputs(page)
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, errors
    whole = "\n".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
    for bad in ("Traceback", "StopIteration", "NameError", "FileNotFoundError"):
        assert bad not in whole, whole[-3000:]
    assert "answers: your clicks in the widgets" in whole
    assert "the question: answer" in whole
    assert "the deletion of old_log.txt: deny" in whole
    assert "the deletion of draft.md: approve" in whole
    assert "files: ['notes.txt', 'old_log.txt']" in whole
    assert "reply: interrupted - Interrupted from the widget." in whole
    assert '"Keep notes.txt?" -> Keep it' in whole
    assert "4 decisions in" in whole


def test_pauses_in_practice_real_restart_and_restore_by_click(page, lab: JupyterLabServer) -> None:
    """Section 3 with a real Kernel > Restart: the reply parks on a question, the kernel
    restarts (the old card says so), the set-up cells and the restore cell run again as the
    notebook says, and a click in the restored card finishes the reply."""
    # a folder of its own: the notebook keeps its checkpoints next to itself
    (lab.root / "restart").mkdir(exist_ok=True)
    shutil.copy(NOTEBOOK, lab.root / "restart" / "pauses_in_practice.ipynb")
    open_notebook(page, lab, "restart/pauses_in_practice.ipynb")
    _run_cells(page, 0, 18)  # sections 1 and 2 wait for clicks; section 3 parks on a question
    _click_sections_1_and_2(page)
    card_locator(page, "ask_user").first.wait_for(timeout=180_000)
    page.locator(f"{OUT}:has-text('checkpoints:')").first.wait_for(timeout=60_000)

    restart_kernel(page, lab)
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-kernel="gone"]').first.wait_for(timeout=30_000)

    _run_cells(page, 1, 3)  # imports and definitions, as the notebook asks after a real restart
    _run_cells(page, 20, 20)  # Session.restore(...) and start_resume()
    page.locator(f"{OUT}:has-text('restored session:')").first.wait_for(timeout=60_000)
    restored = page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]').last
    ask = restored.locator('[data-testid="nbh-card"][data-kind="ask_user"][data-status="open"]')
    ask.wait_for(timeout=60_000)
    ask.locator('[data-testid="nbh-option"][data-label="Keep it"] input').check()
    ask.locator('[data-testid="nbh-answer-submit"]').click()
    restored.locator('[data-testid="nbh-final-text"]').wait_for(timeout=60_000)

    _run_cells(page, 21, 21)  # finds the question answered by the click and awaits the reply's end
    _wait_cell_done(page, 21)
    outputs = notebook_outputs(page)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    whole = "\n".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
    assert "a new agent object: True" in whole
    assert "the question: answer" in whole
