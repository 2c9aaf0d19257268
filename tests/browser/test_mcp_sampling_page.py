"""C41 in real JupyterLab + Debian Chromium: an MCP server asks the notebook's model (MCP sampling).

The notebook connects nb_hitl's ``AskingMCPClient`` to the real MCP server of
tests/mcp/db_server.py (stdio subprocess of the kernel) and runs a real agent
whose tool ``summarize_table`` asks the client's model for a summary. The
first card of kind ``sampling`` shows the server's request as text (the
system prompt, the message, the model hints and token limit); the person
edits the message and calls the model with the edit; the second card shows
the model's answer (the scripted model repeats what it was asked), which the
person edits before it goes back; the server notes what it got, and the
model's final answer repeats the tool's result.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.browser.mcp_cells import mcp_agent_cell
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


def cell(log: Path) -> str:
    return mcp_agent_cell(
        log,
        "summarize_table",
        "Summarizing.",
        "Summarize customers.",
        'lambda msgs: Turn("I was asked: " + msgs[-1].get_text_content()),',
    )


def test_c41_mcp_sampling_reviewed_on_two_cards(page, lab: JupyterLabServer) -> None:
    log = lab.root / "mcp-sampling.jsonl"
    write_notebook(lab.root / "mcp_sampling.ipynb", [cell(log)])
    open_notebook(page, lab, "mcp_sampling.ipynb")
    run_all_cells(page)

    request = card_locator(page, "sampling")
    request.wait_for(timeout=90_000)
    assert "The MCP server 'db' asks the notebook's model" in request.inner_text()
    assert request.locator('[data-testid="nbh-sampling-system"]').inner_text() == "You summarize database tables."
    settings = request.locator('[data-testid="nbh-sampling-settings"]').inner_text()
    assert "Model hints: small" in settings and "Max tokens: 50" in settings
    message = request.locator('[data-testid="nbh-sampling-message-0"]')
    assert message.input_value() == "Summarize the table customers in one line."
    message.fill("Summarize customers without names.")
    screenshot(page, "mcp-sampling-request")
    request.locator('[data-testid="nbh-sampling-edit"]').click()

    answer = card_locator(page, "sampling")
    area = answer.locator('[data-testid="nbh-sampling-completion"]')
    area.wait_for(timeout=60_000)
    assert area.input_value() == "I was asked: Summarize customers without names."
    assert not log.exists() or "summarize_table" not in log.read_text()  # nothing went back yet
    area.fill("Three customers.")
    screenshot(page, "mcp-sampling-completion")
    answer.locator('[data-testid="nbh-sampling-edit"]').click()

    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert final.inner_text() == "The tool said: Summary of customers: Three customers."
    got = [json.loads(line) for line in log.read_text().splitlines() if "summarize_table" in line]
    assert [e["text"] for e in got] == ["Three customers."]
    done = card_locator(page, "sampling", "delivered")
    assert done.count() == 2
    assert done.nth(0).locator('[data-testid="nbh-decision"]').inner_text() == (
        "Edited: the notebook's model was called with your messages"
    )
    assert done.nth(1).locator('[data-testid="nbh-sampling-answer"]').inner_text() == (
        "I was asked: Summarize customers without names."
    )
    assert done.nth(1).locator('[data-testid="nbh-decision"]').inner_text() == (
        "Edited: your text was sent to the MCP server"
    )
    wait_execution_done(page)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
