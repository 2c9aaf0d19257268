"""notebooks/four_eyes.ipynb clicked through in real JupyterLab + Debian Chromium.

Run All without ``NB_HITL_ANSWER_FROM_CODE`` (C40): the notebook serves the
payment agent over AG-UI and stops at its card. alice clicks Approve on the
card (it stays open: 1 of 2); the notebook prints bob's one-time link; a
second page, phone-sized, opens the link and clicks Approve; the notebook's
client catches up, the delivered card says who approved (alice with the time,
bob through his link), and the payment ran once.
"""

from __future__ import annotations

import re
import shutil

from playwright.sync_api import expect

from tests.harness import REPO_ROOT
from tests.harness.lab import (
    JupyterLabServer,
    card_locator,
    new_page,
    notebook_outputs,
    open_notebook,
    output_locator,
    run_all_cells,
    screenshot,
    wait_execution_done,
)

OUT = ".jp-OutputArea-output"
NOTEBOOK = REPO_ROOT / "notebooks" / "four_eyes.ipynb"


def _stdout(page) -> str:  # type: ignore[no-untyped-def]
    outputs = notebook_outputs(page)
    assert not [o for o in outputs if o.get("output_type") == "error"], outputs
    return "\n".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")


def test_four_eyes_notebook_card_then_link_on_a_second_page(page, browser, lab: JupyterLabServer) -> None:
    shutil.copy(NOTEBOOK, lab.root / "four_eyes.ipynb")
    open_notebook(page, lab, "four_eyes.ipynb")
    run_all_cells(page)

    card = card_locator(page, "confirm")
    card.wait_for(timeout=90_000)
    output_locator(page, "Waiting for you: click Approve on the card above (you are alice).").wait_for(timeout=30_000)
    approvals = card.locator('[data-testid="nbh-approvals"]')
    expect(approvals).to_have_text("0 of 2 approvals so far; each must come from a different person.")
    card.locator('[data-testid="nbh-approve"]').click()
    expect(card_locator(page, "confirm").locator('[data-testid="nbh-approvals"]')).to_contain_text(
        "1 of 2 approvals: alice (", timeout=30_000
    )
    output_locator(page, "Waiting for you: open bob's link above in another tab and click Approve.").wait_for(
        timeout=30_000
    )
    # while the notebook polls for bob, alice answers again on her card: the server's reasons, not a stale reply id
    page.wait_for_timeout(2500)  # a few polls of remote.follow(every=1.0)
    card = card_locator(page, "confirm")
    expect(card.locator('[data-testid="nbh-permission-message"]')).not_to_contain_text("nb_hitl policy")
    card.locator('[data-testid="nbh-approve"]').click()
    error = card_locator(page, "confirm").locator('[data-testid="nbh-error"]')
    expect(error).to_contain_text("alice already approved this call; it needs 2 approvals from distinct people")
    expect(error).not_to_contain_text("names reply")
    assert "told bob: send_payment" in _stdout(page)  # the notification hook got bob's link
    found = re.search(r"bob's link: (\S+)", _stdout(page))
    assert found, _stdout(page)

    phone = new_page(browser, width=390, height=844)
    try:
        phone.goto(found.group(1))
        # a time a person reads, not ISO
        expect(phone.get_by_test_id("nbh-link-approvals")).to_have_text(
            re.compile(r"^1 of 2 approvals: alice \(\d\d:\d\d:\d\d \S+\)\.$")
        )
        expect(phone.get_by_test_id("nbh-link-approver")).to_have_text("bob")
        phone.get_by_test_id("nbh-link-approve").click()
        expect(phone.get_by_test_id("nbh-link-done")).to_contain_text(
            "was the last one needed: send_payment goes to the agent now."
        )
        assert phone.nbh_errors == [], phone.nbh_errors  # type: ignore[attr-defined]
    finally:
        phone.context.close()

    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    try:
        expect(final).to_have_text("The payment: success. paid 120.0 EUR to ACME GmbH", timeout=60_000)
    except AssertionError as exc:  # say what the notebook printed and where the card stands
        status = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"]').get_attribute("data-status")
        raise AssertionError(f"{exc}\n--- card: {status}\n--- notebook outputs:\n{notebook_outputs(page)}") from None
    done = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"]')
    expect(done).to_have_attribute("data-status", "delivered")
    # the delivered card says who approved and when: alice on the card, bob through his link;
    # alice's refused second Approve is no longer shown once the payment ran
    expect(done.locator('[data-testid="nbh-approvals"]')).to_have_text(
        re.compile(r"^2 of 2 approvals: alice \(.+\), bob \(.+\)\.$")
    )
    expect(done.locator('[data-testid="nbh-error"]')).to_have_count(0)
    screenshot(page, "four-eyes-notebook-done")
    output_locator(page, "server stopped: True").wait_for(timeout=60_000)
    wait_execution_done(page, timeout=60)
    whole = _stdout(page)
    assert "approve by alice | road: agui | run | {'count': 1, 'needed': 2}" in whole
    assert "approve by bob | road: agui | link | {'count': 2, 'needed': 2}" in whole
    assert "payments that ran: [('ACME GmbH', 120.0)]" in whole
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors  # type: ignore[attr-defined]
