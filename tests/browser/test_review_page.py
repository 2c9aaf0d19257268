"""Pins for the page side of the fresh-eyes review fixes (js/reply/).

Real JupyterLab, real kernel, Debian Chromium; each test fails on the
page code (then ``js/reply.ts``) before that commit:

* a pause that reaches the page before its tool call's transcript entry
  (``pauses`` set before ``transcript``, in separate statements after
  display) ends up under its call, with the call's raw JSON hidden;
* "Submit all" with an open confirmation and an unanswered AskUser says what
  still needs answering and sends nothing;
* an external call's ``running`` result entry with no text (AgentScope
  "starts" the AskUser result before anyone answered) is hidden while its
  AskUser card is open, and shows once answered.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

from playwright.sync_api import expect

from tests.harness.lab import (
    JupyterLabServer,
    open_notebook,
    output_locator,
    run_all_cells,
    screenshot,
    write_notebook,
)

OUT = ".jp-OutputArea-output"
REPLY = f'{OUT} [data-testid="nbh-reply"]'


def run_cell(page, index: int) -> None:  # type: ignore[no-untyped-def]
    """Run one cell without awaiting it (``notebook:run-cell`` on that cell)."""
    page.evaluate(
        """(i) => {
            const w = window.jupyterapp.shell.currentWidget;
            w.content.activeCellIndex = i;
            window.jupyterapp.commands.execute('notebook:run-cell');
        }""",
        index,
    )


def kernel_json(page, index: int, marker: str, timeout_ms: int = 30_000) -> Any:  # type: ignore[no-untyped-def]
    """Run cell ``index`` (it prints ``marker`` + JSON) and return the JSON it printed.

    Waits for one more output with ``marker`` than before the run (the cells run
    in order, so it is the last one): an earlier cell that printed the same
    marker is never read in its place.
    """
    lines = output_locator(page, marker)
    before = lines.count()
    run_cell(page, index)
    expect(lines).to_have_count(before + 1, timeout=timeout_ms)
    text = lines.last.inner_text()
    return json.loads(text[text.index(marker) + len(marker) :].strip().splitlines()[0])


# ---------------------------------------------------------------------------
# (a) pauses before transcript: the card moves under its call
# ---------------------------------------------------------------------------
ORDER_SETUP = textwrap.dedent(
    """
    from agentscope.message import ToolCallBlock
    from IPython.display import display
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.pauses import build_pause
    from nb_hitl.widgets.reply import ReplyWidget

    tools = {t.name: t for t in sandbox_tools(make_sandbox())}
    call = ToolCallBlock(id="ord-del", name="delete_file", input='{"path": "old_log.txt"}', state="asking")
    PAUSES = [build_pause("ord", call, tools["delete_file"]).to_view()]
    TRANSCRIPT = [
        {"kind": "text", "id": "ord-t", "text": "I will delete the old log."},
        {"kind": "tool_call", "id": "call:ord-del", "text": call.input, "name": "delete_file", "tool_call_id": "ord-del"},
    ]
    w = ReplyWidget(agent_name="order", prompt="tidy", reply_id="ord", status="paused")
    display(w)
    """
)


def test_pause_sent_before_its_transcript_entry_ends_under_its_tool_call(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "rf_order.ipynb", [ORDER_SETUP, "w.pauses = PAUSES", "w.transcript = TRANSCRIPT"])
    open_notebook(page, lab, "rf_order.ipynb")
    reply = page.locator(REPLY)
    run_cell(page, 0)
    reply.wait_for(timeout=30_000)

    # the pause arrives first: no tool call entry yet, so the card is drawn loose
    run_cell(page, 1)
    card = reply.locator('[data-testid="nbh-card"][data-kind="confirm"]')
    card.wait_for(timeout=30_000)
    assert reply.locator('[data-testid="nbh-tool-call"]').count() == 0
    assert reply.locator('.nbh-loose [data-testid="nbh-card"]').count() == 1

    # then the transcript: the card moves into its call's entry
    run_cell(page, 2)
    inside = reply.locator('[data-testid="nbh-tool-call"] [data-testid="nbh-card"]')
    inside.wait_for(timeout=30_000)
    assert inside.count() == 1 and inside.get_attribute("data-tool-call-id") == "ord-del"
    assert reply.locator('.nbh-loose [data-testid="nbh-card"]').count() == 0
    assert reply.locator('[data-testid="nbh-card"]').count() == 1
    # the call's raw JSON is hidden: the card shows the input
    raw = reply.locator('[data-testid="nbh-tool-call"] > .nbh-pre')
    assert raw.count() == 1 and raw.is_hidden()
    assert json.loads(inside.locator('[data-testid="nbh-input"]').inner_text()) == {"path": "old_log.txt"}
    assert inside.locator('[data-testid="nbh-approve"]').is_enabled()
    assert reply.locator('[data-testid="nbh-text"]').inner_text() == "I will delete the old log."
    screenshot(page, "review-fixes-card-under-late-call")
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


# ---------------------------------------------------------------------------
# (b) Submit all with nothing to send explains and sends nothing
# ---------------------------------------------------------------------------
GROUP_SETUP = textwrap.dedent(
    """
    import json
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call

    box = make_sandbox()
    Q = {"question": "Keep the draft?", "header": "Draft",
         "options": [{"label": "Yes", "description": "keep it"}, {"label": "No", "description": "delete it"}]}
    agent = Agent(
        name="group", system_prompt="x",
        model=ScriptedChatModel([
            Turn("Two things first.", [tool_call("delete_file", id="del", path="old_log.txt"),
                                       tool_call("AskUser", id="ask", questions=[Q])]),
            Turn("Thanks."),
        ], on_exhausted="raise"),
        toolkit=Toolkit(tools=sandbox_tools(box)),
    )
    session = Session(agent)
    task = session.start("Tidy up.")
    # every page message that is not a liveness ping reaches this handler
    sent = []
    _handler = session.current.widget._handler
    session.current.widget.set_handler(lambda m: (sent.append(m), _handler(m))[1])
    """
)
GROUP_STATE = textwrap.dedent(
    """
    run = session.current
    print("STATE", json.dumps({
        "sent": [m.get("action") for m in sent if m.get("action") not in ("sync", "transcript_sync", "cards_sync")],
        "resumes": run.resumes,
        "status": run.status,
        "pauses": {p.tool_call_id: p.status for p in run.pauses.values()},
        "model_calls": len(agent.model.calls),
        "files": sorted(p.name for p in box.iterdir()),
    }))
    """
)


def test_submit_all_with_nothing_filled_in_explains_and_sends_nothing(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "rf_group.ipynb", [GROUP_SETUP, GROUP_STATE])
    open_notebook(page, lab, "rf_group.ipynb")
    run_cell(page, 0)
    reply = page.locator(REPLY)
    reply.locator('[data-testid="nbh-card"][data-status="open"]').nth(1).wait_for(timeout=60_000)
    assert reply.locator('[data-testid="nbh-card"][data-kind="confirm"][data-status="open"]').count() == 1
    assert reply.locator('[data-testid="nbh-card"][data-kind="ask_user"][data-status="open"]').count() == 1
    group = reply.locator('[data-testid="nbh-group"]')
    assert group.is_visible()
    note = reply.locator('[data-testid="nbh-group-note"]')  # beside the bar, so it outlives its redraws
    assert note.inner_text() == ""

    group.locator('[data-testid="nbh-submit-all"]').click()
    page.wait_for_function(
        """() => { const n = document.querySelector('[data-testid="nbh-group-note"]'); return !!n && n.textContent !== ""; }""",
        timeout=10_000,
    )
    text = note.inner_text()
    assert text.startswith("Nothing to send yet"), text
    assert "AskUser" in text and "delete_file" in text, text
    assert note.is_visible()
    # nothing was sent: every card still open, no decision shown, no "Sending…"
    assert reply.locator('[data-testid="nbh-card"][data-status="open"]').count() == 2
    assert reply.locator('[data-testid="nbh-decision"]').count() == 0
    assert reply.locator('[data-testid="nbh-error"]').count() == 0

    state = kernel_json(page, 1, "STATE")
    assert state == {
        "sent": [],
        "resumes": 0,
        "status": "paused",
        "pauses": {"del": "open", "ask": "open"},
        "model_calls": 1,
        "files": ["draft.md", "notes.txt", "old_log.txt"],
    }
    assert note.inner_text() == text  # still there: nothing redrew the group
    screenshot(page, "review-fixes-submit-all-note")
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


# ---------------------------------------------------------------------------
# (c) an external call's empty "running" result is hidden while its card is open
# ---------------------------------------------------------------------------
RUNNING_SETUP = textwrap.dedent(
    """
    from nb_hitl import Session
    from nb_hitl.demo import demo_agent
    agent = demo_agent(chunk_delay=0)
    session = Session(agent)
    task = session.start("Please tidy up my sandbox folder.")
    """
)

RESULTS_JS = """
() => [...document.querySelectorAll('.jp-OutputArea-output [data-testid="nbh-tool-result"]')].map((el) => ({
    head: (el.querySelector('.nbh-muted') || el).textContent.trim(),
    hidden: el.hidden,
    shown: el.getClientRects().length > 0,
}))
"""


def test_running_result_of_an_open_askuser_is_hidden(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "rf_running.ipynb", [RUNNING_SETUP])
    open_notebook(page, lab, "rf_running.ipynb")
    run_all_cells(page)
    reply = page.locator(REPLY)
    ask = reply.locator('[data-testid="nbh-card"][data-kind="ask_user"][data-status="open"]')
    ask.wait_for(timeout=60_000)
    # the card may be drawn before the transcript that streams beside it (a
    # record update is not held back while the page's connect answer is awaited)
    page.wait_for_function(f"() => ({RESULTS_JS})().length >= 2", timeout=30_000)

    results = page.evaluate(RESULTS_JS)
    # list_files' result (success, with text) is shown; AskUser's "running"
    # entry (no text yet) is in the transcript but hidden
    assert results == [
        {"head": "← list_files success", "hidden": False, "shown": True},
        {"head": "← AskUser running", "hidden": True, "shown": False},
    ], results
    assert reply.locator('[data-testid="nbh-tool-result"]', has_text="AskUser").is_hidden()

    ask.locator('[data-testid="nbh-option"][data-label="old_log.txt"]').click()
    ask.locator('[data-testid="nbh-answer-submit"]').click()
    confirm = reply.locator('[data-testid="nbh-card"][data-kind="confirm"][data-status="open"]')
    confirm.wait_for(timeout=60_000)
    # answered: its result has text and an end state, and shows
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-OutputArea-output [data-testid="nbh-tool-result"]')]
                 .some((el) => !el.hidden && (el.textContent || "").includes("AskUser success"))""",
        timeout=30_000,
    )
    answered = reply.locator('[data-testid="nbh-tool-result"]', has_text="AskUser")
    assert answered.is_visible()
    assert "The user answered:" in answered.inner_text()

    confirm.locator('[data-testid="nbh-deny"]').click()
    reply.locator('[data-testid="nbh-final-text"]').wait_for(timeout=60_000)
    assert (
        reply.locator('[data-testid="nbh-final-text"]').inner_text().startswith("Understood: you denied the deletion")
    )
    assert all(r["shown"] for r in page.evaluate(RESULTS_JS))
    screenshot(page, "review-fixes-running-result-hidden")
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
