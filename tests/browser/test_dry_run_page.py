"""Dry run, in the page: a Write/Edit card's "Dry run" runs AgentScope's own tool in a throw-away
temporary copy and draws what it did under the card; the card stays open and Approve then runs the
call once, for real. Real JupyterLab, real kernel, AgentScope's own ``Read`` and ``Edit``, Debian
Chromium; no serious axe violation with the result drawn.
"""

from __future__ import annotations

import hashlib
import textwrap

from nb_hitl.store import AuditLog
from tests.browser.test_file_diff_page import axe_violations
from tests.harness.lab import JupyterLabServer, dry_run, open_notebook, run_all_cells, screenshot, write_notebook

OUT = ".jp-OutputArea-output"

BEFORE = "alpha\n<script>window.nbhDryRunXss = 1</script>\ngamma\n"

CELL = textwrap.dedent(
    """
    from pathlib import Path
    from agentscope.agent import Agent
    from agentscope.tool import Edit, Read, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results

    path = str(Path("dry_me.txt").resolve())
    agent = Agent(
        name="editor", system_prompt="x",
        model=ScriptedChatModel([
            Turn("Reading.", [tool_call("Read", id="call_r", file_path=path)]),
            Turn("Editing.", [tool_call("Edit", id="call_1", file_path=path, old_string="gamma", new_string="GAMMA")]),
            lambda msgs: Turn("done: " + result_text(tool_results(msgs)[-1])),
        ], on_exhausted="raise"),
        toolkit=Toolkit(tools=[Read(), Edit()]),
    )
    session = Session(agent, audit_log="dry_run_audit.jsonl")
    reply = await session.run("edit")
    """
)


def test_dry_run_then_approve(page, lab: JupyterLabServer) -> None:  # type: ignore[no-untyped-def]
    target = lab.root / "dry_me.txt"
    target.write_text(BEFORE)
    sha = hashlib.sha256(target.read_bytes()).hexdigest()
    write_notebook(lab.root / "dry_run.ipynb", [CELL])
    open_notebook(page, lab, "dry_run.ipynb")
    run_all_cells(page)

    card = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="open"]')
    card.wait_for(timeout=90_000)
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]').wait_for(timeout=30_000)
    dry_run(card, 30_000)
    summary = card.locator('[data-testid="nbh-dry-run-summary"]').inner_text()
    assert summary.startswith("Dry run in a temporary copy: Edit ran") and "1 file changed" in summary
    assert card.locator('[data-testid="nbh-dry-run-file"]').inner_text() == f"Changed in a copy of {target}"
    diff = card.locator('[data-testid="nbh-dry-run-diff"]')
    kinds = diff.locator("span").evaluate_all("(ss) => ss.map((s) => [s.dataset.kind, s.textContent])")
    assert ["del", "-gamma"] in kinds and ["add", "+GAMMA"] in kinds
    assert ["context", " <script>window.nbhDryRunXss = 1</script>"] in kinds
    assert diff.locator("script").count() == 0 and page.evaluate("() => window.nbhDryRunXss") is None
    assert "Successfully replaced 1 occurrence" in card.locator('[data-testid="nbh-dry-run-output"]').inner_text()
    # not an answer: the card is still open, the file untouched, nothing in the audit log
    assert card.get_attribute("data-status") == "open"
    assert hashlib.sha256(target.read_bytes()).hexdigest() == sha
    audit = lab.root / "dry_run_audit.jsonl"
    lines_before = AuditLog(audit).records()
    assert AuditLog(audit).records("answered") == []
    assert axe_violations(page) == []  # the result region and its diffs, in the light theme
    screenshot(page, "dry-run-result")

    card.locator('[data-testid="nbh-approve"]').click()
    page.locator(f'{OUT} [data-testid="nbh-final-text"]').wait_for(timeout=60_000)
    assert "Successfully replaced 1 occurrence" in page.locator(f'{OUT} [data-testid="nbh-final-text"]').inner_text()
    assert target.read_text() == BEFORE.replace("gamma", "GAMMA")
    assert [(r["tool_call_id"], r["decision"]) for r in AuditLog(audit).records("answered")] == [("call_1", "approve")]
    assert AuditLog(audit).records()[: len(lines_before)] == lines_before
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


BASH_CELL = textwrap.dedent(
    """
    from pathlib import Path
    from agentscope.agent import Agent
    from agentscope.tool import Bash, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results

    proj = str(Path("proj").resolve())
    agent = Agent(
        name="builder", system_prompt="x",
        model=ScriptedChatModel([
            Turn("Building.", [tool_call("Bash", id="call_1", command="echo built >> log.txt && rm old.txt")]),
            lambda msgs: Turn("done: " + result_text(tool_results(msgs)[-1])),
        ], on_exhausted="raise"),
        toolkit=Toolkit(tools=[Bash(cwd=proj)]),
    )
    session = Session(agent)
    reply = await session.run("build")
    """
)


def test_bash_dry_run_in_a_bubblewrap_sandbox(page, lab: JupyterLabServer) -> None:  # type: ignore[no-untyped-def]
    proj = lab.root / "proj"
    proj.mkdir()
    (proj / "log.txt").write_text("<b>start</b>\n")
    (proj / "old.txt").write_text("old\n")
    before = {p.name: p.read_bytes() for p in proj.iterdir()}
    write_notebook(lab.root / "dry_run_bash.ipynb", [BASH_CELL])
    open_notebook(page, lab, "dry_run_bash.ipynb")
    run_all_cells(page)

    card = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="open"]')
    card.wait_for(timeout=90_000)
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]').wait_for(timeout=30_000)
    dry_run(card, 30_000)
    assert (
        card.locator('[data-testid="nbh-dry-run-sandbox"]')
        .inner_text()
        .startswith("Ran in: a bubblewrap sandbox (bubblewrap ")
    )
    summary = card.locator('[data-testid="nbh-dry-run-summary"]').inner_text()
    assert "on a throw-away copy of its working directory" in summary and "; 1 file changed, 1 deleted." in summary
    files = card.locator('[data-testid="nbh-dry-run-file"]').all_inner_texts()
    assert files == ["Changed in the copy: log.txt", "Deleted in the copy: old.txt"]
    assert card.locator('[data-testid="nbh-dry-run-diff"]').first.locator("b").count() == 0
    assert {p.name: p.read_bytes() for p in proj.iterdir()} == before  # the real project is untouched
    assert card.get_attribute("data-status") == "open"
    assert axe_violations(page) == []
    screenshot(page, "dry-run-bash-bubblewrap")
    card.locator('[data-testid="nbh-deny"]').click()
    page.locator(f'{OUT} [data-testid="nbh-final-text"]').wait_for(timeout=60_000)
    assert {p.name: p.read_bytes() for p in proj.iterdir()} == before
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
