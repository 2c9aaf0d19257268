"""M-of-N approvals on the card, in real JupyterLab + Debian Chromium.

A real Session over a real AgentScope ``Agent`` with ``Policy(approvals=2)``:
alice clicks Approve on the card; the card stays open and says "1 of 2
approvals: alice (time)"; a second Approve click by the same person is
refused on the card; bob approves with ``session.act(..., decided_by="bob")``
and the payment runs once.
"""

from __future__ import annotations

import textwrap

from playwright.sync_api import expect

from tests.browser.test_review_page import kernel_json, run_cell
from tests.harness.lab import JupyterLabServer, open_notebook, screenshot, write_notebook

OUT = ".jp-OutputArea-output"
CARD = f'{OUT} [data-testid="nbh-reply"] [data-testid="nbh-card"][data-kind="confirm"]'

SETUP = textwrap.dedent(
    """
    import asyncio, json
    from agentscope.agent import Agent
    from agentscope.tool import FunctionTool, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call
    from nb_hitl.policy import Policy, policy_middleware

    runs = []

    def send_payment(to: str, amount: float) -> str:
        \"\"\"Send money.

        Args:
            to (str): the payee.
            amount (float): how much, in euros.
        \"\"\"
        runs.append((to, amount))
        return f"paid {amount} to {to}"

    agent = Agent(name="payer", system_prompt="Pay.", toolkit=Toolkit(tools=[FunctionTool(send_payment)]),
                  model=ScriptedChatModel([Turn("Paying.", [tool_call("send_payment", to="ACME", amount=120.0)]),
                                           Turn("Done.")], on_exhausted="raise"),
                  middlewares=[policy_middleware(Policy("four eyes", tools=["send_payment"], approvals=2))])
    session = Session(agent, decided_by="alice")
    task = session.start("Pay ACME.")
    """
)
BOB = textwrap.dedent(
    """
    pause = session.pending[0]
    await session.act({"action": "approve", "tool_call_id": pause.tool_call_id}, decided_by="bob")
    await asyncio.wait([task])
    print("RUNS", json.dumps(runs))
    """
)


def test_a_card_counts_approvals_and_refuses_the_same_person_twice(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "four_eyes.ipynb", [SETUP, BOB])
    open_notebook(page, lab, "four_eyes.ipynb")
    run_cell(page, 0)
    card = page.locator(f'{CARD}[data-status="open"]')
    card.wait_for(timeout=60_000)
    approvals = card.locator('[data-testid="nbh-approvals"]')
    expect(approvals).to_have_text("0 of 2 approvals so far; each must come from a different person.")
    message = card.locator('[data-testid="nbh-permission-message"]')
    expect(message).to_have_text("The policy 'four eyes' requires a person to confirm this call (tool send_payment).")
    card.locator('[data-testid="nbh-approve"]').click()
    expect(approvals).to_contain_text("1 of 2 approvals: alice (", timeout=30_000)
    assert page.locator(f'{CARD}[data-status="open"]').count() == 1  # still open for the next person
    card.locator('[data-testid="nbh-approve"]').click()  # alice again
    error = card.locator('[data-testid="nbh-error"]')
    expect(error).to_contain_text("alice already approved this call; it needs 2 approvals from distinct people")
    screenshot(page, "four-eyes-1-of-2")
    assert kernel_json(page, 1, "RUNS", timeout_ms=60_000) == [["ACME", 120.0]]
    expect(page.locator(CARD)).to_have_attribute("data-status", "delivered", timeout=30_000)
    expect(page.locator(CARD).locator('[data-testid="nbh-error"]')).to_have_count(0)  # the refusal went with it
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
