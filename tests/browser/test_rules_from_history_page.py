"""notebooks/rules_from_history.ipynb clicked through in real JupyterLab + Chromium.

Run All without ``NB_HITL_ANSWER_FROM_CODE``: the day's cell says which
button to press on which card and waits. A person presses Approve or Deny
on each of the five cards as it opens; the notebook then reads the log the
clicks wrote (who decided, which rule), replays the two candidate rule sets
and draws its charts (a matplotlib PNG in the page), with no error output.
"""

from __future__ import annotations

import re
import shutil

from playwright.sync_api import expect

from tests.harness import REPO_ROOT
from tests.harness.lab import (
    JupyterLabServer,
    notebook_outputs,
    open_notebook,
    output_locator,
    run_all_cells,
    wait_execution_done,
)

OUT = ".jp-OutputArea-output"
NOTEBOOK = REPO_ROOT / "notebooks" / "rules_from_history.ipynb"
CLICKS = [  # what the cell asks for, in the day's order
    ("Approve", "send_mail", "ana@example.org, Summary"),
    ("Approve", "delete_file", "old_log.txt"),
    ("Deny", "send_mail", "all@partner.example, Launch"),
    ("Deny", "delete_file", "draft.md"),
    ("Approve", "send_mail", "ana@example.org, Done for today"),
]


def test_rules_from_history_clicked_through(page, lab: JupyterLabServer) -> None:
    shutil.copy(NOTEBOOK, lab.root / "rules_from_history.ipynb")
    open_notebook(page, lab, "rules_from_history.ipynb")
    run_all_cells(page)

    for button, tool, what in CLICKS:
        output_locator(page, f"Waiting for you: press {button} on the {tool} card ({what}).").wait_for(timeout=90_000)
        card = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="open"]')
        card.wait_for(timeout=30_000)
        assert card.count() == 1
        card.scroll_into_view_if_needed()  # Run All leaves the view at the last cell, far below the day's
        expect(card).to_contain_text(tool, timeout=30_000)  # drawn once it is in view
        card.locator(f'[data-testid="nbh-{button.lower()}"]').click()

    output_locator(page, re.compile(r"median time to decide")).wait_for(timeout=120_000)
    wait_execution_done(page, timeout=120)
    outputs = notebook_outputs(page)
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, errors
    whole = "\n".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
    assert "Traceback" not in whole, whole[-3000:]
    assert "answers: your clicks in the widgets" in whole
    assert re.findall(r"^  (\w+): (\w+)$", whole, flags=re.M) == [(tool, button.lower()) for button, tool, _ in CLICKS]
    assert "outbox: [('ana@example.org', 'Summary'), ('ana@example.org', 'Done for today')]" in whole
    assert "intact: 14 chained line(s)." in whole
    assert re.search(r"^send_mail\s+ask\s+mode\s+-\s+deny$", whole, flags=re.M)
    assert re.search(r"^lookup\s+allow\s+rule\s+allow lookup\s+-$", whole, flags=re.M)
    assert "candidate A: 4 of 9 decisions change" in whole
    assert "you denied, it would allow: send_mail {'to': 'all@partner.example', 'subject': 'Launch'}" in whole
    assert "candidate B: 4 of 9 decisions change" in whole
    assert "never fired: allow delete_file (shadowed by deny delete_file)" in whole
    assert "answers: 5, median time to decide" in whole
    assert re.search(r"^approvals in under a second: \d of 3$", whole, flags=re.M)  # clicks may take longer
    assert whole.count("not covered: ") == 3 and "suggested:" not in whole
    assert "the agent's rules are unchanged" in whole
    assert any("image/png" in o.get("data", {}) for o in outputs), "the charts were drawn"
    page.locator(f"{OUT} img").first.wait_for(timeout=30_000)
