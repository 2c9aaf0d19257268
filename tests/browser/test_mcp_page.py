"""C41 in real JupyterLab + Debian Chromium: an MCP server asks twice while its tool runs.

The notebook connects nb_hitl's ``AskingMCPClient`` to the real MCP server of
tests/mcp/db_server.py (stdio subprocess of the kernel) and runs a real agent
whose tool ``rename_table`` asks "Rename customers?" (a checkbox), then "New
name for customers?" (a text field the server limits to 40 characters). The
cards of kind ``elicitation`` show the server's message and its schema as a
form; a name too long is refused by the kernel and the error shows at the
field, nothing sent; the valid answer goes to the server and the model's
final answer repeats what the tool returned.
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
    return mcp_agent_cell(log, "rename_table", "Renaming.", "Rename customers.")


def test_c41_mcp_questions_on_cards(page, lab: JupyterLabServer) -> None:
    log = lab.root / "mcp-server.jsonl"
    write_notebook(lab.root / "mcp_ask.ipynb", [cell(log)])
    open_notebook(page, lab, "mcp_ask.ipynb")
    run_all_cells(page)

    first = card_locator(page, "elicitation")
    first.wait_for(timeout=90_000)
    assert first.locator('[data-testid="nbh-elicitation-message"]').inner_text() == "Rename customers?"
    assert "The MCP server 'db' asks" in first.inner_text()
    box = first.locator('[data-field="confirm"]')
    assert box.get_attribute("type") == "checkbox"
    box.check()
    first.locator('[data-testid="nbh-elicitation-accept"]').click()

    second = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="elicitation"][data-status="open"]')
    second.locator('[data-testid="nbh-elicitation-message"]', has_text="New name for customers?").wait_for(
        timeout=60_000
    )
    second.locator('[data-field="name"]').fill("x" * 41)
    second.locator('[data-testid="nbh-elicitation-accept"]').click()
    error = second.locator('[data-testid="nbh-field"][data-name="name"] [data-testid="nbh-field-error"]')
    error.wait_for(timeout=30_000)
    assert "41" in error.inner_text() or "long" in error.inner_text()
    assert second.locator('[data-field="name"]').input_value() == "x" * 41  # what was typed is still there
    screenshot(page, "mcp-elicitation-refused")
    sent = [json.loads(line) for line in log.read_text().splitlines() if "step" in line]
    assert all(e["step"] == "first" for e in sent)  # the refused name never reached the server

    second.locator('[data-field="name"]').fill("clients")
    second.locator('[data-testid="nbh-elicitation-accept"]').click()
    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert final.inner_text() == "The tool said: Renamed customers to clients."
    done = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="elicitation"][data-status="delivered"]')
    assert done.count() == 2
    # the records keep the questions and what was sent (a saved notebook shows them)
    assert done.nth(0).locator('[data-testid="nbh-elicitation-message"]').inner_text() == "Rename customers?"
    assert done.nth(0).locator('[data-testid="nbh-decision"]').inner_text() == (
        'Accepted: sent to the MCP server {"confirm":true}'
    )
    assert done.nth(1).locator('[data-testid="nbh-decision"]').inner_text() == (
        'Accepted: sent to the MCP server {"name":"clients"}'
    )
    wait_execution_done(page)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
