"""notebooks/mcp.ipynb clicked through in real JupyterLab + Debian Chromium.

Run All without ``NB_HITL_ANSWER_FROM_CODE``: each cell after a card says
what to click and waits. The notebook starts the real MCP server
``nb_hitl.mcp.demo_server`` (stdio subprocess of the kernel). A person fills
the server's form (a choice, a number, a checkbox) and presses Accept,
approves the destructive tool the policy asks for, opens the sign-in page
from its card (a new tab with no opener; the demonstration address is
answered by the test's route, nothing leaves the machine) and presses Done
(the server, which cannot check a sign-in, answers that it is not connected yet),
approves the server's sampling request and sends an edit of the model's
answer; the notebook ends with no error output and prints what the clicks did.
"""

from __future__ import annotations

import shutil

from tests.harness import REPO_ROOT
from tests.harness.lab import (
    JupyterLabServer,
    card_locator,
    notebook_outputs,
    open_notebook,
    output_locator,
    run_all_cells,
    wait_execution_done,
)

OUT = ".jp-OutputArea-output"
NOTEBOOK = REPO_ROOT / "notebooks" / "mcp.ipynb"
SIGN_IN_URL = "https://calendar.example.com/connect?client=nb-hitl-demo"  # nb_hitl.mcp.demo_server's


def test_mcp_notebook_clicked_through(page, lab: JupyterLabServer) -> None:
    shutil.copy(NOTEBOOK, lab.root / "mcp.ipynb")
    open_notebook(page, lab, "mcp.ipynb")
    run_all_cells(page)

    # 1. the server's form: fill it and Accept
    form = card_locator(page, "elicitation")
    form.wait_for(timeout=90_000)
    output_locator(page, "Waiting for you: in the card above, pick Tuesday").wait_for(timeout=60_000)
    # text_content: Run All leaves the notebook scrolled to its end, where JupyterLab does not render this card
    assert form.locator('[data-testid="nbh-elicitation-message"]').text_content() == (
        "When should 'Budget review' take place?"
    )
    form.locator('[data-field="day"]').select_option(label="Tuesday")
    form.locator('[data-field="minutes"]').fill("45")
    form.locator('[data-field="in_person"]').check()
    form.locator('[data-testid="nbh-elicitation-accept"]').click()
    output_locator(page, "Booked 'Budget review': Tuesday, 45 minutes, in person.").first.wait_for(timeout=60_000)

    # 2. the destructive tool, asked by the policy: Approve
    output_locator(page, "Waiting for you: press Approve on the card above.").wait_for(timeout=60_000)
    confirm = card_locator(page, "confirm")
    assert "destructive MCP tools" in confirm.inner_text()
    confirm.locator('[data-testid="nbh-approve"]').click()
    output_locator(page, "Cancelled 'Weekly sync'.").first.wait_for(timeout=60_000)

    # 3. the sign-in page: the address as text, its host set apart; Open page opens a new tab with no opener
    sign_in = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="elicitation"][data-status="open"]')
    sign_in.locator('[data-testid="nbh-url"]').wait_for(timeout=60_000)
    output_locator(page, "Waiting for you: press Done on the card above.").wait_for(timeout=60_000)
    assert sign_in.locator('[data-testid="nbh-url"]').inner_text() == SIGN_IN_URL
    assert sign_in.locator('[data-testid="nbh-url-host"]').inner_text() == "calendar.example.com"
    assert sign_in.locator('[data-testid="nbh-url"] a').count() == 0
    page.context.route("https://calendar.example.com/**", lambda route: route.fulfill(body="demo page"))
    with page.context.expect_page() as opened:
        sign_in.locator('[data-testid="nbh-url-open"]').click()
    tab = opened.value
    tab.wait_for_load_state()
    assert tab.url == SIGN_IN_URL
    assert tab.evaluate("() => window.opener") is None  # the page cannot reach back to the notebook
    tab.close()
    sign_in.locator('[data-testid="nbh-url-done"]').click()
    output_locator(page, "Not connected yet: the user says they finished").first.wait_for(timeout=60_000)
    # the cell's own output names the host only: no printed address for JupyterLab to turn into a link
    assert page.locator(f'{OUT} a[href*="calendar.example.com"]').count() == 0

    # 4. sampling: approve the request, then send an edit of the model's answer
    request = card_locator(page, "sampling")
    request.wait_for(timeout=60_000)
    output_locator(page, "Waiting for you: press Approve & call the model on the card above.").wait_for(timeout=60_000)
    assert request.locator('[data-testid="nbh-sampling-system"]').inner_text() == "You write short meeting agendas."
    request.locator('[data-testid="nbh-sampling-approve"]').click()
    answer = card_locator(page, "sampling").locator('[data-testid="nbh-sampling-completion"]')
    answer.wait_for(timeout=60_000)
    output_locator(page, "Waiting for you: in the card above, change the answer").wait_for(timeout=60_000)
    assert answer.input_value() == "1. Last quarter's figures 2. Open questions 3. Decisions"
    answer.fill("1. Figures 2. Risks 3. Decisions")
    card_locator(page, "sampling").locator('[data-testid="nbh-sampling-edit"]').click()
    output_locator(page, "saved: 1. Figures 2. Risks 3. Decisions").first.wait_for(timeout=60_000)

    # the reply's last text (JupyterLab may have the cell scrolled out of view: attached, not visible)
    output_locator(page, "list_meetings: Budget review").first.wait_for(state="attached", timeout=120_000)
    wait_execution_done(page, timeout=240)
    outputs = notebook_outputs(page)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    whole = "\n".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
    assert "Traceback" not in whole, whole[-3000:]
    assert "answers: your clicks in the cards" in whole
    assert "the form: still open, nothing was sent" in whole  # the refused 500 minutes, before the click
    assert "the form: accept" in whole
    assert "the cancellation: approve" in whole
    assert "the sign-in page: accept" in whole
    assert "the model was sent the address: False" in whole
    assert "the request: approve" in whole and "the answer: edit" in whole
    done = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="elicitation"][data-status="delivered"]')
    assert done.nth(1).locator('[data-testid="nbh-decision"]').inner_text() == (
        "Done: the MCP server was told you finished on its page"
    )
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
