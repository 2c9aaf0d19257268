"""PermissionExplorer in real JupyterLab + Chromium, on a real Agent in a real kernel.

A person adds a rule, tries a call, switches the agent's mode, and reads the
engine's decision in the page; then a matrix row shows the five modes side
by side, the kernel confirms the rule and mode landed in the context the
agent's engine reads, and a rule the agent's engine gets from elsewhere (as
"Always allow" does) shows up in the page without a click.
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

SETUP = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.tool import Bash, Read, Write, Edit, FunctionTool, Toolkit
    from nb_hitl.models import ScriptedChatModel, Turn
    from nb_hitl.permissions import explore

    def delete_file(path: str) -> str:
        \"\"\"Delete a file.

        Args:
            path: the file to delete.
        \"\"\"
        return f"deleted {path}"

    agent = Agent(
        name="browser-agent",
        system_prompt="test",
        model=ScriptedChatModel([Turn("ok")]),
        toolkit=Toolkit(tools=[Bash(), Read(), Write(), Edit(), FunctionTool(delete_file)]),
    )
    explorer = explore(agent)
    explorer
    """
)

RULE_FROM_CODE = textwrap.dedent(
    """
    # what "Always allow" in a confirmation does: PermissionEngine.add_rule on the agent's engine
    from agentscope.permission import PermissionRule, PermissionBehavior
    agent._engine.add_rule(PermissionRule(tool_name="delete_file", rule_content=None,
                                          behavior=PermissionBehavior.ALLOW, source="suggested"))
    """
)

CHECK = textwrap.dedent(
    """
    ctx = agent._engine.context
    print("LIVE", ctx.mode.value, [r.rule_content for r in ctx.allow_rules.get("Bash", [])])
    """
)


def _run_cell(page, index: int) -> None:
    page.evaluate(
        """(i) => {
            const w = window.jupyterapp.shell.currentWidget;
            w.content.activeCellIndex = i;
            return window.jupyterapp.commands.execute('notebook:run-cell');
        }""",
        index,
    )


