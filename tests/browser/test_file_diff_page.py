"""See what you approve, in the page: a file edit's card draws its diff as text, and an approval is
bound to the file seen (C42). Real JupyterLab, real kernel, AgentScope's own ``Read`` and ``Edit``,
Debian Chromium.

The card shows the path and the unified diff (one line each, added / removed lines marked by
class; a ``<script>`` line in the file stays text) in a labelled region, with no serious axe
violation in the light or the dark theme. The file changes on disk after the card is drawn: Approve
runs nothing and the file keeps the other write; the card says the agent was told to read the file
again (AgentScope's Edit would refuse it unread), and the model's new call's card shows the change
against the file as it is now; modifying that call shows the diff of the inputs while it is typed
(the kernel's, the same the decided card then shows) and, under it, the edited call's file diff. A "Side by side" toggle draws the diff as a before | after table,
by mouse or keyboard, with no serious axe violation in either theme.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

from tests.browser.test_a11y_page import AXE, AXE_RUN, REPLY
from tests.harness.lab import JupyterLabServer, card_locator, run_to_open_card, screenshot, set_theme

OUT = ".jp-OutputArea-output"

BEFORE = "alpha\n<script>window.nbhDiffXss = 1</script>\ngamma\n"
OTHER = BEFORE + "delta by someone else\n"


def axe_violations(page) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """axe-core's serious or critical violations in the one reply widget."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    report = page.evaluate(AXE_RUN, REPLY)
    assert report["roots"] == 1 and report["rules"] >= 10, report  # the engine really checked the widget
    return [v for v in report["violations"] if v["impact"] in ("serious", "critical")]


CELL = textwrap.dedent(
    """
    from pathlib import Path
    from agentscope.agent import Agent
    from agentscope.tool import Edit, Read, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results

    path = str(Path("diff_me.txt").resolve())
    agent = Agent(
        name="editor", system_prompt="x",
        model=ScriptedChatModel([
            Turn("Reading.", [tool_call("Read", id="call_r", file_path=path)]),
            Turn("Editing.", [tool_call("Edit", id="call_1", file_path=path, old_string="gamma", new_string="GAMMA")]),
            Turn("Reading again.", [tool_call("Read", id="call_r2", file_path=path)]),
            Turn("Editing.", [tool_call("Edit", id="call_2", file_path=path, old_string="gamma", new_string="GAMMA")]),
            lambda msgs: Turn("done: " + result_text(tool_results(msgs)[-1])),
        ], on_exhausted="raise"),
        toolkit=Toolkit(tools=[Read(), Edit()]),
    )
    session = Session(agent)
    reply = await session.run("edit")
    """
)


