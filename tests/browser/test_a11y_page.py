"""The reply widget for keyboard and screen-reader users, in real JupyterLab.

* ``axe-core`` (the npm package, injected into the page) finds no serious or
  critical violation in any card kind (confirmation, AskUser single and
  multi select, external tool, review, form), in JupyterLab's light and dark
  themes;
* a keyboard alone answers a single-select AskUser (Tab, arrow keys, Enter),
  with the notebook's own shortcuts kept off the card's keys (ArrowDown would
  move to the next cell), and approves the confirmation that follows; the
  agent finishes.

Real kernel, real AgentScope agents on ``ScriptedChatModel``, Debian Chromium.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.harness.lab import (
    JupyterLabServer,
    open_notebook,
    output_locator,
    run_all_cells,
    screenshot,
    set_theme,
    write_notebook,
)

OUT = ".jp-OutputArea-output"
REPLY = f'{OUT} [data-testid="nbh-reply"]'
AXE = Path(__file__).resolve().parents[2] / "js" / "node_modules" / "axe-core" / "axe.min.js"


def card(page, kind: str, status: str = "open"):  # type: ignore[no-untyped-def]
    return page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="{kind}"][data-status="{status}"]')


# ---------------------------------------------------------------------------
# every card kind, open at once (one notebook, one agent per kind)
# ---------------------------------------------------------------------------
SETUP = textwrap.dedent(
    """
    from typing import Any
    from agentscope.agent import Agent
    from agentscope.permission import PermissionBehavior, PermissionDecision, PermissionRule
    from agentscope.state import AgentState
    from agentscope.tool import FunctionTool, ToolBase, Toolkit
    from nb_hitl import Session
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl import FormTool
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call
    from nb_hitl import reviewed

    from tests.support_agents import Lookup  # the kernel has the repository on its path

    def lookup_customer(customer: str) -> str:
        \"\"\"Look up a customer.

        Args:
            customer (str): the name.
        \"\"\"
        return "Ana Lima, card 4111-1111-1111-1111"

    def agent(name, calls, tools, state=None):
        return Agent(name=name, system_prompt="x", state=state,
                     model=ScriptedChatModel([Turn(f"{name} needs you.", calls), Turn("done")]),
                     toolkit=Toolkit(tools=tools))

    box = make_sandbox()
    def options(n):
        return [{"label": f"option {i}", "description": f"the option number {i}", "preview": f"preview {i}"}
                for i in range(1, n + 1)]
    """
)
CELLS = [
    SETUP,
    'confirm = Session(agent("confirm", [tool_call("delete_file", path="notes.txt")], sandbox_tools(box)))\n'
    'confirm_task = confirm.start("tidy")',
    textwrap.dedent(
        """
        ask = Session(agent("ask", [
            tool_call("AskUser", questions=[{"question": "Which file?", "header": "Single", "context": "three files",
                                             "options": options(4)}]),
            tool_call("AskUser", questions=[{"question": "Which formats?", "header": "Multi", "multi_select": True,
                                             "options": [{"label": "csv", "description": "commas"},
                                                         {"label": "json", "description": "objects"}]}]),
        ], sandbox_tools(box)))
        ask_task = ask.start("ask me")
        """
    ),
    'external = Session(agent("external", [tool_call("lookup", word="tidy")], [Lookup()]))\n'
    'external_task = external.start("look up")',
    textwrap.dedent(
        """
        state = AgentState()
        state.permission_context.allow_rules["lookup_customer"] = [PermissionRule(
            tool_name="lookup_customer", rule_content=None, behavior=PermissionBehavior.ALLOW, source="t")]
        review = Session(agent("review", [tool_call("lookup_customer", customer="Ana")],
                               [reviewed(FunctionTool(lookup_customer))], state=state))
        review_task = review.start("who is Ana?")
        """
    ),
    textwrap.dedent(
        """
        REFUND = {"type": "object", "required": ["amount", "reason"], "properties": {
            "amount": {"type": "number", "title": "Amount (EUR)", "minimum": 0, "maximum": 500},
            "date": {"type": "string", "format": "date", "title": "Purchase date"},
            "reason": {"type": "string", "enum": ["damaged", "late"], "title": "Reason"},
            "gift": {"type": "boolean", "title": "A gift"},
            "note": {"type": "string", "title": "Note", "description": "anything else"}}}
        form = Session(agent("form", [tool_call("AskForm", title="Refund details", message="About the purchase.",
                                                schema=REFUND)], [FormTool()]))
        form_task = form.start("refund")
        """
    ),
]

KINDS = ["confirm", "ask_user", "external", "review", "form"]

AXE_RUN = """
async (sel) => {
  const roots = [...document.querySelectorAll(sel)];
  const result = await axe.run(roots, { resultTypes: ["violations"] });
  return {
    roots: roots.length,
    rules: result.passes.length + result.violations.length + result.incomplete.length,
    violations: result.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target.join(" "), summary: n.failureSummary })),
    })),
  };
}
"""


ACTIVE = """
() => {
  const a = document.activeElement;
  const cardEl = a && a.closest('[data-testid="nbh-card"]');
  const nb = window.jupyterapp.shell.currentWidget.content;
  return {
    testid: a && a.dataset ? a.dataset.testid || null : null,
    tag: a ? a.tagName : null,
    value: a && "value" in a ? a.value : null,
    checked: a && "checked" in a ? a.checked : null,
    card: cardEl ? cardEl.dataset.kind + ":" + cardEl.dataset.status : null,
    activeCell: nb.activeCellIndex,
  };
}
"""


def axe_violations(page, roots: int) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    report = page.evaluate(AXE_RUN, REPLY)
    assert report["roots"] == roots, report
    assert report["rules"] >= 15, report  # the engine really checked these widgets
    return [v for v in report["violations"] if v["impact"] in ("serious", "critical")]


def test_axe_finds_no_serious_violation_in_any_card(page, lab: JupyterLabServer) -> None:
    assert AXE.exists(), f"{AXE} missing: run `npm ci` in js/ (axe-core is a devDependency)"
    write_notebook(lab.root / "a11y_cards.ipynb", CELLS)
    open_notebook(page, lab, "a11y_cards.ipynb")
    run_all_cells(page)
    for kind in KINDS:
        card(page, kind).first.wait_for(timeout=90_000)
    # the agent's two AskUser calls: the second card may come in a later update than the first
    expect(card(page, "ask_user")).to_have_count(2, timeout=30_000)
    page.wait_for_function(
        "(sel) => [...document.querySelectorAll(sel)].length === 5"
        " && [...document.querySelectorAll(sel)].every((r) => r.dataset.live === 'true')",
        arg=REPLY,
        timeout=30_000,
    )
    # the roles a screen reader needs
    single = card(page, "ask_user").filter(has=page.locator('[data-testid="nbh-header"]', has_text="Single"))
    assert single.locator('[role="radiogroup"]').count() == 1
    assert single.locator('[role="radiogroup"]').get_attribute("aria-labelledby")
    multi = card(page, "ask_user").filter(has=page.locator('[data-testid="nbh-header"]', has_text="Multi"))
    assert multi.locator('.nbh-options[role="group"]').count() == 1
    assert page.locator(f'{REPLY} [data-testid="nbh-announce"][aria-live="polite"]').count() == 5
    assert page.locator(f"{REPLY}[data-lm-suppress-shortcuts]").count() == 5
    for kind in KINDS:
        assert card(page, kind).first.get_attribute("role") == "group"
        assert card(page, kind).first.get_attribute("aria-label")

    light = axe_violations(page, 5)
    screenshot(page, "a11y-light", full_page=True)
    set_theme(page, "JupyterLab Dark")
    card(page, "confirm").wait_for(timeout=30_000)
    dark = axe_violations(page, 5)
    screenshot(page, "a11y-dark", full_page=True)
    assert light == [], light
    assert dark == [], dark

    # a refused answer: the error is announced (role=alert) and its field is marked invalid
    form = card(page, "form")
    form.locator('[data-testid="nbh-field"][data-name="amount"] input').fill("900")
    form.locator('[data-testid="nbh-field"][data-name="reason"] select').select_option(label="late")
    form.locator('[data-testid="nbh-form-submit"]').click()
    invalid = form.locator('[aria-invalid="true"]')
    invalid.wait_for(timeout=15_000)
    assert form.locator('[role="alert"]').count() >= 1
    assert invalid.get_attribute("aria-describedby")
    # the keyboard lands on the field the refusal is about
    page.wait_for_function(
        "() => document.activeElement && document.activeElement.getAttribute('aria-invalid') === 'true'"
        " && document.activeElement.dataset.field === 'amount'",
        timeout=5_000,
    )
    assert axe_violations(page, 5) == []
    # fixed by keyboard: the field is selected-all and retyped, Enter submits the form
    page.keyboard.press("Control+a")
    page.keyboard.type("42")
    page.keyboard.press("Enter")
    submitted = card(page, "form", "decided").or_(card(page, "form", "delivered"))
    submitted.wait_for(timeout=30_000)
    assert submitted.locator('[data-testid="nbh-decision"]').inner_text() == "Form submitted"

    # the external tool and the review, by keyboard alone
    external = card(page, "external")
    external.focus()
    page.keyboard.press("Tab")
    assert page.evaluate(ACTIVE)["testid"] == "nbh-external-output", page.evaluate(ACTIVE)
    page.keyboard.type("no such word")
    page.keyboard.press("Tab")
    assert page.evaluate(ACTIVE)["testid"] == "nbh-state-success", page.evaluate(ACTIVE)
    page.keyboard.press("ArrowRight")
    assert page.evaluate(ACTIVE)["testid"] == "nbh-state-error", page.evaluate(ACTIVE)
    page.keyboard.press("Tab")
    assert page.evaluate(ACTIVE)["testid"] == "nbh-external-submit", page.evaluate(ACTIVE)
    page.keyboard.press("Enter")
    sent = card(page, "external", "decided").or_(card(page, "external", "delivered"))
    sent.wait_for(timeout=30_000)
    assert sent.locator('[data-testid="nbh-decision"]').inner_text() == "Result sent (error)"

    review = card(page, "review")
    review.focus()
    page.keyboard.press("Tab")
    assert page.evaluate(ACTIVE)["testid"] == "nbh-review-output", page.evaluate(ACTIVE)
    page.keyboard.press("Tab")
    assert page.evaluate(ACTIVE)["testid"] == "nbh-review-accept", page.evaluate(ACTIVE)
    page.keyboard.press("Space")
    accepted = card(page, "review", "decided").or_(card(page, "review", "delivered"))
    accepted.wait_for(timeout=30_000)
    assert accepted.locator('[data-testid="nbh-decision"]').inner_text() == "Result accepted"

    # a multi-select question by keyboard: Space ticks, Enter submits, and the
    # keyboard moves on to the reply's other open question
    multi.focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Space")
    page.keyboard.press("Tab")
    page.keyboard.press("Space")
    page.keyboard.press("Enter")
    done = card(page, "ask_user", "decided").or_(card(page, "ask_user", "delivered"))
    done.wait_for(timeout=30_000)
    assert "csv, json" in done.locator('[data-testid="nbh-decision"]').inner_text()
    page.wait_for_function(
        "() => { const c = document.activeElement && document.activeElement.closest('[data-testid=nbh-card]');"
        " return !!c && c.dataset.status === 'open' && c.querySelector('[role=radiogroup]') !== null; }",
        timeout=15_000,
    )

    # and the check can fail: a button without a name inside a widget is caught
    page.evaluate(
        "(sel) => { const b = document.createElement('button'); b.id = 'nbh-unnamed';"
        " document.querySelector(sel).append(b); }",
        REPLY,
    )
    assert "button-name" in [v["id"] for v in axe_violations(page, 5)]
    page.evaluate("() => document.getElementById('nbh-unnamed').remove()")
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


# ---------------------------------------------------------------------------
# keyboard only: the quickstart's agent (AskUser, then a confirmation)
# ---------------------------------------------------------------------------
KEYBOARD_CELLS = [
    textwrap.dedent(
        """
        from nb_hitl import Session
        from nb_hitl.demo import demo_agent
        agent = demo_agent(chunk_delay=0)
        session = Session(agent)
        reply = await session.run("Please tidy up my sandbox folder.")
        print("FINAL:", reply.get_text_content())
        print("LEFT:", sorted(p.name for p in agent.sandbox.iterdir()))
        """
    ),
    "print('second cell')",
]


def run_until_asked(page, lab: JupyterLabServer, name: str, cells: list[str]):  # type: ignore[no-untyped-def]
    """Run the notebook `name` of `cells` until the quickstart's AskUser card is live; returns it."""
    write_notebook(lab.root / name, cells)
    open_notebook(page, lab, name)
    run_all_cells(page)
    ask = card(page, "ask_user")
    ask.wait_for(timeout=90_000)
    page.locator(f'{REPLY}[data-live="true"]').wait_for(timeout=30_000)
    return ask


