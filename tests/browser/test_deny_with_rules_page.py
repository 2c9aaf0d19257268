"""A denial that adds rules says so on the card: real JupyterLab, real kernel, Debian Chromium.

The person opens "Always allow / deny…", ticks the suggested rule and presses "Deny and always
deny the ticked rules" (first with nothing ticked: the card's refusal goes as soon as a rule is
ticked, as it is no longer true). The decided card names the rule added (``deny write_note``), as an
approval with rules names its own; it said only "Denied". The rule is real: the model's second
``write_note`` call in the same reply is refused without a card, and nothing is written.
"""

from __future__ import annotations

import textwrap

from tests.harness.lab import JupyterLabServer, card_locator, output_locator, run_to_open_card, wait_execution_done

OUT = ".jp-OutputArea-output"

CELL = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.message import TextBlock, ToolResultState
    from agentscope.tool import FunctionTool, ToolChunk, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results

    got = []

    def write_note(path: str) -> ToolChunk:
        '''Write a note.

        Args:
            path (str): the file.
        '''
        got.append(path)
        return ToolChunk(content=[TextBlock(text="wrote " + path)], state=ToolResultState.SUCCESS)

    agent = Agent(
        name="notes", system_prompt="x",
        model=ScriptedChatModel([
            Turn("Writing.", [tool_call("write_note", id="call_1", path="a.txt")]),
            Turn("Again.", [tool_call("write_note", id="call_2", path="b.txt")]),
            lambda msgs: Turn("Told: " + result_text(tool_results(msgs)[-1])),
        ], on_exhausted="raise"),
        toolkit=Toolkit(tools=[FunctionTool(write_note)]),
    )
    session = Session(agent)
    reply = await session.run("go")
    print("GOT", got)
    """
)


def test_deny_and_always_deny_names_the_rule_on_the_decided_card(page, lab: JupyterLabServer) -> None:
    card = run_to_open_card(page, lab, "deny_rules.ipynb", [CELL])
    card.locator('[data-testid="nbh-always"]').click()
    rule = card.locator('[data-testid="nbh-rule"]')
    assert rule.count() == 1 and not rule.is_checked()
    card.locator('[data-testid="nbh-deny-rules-submit"]').click()  # nothing ticked: refused in the card
    refusal = card.locator('[data-testid="nbh-error"]')
    assert refusal.inner_text().startswith("No rule is ticked, so nothing was sent")
    rule.check()
    refusal.wait_for(state="detached", timeout=5_000)  # no longer true once a rule is ticked
    card.locator('[data-testid="nbh-deny-rules-submit"]').click()

    output_locator(page, "GOT []").wait_for(timeout=60_000)
    wait_execution_done(page)
    decided = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"] [data-testid="nbh-decision"]')
    assert decided.count() == 1  # the second call was refused by the rule, without a card
    assert decided.inner_text() == "Denied, with rules: deny write_note"
    assert card_locator(page, "confirm").count() == 0
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