def test_C42_diff_card_and_a_file_changed_since_approval(page, lab: JupyterLabServer) -> None:
    target = lab.root / "diff_me.txt"
    target.write_text(BEFORE)
    card = run_to_open_card(page, lab, "c42.ipynb", [CELL])
    diff = card.locator('[data-testid="nbh-file-diff"]')
    assert diff.get_attribute("role") == "region"
    assert diff.get_attribute("aria-label") == f"Changes to {target}"
    assert card.locator('[data-testid="nbh-file-path"]').inner_text() == f"Changes to {target}:"
    kinds = diff.locator("span").evaluate_all("(ss) => ss.map((s) => [s.dataset.kind, s.textContent])")
    assert kinds == [
        ["meta", f"--- {target}"],
        ["meta", f"+++ {target}"],
        ["hunk", "@@ -1,3 +1,3 @@"],
        ["context", " alpha"],
        ["context", " <script>window.nbhDiffXss = 1</script>"],
        ["del", "-gamma"],
        ["add", "+GAMMA"],
    ]
    assert diff.locator("script").count() == 0 and page.evaluate("() => window.nbhDiffXss") is None
    light = axe_violations(page)
    # on a wide screen the diff is drawn side by side until the person chooses; narrow again, unified
    toggle = card.locator('[data-testid="nbh-file-diff-split-toggle"]')
    page.set_viewport_size({"width": 1900, "height": 900})
    card.locator('[data-testid="nbh-file-diff-split"]').wait_for(timeout=10_000)
    assert toggle.get_attribute("aria-pressed") == "true"
    page.set_viewport_size({"width": 1300, "height": 900})
    diff.wait_for(timeout=10_000)
    # side by side: a table of before | after with line numbers, from the same diff
    assert toggle.get_attribute("aria-pressed") == "false"
    look = "(e) => [getComputedStyle(e).backgroundColor, getComputedStyle(e).boxShadow].join(' ')"
    off = toggle.evaluate(look)
    toggle.click()
    split = card.locator('[data-testid="nbh-file-diff-split"]')
    split.wait_for(timeout=10_000)
    assert toggle.get_attribute("aria-pressed") == "true" and diff.count() == 0
    assert toggle.evaluate(look) != off, "pressed looks different from not pressed"
    assert split.get_attribute("aria-label") == f"Changes to {target} (side by side)"
    rows = split.locator("tbody tr").evaluate_all(
        "(rs) => rs.map((r) => Array.from(r.cells).map((c) => c.textContent))"
    )
    assert rows[-1] == ["3", "removed: gamma", "3", "added: GAMMA"]
    assert rows[:3] == [[f"--- {target}"], [f"+++ {target}"], ["@@ -1,3 +1,3 @@"]]  # across the table
    script = "<script>window.nbhDiffXss = 1</script>"
    assert ["2", script, "2", script] in rows  # context on both sides, as text
    assert split.locator("script").count() == 0 and page.evaluate("() => window.nbhDiffXss") is None
    split_light = axe_violations(page)
    set_theme(page, "JupyterLab Dark")
    card.wait_for(timeout=30_000)
    split_dark = axe_violations(page)
    screenshot(page, "C42-diff-side-by-side-dark")
    # the keyboard switches back (Enter on the focused toggle), and keeps the focus on it
    toggle.focus()
    toggle.press("Enter")
    diff.wait_for(timeout=10_000)
    assert toggle.get_attribute("aria-pressed") == "false"
    assert page.evaluate("() => document.activeElement.dataset.testid") == "nbh-file-diff-split-toggle"
    dark = axe_violations(page)
    screenshot(page, "C42-diff-card-dark")
    assert light == [] and dark == [] and split_light == [] and split_dark == [], (light, dark, split_light, split_dark)

    target.write_text(OTHER)  # another write, between the card and the click
    card.locator('[data-testid="nbh-approve"]').click()
    again = page.locator(
        f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="open"]',
        has=page.locator('[data-testid="nbh-file-diff"]', has_text="delta by someone else"),
    )
    again.wait_for(timeout=60_000)
    approved = card_locator(page, "confirm", "expired")
    assert approved.count() == 1
    assert f"Not run: the file {target} changed after its card was drawn. The agent was told to read it again." in (
        approved.inner_text()
    )
    assert target.read_text() == OTHER
    screenshot(page, "C42-not-run-then-read-again")
    # Modify: the decided card shows what the edit changed, as a diff of the inputs
    again.locator('[data-testid="nbh-modify"]').click()
    edited = json.dumps({"file_path": str(target), "old_string": "gamma", "new_string": "Gamma"})
    card.locator('[data-testid="nbh-modify-input"]').fill(edited)  # the one open card, now in its edit
    # before it is sent, the card shows the kernel's diff of the edit against the model's input
    preview = card.locator('[data-testid="nbh-modify-preview-diff"]')
    preview.wait_for(timeout=30_000)
    before_sent = preview.locator("span").evaluate_all("(ss) => ss.map((s) => [s.dataset.kind, s.textContent])")
    assert ["del", '-  "new_string": "GAMMA",'] in before_sent and ["add", '+  "new_string": "Gamma",'] in before_sent
    status = card.locator('[data-testid="nbh-modify-preview-status"]').inner_text()
    assert status == "Your edit: 1 line removed, 1 added in the input (compared by the kernel)."
    # under it, what the edited call does to the file, drawn as the card draws its own diff
    path_line = card.locator('[data-testid="nbh-modify-preview-file-path"]')
    assert path_line.inner_text() == f"The edited call changes {target}:"
    file_diff = card.locator('[data-testid="nbh-modify-preview-file-diff"]')
    file_lines = file_diff.locator("span").evaluate_all("(ss) => ss.map((s) => [s.dataset.kind, s.textContent])")
    assert ["del", "-gamma"] in file_lines and ["add", "+Gamma"] in file_lines
    assert card.locator('[data-testid="nbh-modify-preview-file-other"]').count() == 0  # the same file
    assert axe_violations(page) == []
    screenshot(page, "C42-modify-preview")
    card.locator('[data-testid="nbh-modify-submit"]').click()
    page.locator(f'{OUT} [data-testid="nbh-final-text"]').wait_for(timeout=60_000)
    shown = page.locator(f'{OUT} [data-testid="nbh-input-diff"]')
    lines = shown.locator("span").evaluate_all("(ss) => ss.map((s) => [s.dataset.kind, s.textContent])")
    assert ["del", '-  "new_string": "GAMMA",'] in lines and ["add", '+  "new_string": "Gamma",'] in lines
    assert shown.get_attribute("aria-label") == "What the edit changed"
    assert lines == before_sent  # the diff seen before sending is the one recorded
    screenshot(page, "C42-modified")
    # the model read the file again, so AgentScope's Edit ran the modified input once, on the file shown
    assert target.read_text() == OTHER.replace("gamma", "Gamma")
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
