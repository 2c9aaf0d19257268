"""The permission explorer replays a 100,000-call log as candidate rules are typed, pages it and exports the candidate (real JupyterLab + Chromium).

A real Agent (scripted model) with two function tools in a real kernel; a
recorded log of 100,000 calls (``send_mail`` asked every fourth call, every
third of those denied; ``lookup`` allowed by a rule). In the page: candidate
rules are pasted into the replay section, the log is replayed against them
(the kernel keeps the result, the page shows one page of rows), the person
pages forward, shows every call instead of the changed ones, and exports the
candidate as a rules file built in the kernel.
"""

from __future__ import annotations

import json
import textwrap

from tests.harness.lab import JupyterLabServer, open_notebook, wait_execution_done, write_notebook

SETUP = textwrap.dedent(
    """
    import json, tempfile
    from pathlib import Path
    from agentscope.tool import FunctionTool, Toolkit
    from nb_hitl.models import ScriptedChatModel
    from agentscope.agent import Agent
    from nb_hitl.permissions import add_rule, explore

    def lookup(topic: str) -> str:
        \"\"\"Look a topic up.

        Args:
            topic: what to look up.
        \"\"\"
        return topic

    def send_mail(to: str) -> str:
        \"\"\"Send a mail.

        Args:
            to: the address.
        \"\"\"
        return to

    agent = Agent(name="clerk", system_prompt="errands", model=ScriptedChatModel([]),
                  toolkit=Toolkit(tools=[FunctionTool(lookup), FunctionTool(send_mail)]))
    add_rule(agent, {"tool_name": "lookup", "rule_content": None, "behavior": "allow", "source": "userSettings"})
    LOG = Path(tempfile.mkdtemp()) / "year.jsonl"
    with LOG.open("w") as out:
        for i in range(100_000):
            call = {"agent": "clerk", "tool_call_id": f"c{i}", "ts": float(i)}
            if i % 4:
                out.write(json.dumps({**call, "event": "checked", "tool_name": "lookup",
                                      "original_input": {"topic": f"t{i}"}, "decision": "allow",
                                      "decided_how": "rule"}) + "\\n")
                continue
            mail = {**call, "tool_name": "send_mail", "original_input": {"to": f"u{i}@example.org"}}
            out.write(json.dumps({**mail, "event": "checked", "decision": "ask", "decided_how": "mode"}) + "\\n")
            out.write(json.dumps({**mail, "event": "answered", "decision": "deny" if i % 12 == 0 else "approve"}) + "\\n")
    explorer = explore(agent, history=LOG)
    explorer
    """
)

CANDIDATE = json.dumps(
    [
        {"tool_name": "lookup", "rule_content": None, "behavior": "allow", "source": "candidate"},
        {"tool_name": "send_mail", "rule_content": None, "behavior": "allow", "source": "candidate"},
    ],
    indent=1,
)


def _summary_starts(page, text: str) -> None:
    page.wait_for_function(
        "t => (document.querySelector('[data-testid=perm-replay-summary]')?.textContent || '').startsWith(t)",
        arg=text,
        timeout=120_000,
    )


def test_a_100000_call_log_replayed_as_rules_are_typed_paged_and_exported(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "explorer_paging.ipynb", [SETUP])
    open_notebook(page, lab, "explorer_paging.ipynb")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.locator("[data-testid=perm-explorer]").wait_for(timeout=120_000)
    wait_execution_done(page, timeout=120)

    page.locator("[data-testid=perm-replay-rules]").fill(CANDIDATE)  # replayed once typing pauses
    _summary_starts(page, "25000 of 100000 recorded calls would be decided otherwise")
    source = page.locator("[data-testid=perm-replay-source]")
    assert source.get_attribute("data-source") == "candidate"
    assert "8334 call(s) a person denied would be allowed" in source.inner_text()
    rows = page.locator("[data-testid=perm-replay-row]")
    assert rows.count() == 50  # one page; the kernel keeps the other 24,950
    assert rows.first.get_attribute("data-index") == "0" and rows.first.get_attribute("data-change") == "ask -> allow"
    where = page.locator("[data-testid=perm-replay-where]")
    assert where.inner_text() == "1–50 of 25000"
    assert page.locator("[data-testid=perm-replay-prev]").is_disabled()

    page.locator("[data-testid=perm-replay-next]").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=perm-replay-where]')?.textContent === '51–100 of 25000'",
        timeout=30_000,
    )
    assert rows.count() == 50 and rows.first.get_attribute("data-index") == str(50 * 4)
    assert "u200@example.org" in rows.first.inner_text()

    page.locator("[data-testid=perm-replay-only-changed]").uncheck()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=perm-replay-where]')?.textContent === '1–50 of 100000'",
        timeout=30_000,
    )
    assert rows.nth(1).get_attribute("data-change") == ""  # lookup, allowed then and now

    page.locator("[data-testid=perm-replay-export]").click()
    download = page.locator("[data-testid=perm-replay-download]")
    download.wait_for(state="visible", timeout=30_000)
    exported = json.loads(download.get_attribute("data-text") or "")
    assert [(r["tool_name"], r["rule_content"], r["behavior"]) for r in exported] == [
        ("lookup", None, "allow"),
        ("send_mail", None, "allow"),
    ]
    assert (download.get_attribute("href") or "").startswith("blob:")

    # a rules file that cannot be read is refused with its line; the last replay stays shown
    page.locator("[data-testid=perm-replay-rules]").fill('[\n  {"tool_name": "send_mail"}\n]')
    error = page.locator("[data-testid=perm-replay-error]")
    error.wait_for(state="visible", timeout=30_000)
    assert error.inner_text().startswith("line 2")
    assert page.locator("[data-testid=perm-replay-summary]").inner_text().startswith("25000 of 100000")
    assert not [e for e in page.nbh_errors if "pageerror" in e]
