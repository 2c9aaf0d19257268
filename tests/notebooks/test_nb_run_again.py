"""A cell run again after its card was answered says how it was answered, at once (answers from code).

Each notebook runs in a real kernel with ``NB_HITL_ANSWER_FROM_CODE=1``, cell after cell, as far as
the cells below need (before the cell that stops the server); then the cells that waited for a
card run again. Each must end without an error, say how its card was answered (or give the
answer's effect, as the first time), and never say "Waiting for you": replay_and_fork's
``answer`` waited 30 s for an open card and then failed; four_eyes' last cell asked the server
again though its turn had ended.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from nb_hitl.walkthrough import ANSWER_FROM_CODE_ENV
from tests.harness import REPO_ROOT, KernelHarness

pytestmark = pytest.mark.kernel

PAYMENT = 'send_payment (to="ACME GmbH", amount=120.0)'
#: notebook -> (code cells to run first, {code cell run again: lines it must print})
CASES: dict[str, tuple[int, dict[int, list[str]]]] = {
    "four_eyes.ipynb": (
        6,
        {
            2: [f"Already answered: {PAYMENT}: approve.\n"],  # alice's, on the card
            5: [f"Already answered: {PAYMENT}: approve by bob.\n", "FINAL: The payment: success."],  # bob's, by link
        },
    ),
    "agui_remote.ipynb": (
        5,
        {3: ["Already answered: AskUser: answer (notes.txt).\n", 'Already answered: delete_file (path="old_log.txt"): approve.\n']},
    ),
    "replay_and_fork.ipynb": (
        8,
        {
            2: ["Already answered: bump (step=2): approve.\n", "I read: The counter is now 2.\ncounter file: 2\n"],
            4: ["Already answered: bump (step=2): approve.\n", "counter file: 2 (unchanged: nothing ran)"],
            7: ["Already answered: bump (step=2): deny, reason: not today.\n", "saying: not today"],
        },
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_cell_run_again_after_its_answer_says_how_it_was_answered(name: str, tmp_path: Path) -> None:
    path = REPO_ROOT / "notebooks" / name
    shutil.copy(path, tmp_path / name)
    cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    first, again = CASES[name]
    with KernelHarness(cwd=tmp_path, env={ANSWER_FROM_CODE_ENV: "1"}) as kernel:
        for source in cells[:first]:
            kernel.execute(source, timeout=120).raise_for_error()
        for index, lines in again.items():
            rerun = kernel.execute(cells[index], timeout=60)
            rerun.raise_for_error()
            assert "Waiting for you" not in rerun.stdout, (index, rerun.stdout)
            for line in lines:
                assert line in rerun.stdout, (index, rerun.stdout)
