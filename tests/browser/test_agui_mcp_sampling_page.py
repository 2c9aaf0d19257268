"""C41 over AG-UI in real JupyterLab + Debian Chromium: the remote widget's sampling cards, clicked.

The notebook serves an AG-UI server (nb_hitl's ``AguiServer``) whose agent is a
real AgentScope ``Agent`` on the scripted model; its tool ``summarize_table``
is on a real MCP server (tests/mcp/db_server.py, the SDK's ``MCPServer``, a
stdio subprocess per thread, behind ``AskingMCPClient``) and asks the agent's
model for a summary (MCP sampling). The notebook's AG-UI client,
``RemoteSession``, draws each interrupt of kind ``sampling`` as a card, and
the person answers there:

* the request card shows the server's messages, system prompt and model
  preferences; the person edits the message, presses Approve (the card asks
  which text is meant) and sends the edit; the completion card shows what the
  model answered to the edit and is approved with the keyboard only; the tool
  call completes with what was approved (the server notes it);
* a second run is approved with the keyboard at the request and denied at the
  completion with a reason: the card says the completion was refused, the
  server got an error (it notes no completion), and the model's text says the
  completion was withheld, with the person's reason.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.harness.lab import (
    JupyterLabServer,
    card_locator,
    open_notebook,
    output_locator,
    run_all_cells,
    screenshot,
    wait_execution_done,
    write_notebook,
)
from tests.mcp.mcp_support import ASKED

OUT = ".jp-OutputArea-output"
SYSTEM = "You summarize database tables."
MINE = "Summarize the table customers without names."


def cells(root: Path, thread_id: str, model_turns: int) -> list[str]:
    """The AG-UI server (its agent's MCP tool samples) and the remote session awaiting its run."""
    serve = textwrap.dedent(
        f"""
        from pathlib import Path
        from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
        from tests.agui.test_agui_mcp import McpThreads
        from tests.mcp.mcp_support import answers, sampling_agent

        threads = McpThreads(Path({str(root)!r}))
        threads.agents[{thread_id!r}] = lambda tools: sampling_agent(tools, model_turns={model_turns})
        handle = serve_in_background(AguiServer(threads), announce=False)
        """
    )
    run = textwrap.dedent(
        f"""
        remote = RemoteSession(handle.url, token=handle.token, thread_id={thread_id!r}, agent_name="db agent")
        final = await remote.run("Summarize customers.")
        print("SERVER:", [(e["tool"], e["text"]) for e in answers(threads.log({thread_id!r}))])
        threads.close()
        handle.stop()
        """
    )
    return [serve, run]


def press_tab_to(page, testid: str, most: int = 8) -> None:  # type: ignore[no-untyped-def]
    """Tab from the focused element until the element of ``testid`` has the focus (at most ``most`` presses)."""
    for _ in range(most):
        if page.evaluate("() => document.activeElement && document.activeElement.dataset.testid") == testid:
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{testid} is not reached with Tab from where the focus was")


def start(page, lab: JupyterLabServer, name: str, thread_id: str, model_turns: int = 1):  # type: ignore[no-untyped-def]
    """The notebook written, opened and run; its open request card, once drawn."""
    write_notebook(lab.root / f"{name}.ipynb", cells(lab.root / name, thread_id, model_turns))
    (lab.root / name).mkdir()
    open_notebook(page, lab, f"{name}.ipynb")
    run_all_cells(page)
    request = card_locator(page, "sampling")
    request.wait_for(timeout=90_000)
    return request


def test_c41_remote_sampling_request_edited_then_completion_approved_by_keyboard(page, lab: JupyterLabServer) -> None:
    request = start(page, lab, "agui_sampling_edit", "edit")
    assert "The MCP server 'db' asks the notebook's model" in request.inner_text()
    assert request.locator('[data-testid="nbh-sampling-system"]').inner_text() == SYSTEM
    settings = request.locator('[data-testid="nbh-sampling-settings"]').inner_text()
    for line in (
        "Model hints: small",
        "Priorities: speed 0.8",
        "Max tokens: 50",
        "Temperature: 0.2",
        'Stop sequences: "END"',
    ):
        assert line in settings, settings
    message = request.locator('[data-testid="nbh-sampling-message-0"]')
    assert message.input_value() == ASKED
    message.fill(MINE)
    request.locator('[data-testid="nbh-sampling-approve"]').click()
    ask = request.locator('[data-testid="nbh-ask-first"]')
    assert "Approve sends the server's own, not your edit" in ask.inner_text()
    screenshot(page, "agui-sampling-request-edited")
    ask.locator('[data-testid="nbh-sampling-send-edit"]').click()

    completion = card_locator(page, "sampling").locator('[data-testid="nbh-sampling-completion"]')
    completion.wait_for(timeout=60_000)
    answered = f"system: {SYSTEM} | user: {MINE}"
    assert completion.input_value() == answered  # the model was called with the edit
    done = card_locator(page, "sampling", "delivered")
    assert done.count() == 1
    assert done.locator('[data-testid="nbh-decision"]').inner_text() == (
        "Edited: the notebook's model was called with your messages"
    )
    completion.focus()  # where a person who tabbed into the card is
    press_tab_to(page, "nbh-sampling-approve")
    page.keyboard.press("Enter")

    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert final.inner_text() == f"mcp__db__summarize_table success: Summary of customers: {answered}"
    output_locator(page, f"SERVER: [('summarize_table', '{answered}')]").wait_for(timeout=60_000)
    records = card_locator(page, "sampling", "delivered")
    assert records.count() == 2
    assert records.nth(1).locator('[data-testid="nbh-decision"]').inner_text() == (
        "Approved: the completion was sent to the MCP server"
    )
    assert records.nth(1).locator('[data-testid="nbh-sampling-answer"]').inner_text() == answered
    wait_execution_done(page, timeout=60)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


def test_c41_remote_sampling_completion_denied_is_said_truthfully(page, lab: JupyterLabServer) -> None:
    request = start(page, lab, "agui_sampling_deny", "deny")
    request.locator('[data-testid="nbh-sampling-message-0"]').focus()
    press_tab_to(page, "nbh-sampling-approve")
    page.keyboard.press("Enter")  # the request approved with the keyboard: the model is called

    card = card_locator(page, "sampling")
    completion = card.locator('[data-testid="nbh-sampling-completion"]')
    completion.wait_for(timeout=60_000)
    assert completion.input_value() == f"system: {SYSTEM} | user: {ASKED}"
    card.locator('[data-testid="nbh-sampling-reason"]').fill("not today")
    card.locator('[data-testid="nbh-sampling-deny"]').click()

    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    said = final.inner_text()
    assert said.startswith("mcp__db__summarize_table error: "), said
    assert (
        "Sampling request refused: The person denied it; the notebook's model answered, "
        "but its completion was withheld. Their reason: not today"
    ) in said
    output_locator(page, "SERVER: []").wait_for(timeout=60_000)  # an error, never a completion
    denied = card_locator(page, "sampling", "delivered").nth(1)
    assert denied.locator('[data-testid="nbh-decision"]').inner_text() == (
        "Denied: the completion was refused, the MCP server got an error with your reason: not today"
    )
    screenshot(page, "agui-sampling-completion-denied")
    wait_execution_done(page, timeout=60)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
