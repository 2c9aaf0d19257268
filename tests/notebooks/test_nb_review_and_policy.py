"""notebooks/review_and_policy.ipynb runs headless, top to bottom, in a real kernel.

Executed with nbclient on the venv's ``python3`` kernel, the notebook's
folder as working directory and the repository on ``PYTHONPATH``
(``tests.harness.kernel.kernel_env``). With ``NB_HITL_ANSWER_FROM_CODE=1``
(``run_notebook``) the notebook answers its own pauses with ``session.act(...)`` (the widget's path), so no browser is needed. Any
cell error fails the test; the teaching outputs are checked.
"""

from __future__ import annotations

import pytest

from tests.harness import REPO_ROOT
from tests.support import run_notebook, widget_views

NOTEBOOK = REPO_ROOT / "notebooks" / "review_and_policy.ipynb"

pytestmark = pytest.mark.kernel


def test_review_and_policy_notebook_runs_headless() -> None:
    nb, text = run_notebook(NOTEBOOK, timeout=180)  # raises CellExecutionError on the first failing cell
    assert "ERROR" not in text
    views = widget_views(nb)
    assert len(views) == 4  # one reply widget per pattern

    # 1. review: the tool ran once, the person saw the raw record, the model only the redacted one
    assert "The tool ran 1 time(s). The person sees: Ana Lima, customer since 2019, card 4111-1111-1111-1111" in text
    redacted = "Ana Lima, customer since 2019, card [card redacted], [e-mail redacted], 3 open orders"
    assert f"Agent: Here is what the CRM says (success): {redacted}" in text
    assert f"model saw: {redacted}" in text
    assert "card number ever sent to the model? False" in text
    assert "tool runs: 1" in text
    # 2. policy: asked in bypass mode despite the allow rule; paid only after the approval
    assert "policy: payments" in text
    assert "message: The policy 'payments' requires a person to confirm this call (tool send_payment). Money leaves the company." in text
    assert "paid before the approval: []" in text
    assert "Agent: Paid 1250.00 EUR to ACME." in text
    # 3. deadline: denied by default, audited, late click refused
    assert "Agent: The deletion ended: denied." in text
    assert "deleted: []" in text
    assert "decision: {'action': 'timeout', 'applied': 'denied'}" in text
    assert "audit: [('delete_file', 'timeout', 'denied')]" in text
    assert "late click refused: The deadline of this pause passed; denied." in text
    # 4. form: an invalid value refused at its field, the valid one reaches the agent
    assert "refused at value.amount: Amount (EUR): 900 is greater than the maximum of 500" in text
    assert "Agent: Refund of 45.5 EUR for a late order bought on 2025-03-01 is filed." in text
    # every decision is in the audit log of its session, with the policy that forced it
    assert "the decisions of crm_session and pay_session, in audit.jsonl:" in text
    assert "the decisions of late_session, in deadline-audit.jsonl:" in text
    assert "form_session was made without an audit log, so its answer is in none" in text
    assert "crm lookup_customer review edit policy=None" in text
    assert "payer send_payment confirm approve policy=payments" in text