def test_add_rule_try_call_switch_mode_read_decision(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "permission_explorer_browser.ipynb", [SETUP, CHECK, RULE_FROM_CODE])
    open_notebook(page, lab, "permission_explorer_browser.ipynb")
    _run_cell(page, 0)

    root = page.locator("[data-testid=perm-explorer]")
    root.wait_for(timeout=60_000)
    assert root.get_attribute("data-mode") == "default"
    page.locator("[data-testid=perm-no-rules]").wait_for()

    # --- add a rule ---------------------------------------------------------
    page.locator("[data-testid=perm-new-behavior]").select_option("allow")
    page.locator("[data-testid=perm-new-tool]").fill("Bash")
    page.locator("[data-testid=perm-new-content]").fill("git:*")
    # before adding, the page says what else the rule lets through (rule_reach, from the kernel)
    reach = page.locator("[data-testid=perm-new-reach]")
    reach.wait_for(state="visible", timeout=30_000)
    page.wait_for_function(
        "() => (document.querySelector('[data-testid=perm-new-reach]')?.textContent || '').includes('chained after git')",
        timeout=30_000,
    )
    # its patterns are drawn as code, as a card's reach: no raw Markdown backticks
    assert "`" not in reach.inner_text()
    assert reach.locator("code").first.inner_text() == "git"
    page.locator("[data-testid=perm-add-rule]").click()
    page.locator('[data-testid=perm-rule][data-label="allow Bash(git:*)"]').wait_for(timeout=30_000)

    # a rule the engine cannot use is refused with its reason, and nothing is added
    page.locator("[data-testid=perm-new-tool]").fill("bash")
    page.locator("[data-testid=perm-new-content]").fill("ls:*")
    page.locator("[data-testid=perm-add-rule]").click()
    err = page.locator("[data-testid=perm-rule-error]")
    err.wait_for(state="visible", timeout=30_000)
    assert "No tool named 'bash'" in err.inner_text()
    assert page.locator("[data-testid=perm-rule]").count() == 1

    # --- try a call ---------------------------------------------------------
    page.locator("[data-testid=perm-try-tool]").select_option("Bash")
    page.locator("[data-testid=perm-try-input]").fill('{"command": "git push origin main"}')
    page.locator("[data-testid=perm-try-btn]").click()
    behavior = page.locator("[data-testid=perm-try-behavior]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=perm-try-behavior]')?.textContent === 'allow'", timeout=30_000
    )
    why = page.locator("[data-testid=perm-try-why]").inner_text()
    assert "allow rule allow Bash(git:*) matches" in why
    assert "prefix rule" in page.locator('[data-testid=perm-try-rule][data-label="allow Bash(git:*)"]').inner_text()

    # --- switch the agent's mode: the same call is decided again -----------
    page.locator("[data-testid=perm-mode]").select_option("explore")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=perm-try-behavior]')?.textContent === 'deny'", timeout=30_000
    )
    assert root.get_attribute("data-mode") == "explore"
    assert "explore mode is read-only" in page.locator("[data-testid=perm-try-message]").inner_text()
    assert behavior.inner_text() == "deny"

    # --- a safety ask: bypass-immune in dont_ask is a deny -------------------
    page.locator("[data-testid=perm-try-input]").fill('{"command": "rm -rf /"}')
    page.locator("[data-testid=perm-try-mode]").select_option("default")
    page.locator("[data-testid=perm-try-btn]").click()
    page.locator("[data-testid=perm-try-bypass-immune]").wait_for(timeout=30_000)
    assert behavior.inner_text() == "ask"
    assert root.get_attribute("data-mode") == "explore"  # trying in another mode leaves the agent alone

    # --- the matrix: the five modes side by side ------------------------------
    page.locator("[data-testid=perm-matrix-input]").fill('{"tool_name": "Bash", "input": {"command": "rm -rf /"}}')
    page.locator("[data-testid=perm-matrix-btn]").click()
    page.locator("[data-testid=perm-matrix-row]").wait_for(timeout=30_000)
    cells = {
        c.get_attribute("data-mode"): c.get_attribute("data-behavior")
        for c in page.locator("[data-testid=perm-matrix-cell]").all()
    }
    assert cells == {"default": "ask", "accept_edits": "ask", "explore": "deny", "bypass": "allow", "dont_ask": "deny"}
    # the "immune" chips' note is true next to the "bypass: allow" cell: bypass skips safety checks
    note = page.locator("[data-testid=perm-matrix-note]").inner_text()
    assert note.startswith("immune: the tool's own safety check asks and no allow rule can silence it")
    assert "bypass mode skips safety checks" in note
    screenshot(page, "permission_explorer")

    # --- the kernel: the rule and the mode are in the agent's engine context --
    _run_cell(page, 1)
    output_locator(page, "LIVE explore ['git:*']").wait_for(timeout=30_000)

    # --- a rule added by the agent's own engine elsewhere appears by itself --
    _run_cell(page, 2)
    page.locator('[data-testid=perm-rule][data-label="allow delete_file"]').wait_for(timeout=30_000)
    assert "source: suggested" in page.locator('[data-testid=perm-rule][data-label="allow delete_file"]').inner_text()
    assert root.get_attribute("data-live") == "true"

    # --- rule text is shown as text, never as markup ---------------------------
    evil = '<img src=x onerror="window.__nbhPermX=1">'
    page.locator("[data-testid=perm-new-tool]").fill("Bash")
    page.locator("[data-testid=perm-new-behavior]").select_option("deny")
    page.locator("[data-testid=perm-new-content]").fill(evil)
    page.locator("[data-testid=perm-add-rule]").click()
    row = page.locator("[data-testid=perm-rule][data-behavior=deny]")
    row.wait_for(timeout=30_000)
    assert evil in row.inner_text()
    assert page.evaluate("() => window.__nbhPermX") is None
    assert root.locator("img").count() == 0
    wait_execution_done(page)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


BIG = textwrap.dedent(
    """
    import json
    from agentscope.agent import Agent
    from agentscope.tool import Bash, Read, Write, Toolkit
    from nb_hitl.models import ScriptedChatModel, Turn
    from nb_hitl.permissions import explore, import_rules

    rows = [{"tool_name": ["Bash", "Read", "Write"][i % 3],
             "rule_content": f"cmd{i}:*" if i % 3 == 0 else f"/data/p{i}/**",
             "behavior": ["allow", "deny", "ask"][(i // 3) % 3], "source": "userSettings"} for i in range(10_000)]
    big_agent = Agent(name="big-agent", system_prompt="test", model=ScriptedChatModel([Turn("ok")]),
                      toolkit=Toolkit(tools=[Bash(), Read(), Write()]))
    print("IMPORTED", len(import_rules(json.dumps(rows), into=big_agent)))
    big = explore(big_agent)
    big
    """
)

