"""Issue 6 cards in real JupyterLab + Debian Chromium: a form, a review, a policy ask with a deadline.

* Form: the agent calls ``AskForm`` with a JSON Schema (a number with a
  maximum, a date, an enum, free text). The person fills the fields drawn by
  ``js/lib/form.ts``, submits an invalid value first (the kernel's
  ``jsonschema`` check refuses it; the error shows at the field in the
  widget), then a valid one; the agent's final answer shows in the widget.
* Review: a reviewed tool's result (with markup in it, shown as text) is
  edited in the card's textarea and sent; the transcript shows only the
  edited text.
* Policy + deadline: the confirmation card shows the policy chip and a
  countdown; nobody clicks, the deadline denies the call and the card says so.
  The countdown's timer runs only while a deadline is shown: the ended reply
  keeps none (a notebook of many replies must not keep one per reply).
"""

from __future__ import annotations

import textwrap

from nb_hitl.messages import MAX_SHORT
from tests.harness.lab import (
    JupyterLabServer,
    card_locator,
    open_notebook,
    run_all_cells,
    screenshot,
    wait_execution_done,
    write_notebook,
)

OUT = ".jp-OutputArea-output"

FORM_CELL = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.kinds.form import FormTool
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call, tool_results

    REFUND = {"type": "object", "properties": {
        "amount": {"type": "number", "title": "Amount (EUR)", "minimum": 0, "maximum": 500},
        "date": {"type": "string", "format": "date", "title": "Purchase date"},
        "reason": {"type": "string", "enum": ["damaged", "late", "wrong item"], "title": "Reason"},
        "note": {"type": "string", "title": "Note"}},
        "required": ["amount", "date", "reason"]}

    def answer(msgs):
        v = tool_results(msgs, "AskForm")[-1].metadata["value"]
        return Turn(f"Refund of {v['amount']} EUR ({v['reason']}, bought {v['date']}) filed. Note: {v.get('note', '-')}")

    agent = Agent(
        name="refunds", system_prompt="Handle refunds.",
        model=ScriptedChatModel([Turn("I need a few details.", [tool_call("AskForm", title="Refund details",
                                 message="Tell me about the purchase.", schema=REFUND)]), answer]),
        toolkit=Toolkit(tools=[FormTool()]),
    )
    session = Session(agent)
    task = session.start("I want a refund")
    """
)


def test_form_fill_invalid_then_valid(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "rp_form.ipynb", [FORM_CELL])
    open_notebook(page, lab, "rp_form.ipynb")
    run_all_cells(page)

    card = card_locator(page, "form")
    card.wait_for(timeout=60_000)
    assert "Refund details" in card.inner_text() and "Tell me about the purchase." in card.inner_text()
    names = [f.get_attribute("data-name") for f in card.locator('[data-testid="nbh-field"]').all()]
    assert names == ["amount", "date", "reason", "note"]
    # a number is typed in a text field the page reads (type="number" would hide "1e" from it)
    assert card.locator('[data-field="amount"]').get_attribute("type") == "text"
    assert card.locator('[data-field="amount"]').get_attribute("inputmode") == "decimal"
    assert card.locator('[data-field="date"]').get_attribute("type") == "date"
    assert card.locator('[data-field="reason"]').evaluate("e => e.tagName") == "SELECT"

    card.locator('[data-field="amount"]').fill("900")
    card.locator('[data-field="date"]').fill("2025-03-01")
    card.locator('[data-field="note"]').fill("<b>box</b> was crushed")
    card.locator('[data-testid="nbh-form-submit"]').click()

    # a required field left empty: refused by the kernel's jsonschema check, shown at the field
    reason_error = card.locator('[data-testid="nbh-field"][data-name="reason"] [data-testid="nbh-field-error"]')
    reason_error.wait_for(timeout=30_000)
    assert reason_error.inner_text() == "Reason: this field is required."
    # what the person typed is still there after the refusal
    assert card.locator('[data-field="amount"]').input_value() == "900"
    assert card.locator('[data-field="date"]').input_value() == "2025-03-01"
    assert card.locator('[data-field="note"]').input_value() == "<b>box</b> was crushed"

    card.locator('[data-field="reason"]').select_option(label="late")
    card.locator('[data-testid="nbh-form-submit"]').click()
    # 900 breaks the maximum of 500: the error shows at the amount field (once), the form stays open
    field_error = card.locator('[data-testid="nbh-field"][data-name="amount"] [data-testid="nbh-field-error"]')
    field_error.wait_for(timeout=30_000)
    assert field_error.inner_text() == "Amount (EUR): 900 is greater than the maximum of 500"
    assert card.locator('[data-testid="nbh-error"]').count() == 0  # not repeated under the form
    assert card.locator('[data-testid="nbh-field-error"]').count() == 1
    screenshot(page, "rp-form-invalid")
    assert card.get_attribute("data-status") == "open"
    assert card.locator('[data-field="reason"]').evaluate("e => e.options[e.selectedIndex].text") == "late"

    card.locator('[data-field="amount"]').fill("45.5")
    card.locator('[data-testid="nbh-form-submit"]').click()

    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=30_000)
    assert final.inner_text() == "Refund of 45.5 EUR (late, bought 2025-03-01) filed. Note: <b>box</b> was crushed"
    done = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="form"]')
    assert done.get_attribute("data-status") == "delivered"
    assert done.locator('[data-testid="nbh-decision"]').inner_text() == "Form submitted"
    assert page.locator(f"{OUT} b").count() == 0  # markup from the page stays text
    wait_execution_done(page)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


REVIEW_CELL = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.permission import PermissionBehavior, PermissionRule
    from agentscope.state import AgentState
    from agentscope.tool import FunctionTool, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call, tool_results, result_text
    from nb_hitl.kinds.review_tool import reviewed

    RAW = 'Ana Lima <img src=x onerror="window.__nbhReviewX=1">, card 4111-1111-1111-1111'
    def lookup_customer(customer: str) -> str:
        \"\"\"Look up a customer.

        Args:
            customer (str): the name.
        \"\"\"
        return RAW

    state = AgentState()
    state.permission_context.allow_rules["lookup_customer"] = [
        PermissionRule(tool_name="lookup_customer", rule_content=None, behavior=PermissionBehavior.ALLOW, source="t")]
    agent = Agent(
        name="crm", system_prompt="x", state=state,
        model=ScriptedChatModel([Turn("Looking.", [tool_call("lookup_customer", customer="Ana")]),
                                 lambda msgs: Turn("The model read: " + result_text(tool_results(msgs)[-1]))]),
        toolkit=Toolkit(tools=[reviewed(FunctionTool(lookup_customer))]),
    )
    session = Session(agent)
    task = session.start("Who is Ana?")
    """
)