def test_keyboard_alone_answers_askuser_and_approves(page, lab: JupyterLabServer) -> None:
    ask = run_until_asked(page, lab, "a11y_keys.ipynb", KEYBOARD_CELLS)
    options = ask.locator('[data-testid="nbh-option-input"]')
    assert options.count() >= 3
    labels = [options.nth(i).get_attribute("value") for i in range(options.count())]

    # the card is a named group a screen reader (or a script) can land on; from there, keys only
    ask.focus()
    start = page.evaluate(ACTIVE)
    assert start["card"] == "ask_user:open", start
    page.keyboard.press("Tab")
    now = page.evaluate(ACTIVE)
    assert now["testid"] == "nbh-option-input" and now["value"] == labels[0], now
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    now = page.evaluate(ACTIVE)
    # the arrows moved within the radio group and picked the third option;
    # the notebook did not take them (its active cell did not move)
    assert now["value"] == labels[2] and now["checked"] is True, now
    assert now["activeCell"] == start["activeCell"], (start, now)
    assert options.nth(2).is_checked() and not options.nth(0).is_checked()
    page.keyboard.press("Enter")

    card(page, "ask_user", "decided").or_(card(page, "ask_user", "delivered")).wait_for(timeout=30_000)
    confirm = card(page, "confirm")
    confirm.wait_for(timeout=60_000)
    assert labels[2] in confirm.locator('[data-testid="nbh-input"]').inner_text()
    # the new card takes the focus from the answered one
    page.wait_for_function(
        "() => document.activeElement && document.activeElement.dataset.kind === 'confirm'", timeout=15_000
    )
    # Tab reaches the buttons (past the diff's "Side by side" and the diff itself): Modify… opens the
    # edit with the keyboard in it, Escape goes back to the buttons (on Modify…), and Approve is a few
    # Shift+Tabs back
    for _ in range(8):
        page.keyboard.press("Tab")
        if page.evaluate(ACTIVE)["testid"] == "nbh-modify":
            break
    assert page.evaluate(ACTIVE)["testid"] == "nbh-modify", page.evaluate(ACTIVE)
    page.keyboard.press("Enter")
    confirm.locator('[data-testid="nbh-modify-input"]').wait_for(timeout=5_000)
    assert page.evaluate(ACTIVE)["testid"] == "nbh-modify-input", page.evaluate(ACTIVE)
    page.keyboard.press("Escape")
    confirm.locator('[data-testid="nbh-approve"]').wait_for(timeout=5_000)
    assert page.evaluate(ACTIVE)["testid"] == "nbh-modify", page.evaluate(ACTIVE)
    passed = []
    for _ in range(4):  # back over "Deny with reason…" and "Deny"
        page.keyboard.press("Shift+Tab")
        passed.append(page.evaluate(ACTIVE)["testid"])
        if passed[-1] == "nbh-approve":
            break
    assert passed[-1] == "nbh-approve" and "nbh-deny" in passed, passed
    page.keyboard.press("Enter")

    output_locator(page, "FINAL:").wait_for(timeout=60_000)
    final = output_locator(page, "FINAL:").inner_text()
    assert f"Deleted {labels[2]}" in final, final
    left = next(line for line in final.splitlines() if line.startswith("LEFT:"))
    assert labels[2] not in left and labels[0] in left, left
    # after the decision the keyboard is still in the widget, on the decided card
    after = page.evaluate(ACTIVE)
    assert after["card"] in ("confirm:decided", "confirm:delivered"), after
    screenshot(page, "a11y-keyboard")
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


