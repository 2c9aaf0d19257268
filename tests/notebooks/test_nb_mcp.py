"""notebooks/mcp.ipynb runs headless, top to bottom, in a real kernel.

nbclient executes it on the venv's ``python3`` kernel with
``NB_HITL_ANSWER_FROM_CODE=1`` (``run_notebook``): the notebook answers its
own cards with ``session.act`` (the handler a click reaches). The notebook
starts the real MCP server ``nb_hitl.mcp.demo_server`` as a stdio
subprocess through ``AskingMCPClient``. Checked: the server's form and its
fields, a value outside the server's limits refused at its field with
nothing sent, the accepted form reaching the server (the tool's result
says what it booked), the destructive tool asked by the policy although a
rule allows it, the sign-in page (URL mode) whose address the model is
never sent and whose Done the server does not take for a connection, the
sampling request reviewed before the model is called and its edited answer
reaching the server, and the audit log.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from nb_hitl.mcp.demo_server import NOT_CHECKED
from tests.harness import REPO_ROOT
from tests.support import cell_text, run_notebook, widget_views

NOTEBOOK = REPO_ROOT / "notebooks" / "mcp.ipynb"

pytestmark = pytest.mark.kernel


def test_mcp_notebook_runs_headless() -> None:
    nb, _ = run_notebook(NOTEBOOK, timeout=120)  # raises CellExecutionError on the first failing cell
    code = [c for c in nb.cells if c.cell_type == "code"]
    texts = [cell_text(c) for c in code]
    whole = "\n".join(texts)
    assert "ERROR" not in whole and "Traceback" not in whole
    assert "answers: given by the cells (NB_HITL_ANSWER_FROM_CODE)" in texts[0]
    assert "mcp__calendar__book_meeting" in texts[1] and "mcp__calendar__connect_calendar" in texts[1]

    # 1. the form: its fields, a refused value (nothing sent), the accepted answer reaching the server
    assert "The MCP server 'calendar' asks - When should 'Budget review' take place?" in texts[3]
    assert "fields: ['day', 'minutes', 'in_person']" in texts[3]
    assert re.search(r"refused at value\.minutes: .*120", texts[4]), texts[4]
    assert "the form: still open, nothing was sent" in texts[4]
    assert "the form: accept" in texts[5]
    assert "- book_meeting: Booked 'Budget review': Tuesday, 45 minutes, in person." in texts[5]

    # 2. the destructive tool asked by the policy, although a rule allows it
    assert "asked by policy 'destructive MCP tools'" in texts[6]
    assert "'destructiveHint': True" in texts[6]
    assert "the cancellation: approve" in texts[6]
    assert "- cancel_meeting: Cancelled 'Weekly sync'." in texts[6]

    # 3. the sign-in page (URL mode): the person saw the address, the model never did
    assert "The MCP server 'calendar' sends you to a page - Sign in to your calendar provider" in texts[7]
    assert "the card shows the server's address: True - its host: calendar.example.com" in texts[7]
    assert "https://" not in texts[7]  # the address is the card's, never a printed (auto-linked) line
    assert "the sign-in page: accept" in texts[7]
    # Done is the person's word; the server checked nothing, so it does not claim a connection
    assert f"- connect_calendar: {NOT_CHECKED}" in texts[7]
    assert "is connected" not in texts[7]
    assert "the model was sent the address: False" in texts[7]

    # 4. sampling: the request shown before the model is called, the edited answer reaching the server
    agenda = texts[8]
    assert "The MCP server 'calendar' asks the notebook's model" in agenda
    assert "system prompt: You write short meeting agendas." in agenda
    assert "the server asks: Write a three-item agenda for 'Budget review'." in agenda
    assert "model hints: ['small'] max tokens: 200" in agenda
    assert "the request: approve" in agenda
    assert "the model answered: 1. Last quarter's figures 2. Open questions 3. Decisions" in agenda
    assert "the answer: edit" in agenda
    assert "- draft_agenda: Agenda for 'Budget review' saved: 1. Figures 2. Risks 3. Decisions" in agenda

    # the audit log: every answer; the calendar shows what they did
    last = texts[-1]
    assert "MCP closed" not in whole and "| INFO " not in whole  # AgentScope's INFO lines kept out (setup cell)
    assert "- list_meetings: Budget review (Tuesday, 45 minutes, in person)" in last
    assert "Weekly sync" not in last.split("\n")[0]
    rows = [
        line.split()[:3] for line in last.splitlines() if line.startswith(("elicitation", "confirm", "sampling"))
    ]
    assert rows == [
        ["elicitation", "book_meeting", "accept"],
        ["confirm", "cancel_meeting", "approve"],
        ["elicitation", "connect_calendar", "accept"],
        ["sampling", "draft_agenda", "approve"],
        ["sampling", "draft_agenda", "edit"],
    ]
    assert len(widget_views(nb)) >= 4


def test_mcp_notebook_sampling_request_edited_is_an_approval(tmp_path: Path) -> None:
    """The sampling cell's request answered with an edit of its message (the card's "Call the
    model with my edit"): the cell says the model answered and waits for the second card, never
    that the request was not approved (F03)."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and 'answer("sampling", "the request"' in c.source)
    edit = {"action": "edit", "messages": ["Write a three-item agenda for 'Budget review', short."]}
    cell.source = cell.source.replace('{"action": "approve"}', repr(edit), 1)
    copy = tmp_path / NOTEBOOK.name
    nbformat.write(nb, copy)
    ran, _ = run_notebook(copy, timeout=120)
    agenda = next(cell_text(c) for c in ran.cells if c.cell_type == "code" and "the request" in cell_text(c))
    assert "the request: edit" in agenda
    assert "not approved" not in agenda and "not called" not in agenda, agenda
    assert "the model answered: 1. Last quarter's figures 2. Open questions 3. Decisions" in agenda
    assert "the answer: edit" in agenda
