"""notebooks/four_eyes.ipynb runs headless, top to bottom, in a real kernel.

The notebook serves a payment agent over AG-UI in a background thread of the
kernel; the payment needs two approvals. With ``NB_HITL_ANSWER_FROM_CODE=1``
(set by ``run_notebook``) alice approves through the card's own handler and
bob through his one-time link's HTTP endpoint (the form the page posts), the
link a notification hook got when the pause opened; the
notebook's client then catches up and the payment runs once.
"""

from __future__ import annotations

import pytest

from tests.harness import REPO_ROOT
from tests.support import run_notebook, widget_views

NOTEBOOK = REPO_ROOT / "notebooks" / "four_eyes.ipynb"

pytestmark = pytest.mark.kernel


def test_four_eyes_notebook_runs_headless():
    nb, text = run_notebook(NOTEBOOK, timeout=180)  # raises CellExecutionError on the first failing cell
    assert "ERROR" not in text and "Traceback" not in text
    assert "AG-UI endpoint: http://127.0.0.1:" in text
    assert widget_views(nb)
    assert "send_payment waits for 2 approvals; so far: []" in text
    assert "alice approved from code | resume sent: True" in text
    assert "1 of 2 approvals: ['alice']" in text
    # bob was told once, with his link, when the pause opened
    assert (
        "told bob: send_payment {'to': 'ACME GmbH', 'amount': 120.0} | approvals so far: {'needed': 2, 'by': []}"
        in text
    )
    assert "| deliveries: [('bob', True, 'called', True)]" in text
    assert "bob's link: http://127.0.0.1:" in text and "/links/" in text
    assert "the link's page answered 200" in text
    assert "FINAL: The payment: success. paid 120.0 EUR to ACME GmbH" in text
    assert "approve by alice | road: agui | run | {'count': 1, 'needed': 2}" in text
    assert "approve by bob | road: agui | link | {'count': 2, 'needed': 2}" in text
    assert "approvals on the last line: ['alice', 'bob']" in text
    assert "payments that ran: [('ACME GmbH', 120.0)]" in text
    assert "server stopped: True" in text
