"""The teams notebook, clicked through in real JupyterLab + Debian Chromium.

``notebooks/teams.ipynb`` is run with Run All as it is, without
``NB_HITL_ANSWER_FROM_CODE`` (C40: its cells wait for clicks instead of
answering with ``session.act``). A person answers the worker's AskUser card,
approves its deletion in the reply widget, and presses Interrupt when the
worker asks again: each card names the worker as the agent that
asks, each transcript entry names the agent that wrote it, the leader's
``TeamAssign`` is a step in the transcript and never a card, the leader's final message shows in the widget and in the cell output,
and the file is deleted exactly once.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from playwright.sync_api import expect

from tests.harness.lab import (
    ARTIFACTS,
    REPO_ROOT,
    JupyterLabServer,
    card_locator,
    open_notebook,
    output_locator,
    run_all_cells,
    wait_execution_done,
)

NOTEBOOK = REPO_ROOT / "notebooks" / "teams.ipynb"
OUT = ".jp-OutputArea-output"
FINAL = "worker reported back (success): Done. Deleted draft.md. The folder now holds: notes.txt, old_log.txt."


def test_teams_notebook_clicked_through(page, lab: JupyterLabServer) -> None:
    shutil.copy(NOTEBOOK, lab.root / "teams.ipynb")
    open_notebook(page, lab, "teams.ipynb")
    run_all_cells(page)

    printed = output_locator(page, re.compile(r"^sandbox: ")).first
    printed.wait_for(timeout=60_000)
    sandbox = Path(printed.text_content().strip().splitlines()[0].removeprefix("sandbox: ").strip())

    # -- the worker's question: named as the worker's, under the leader's step
    ask = card_locator(page, "ask_user")
    ask.wait_for(timeout=60_000)
    assert ask.locator('[data-testid="nbh-agent"]').inner_text() == "asked by worker"
    reply = page.locator(f'{OUT} [data-testid="nbh-reply"]').first
    # the leader's step is a transcript entry: it streams beside the card and may
    # be drawn after it (the card comes in a record update)
    expect(reply).to_contain_text("lead assigned “Tidy up the sandbox folder", timeout=30_000)
    # the pipeline's own TeamAssign is never a card
    assert page.locator(f'{OUT} [data-testid="nbh-card"]').count() == 1
    ask.locator('[data-testid="nbh-option"][data-label="draft.md"]').click()
    ask.locator('[data-testid="nbh-answer-submit"]').click()

    # -- the worker's confirmation
    confirm = card_locator(page, "confirm")
    confirm.wait_for(timeout=60_000)
    assert confirm.locator('[data-testid="nbh-agent"]').inner_text() == "asked by worker"
    assert json.loads(confirm.locator('[data-testid="nbh-input"]').inner_text()) == {"path": "draft.md"}
    assert sorted(p.name for p in sandbox.iterdir()) == ["draft.md", "notes.txt", "old_log.txt"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    confirm.evaluate("el => el.scrollIntoView({block: 'end'})")
    page.screenshot(path=str(ARTIFACTS / "teams-confirm.png"))
    confirm.locator('[data-testid="nbh-approve"]').click()

    # -- the leader's final message ends the reply
    final = reply.locator('[data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert final.inner_text().endswith(FINAL)
    assert reply.locator('[data-testid="nbh-status"]').get_attribute("data-status") == "finished"
    assert reply.locator('[data-testid="nbh-card"]').count() == 2
    # each entry of the transcript names the agent that wrote it (streamed, as text)
    named = reply.locator('[data-testid="nbh-entry-agent"]')
    assert sorted(set(named.all_inner_texts())) == ["lead", "worker"]
    for entry in ("nbh-tool-call", "nbh-tool-result"):
        labels = reply.locator(f'[data-testid="{entry}"] [data-testid="nbh-entry-agent"]').all_inner_texts()
        assert labels and set(labels) == {"worker"}, (entry, labels)
    assert reply.locator('[data-testid="nbh-tool-call"]').count() == len(
        reply.locator('[data-testid="nbh-tool-call"] [data-testid="nbh-entry-agent"]').all_inner_texts()
    )
    # each name sits at the start of its entry's first line, never on a line of its own: what
    # follows it in the entry starts on the same line, to its right
    lines = named.evaluate_all(
        """els => els.filter(b => b.offsetParent && b.nextElementSibling).map(b => {
             const a = b.getBoundingClientRect(), n = b.nextElementSibling.getBoundingClientRect();
             return [b.textContent, Math.round(n.top - a.top), Math.round(n.left - a.right), a.height];
           })"""
    )  # (a tool call's name is text in its head line, after the badge: no element follows it)
    assert len(lines) >= 3, lines
    for name, below, gap, height in lines:
        assert below < height and gap >= 0, (name, below, gap, height, lines)

    # -- section 4: the worker asks again; the person presses Interrupt
    again = page.locator(f'{OUT} [data-testid="nbh-reply"]').nth(1)
    again.locator('[data-testid="nbh-card"][data-kind="ask_user"][data-status="open"]').wait_for(timeout=60_000)
    output_locator(page, "Waiting for you: press Interrupt in the widget above.").wait_for(timeout=30_000)
    again.locator('[data-testid="nbh-interrupt"]').click()

    wait_execution_done(page, timeout=120)
    output_locator(page, "delete_file ran: ['draft.md']").first.wait_for(timeout=30_000)
    output_locator(page, "files left: ['notes.txt', 'old_log.txt']").wait_for(timeout=30_000)
    output_locator(page, "reply: interrupted - Interrupted from the widget.").wait_for(timeout=30_000)
    assert sorted(p.name for p in sandbox.iterdir()) == ["notes.txt", "old_log.txt"]
    page.screenshot(path=str(ARTIFACTS / "teams-done.png"))

    # -- the approval cell run again: the card was answered, so it says how instead of asking again
    rerun = _rerun_cell(page, 7)
    assert "Waiting for you" not in rerun, rerun
    assert 'Already answered: delete_file (path="draft.md"): approve.' in rerun, rerun
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


def _rerun_cell(page, index: int) -> str:  # type: ignore[no-untyped-def]
    """Run the cell at ``index`` again, wait for it to finish, and return its printed text."""
    page.evaluate(
        """(i) => {
            const w = window.jupyterapp.shell.currentWidget;
            w.content.widgets[i].model.sharedModel.execution_count = null;
            w.content.activeCellIndex = i;
            window.jupyterapp.commands.execute('notebook:run-cell');
        }""",
        index,
    )
    page.wait_for_function(
        """(i) => {
            const cell = window.jupyterapp.shell.currentWidget.content.widgets[i];
            return cell.model.executionCount !== null && cell.model.executionState !== "running";
        }""",
        arg=index,
        timeout=60_000,
    )
    return str(
        page.evaluate(
            """(i) => window.jupyterapp.shell.currentWidget.content.widgets[i].model.outputs.toJSON()
                .map((o) => [].concat(o.text || []).join("")).join("")""",
            index,
        )
    )