def _open_review(page, lab: JupyterLabServer, name: str):  # type: ignore[no-untyped-def]
    """Run REVIEW_CELL in notebook `name`: its open review card, once drawn."""
    write_notebook(lab.root / name, [REVIEW_CELL])
    open_notebook(page, lab, name)
    run_all_cells(page)
    card = card_locator(page, "review")
    card.wait_for(timeout=60_000)
    return card


def _model_read(page) -> str:  # type: ignore[no-untyped-def]
    """The reply's final text, once the model answered: what it read of the reviewed result."""
    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=30_000)
    return str(final.inner_text())


def test_review_card_edit_and_send(page, lab: JupyterLabServer) -> None:
    card = _open_review(page, lab, "rp_review.ipynb")
    area = card.locator('[data-testid="nbh-review-output"]')
    raw = 'Ana Lima <img src=x onerror="window.__nbhReviewX=1">, card 4111-1111-1111-1111'
    assert area.input_value() == raw
    assert "held back from the model" in card.locator('[data-testid="nbh-review-message"]').inner_text()
    for testid in ("nbh-review-accept", "nbh-review-edit", "nbh-review-reject"):
        assert card.locator(f'[data-testid="{testid}"]').is_enabled()
    # the transcript has the call and an empty result: nothing of the raw text
    result = page.locator(f'{OUT} [data-testid="nbh-tool-result"]')
    assert "4111" not in page.locator(f"{OUT} .nbh-transcript").inner_text()
    card.scroll_into_view_if_needed()
    screenshot(page, "rp-review")

    area.fill("Ana Lima, card [REDACTED]")
    # before it is sent: the kernel's diff of the edit against the raw result, as text
    preview = card.locator('[data-testid="nbh-review-preview-diff"]')
    preview.wait_for(timeout=30_000)
    lines = preview.locator("span").evaluate_all("(ss) => ss.map((s) => [s.dataset.kind, s.textContent])")
    assert ["del", f"-{raw}"] in lines and ["add", "+Ana Lima, card [REDACTED]"] in lines
    assert lines[:2] == [["meta", "--- tool's result"], ["meta", "+++ edited result"]]
    assert preview.locator("img").count() == 0
    status = card.locator('[data-testid="nbh-review-preview-status"]')
    assert status.inner_text() == "Your edit: 1 line removed, 1 added in the result (compared by the kernel)."
    assert status.get_attribute("role") == "status"
    card.locator('[data-testid="nbh-review-edit"]').click()
    assert _model_read(page) == "The model read: Ana Lima, card [REDACTED]"
    assert "Ana Lima, card [REDACTED]" in result.inner_text()
    assert "4111" not in page.locator(f'{OUT} [data-testid="nbh-reply"]').inner_text()
    done = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="review"]')
    assert done.locator('[data-testid="nbh-decision"]').inner_text() == "Result edited before the model saw it"
    assert page.evaluate("() => window.__nbhReviewX") is None
    assert page.locator(f"{OUT} [data-testid=nbh-reply] img").count() == 0
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


