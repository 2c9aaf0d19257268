"""The confirm card shows what will execute: real JupyterLab, real kernel, Debian Chromium.

C25 and C18 in the page: the model sends ``{"path": "notes.txt"} {"path": "pre\\u202ecious.txt"}``
(two objects, the second with a bidi override). The card shows the input
AgentScope would run (the last object) with the override escaped, shows
what the model sent, says why Approve is refused and disables it; the
person denies with a reason, which the model reads. The denial is not drawn
in the approval colour.
"""

from __future__ import annotations

import textwrap

from tests.harness.lab import (
    JupyterLabServer,
    open_notebook,
    output_locator,
    screenshot,
    wait_execution_done,
    write_notebook,
)

OUT = ".jp-OutputArea-output"

CELL = textwrap.dedent(
    """
    import json
    from agentscope.agent import Agent
    from agentscope.message import TextBlock, ToolResultState
    from agentscope.tool import FunctionTool, ToolChunk, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results

    class RawArgs(ScriptedChatModel):
        @staticmethod
        def _blocks(turn):
            text, calls = ScriptedChatModel._blocks(turn)
            for c in calls:
                c.input = json.loads(c.input).get("__raw__", c.input)
            return text, calls

    got = []

    def write_note(path: str, count: int = 1) -> ToolChunk:
        '''Write a note.

        Args:
            path (str): the file.
            count (int): copies.
        '''
        got.append(path)
        return ToolChunk(content=[TextBlock(text="wrote " + path)], state=ToolResultState.SUCCESS)

    RAW = '{"path": "notes.txt"} {"path": "pre\\u202ecious.txt"}'
    agent = Agent(
        name="c25", system_prompt="x",
        model=RawArgs([
            Turn("Writing.", [tool_call("write_note", __raw__=RAW)]),
            lambda msgs: Turn("Told: " + result_text(tool_results(msgs)[-1]) + " | " + " ".join(
                str(b.hint) for m in msgs if not isinstance(m.content, str)
                for b in m.content if b.type == "hint" and b.source == "nb_hitl")),
        ], on_exhausted="raise"),
        toolkit=Toolkit(tools=[FunctionTool(write_note)]),
    )
    session = Session(agent)
    reply = await session.run("go")
    print("GOT", got)
    """
)


def test_C25_card_shows_what_runs_refuses_approve_and_denies_with_a_reason(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "c25.ipynb", [CELL])
    open_notebook(page, lab, "c25.ipynb")
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    card = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="open"]')
    card.wait_for(timeout=60_000)
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]').wait_for(timeout=30_000)
    shown = card.locator('[data-testid="nbh-input"]').inner_text()
    assert "pre\\u202ecious.txt" in shown and "\u202e" not in shown and "notes.txt" not in shown
    sent = card.locator('[data-testid="nbh-sent-input"]').inner_text()
    assert "notes.txt" in sent and "\\u202e" in sent and "\u202e" not in sent
    assert "not exactly what the model sent" in card.locator('[data-testid="nbh-input-differs"]').inner_text()
    assert "several JSON values" in card.locator('[data-testid="nbh-approve-refused"]').inner_text()
    assert card.locator('[data-testid="nbh-approve"]').is_disabled()
    screenshot(page, "C25-card-refuses-approve")

    # C18: "Always…" ticks no rule by default, says what each rule lets through, and pressing
    # with nothing ticked says that nothing was sent
    card.locator('[data-testid="nbh-always"]').click()
    rule = card.locator('[data-testid="nbh-rule"]')
    assert rule.count() == 1 and not rule.is_checked()
    assert "every call of write_note" in card.locator('[data-testid="nbh-rule-reach"]').inner_text()
    assert card.locator('[data-testid="nbh-rules-submit"]').is_disabled()  # Approve is refused here
    card.locator('[data-testid="nbh-deny-rules-submit"]').click()
    assert "No rule is ticked, so nothing was sent" in card.locator('[data-testid="nbh-error"]').inner_text()
    card.get_by_role("button", name="Cancel").click()

    card.locator('[data-testid="nbh-deny-reason-open"]').click()
    card.locator('[data-testid="nbh-deny-reason"]').fill("Neither file, please.")
    card.locator('[data-testid="nbh-deny-submit"]').click()

    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert "saying: Neither file, please." in final.inner_text()  # in the call's result the model reads
    decided = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"] [data-testid="nbh-decision"]')
    assert decided.inner_text() == "Denied"
    assert "nbh-warn" in (decided.get_attribute("class") or "")
    wait_execution_done(page)
    output_locator(page, "GOT []").wait_for(timeout=30_000)
    screenshot(page, "C25-denied-with-reason")
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


