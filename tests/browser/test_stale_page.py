"""Stale pages in real JupyterLab + Debian Chromium: C11, C12 and C01.

* C11: a ``ReplyWidget`` created and given its whole payload (an AskUser and a
  confirmation) in the same cell, before the page loaded the widget's JS,
  renders the whole pause; so does one displayed first and filled right after
  in the same cell.
* C12: a notebook run to a pending pause, saved (widget ``saveState`` on),
  its kernel restarted and the notebook reopened: the saved record of each
  pause is shown (the answered AskUser with its answer, the pending
  confirmation with its input) with a "No longer live" banner and
  ``data-live="false"``; never "model not found" alone; nothing is clickable.
* C01: a confirmation is pending; a new prompt is sent with
  ``interrupt_pending=True`` while the person clicks Approve on the old
  widget (the cell sleeps first, so the click really reaches the kernel after
  the interrupt): the click is refused with the reason, the old widget shows
  expired, no new run starts from the click and the file is not deleted.
"""

from __future__ import annotations

import json
import re
import textwrap
import time

from playwright.sync_api import expect

from tests.harness.lab import (
    JupyterLabServer,
    open_notebook,
    output_locator,
    restart_kernel,
    run_all_cells,
    save_notebook,
    screenshot,
    wait_execution_done,
    write_notebook,
)

OUT = ".jp-OutputArea-output"


def _run_cell(page, index: int) -> None:  # type: ignore[no-untyped-def]
    """Run one cell without awaiting it (``notebook:run-cell`` on that cell)."""
    page.evaluate(
        """(i) => {
            const w = window.jupyterapp.shell.currentWidget;
            w.content.activeCellIndex = i;
            window.jupyterapp.commands.execute('notebook:run-cell');
        }""",
        index,
    )


def _cards(page, kind: str, status: str | None = None):  # type: ignore[no-untyped-def]
    sel = f'{OUT} [data-testid="nbh-card"][data-kind="{kind}"]'
    if status is not None:
        sel += f'[data-status="{status}"]'
    return page.locator(sel)


# ------------------------------------------------------------------- C11
C11_CELL_PAYLOAD = textwrap.dedent(
    """
    import json
    from agentscope.message import ToolCallBlock
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.pauses import build_pause
    from nb_hitl.widgets.reply import ReplyWidget

    tools = {t.name: t for t in sandbox_tools(make_sandbox())}
    QUESTION = {"question": "Which file first?", "header": "Order", "context": "three files",
                "options": [{"label": "notes.txt", "description": "notes"}, {"label": "draft.md", "description": "a draft"}]}

    def payload(reply_id):
        ask = ToolCallBlock(id=f"{reply_id}-ask", name="AskUser", input=json.dumps({"questions": [QUESTION]}), state="submitted")
        delete = ToolCallBlock(id=f"{reply_id}-del", name="delete_file", input=json.dumps({"path": "old_log.txt"}), state="asking")
        pauses = [build_pause(reply_id, ask, tools["AskUser"]).to_view(), build_pause(reply_id, delete, tools["delete_file"]).to_view()]
        transcript = [{"kind": "text", "id": f"{reply_id}-t", "text": "Two things before I go on."}] + [
            {"kind": "tool_call", "id": "call:" + c.id, "text": c.input, "name": c.name, "tool_call_id": c.id} for c in (ask, delete)
        ]
        return dict(reply_id=reply_id, status="paused", transcript=transcript, pauses=pauses)

    # the whole payload given at creation, before anything was displayed
    early = ReplyWidget(agent_name="c11-early", prompt="tidy", **payload("early"))
    early
    """
)

C11_CELL_DISPLAY_THEN_FILL = textwrap.dedent(
    """
    from IPython.display import display
    late = ReplyWidget(agent_name="c11-late", prompt="tidy")
    display(late)
    for name, value in payload("late").items():   # right after display, same cell: the JS is not loaded yet
        setattr(late, name, value)
    """
)


