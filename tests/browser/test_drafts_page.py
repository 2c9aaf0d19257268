"""Nothing a person typed is lost when the kernel is slow to answer, in real JupyterLab + Chromium.

A real agent on the scripted model parks one reply on three calls: a
confirmation (``delete_file``), an AskUser question and a form. The kernel
holds the page's messages until the test releases them (tests/browser/slow_kernel.py):
past the page's 4 s wait the page says "Not answering", then live again once
they are answered. An edit typed in the Modify editor before, and an
AskUser "Other" answer and form fields typed while the page says the kernel
does not answer, are all there afterwards in the very same fields (focus and
caret kept); Enter while it does not answer sends nothing and the card says so;
live again, each submit reaches the agent with exactly the typed text: the
tool ran with the edited input, and the model read the typed answers.
"""

from __future__ import annotations

import textwrap

from playwright.sync_api import expect

from tests.browser.slow_kernel import held_until
from tests.browser.test_review_page import REPLY, kernel_json, run_cell
from tests.harness.lab import JupyterLabServer, card_locator, open_notebook, write_notebook

SETUP = held_until("release_drafts") + textwrap.dedent(
    """
    import json
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.kinds.form import FormTool
    from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call

    box = make_sandbox()
    Q = {"question": "Which folder?", "header": "Folder",
         "options": [{"label": "docs", "description": "the docs"}, {"label": "src", "description": "the code"}]}
    SCHEMA = {"type": "object", "properties": {
        "amount": {"type": "number", "title": "Amount"},
        "note": {"type": "string", "maxLength": 80, "title": "Note"}}, "required": ["amount"]}
    agent = Agent(
        name="drafts", system_prompt="x",
        model=ScriptedChatModel([
            Turn("Three things first.", [tool_call("delete_file", id="del", path="old_log.txt"),
                                         tool_call("AskUser", id="ask", questions=[Q]),
                                         tool_call("AskForm", id="form", title="Order", schema=SCHEMA)]),
            Turn("Thanks."),
        ], on_exhausted="raise"),
        toolkit=Toolkit(tools=[*sandbox_tools(box), FormTool()]),
    )
    session = Session(agent)
    task = session.start("Tidy up.")
    """
)
# what the model read of each call (the ToolResultBlocks of its last call) and what is left in the box
READ = textwrap.dedent(
    """
    from nb_hitl.models import tool_results
    blocks = {b.id: b for b in tool_results(agent.model.calls[-1])}
    print("READ", json.dumps({
        "delete": result_text(blocks["del"]),
        "ask": result_text(blocks["ask"]),
        "form": blocks["form"].metadata["value"],
        "files": sorted(p.name for p in box.iterdir()),
    }))
    """
)
EDIT = '{"path": "notes.txt"}'
OTHER = "the build folder, but keep build/logs"
NOTE = "before noon"

# mark a node, to tell it is the same one later (a rebuilt card has new nodes)
MARK = "e => { e.dataset.nbhDraftMark = '1'; }"
MARKED = "e => e.dataset.nbhDraftMark === '1'"


def test_typed_text_survives_not_live_and_live_again_and_is_what_the_agent_gets(page, lab: JupyterLabServer) -> None:
    release = lab.root / "release_drafts"
    release.unlink(missing_ok=True)
    write_notebook(lab.root / "drafts.ipynb", [SETUP, READ])
    open_notebook(page, lab, "drafts.ipynb")
    run_cell(page, 0)
    reply = page.locator(REPLY)
    confirm = card_locator(reply, "confirm", outputs=False)
    ask = card_locator(reply, "ask_user", outputs=False)
    form = card_locator(reply, "form", outputs=False)
    for card in (confirm, ask, form):
        card.wait_for(timeout=60_000)

    # typed as soon as the cards are drawn (the page does not know yet whether the kernel answers)
    confirm.locator('[data-testid="nbh-modify"]').click()
    editor = confirm.locator('[data-testid="nbh-modify-input"]')
    editor.fill(EDIT)
    editor.evaluate(MARK)

    # the connect answer is held: past its 4 s wait the page says the kernel does not answer
    banner = reply.locator('[data-testid="nbh-live-banner"]')
    page.locator(f'{REPLY}[data-kernel="silent"]').wait_for(timeout=30_000)
    expect(banner).to_contain_text("Not answering: the kernel that ran this reply does not answer")
    expect(confirm.locator('[data-testid="nbh-modify-submit"]')).to_be_disabled()
    # Enter in a field while it does not answer: nothing is sent, and the card says so
    pressed = ask.evaluate(
        """card => {
            const kernel = card.closest('[data-testid="nbh-reply"]').dataset.kernel;
            const other = card.querySelector('[data-testid="nbh-other-text"]');
            other.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
            return { kernel, said: card.querySelector('[data-testid="nbh-not-live"]').textContent };
        }"""
    )
    assert pressed["kernel"] == "silent", pressed
    assert pressed["said"].startswith("Nothing was sent: the kernel that ran this reply does not answer."), pressed
    # ... and the person keeps typing
    other = ask.locator('[data-testid="nbh-other-text"]')
    other.press_sequentially(OTHER)
    other.evaluate(MARK)
    form.locator('[data-field="note"]').press_sequentially(NOTE)
    amount = form.locator('[data-field="amount"]')
    amount.press_sequentially("42")
    amount.evaluate(MARK)

    # the page's messages are answered: live again, nothing rebuilt under the person's typing
    release.touch()
    page.locator(f'{REPLY}[data-kernel="live"]').wait_for(timeout=30_000)
    expect(banner).to_be_hidden()
    assert editor.input_value() == EDIT and editor.evaluate(MARKED)
    assert other.input_value() == OTHER and other.evaluate(MARKED)
    assert form.locator('[data-field="note"]').input_value() == NOTE
    assert amount.input_value() == "42" and amount.evaluate(MARKED)
    assert amount.evaluate("e => document.activeElement === e"), "the focus stays in the field being typed in"
    assert ask.locator('[data-testid="nbh-other-toggle"]').is_checked()
    expect(ask.locator('[data-testid="nbh-not-live"]')).to_be_hidden()

    # each submit reaches the agent with exactly what was typed
    confirm.locator('[data-testid="nbh-modify-submit"]').click()
    ask.locator('[data-testid="nbh-answer-submit"]').click()
    form.locator('[data-testid="nbh-form-submit"]').click()
    reply.locator('[data-testid="nbh-final-text"]').wait_for(timeout=60_000)
    read = kernel_json(page, 1, "READ")
    assert read["files"] == ["draft.md", "old_log.txt"], read  # the edited call ran: notes.txt went
    assert "notes.txt" in read["delete"], read
    assert OTHER in read["ask"], read
    assert read["form"] == {"amount": 42, "note": NOTE}, read
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