REVIEW_CELL = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.permission import PermissionBehavior, PermissionRule
    from agentscope.state import AgentState
    from agentscope.tool import FunctionTool, Toolkit
    from nb_hitl import Session
    from nb_hitl.kinds.review_tool import reviewed
    from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results

    def lookup_customer(customer: str) -> str:
        '''Look up a customer.

        Args:
            customer (str): the name.
        '''
        return "Ana Lima, card 4111-1111-1111-1111"

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
    reply = await session.run("Who is Ana?")
    """
)


def test_C21_review_edit_then_accept_is_not_thrown_away(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "c21.ipynb", [REVIEW_CELL])
    open_notebook(page, lab, "c21.ipynb")
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    card = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="review"][data-status="open"]')
    card.wait_for(timeout=60_000)
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]').wait_for(timeout=30_000)
    card.locator('[data-testid="nbh-review-output"]').fill("Ana Lima, card ****")
    card.locator('[data-testid="nbh-review-accept"]').click()
    asked = card.locator('[data-testid="nbh-ask-first"]')
    asked.wait_for(timeout=10_000)
    assert "Accept sends the original result, not your edit" in asked.inner_text()
    assert card.get_attribute("data-status") == "open"  # nothing was sent yet
    card.locator('[data-testid="nbh-review-send-edit"]').click()
    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert final.inner_text() == "The model read: Ana Lima, card ****"
    wait_execution_done(page)


ASK_CELL = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results

    agent = Agent(
        name="asker", system_prompt="x",
        model=ScriptedChatModel([
            Turn("Asking.", [tool_call("AskUser", questions=[{
                "question": "Which file?", "header": "File",
                "options": [{"label": "a.txt", "description": "A", "preview": "AAA"},
                            {"label": "b.txt", "description": "B", "preview": "BBB"}],
            }])]),
            lambda msgs: Turn("The model read: " + result_text(tool_results(msgs)[-1])),
        ], on_exhausted="raise"),
        toolkit=Toolkit(tools=sandbox_tools(make_sandbox())),
    )
    session = Session(agent)
    reply = await session.run("ask me")
    """
)


def test_askuser_other_text_is_not_dropped_silently_preview_says_whose_and_decline(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "ask.ipynb", [ASK_CELL])
    open_notebook(page, lab, "ask.ipynb")
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    card = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="ask_user"][data-status="open"]')
    card.wait_for(timeout=60_000)
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]').wait_for(timeout=30_000)
    card.locator('[data-testid="nbh-other-text"]').fill("c.txt please")
    kept = card.locator('[data-testid="nbh-other-kept"]')
    assert kept.is_hidden()  # "Other" is the choice while its text is typed
    card.locator('[data-testid="nbh-option"][data-label="b.txt"] input').click()
    assert 'Your "Other" answer is kept but not sent: "c.txt please"' in kept.inner_text()
    label = card.locator('[data-testid="nbh-preview-label"]')
    assert label.inner_text() == "Preview of your choice: b.txt"
    card.locator('[data-testid="nbh-option"][data-label="a.txt"]').hover()
    assert label.inner_text() == "Preview of a.txt (hover; not selected)"
    assert card.locator('[data-testid="nbh-preview"]').inner_text() == "AAA"
    card.locator('[data-testid="nbh-decline"]').click()  # text is typed: the card asks which is meant
    card.locator('[data-testid="nbh-ask-first"]').wait_for(timeout=10_000)
    card.locator('[data-testid="nbh-decline-with-text"]').click()
    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    read = final.inner_text()
    assert read.startswith("The model read: The user declined to answer these questions, and wrote:"), read
    assert '"Which file?": c.txt please' in read, read
    wait_execution_done(page)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