BIG_CHECK = textwrap.dedent(
    """
    n = sum(len(v) for a in ("allow_rules", "deny_rules", "ask_rules") for v in getattr(big_agent._engine.context, a).values())
    print("BIGCOUNT", n, any(r.rule_content == "cmd9999:*" for r in big_agent._engine.context.allow_rules.get("Bash", [])))
    """
)

# Records main-thread tasks longer than 50 ms (Chromium's Long Tasks API):
# the page must not freeze for seconds while it shows 10,000 rules.
LONG_TASKS = """
window.__nbhLong = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__nbhLong.push(e.duration);
}).observe({ type: "longtask", buffered: false });
"""

MAX_ROWS = 100  # PAGE_SIZE in js/permissions/rule_list.ts


def _range_has(page, text: str, timeout: float = 30_000) -> None:
    page.wait_for_function(
        "(t) => (document.querySelector('[data-testid=perm-rules-range]')?.textContent || '').includes(t)",
        arg=text,
        timeout=timeout,
    )


def test_ten_thousand_rules_page_stays_responsive(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "permission_explorer_big.ipynb", [BIG, BIG_CHECK])
    open_notebook(page, lab, "permission_explorer_big.ipynb")
    page.evaluate(LONG_TASKS)
    _run_cell(page, 0)
    root = page.locator("[data-testid=perm-explorer]")
    root.wait_for(timeout=120_000)
    _range_has(page, "rules 1–100 of 10,000", timeout=120_000)
    rows = page.locator("[data-testid=perm-rule]")
    assert rows.count() <= MAX_ROWS

    # paging answers a click at once, and the DOM stays one page big
    page.locator("[data-testid=perm-rules-next]").click()
    _range_has(page, "rules 101–200 of 10,000", timeout=10_000)
    assert rows.count() <= MAX_ROWS
    page.locator("[data-testid=perm-rules-prev]").click()
    _range_has(page, "rules 1–100 of", timeout=10_000)

    # the filter finds one rule among 10,000; removing it goes through the kernel
    page.locator("[data-testid=perm-rules-filter]").fill("cmd9999:")
    target = page.locator('[data-testid=perm-rule][data-label="allow Bash(cmd9999:*)"]')
    target.wait_for(timeout=10_000)
    assert rows.count() == 1
    target.locator("[data-testid=perm-remove-rule]").click()
    _range_has(page, "of 9,999", timeout=30_000)
    assert page.locator('[data-testid=perm-rule][data-label="allow Bash(cmd9999:*)"]').count() == 0
    _run_cell(page, 1)
    output_locator(page, "BIGCOUNT 9999 False").wait_for(timeout=30_000)

    # try a call against 3,333 Bash rules: the answer lists the matching rule, not all of them
    page.locator("[data-testid=perm-rules-filter]").fill("")
    page.locator("[data-testid=perm-try-tool]").select_option("Bash")
    page.locator("[data-testid=perm-try-input]").fill('{"command": "cmd0 --all"}')
    page.locator("[data-testid=perm-try-btn]").click()
    page.locator("[data-testid=perm-try-omitted]").wait_for(timeout=30_000)
    assert page.locator("[data-testid=perm-try-behavior]").inner_text() == "allow"
    assert page.locator('[data-testid=perm-try-rule][data-matched="true"]').count() == 1
    assert page.locator("[data-testid=perm-try-rule]").count() <= 51

    # an import of 10,000 rules through the page (replace) is answered and shown one page at a time
    page.evaluate(
        """() => {
            const rows = [];
            for (let i = 0; i < 10000; i++) rows.push(JSON.stringify(
                {tool_name: "Bash", rule_content: `job${i} run:*`, behavior: "allow", source: "imported"}));
            const ta = document.querySelector('[data-testid=perm-io-text]');
            ta.value = "[\\n" + rows.join(",\\n") + "\\n]";
        }"""
    )
    page.locator("[data-testid=perm-import-replace]").check()
    page.locator("[data-testid=perm-import]").click()
    page.locator("[data-testid=perm-io-info]").wait_for(state="visible", timeout=60_000)
    assert "Imported 10000 rule(s)" in page.locator("[data-testid=perm-io-info]").inner_text()
    _range_has(page, "rules 1–100 of 10,000", timeout=30_000)
    assert page.locator('[data-testid=perm-rule][data-label="allow Bash(job0 run:*)"]').count() == 1
    assert rows.count() <= MAX_ROWS

    longest = page.evaluate("() => Math.max(0, ...window.__nbhLong)")
    assert longest < 2_500, f"the page froze for {longest:.0f} ms"
    wait_execution_done(page)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