def test_C11_payload_set_before_the_js_loaded_renders_the_whole_pause(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "c11.ipynb", [C11_CELL_PAYLOAD, C11_CELL_DISPLAY_THEN_FILL])
    open_notebook(page, lab, "c11.ipynb")
    run_all_cells(page)
    wait_execution_done(page)

    replies = page.locator(f'{OUT} [data-testid="nbh-reply"]')
    replies.nth(1).wait_for(timeout=60_000)
    assert replies.count() == 2
    for i, reply_id in enumerate(["early", "late"]):
        reply = replies.nth(i)
        reply.locator('[data-testid="nbh-card"]').nth(1).wait_for(timeout=30_000)
        assert reply.locator('[data-testid="nbh-status"]').get_attribute("data-status") == "paused"
        assert "Two things before I go on." in reply.locator('[data-testid="nbh-text"]').inner_text()
        # the AskUser pause, whole: header, question, context and every option
        ask = reply.locator(f'[data-testid="nbh-card"][data-kind="ask_user"][data-tool-call-id="{reply_id}-ask"]')
        assert ask.get_attribute("data-status") == "open"
        assert ask.locator('[data-testid="nbh-header"]').inner_text() == "Order"
        assert ask.locator('[data-testid="nbh-question"]').get_attribute("data-question") == "Which file first?"
        assert ask.locator('[data-testid="nbh-context"]').inner_text() == "three files"
        assert [o.get_attribute("data-label") for o in ask.locator('[data-testid="nbh-option"]').all()] == [
            "notes.txt",
            "draft.md",
        ]
        assert ask.locator('[data-testid="nbh-answer-submit"]').is_visible()
        # the confirmation, whole: its input and its controls
        confirm = reply.locator(f'[data-testid="nbh-card"][data-kind="confirm"][data-tool-call-id="{reply_id}-del"]')
        assert json.loads(confirm.locator('[data-testid="nbh-input"]').inner_text()) == {"path": "old_log.txt"}
        for testid in ("nbh-approve", "nbh-deny", "nbh-modify"):
            assert confirm.locator(f'[data-testid="{testid}"]').is_visible()
        # both open calls of the reply form one group
        assert reply.locator('[data-testid="nbh-group"]').is_visible()
        assert reply.locator('[data-testid="nbh-submit-all"]').is_visible()
    assert output_locator(page, re.compile("model not found|Error displaying widget")).count() == 0
    screenshot(page, "C11-payload-before-js")
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


# ------------------------------------------------------------------- C12
C12_CELL = textwrap.dedent(
    """
    from nb_hitl import Session
    from nb_hitl.demo import demo_agent
    agent = demo_agent(chunk_delay=0)
    session = Session(agent)
    task = session.start("Please tidy up my sandbox folder.")
    """
)


def test_C12_saved_pause_reopened_after_restart_is_a_readable_record(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "c12.ipynb", [C12_CELL])
    open_notebook(page, lab, "c12.ipynb")
    run_all_cells(page)

    ask = _cards(page, "ask_user", "open")
    ask.wait_for(timeout=60_000)
    ask.locator('[data-testid="nbh-option"][data-label="notes.txt"]').click()
    ask.locator('[data-testid="nbh-answer-submit"]').click()
    confirm = _cards(page, "confirm", "open")
    confirm.wait_for(timeout=60_000)
    assert page.locator(f'{OUT} [data-testid="nbh-reply"]').get_attribute("data-live") == "true"
    wait_execution_done(page)
    save_notebook(page)

    saved = lab.notebook_json("c12.ipynb")
    models = saved["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    replies = [m["state"] for m in models.values() if "pauses" in m["state"]]
    assert len(replies) == 1 and [p["status"] for p in replies[0]["pauses"]] == ["delivered", "open"]

    restart_kernel(page, lab)
    open_notebook(page, lab, "c12.ipynb")  # reopen: a new page load over the restarted kernel

    root = page.locator(f'{OUT} [data-testid="nbh-reply"]')
    root.wait_for(timeout=60_000)
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="false"]').wait_for(timeout=30_000)
    banner = root.locator('[data-testid="nbh-live-banner"]')
    # silent (a kernel started since does not know this reply) or gone: either is said
    assert banner.is_visible() and re.search(r"Not answering|No longer live", banner.inner_text())
    # the saved record: the answered question with its answer, the pending confirmation with its input
    answered = root.locator('[data-testid="nbh-card"][data-kind="ask_user"]')
    assert "Which file should I delete? → notes.txt" in answered.locator('[data-testid="nbh-decision"]').inner_text()
    pending = root.locator('[data-testid="nbh-card"][data-kind="confirm"]')
    assert json.loads(pending.locator('[data-testid="nbh-input"]').inner_text()) == {"path": "notes.txt"}
    # silent (a kernel started since does not know this reply) or gone: the card says which
    assert re.search(r"(Not answering|No longer live): the kernel that ran this reply ", pending.inner_text())
    for testid in ("nbh-approve", "nbh-deny", "nbh-modify"):
        button = pending.locator(f'[data-testid="{testid}"]')
        assert button.count() == 0 or button.is_disabled()
    assert (
        root.locator('[data-testid="nbh-interrupt"]').count() == 0
        or root.locator('[data-testid="nbh-interrupt"]').is_disabled()
    )
    # the transcript is readable too
    assert "I found 3 files" in root.inner_text()
    assert output_locator(page, re.compile("model not found|Error displaying widget")).count() == 0
    screenshot(page, "C12-reopened-not-live")
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


