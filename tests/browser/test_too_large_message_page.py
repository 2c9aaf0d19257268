"""A page message too large for the kernel's websocket is refused in the card: real JupyterLab,
real kernel, Debian Chromium.

Jupyter's server closes the kernel's websocket on a message over 10 MiB, so such a message never
reaches the kernel: a 12 MB edit in Modify left the card "Sending…" for good, and its preview said
the kernel did not answer. The page refuses it before sending (``MAX_MESSAGE_BYTES`` in
``js/lib/rpc.ts``), says so in the card, and the card still answers: Deny then reaches the agent.
"""

from __future__ import annotations

from tests.browser.test_deny_with_rules_page import CELL
from tests.harness.lab import JupyterLabServer, card_locator, output_locator, run_to_open_card, wait_execution_done

OUT = ".jp-OutputArea-output"


def test_a_too_large_edit_is_refused_in_the_card_which_still_answers(page, lab: JupyterLabServer) -> None:
    card = run_to_open_card(page, lab, "too_large.ipynb", [CELL])
    card.locator('[data-testid="nbh-modify"]').click()
    big = '{"path": "' + "x" * 12_000_000 + '"}'
    page.evaluate(
        """(v) => { const t = document.querySelector('[data-testid="nbh-modify-input"]');
                    t.value = v; t.dispatchEvent(new Event('input', {bubbles: true})); }""",
        big,
    )
    card.locator('[data-testid="nbh-modify-submit"]').click()
    refusal = card.locator('[data-testid="nbh-error"]')
    refusal.wait_for(timeout=15_000)
    assert refusal.inner_text().startswith("This is too large to send to the kernel: 11.4 MB")
    assert "Nothing was sent" in refusal.inner_text()
    assert card.get_attribute("data-status") == "open"

    card.locator('[data-testid="nbh-modify-cancel"]').click()
    card.locator('[data-testid="nbh-deny"]').click()  # the kernel and the card's channel are fine
    page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="delivered"]').wait_for(
        timeout=30_000
    )
    second = card_locator(page, "confirm")  # the model's second call asks: denied too
    second.wait_for(timeout=60_000)
    second.locator('[data-testid="nbh-deny"]').click()
    output_locator(page, "GOT []").wait_for(timeout=60_000)
    wait_execution_done(page)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