# keyboard only: "Deny with reason…" opens with the keyboard in the reason field (not on the
# file diff's "Side by side"), and the letters typed there never reach the notebook's shortcuts
DENY_CELLS = [
    KEYBOARD_CELLS[0].replace(
        'print("LEFT:"',
        "from nb_hitl.models import result_text, tool_results\n"
        'print("MODEL READ:", result_text(tool_results(agent.model.calls[-1], "delete_file")[-1]))\n'
        'print("LEFT:"',
    ),
    "print('second cell')",
]
CELL_TYPES = "() => window.jupyterapp.shell.currentWidget.content.widgets.map((c) => c.model.type)"
# command-mode letters: a/b insert a cell, r makes it Raw, m Markdown, d d deletes, x cuts
REASON = "a bad rm mix, keep it"


def test_keyboard_denies_with_a_reason_the_notebook_does_not_take(page, lab: JupyterLabServer) -> None:
    ask = run_until_asked(page, lab, "a11y_deny.ipynb", DENY_CELLS)
    picked = ask.locator('[data-testid="nbh-option-input"]').first.get_attribute("value")
    ask.locator('[data-testid="nbh-option-input"]').first.check()
    page.keyboard.press("Enter")
    confirm = card(page, "confirm")
    confirm.wait_for(timeout=60_000)
    assert confirm.locator("button.nbh-split-toggle").count() == 1  # the diff's toggle is in the card
    cells = page.evaluate(CELL_TYPES)

    confirm.locator('[data-testid="nbh-deny-reason-open"]').focus()
    page.keyboard.press("Enter")
    confirm.locator('[data-testid="nbh-deny-reason"]').wait_for(timeout=5_000)
    assert page.evaluate(ACTIVE)["testid"] == "nbh-deny-reason", page.evaluate(ACTIVE)
    # Cancel (Escape) goes back to the button that opened it; open it again by keyboard
    page.keyboard.press("Escape")
    assert page.evaluate(ACTIVE)["testid"] == "nbh-deny-reason-open", page.evaluate(ACTIVE)
    page.keyboard.press("Enter")
    page.keyboard.type(REASON)
    assert confirm.locator('[data-testid="nbh-deny-reason"]').input_value() == REASON
    assert page.evaluate(CELL_TYPES) == cells  # no cell inserted, deleted or turned Raw / Markdown
    # letters on a focused card button do not reach the notebook either
    page.keyboard.press("Tab")
    assert page.evaluate(ACTIVE)["testid"] == "nbh-deny-submit", page.evaluate(ACTIVE)
    page.keyboard.type("ab")
    assert page.evaluate(CELL_TYPES) == cells
    page.keyboard.press("Enter")

    output_locator(page, "MODEL READ:").wait_for(timeout=60_000)
    final = output_locator(page, "MODEL READ:").inner_text()
    read = next(line for line in final.splitlines() if line.startswith("MODEL READ:"))
    assert REASON in read, read  # the agent's model got the reason in the call's result
    left = next(line for line in final.splitlines() if line.startswith("LEFT:"))
    assert picked in left, left  # denied: the file is still there
    assert page.evaluate(CELL_TYPES) == cells
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


