"""notebooks/replay_and_fork.ipynb clicked through in real JupyterLab + Chromium.

Run All without ``NB_HITL_ANSWER_FROM_CODE``: each cell after a pause says
what to click and waits. A person approves the live call (the counter file
becomes 2), approves the replayed card (it says what was answered then;
nothing runs), and denies the fork's what-if card (the model reads the
denial); the notebook finishes with no error output and the counter file
still holds 2. Then, on the finished live reply, the person presses
"Replay" (the reply plays again inside it, from the record) and "What if…"
(the pause is listed by its tool and input, chosen, and answered with Deny
on the card that opens inside the reply); the counter file still holds 2.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.harness import REPO_ROOT
from tests.harness.lab import JupyterLabServer, open_notebook, output_locator, run_all_cells, wait_execution_done

OUT = ".jp-OutputArea-output"
NOTEBOOK = REPO_ROOT / "notebooks" / "replay_and_fork.ipynb"


def _open_card(page, reply: int):  # type: ignore[no-untyped-def]
    """The open confirmation card of the ``reply``-th reply widget."""
    widget = page.locator(f'{OUT} [data-testid="nbh-reply"]').nth(reply)
    card = widget.locator('[data-testid="nbh-card"][data-kind="confirm"][data-status="open"]')
    card.wait_for(timeout=90_000)
    return card


def _stream_text(page) -> str:  # type: ignore[no-untyped-def]
    """Every stream output of the open notebook, from its model (JupyterLab draws only the cells in view)."""
    outputs = page.evaluate(
        """() => {
            const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
            const all = [];
            for (let i = 0; i < cells.length; i++) all.push(...(cells.get(i).toJSON().outputs || []));
            return all;
        }"""
    )
    assert not [o for o in outputs if o.get("output_type") == "error"]
    return "\n".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")


def test_replay_and_fork_clicked_through(page, lab: JupyterLabServer) -> None:
    shutil.copy(NOTEBOOK, lab.root / "replay_and_fork.ipynb")
    open_notebook(page, lab, "replay_and_fork.ipynb")
    run_all_cells(page)

    # 1. live: approve the bump
    live = _open_card(page, 0)
    output_locator(page, "Waiting for you: press Approve on the bump card above.").wait_for(timeout=60_000)
    live.locator('[data-testid="nbh-approve"]').click()
    output_locator(page, "counter file: 2").first.wait_for(timeout=60_000)

    # 2. the replay: the card says what was answered then; approve it again
    replayed = _open_card(page, 1)
    replayed.locator(".nbh-info", has_text="Recorded answer: approve, by ").wait_for(timeout=30_000)
    output_locator(page, "Waiting for you: press Approve on the replayed card above").wait_for(timeout=60_000)
    replayed.locator('[data-testid="nbh-approve"]').click()
    output_locator(page, "counter file: 2 (unchanged: nothing ran)").wait_for(timeout=60_000)
    output_locator(page, "counter file after 10 replays: 2").wait_for(timeout=120_000)

    # 3. the fork: what if I had denied?
    forked = _open_card(page, 2)
    forked.locator(".nbh-info", has_text="What if: answer this pause differently.").wait_for(timeout=30_000)
    output_locator(page, "Waiting for you: press Deny on the what-if card above.").wait_for(timeout=60_000)
    forked.locator('[data-testid="nbh-deny"]').click()
    # no reason given by the click: the model reads AgentScope's own denial
    output_locator(page, 'I read: The execution of tool "bump" is denied by user!').last.wait_for(timeout=60_000)
    wait_execution_done(page, timeout=120)

    whole = _stream_text(page)
    for bad in ("Traceback", "StopIteration", "NameError"):
        assert bad not in whole, whole[-3000:]
    assert "answers: your clicks in the widgets" in whole
    assert whole.count("answered: approve") == 2 and "answered: deny" in whole
    assert "counter file: 2 (unchanged)\n" in whole
    assert "counter file after 10 replays: 2" in whole

    _replay_and_what_if_buttons(page, lab.root / "replay_and_fork_files" / "counter.txt")


def _replay_and_what_if_buttons(page, counter: Path) -> None:  # type: ignore[no-untyped-def]
    """Replay and What if… on the first (live, finished) reply: each plays inside it, and nothing runs."""
    live = page.locator(f'{OUT} [data-testid="nbh-reply"]').first
    live.scroll_into_view_if_needed()
    replay = live.locator('[data-testid="nbh-replay"]').first
    replay.wait_for(timeout=30_000)
    replay.click()
    nested = live.locator('[data-testid="nbh-nested-reply"]')
    nested.first.wait_for(timeout=30_000)
    assert nested.first.locator('[data-testid="nbh-nested-title"]').inner_text().startswith("Replay of this reply")
    inner = nested.first.locator('[data-testid="nbh-reply"]')
    inner.locator('[data-testid="nbh-status"][data-status="finished"]').wait_for(timeout=60_000)
    inner.locator('[data-testid="nbh-final-text"]', has_text="I read: The counter is now 2.").wait_for(timeout=30_000)
    assert counter.read_text() == "2"

    live.locator('[data-testid="nbh-what-if"]').first.click()
    choice = live.locator('[data-testid="nbh-what-if-choice"]')
    choice.first.wait_for(timeout=30_000)
    assert choice.count() == 1
    assert "where it quoted a tool's result it quotes what the tool gives now" in live.inner_text()
    text = choice.first.inner_text()
    # the pause is named by its tool and input (never its id), with what was answered then
    pattern = r"bump \(step=2\)\s+Recorded answer: approve, by .+, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\."
    assert re.fullmatch(pattern, text.strip()), text
    # the "Run the real tools" checkbox sits on its label's first line, not above it
    box = live.locator('[data-testid="nbh-what-if-live"]').bounding_box()
    words = live.locator('label:has([data-testid="nbh-what-if-live"]) > span').bounding_box()
    assert box is not None and words is not None and words["x"] > box["x"] + box["width"] - 1
    assert abs(words["y"] - box["y"]) < box["height"], (box, words)
    live.locator('[data-testid="nbh-what-if-go"]').click()
    nested.nth(1).wait_for(timeout=30_000)
    title = nested.nth(1).locator('[data-testid="nbh-nested-title"]').inner_text()
    assert title.startswith("What if: bump (step=2) answered differently"), title
    card = nested.nth(1).locator('[data-testid="nbh-card"][data-kind="confirm"][data-status="open"]')
    card.wait_for(timeout=60_000)
    card.locator(".nbh-info", has_text="What if: answer this pause differently.").wait_for(timeout=30_000)
    card.locator('[data-testid="nbh-deny"]').click()
    fork = nested.nth(1).locator('[data-testid="nbh-reply"]')
    fork.locator('[data-testid="nbh-status"][data-status="finished"]').wait_for(timeout=60_000)
    # no model passed: the recorded last turn goes on, quoting what the model read now (the denial)
    final = fork.locator('[data-testid="nbh-final-text"]')
    final.filter(has_text='I read: The execution of tool "bump" is denied').wait_for(timeout=30_000)
    assert "The counter is now 2." not in final.inner_text()
    # a what-if continuation is not recorded: its own buttons are off, saying why
    fork.locator('[data-testid="nbh-replay-reason"]', has_text="A what-if continuation is not recorded").wait_for(
        timeout=30_000
    )
    assert fork.locator('[data-testid="nbh-replay"]').is_disabled()
    assert counter.read_text() == "2"