# ------------------------------------------------------------------- C01
C01_SETUP = textwrap.dedent(
    """
    import asyncio, time
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call

    box = make_sandbox()
    agent = Agent(name="c01", system_prompt="s", toolkit=Toolkit(tools=sandbox_tools(box)),
                  model=ScriptedChatModel([Turn("Deleting notes.txt.", [tool_call("delete_file", path="notes.txt")]),
                                           Turn("Fine, something else then.")], on_exhausted="raise"))
    session = Session(agent)
    task = session.start("Delete notes.txt.")
    """
)
# the person clicks Approve on the old widget while this cell sleeps: the click
# reaches the kernel after the interrupt below
C01_NEW_PROMPT = 'time.sleep(3)\ntask2 = session.start("Something else, please.", interrupt_pending=True)'
C01_CHECK = 'await asyncio.wait([task2])\nprint("RUNS", len(session.runs), [r.status for r in session.runs], "NOTES", (box / "notes.txt").exists())'


def test_C01_old_widget_refuses_a_click_after_a_new_prompt(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "c01.ipynb", [C01_SETUP, C01_NEW_PROMPT, C01_CHECK])
    open_notebook(page, lab, "c01.ipynb")
    _run_cell(page, 0)
    confirm = _cards(page, "confirm", "open")
    confirm.wait_for(timeout=60_000)
    approve = confirm.locator('[data-testid="nbh-approve"]')
    assert approve.is_enabled()

    _run_cell(page, 1)
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')].some(p => p.textContent.includes('*'))""",
        timeout=30_000,
    )
    time.sleep(0.3)
    approve.click()  # still rendered enabled: the page has not heard of the interrupt yet

    old = page.locator(f'{OUT} [data-testid="nbh-reply"]').first
    card = old.locator('[data-testid="nbh-card"][data-kind="confirm"]')
    error = card.locator('[data-testid="nbh-error"]')
    error.wait_for(timeout=30_000)
    reason = "Interrupted: a new message was sent to the agent."
    assert "no longer live" in error.inner_text() and reason in error.inner_text()
    # visibly expired, with the reason, and nothing left to click
    assert card.get_attribute("data-status") == "expired"
    assert f"No longer live: {reason}" in card.locator('[data-testid="nbh-decision"]').inner_text()
    # the reply's end ("interrupted") is pushed when its task unwinds, which may
    # come after the answer to the click: wait for it, do not read it at once
    expect(old.locator('[data-testid="nbh-status"]')).to_have_attribute("data-status", "interrupted", timeout=30_000)
    assert (
        card.locator('[data-testid="nbh-approve"]').count() == 0
        or card.locator('[data-testid="nbh-approve"]').is_disabled()
    )
    screenshot(page, "C01-refused-click")

    # the new prompt's reply ran; the click started nothing and deleted nothing
    _run_cell(page, 2)
    printed = output_locator(page, re.compile(r"^RUNS ")).first
    printed.wait_for(timeout=60_000)
    assert printed.inner_text().strip() == "RUNS 2 ['interrupted', 'finished'] NOTES True"
    new = page.locator(f'{OUT} [data-testid="nbh-reply"]').nth(1)
    assert new.locator('[data-testid="nbh-final-text"]').inner_text() == "Fine, something else then."
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
