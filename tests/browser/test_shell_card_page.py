"""A Bash call's card in the page: the parsed commands drawn as text. Real JupyterLab, real kernel,
AgentScope's ``Bash`` (its backend records the command line instead of running it), Debian Chromium.

The card lists each simple command the shell parser read (the parser the shell rules judge with):
its program, arguments, redirections, the files they open and what the rules said; markup in an
argument stays text, and axe finds no serious violation in the widget. Deny runs nothing.
"""

from __future__ import annotations

import textwrap

from tests.browser.test_file_diff_page import axe_violations
from tests.harness.lab import JupyterLabServer, run_to_open_card, screenshot

OUT = ".jp-OutputArea-output"
LINE = "echo '<img src=x onerror=window.nbhShellXss=1>' > page.html && sort < names.txt | uniq >> log.txt"

CELL = textwrap.dedent(
    f"""
    from agentscope.agent import Agent
    from agentscope.tool import Bash, ExecResult, LocalBackend, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call

    class RecordingBackend(LocalBackend):
        ran = []

        async def exec_shell(self, argv, **kwargs):
            self.ran.append(argv[-1])
            return ExecResult(exit_code=0, stdout=b"", stderr=b"")

    agent = Agent(
        name="shell", system_prompt="x",
        model=ScriptedChatModel([Turn("", [tool_call("Bash", id="call_1", command={LINE!r})]), Turn("finished")],
                                on_exhausted="raise"),
        toolkit=Toolkit(tools=[Bash(backend=RecordingBackend())]),
    )
    session = Session(agent)
    reply = await session.run("tidy")
    print("ran:", RecordingBackend.ran)
    """
)


def test_a_bash_card_lists_its_parsed_commands(page, lab: JupyterLabServer) -> None:
    card = run_to_open_card(page, lab, "shell_card.ipynb", [CELL])
    box = card.locator('[data-testid="nbh-shell"]')
    assert box.get_attribute("aria-label") == "What the command line runs"
    items = box.locator('[data-testid="nbh-shell-command"]').evaluate_all(
        """(lis) => lis.map((li) => [
            li.dataset.behavior,
            li.querySelector('[data-testid="nbh-shell-program"]').textContent,
            [...li.querySelectorAll('[data-testid="nbh-shell-arg"]')].map((a) => a.textContent),
            [...li.querySelectorAll('[data-testid="nbh-shell-file"]')].map((a) => a.textContent),
        ])"""
    )
    assert items == [
        [
            "ask",
            "echo",
            ["'<img src=x onerror=window.nbhShellXss=1>'"],
            ["Writes (creates or empties) the file page.html"],
        ],
        ["ask", "sort", [], ["Reads the file names.txt"]],
        ["ask", "uniq", [], ["Appends to the file log.txt"]],
    ]
    assert box.locator("img").count() == 0 and page.evaluate("() => window.nbhShellXss") is None
    assert axe_violations(page) == []
    screenshot(page, "shell-card")

    card.locator('[data-testid="nbh-deny"]').click()
    page.locator(f"{OUT}:has-text('ran: []')").wait_for(timeout=60_000)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