# ---------------------------------------------------------------------------
# hosts without JupyterLab's theme: the fallback palette, light and dark
# ---------------------------------------------------------------------------
THEME = Path(__file__).resolve().parents[2] / "nb_hitl" / "static" / "theme.css"
MARKUP = """
<div class="nbh nbh-reply" id="root">
  <div class="nbh-row"><span class="nbh-title">agent</span><span class="nbh-muted">← a prompt</span>
    <span class="nbh-chip">waiting for you</span><button>Interrupt</button></div>
  <div class="nbh-entry"><div class="nbh-text">Some text from the model.</div></div>
  <div class="nbh-card nbh-open" role="group" aria-label="Needs your confirmation: delete_file">
    <div class="nbh-row"><span class="nbh-chip">Needs your confirmation</span><span class="nbh-title">delete_file</span></div>
    <div class="nbh-muted">The engine asks.</div><div class="nbh-info">A message.</div>
    <pre class="nbh-pre">{"path": "notes.txt"}</pre>
    <div class="nbh-error" role="alert">Refused: not JSON.</div>
    <label>Reason <input type="text" value="typed"></label>
    <label>Output <textarea>out</textarea></label>
    <label>Pick <select><option>a</option></select></label>
    <div class="nbh-row"><button class="nbh-primary">Approve</button><button class="nbh-danger">Deny</button>
      <button>Modify…</button></div>
  </div>
  <div class="nbh-card nbh-closed"><div class="nbh-ok">Approved</div><div class="nbh-warn">No longer live</div></div>
  <table class="nbh-table"><tr><th scope="col">time</th></tr><tr><td>now</td></tr></table>
</div>
"""

