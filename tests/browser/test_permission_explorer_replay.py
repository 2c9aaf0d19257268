"""The permission explorer replays a recorded log against the rules it shows (real JupyterLab + Chromium).

A real Agent on the scripted model works in a real kernel with
``Session(audit_log=...)``; the cell answers its two pauses (approves a mail,
denies a second one). ``explore(agent, history=log)`` shows the agent's
rules; a person replays the log (nothing changes: the rules are those it was
recorded with), adds ``allow send_mail`` in the page and replays again: both
mails change ``ask -> allow``, the denied one is flagged, and the rule that
fired is not in "never fired" while the unused one is.
"""

from __future__ import annotations

import textwrap

from tests.harness.lab import JupyterLabServer, open_notebook, wait_execution_done, write_notebook

SETUP = textwrap.dedent(
    """
    import asyncio, tempfile
    from pathlib import Path
    from agentscope.agent import Agent
    from agentscope.tool import FunctionTool, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call
    from nb_hitl.permissions import add_rule, explore

    def lookup(topic: str) -> str:
        \"\"\"Look a topic up.

        Args:
            topic: what to look up.
        \"\"\"
        return f"found {topic}"

    def send_mail(to: str) -> str:
        \"\"\"Send a mail.

        Args:
            to: the address.
        \"\"\"
        return f"sent to {to}"

    agent = Agent(name="clerk", system_prompt="errands", toolkit=Toolkit(tools=[FunctionTool(lookup), FunctionTool(send_mail)]),
                  model=ScriptedChatModel([Turn("Looking up.", [tool_call("lookup", id="l1", topic="tides")]),
                                           Turn("Mailing.", [tool_call("send_mail", id="m1", to="ana@example.org")]),
                                           Turn("Mailing again.", [tool_call("send_mail", id="m2", to="all@partner.example")]),
                                           Turn("Done.")]))
    add_rule(agent, {"tool_name": "lookup", "rule_content": None, "behavior": "allow", "source": "userSettings"})
    AUDIT = Path(tempfile.mkdtemp()) / "errands.jsonl"
    session = Session(agent, display=False, audit_log=AUDIT)
    task = session.start("do the errands")
    for call_id, answer in (("m1", "approve"), ("m2", "deny")):
        while not any(p.tool_call_id == call_id for p in session.pending):
            await asyncio.sleep(0.02)
        await session.act({"action": answer, "tool_call_id": call_id})
    await task
    explorer = explore(agent, history=AUDIT)
    explorer
    """
)


def test_explorer_replays_the_recorded_log_against_the_rules_shown(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "explorer_replay.ipynb", [SETUP])
    open_notebook(page, lab, "explorer_replay.ipynb")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.locator("[data-testid=perm-explorer]").wait_for(timeout=90_000)
    wait_execution_done(page, timeout=90)

    section = page.locator("[data-testid=perm-replay-section]")
    assert "errands.jsonl" in section.locator("h4").inner_text()
    summary = page.locator("[data-testid=perm-replay-summary]")
    page.locator("[data-testid=perm-replay-btn]").click()
    summary.wait_for(timeout=30_000)
    assert summary.inner_text() == "0 of 3 recorded calls would be decided otherwise (mode default)."
    assert page.locator("[data-testid=perm-replay-row]").count() == 0

    # a rule added in the page, then the log replayed against it
    page.locator("[data-testid=perm-new-behavior]").select_option("allow")
    page.locator("[data-testid=perm-new-tool]").fill("send_mail")
    page.locator("[data-testid=perm-new-whole]").check()
    page.locator("[data-testid=perm-add-rule]").click()
    page.locator('[data-testid=perm-rule][data-label="allow send_mail"]').wait_for(timeout=30_000)
    page.locator("[data-testid=perm-replay-btn]").click()
    page.wait_for_function(
        "() => (document.querySelector('[data-testid=perm-replay-summary]')?.textContent || '').startsWith('2 of 3')",
        timeout=30_000,
    )
    rows = page.locator("[data-testid=perm-replay-row]")
    assert rows.count() == 2
    assert [rows.nth(i).get_attribute("data-change") for i in range(2)] == ["ask -> allow", "ask -> allow"]
    assert [rows.nth(i).get_attribute("data-denied-now-allowed") for i in range(2)] == ["false", "true"]
    assert "all@partner.example" in rows.nth(1).inner_text() and "denied, now allowed" in rows.nth(1).inner_text()
    assert not page.locator("[data-testid=perm-replay-never]").is_visible()  # both rules fired
    assert not [e for e in page.nbh_errors if "pageerror" in e]