def test_review_edit_stays_through_a_refusal_by_the_kernel(page, lab: JupyterLabServer) -> None:
    """The person edits the result, then presses Reject with a reason the kernel refuses (longer than
    MAX_SHORT): the card is rebuilt for "Sending…" and again for the refusal, and both the edit and
    the reason are still there as typed; "Edit & send" then gives the model exactly the edit."""
    card = _open_review(page, lab, "rp_review_kept.ipynb")
    area = card.locator('[data-testid="nbh-review-output"]')
    edit = "Ana Lima, card [REDACTED by hand]"
    area.fill(edit)
    reason_field = card.locator('[data-testid="nbh-review-reason"]')
    reason = "r" * (MAX_SHORT + 1)
    reason_field.fill(reason)
    card.locator('[data-testid="nbh-review-reject"]').click()
    refusal = card.locator('[data-testid="nbh-error"]')
    refusal.wait_for(timeout=30_000)
    assert "reason" in refusal.inner_text() and f"{MAX_SHORT:,}" in refusal.inner_text(), refusal.inner_text()
    assert area.input_value() == edit
    assert reason_field.input_value() == reason
    card.locator('[data-testid="nbh-review-edit"]').click()
    assert _model_read(page) == "The model read: " + edit
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


POLICY_CELL = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.permission import PermissionBehavior, PermissionRule
    from agentscope.state import AgentState
    from agentscope.tool import FunctionTool, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call, tool_results, result_text
    from nb_hitl.policy import Policy, policy_middleware

    def send_payment(to: str, amount: float) -> str:
        \"\"\"Send money.

        Args:
            to (str): payee.
            amount (float): euros.
        \"\"\"
        return "paid"

    state = AgentState()
    state.permission_context.allow_rules["send_payment"] = [
        PermissionRule(tool_name="send_payment", rule_content=None, behavior=PermissionBehavior.ALLOW, source="t")]
    agent = Agent(
        name="payer", system_prompt="x", state=state,
        model=ScriptedChatModel([Turn("Paying.", [tool_call("send_payment", to="ACME", amount=99.0)]),
                                 lambda msgs: Turn("Outcome: " + str(tool_results(msgs)[-1].state))]),
        toolkit=Toolkit(tools=[FunctionTool(send_payment)]),
        middlewares=[policy_middleware(Policy("payments", tools=["send_payment"]))],
    )
    # long enough that a page drawing the card late (a loaded machine) still shows
    # the countdown running before the deadline passes
    session = Session(agent, deadline=15, on_deadline="deny")
    task = session.start("pay ACME")
    """
)


# every interval the page starts, with its handler's source, until it is cleared
COUNT_INTERVALS = """
(() => {
  const live = new Map();
  const set = window.setInterval.bind(window), clear = window.clearInterval.bind(window);
  window.setInterval = (fn, ms, ...rest) => { const id = set(fn, ms, ...rest); live.set(id, String(fn)); return id; };
  window.clearInterval = (id) => { live.delete(id); clear(id); };
  window.__nbhDeadlineTimers = () => [...live.values()].filter((src) => src.includes("data-deadline")).length;
})();
"""


def test_policy_chip_and_deadline_countdown(page, lab: JupyterLabServer) -> None:
    page.add_init_script(COUNT_INTERVALS)
    write_notebook(lab.root / "rp_policy.ipynb", [POLICY_CELL])
    open_notebook(page, lab, "rp_policy.ipynb")
    run_all_cells(page)

    card = card_locator(page, "confirm")
    card.wait_for(timeout=60_000)
    assert card.locator('[data-testid="nbh-policy"]').inner_text() == "policy: payments"
    assert (
        "The policy 'payments' requires a person to confirm this call"
        in card.locator('[data-testid="nbh-permission-message"]').inner_text()
    )
    assert card.locator('[data-testid="nbh-always"]').count() == 0  # no "always allow" for a policy ask
    chip = card.locator('[data-testid="nbh-deadline"]')
    first = chip.inner_text()
    assert first.endswith("s left")
    # it counts down, on one timer
    page.wait_for_function(
        "(t) => document.querySelector('.jp-OutputArea-output [data-testid=nbh-deadline]')?.textContent !== t",
        arg=first,
        timeout=5_000,
    )
    assert page.evaluate("() => window.__nbhDeadlineTimers()") == 1
    # nobody clicks: the deadline denies the call, and the card says what happened
    decided = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"] [data-testid="nbh-decision"]')
    decided.wait_for(timeout=30_000)
    page.wait_for_function(
        "() => document.querySelector('.jp-OutputArea-output [data-testid=nbh-final-text]')?.textContent === 'Outcome: denied'",
        timeout=30_000,
    )
    assert decided.inner_text() == "Deadline passed: denied"
    assert page.locator(f'{OUT} [data-testid="nbh-deadline"]').count() == 0
    # no deadline shown: its timer stops at its next tick
    page.wait_for_function("() => window.__nbhDeadlineTimers() === 0", timeout=5_000)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