FALLBACK_AXE = """
async () => {
  const r = await axe.run(document.getElementById("root"), { runOnly: ["color-contrast"] });
  return {
    bad: r.violations.map((v) => v.nodes.map((n) => n.target.join(" ") + ": " + n.failureSummary)),
    checked: r.passes.reduce((n, v) => n + v.nodes.length, 0),
    bg: getComputedStyle(document.getElementById("root")).backgroundColor,
  };
}
"""


def test_fallback_palette_outside_jupyterlab(page) -> None:  # type: ignore[no-untyped-def]
    """theme.css alone (no --jp-* variables, as in a host without JupyterLab's
    theme): readable in light and dark, following the system's colour scheme."""
    css = THEME.read_text(encoding="utf-8")
    seen = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.set_content(
            f"<!doctype html><html lang=en><head><title>t</title><style>{css}</style></head>"
            f"<body><main>{MARKUP}</main></body></html>"
        )
        page.add_script_tag(path=str(AXE))
        report = page.evaluate(FALLBACK_AXE)
        assert report["bad"] == [], (scheme, report)
        assert report["checked"] >= 10, (scheme, report)
        seen[scheme] = report["bg"]
    assert seen["light"] == "rgb(255, 255, 255)" and seen["dark"] == "rgb(30, 30, 30)", seen
