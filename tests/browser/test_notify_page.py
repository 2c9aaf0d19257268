"""A reply that starts waiting while the tab is hidden notifies the person, once they opted in.

Real JupyterLab + Chromium: the browser's permission is granted to the page
(as a person's "Allow" would), the person clicks "Notify me" in the reply's
header, the page is then hidden, and a click on Approve lets the agent reach
its second confirmation: one notification names the agent. The Notification
constructor is wrapped to record what it was given and still called.
"""

from __future__ import annotations

from tests.harness.lab import JupyterLabServer, open_notebook, run_all_cells, write_notebook
from tests.support_agents import deletion_cell

OUT = ".jp-OutputArea-output"

CELLS = [deletion_cell("tidier", ["old_log.txt", "draft.md"]), "handle = session.start('tidy up')"]

SPY = """() => {
    window.__nbhNotes = [];
    const Real = window.Notification;
    window.Notification = class extends Real {
        constructor(title, options) { super(title, options); window.__nbhNotes.push([title, options && options.body, options && options.tag]); }
    };
    window.__nbhHidden = false;
    Object.defineProperty(document, "hidden", { configurable: true, get: () => window.__nbhHidden });
}"""


def test_a_reply_waiting_in_a_hidden_tab_notifies_once_opted_in(page, lab: JupyterLabServer) -> None:
    page.context.grant_permissions(["notifications"], origin=lab.base_url)
    write_notebook(lab.root / "notify.ipynb", CELLS)
    open_notebook(page, lab, "notify.ipynb")
    page.evaluate(SPY)
    run_all_cells(page)
    card = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="open"]')
    card.wait_for(timeout=60_000)
    assert page.evaluate("() => window.__nbhNotes.length") == 0  # not opted in: nothing

    toggle = page.locator(f'{OUT} [data-testid="nbh-notify"]')
    assert toggle.get_attribute("aria-pressed") == "false"
    toggle.click()
    page.locator(f'{OUT} [data-testid="nbh-notify"][aria-pressed="true"]').wait_for(timeout=10_000)

    page.evaluate("() => { window.__nbhHidden = true; }")
    card.first.locator('[data-testid="nbh-approve"]').click()
    page.wait_for_function("() => window.__nbhNotes.length === 1", timeout=60_000)
    title, body, tag = page.evaluate("() => window.__nbhNotes[0]")
    assert title == "tidier is waiting for you"
    assert body and tag

    # visible again: the next wait does not notify; turning it off is one click
    page.evaluate("() => { window.__nbhHidden = false; }")
    page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="open"]').first.wait_for(
        timeout=60_000
    )
    page.locator(f'{OUT} [data-testid="nbh-notify"]').click()
    page.locator(f'{OUT} [data-testid="nbh-notify"][aria-pressed="false"]').wait_for(timeout=10_000)
    assert page.evaluate("() => window.localStorage.getItem('nbh-notify')") is None
