"""Cases C13, C14 and C15 in the page: real JupyterLab, real kernel, Debian Chromium.

* C13: markup from the model (tool input, AskUser question, option label,
  description, ``context``, ``preview``, the agent's text) is shown as text;
  no script runs (``window.__x`` stays undefined) and no ``<img>`` /
  ``<script>`` element appears inside the widget.
* C14: in JupyterLab Light and JupyterLab Dark, the computed colours of the
  widget's text, cards and buttons come from the theme (they follow it) and
  are readable: contrast ratio (WCAG 2.x) at least 4.5 for text and buttons.
* C15: a double click on Approve, and Approve then Deny in the same task,
  each give exactly one decision: the kernel resumed the agent once per
  pause and the audit log holds one line per pause.
"""

from __future__ import annotations

import json
import re
import textwrap
from typing import Any

from tests.harness.lab import (
    REPO_ROOT,
    JupyterLabServer,
    open_notebook,
    output_locator,
    screenshot,
    set_theme,
    wait_execution_done,
    write_notebook,
)

OUT = ".jp-OutputArea-output"
XSS_IMG = '<img src=x onerror="window.__x=1">'
XSS_SCRIPT = "<script>window.__x=1</script>"
BOTH = XSS_IMG + XSS_SCRIPT


def run_all_cells(page) -> None:  # type: ignore[no-untyped-def]
    """Run All Cells without awaiting the command (its promise settles only when
    every cell has run, and a cell here awaits the clicks of this test)."""
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def card(page, kind: str, status: str = "open"):  # type: ignore[no-untyped-def]
    return page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="{kind}"][data-status="{status}"]')


# ---------------------------------------------------------------------------
# C13
# ---------------------------------------------------------------------------
C13_CELL = textwrap.dedent(
    f"""
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call
    IMG, SCRIPT = {XSS_IMG!r}, {XSS_SCRIPT!r}
    box = make_sandbox()
    agent = Agent(
        name="xss", system_prompt="x",
        model=ScriptedChatModel([
            Turn("Text " + IMG + SCRIPT, [tool_call("AskUser", questions=[{{
                "question": "Pick " + IMG + SCRIPT + "?",
                "header": "<b>h</b>",
                "context": "ctx " + IMG + SCRIPT,
                "options": [
                    {{"label": IMG, "description": "desc " + SCRIPT, "preview": "pre " + IMG + SCRIPT}},
                    {{"label": SCRIPT, "description": "plain"}},
                ],
            }}])]),
            Turn("Deleting " + SCRIPT, [tool_call("delete_file", path=IMG + SCRIPT)]),
            Turn("Final " + IMG + SCRIPT),
        ], on_exhausted="raise"),
        toolkit=Toolkit(tools=sandbox_tools(box)),
    )
    session = Session(agent)
    reply = await session.run(IMG + SCRIPT)
    print("FINAL:", reply.get_text_content())
    """
)

NO_MARKUP_JS = """
() => {
  const roots = [...document.querySelectorAll('.jp-OutputArea-output [data-testid="nbh-reply"]')];
  return {
    x: typeof window.__x,
    widgets: roots.length,
    elements: roots.reduce((n, r) => n + r.querySelectorAll("img, script, b, iframe").length, 0),
    imgX: document.querySelectorAll('img[src="x"]').length,
  };
}
"""


def test_C13_markup_from_the_model_is_text(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "c13.ipynb", [C13_CELL])
    open_notebook(page, lab, "c13.ipynb")
    run_all_cells(page)

    ask = card(page, "ask_user")
    ask.wait_for(timeout=60_000)
    assert ask.locator('[data-testid="nbh-question"] legend .nbh-title').inner_text() == f"Pick {BOTH}?"
    assert ask.locator('[data-testid="nbh-header"]').inner_text() == "<b>h</b>"
    assert ask.locator('[data-testid="nbh-context"]').inner_text() == f"ctx {BOTH}"
    labels = ask.locator('[data-testid="nbh-option"]')
    assert [labels.nth(i).get_attribute("data-label") for i in range(2)] == [XSS_IMG, XSS_SCRIPT]
    assert labels.nth(0).locator(".nbh-title").inner_text() == XSS_IMG
    assert labels.nth(0).locator(".nbh-muted").inner_text() == f"desc {XSS_SCRIPT}"
    labels.nth(0).click()
    preview = ask.locator('[data-testid="nbh-preview"]')
    assert preview.inner_text() == f"pre {BOTH}"
    text = page.locator(f'{OUT} [data-testid="nbh-text"]').first
    assert text.inner_text() == f"Text {BOTH}"
    # the markup is visible as text, on screen
    assert output_locator(page, f"Pick {BOTH}?").first.is_visible()
    assert page.evaluate(NO_MARKUP_JS) == {"x": "undefined", "widgets": 1, "elements": 0, "imgX": 0}

    ask.locator('[data-testid="nbh-answer-submit"]').click()
    confirm = card(page, "confirm")
    confirm.wait_for(timeout=60_000)
    assert json.loads(confirm.locator('[data-testid="nbh-input"]').inner_text()) == {"path": BOTH}
    confirm.locator('[data-testid="nbh-modify"]').click()
    assert json.loads(confirm.locator('[data-testid="nbh-modify-input"]').input_value()) == {"path": BOTH}
    confirm.locator('[data-testid="nbh-modify-cancel"]').click()
    screenshot(page, "C13-markup-as-text")
    confirm.locator('[data-testid="nbh-deny"]').click()

    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert final.inner_text() == f"Final {BOTH}"
    wait_execution_done(page)
    output_locator(page, f"FINAL: Final {BOTH}").wait_for(timeout=30_000)
    decided = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="ask_user"] [data-testid="nbh-decision"]')
    assert decided.inner_text() == f"Answered: Pick {BOTH}? → {XSS_IMG}"
    assert page.evaluate(NO_MARKUP_JS) == {"x": "undefined", "widgets": 1, "elements": 0, "imgX": 0}
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


# ---------------------------------------------------------------------------
# C14
# ---------------------------------------------------------------------------
C14_CELL = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call
    box = make_sandbox()
    agent = Agent(
        name="themes", system_prompt="x",
        model=ScriptedChatModel([Turn("I would like to delete a file.", [tool_call("delete_file", path="notes.txt")])]),
        toolkit=Toolkit(tools=sandbox_tools(box)),
    )
    session = Session(agent)
    task = session.start("Delete notes.txt")
    """
)

# WCAG 2.x contrast of an element's text against what is painted behind it
# (alpha colours blended over the nearest opaque ancestor background).
CONTRAST_JS = """
(selectors) => {
  const parse = (c) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(c || "");
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const over = (fg, bg) => ({ r: fg.r * fg.a + bg.r * (1 - fg.a), g: fg.g * fg.a + bg.g * (1 - fg.a), b: fg.b * fg.a + bg.b * (1 - fg.a), a: 1 });
  const behind = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    let bg = { r: 255, g: 255, b: 255, a: 1 };
    for (const l of layers.reverse()) bg = over(l, bg);
    return bg;
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const out = {};
  for (const [name, sel] of Object.entries(selectors)) {
    const el = document.querySelector(sel);
    if (!el) { out[name] = null; continue; }
    const bg = behind(el);
    const fg = over(parse(getComputedStyle(el).color), bg);
    const a = lum(fg), b = lum(bg);
    out[name] = {
      ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05),
      fg: getComputedStyle(el).color,
      bg: `rgb(${Math.round(bg.r)}, ${Math.round(bg.g)}, ${Math.round(bg.b)})`,
      bgLum: b,
    };
  }
  return out;
}
"""

CARD = f'{OUT} [data-testid="nbh-card"][data-kind="confirm"]'
C14_ELEMENTS = {
    "widget text": f'{OUT} [data-testid="nbh-reply"] [data-testid="nbh-text"] .nbh-text',
    "agent name": f'{OUT} [data-testid="nbh-reply"] > .nbh-row .nbh-title',
    "status chip": f'{OUT} [data-testid="nbh-status"]',
    "tool call": f'{OUT} [data-testid="nbh-tool-call"] > .nbh-pre',
    "card title": f"{CARD} .nbh-title",
    "card chip": f"{CARD} .nbh-chip",
    "card input": f'{CARD} [data-testid="nbh-input"]',
    "permission message": f'{CARD} [data-testid="nbh-permission-message"]',
    "approve": f'{CARD} [data-testid="nbh-approve"]',
    "deny": f'{CARD} [data-testid="nbh-deny"]',
    "modify": f'{CARD} [data-testid="nbh-modify"]',
    "always allow": f'{CARD} [data-testid="nbh-always"]',
    "error": f'{CARD} [data-testid="nbh-error"]',
    "edit box": f'{CARD} [data-testid="nbh-modify-input"]',
}


def _contrast(page) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    # the page draws the transcript and the card from separate messages: wait
    # until every element of the plain view is there before measuring
    for name, sel in C14_ELEMENTS.items():
        if name not in ("error", "edit box"):
            page.locator(sel).first.wait_for(state="attached", timeout=30_000)
    view = page.evaluate(CONTRAST_JS, C14_ELEMENTS)
    # the modify view (edit box and its error) replaces the buttons: measure it too
    confirm = card(page, "confirm")
    confirm.locator('[data-testid="nbh-modify"]').click()
    confirm.locator('[data-testid="nbh-modify-input"]').fill("not json")
    confirm.locator('[data-testid="nbh-modify-submit"]').click()
    confirm.locator('[data-testid="nbh-error"]').wait_for(timeout=15_000)
    modify = page.evaluate(CONTRAST_JS, C14_ELEMENTS)
    confirm.locator('[data-testid="nbh-modify-cancel"]').click()
    confirm.locator('[data-testid="nbh-approve"]').wait_for(timeout=15_000)
    view["error"], view["edit box"] = modify["error"], modify["edit box"]
    return view


def test_C14_light_and_dark_themes_are_readable(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "c14.ipynb", [C14_CELL])
    open_notebook(page, lab, "c14.ipynb")
    run_all_cells(page)
    card(page, "confirm").wait_for(timeout=60_000)
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]').wait_for(timeout=30_000)

    light = _contrast(page)
    screenshot(page, "C14-light")
    set_theme(page, "JupyterLab Dark")
    card(page, "confirm").wait_for(timeout=30_000)
    dark = _contrast(page)
    screenshot(page, "C14-dark")

    for name in C14_ELEMENTS:
        assert light[name] is not None and dark[name] is not None, name
    report = {name: (round(light[name]["ratio"], 2), round(dark[name]["ratio"], 2)) for name in C14_ELEMENTS}
    for name in C14_ELEMENTS:
        assert light[name]["ratio"] >= 4.5, f"{name} in the light theme: {light[name]} ({report})"
        assert dark[name]["ratio"] >= 4.5, f"{name} in the dark theme: {dark[name]} ({report})"
    # the colours follow the theme: light backgrounds in Light, dark ones in Dark
    for name in ("widget text", "card title", "card input", "modify", "edit box"):
        assert light[name]["bgLum"] > 0.5 and dark[name]["bgLum"] < 0.2, (name, light[name], dark[name])
        assert light[name]["fg"] != dark[name]["fg"], name
    # and come from the --jp-* variables: the card's background is --jp-layout-color1
    resolved = page.evaluate(
        """(sel) => {
            const probe = document.createElement("div");
            probe.style.background = "var(--jp-layout-color1)";
            document.body.append(probe);
            const want = getComputedStyle(probe).backgroundColor;
            probe.remove();
            return [want, getComputedStyle(document.querySelector(sel)).backgroundColor];
        }""",
        CARD,
    )
    assert resolved[0] == resolved[1], resolved
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


def test_C14_no_colour_outside_theme_variables() -> None:
    """Every colour in the widget's CSS is a ``--jp-*`` variable; a literal only in the ``--nbh-*`` fallback palette."""
    css = (REPO_ROOT / "js" / "lib" / "theme.css").read_text()
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    # the fallback palette for hosts without JupyterLab's theme: light, and dark
    palette = re.findall(r"(--nbh-[a-z0-9-]+)\s*:", css)
    assert palette and set(palette) == set(re.findall(r"var\((--nbh-[a-z0-9-]+)\)", css)), "palette unused or undefined"
    assert "prefers-color-scheme: dark" in css
    colour = re.compile(r"#[0-9a-fA-F]{3,8}\b|\brgba?\(|\bhsla?\(|\b(?:white|black|red|blue|green|gray|grey)\b")
    for decl in re.findall(r"(?:^|[;{])\s*((?:color|background|background-color|border(?:-[a-z]+)*)\s*:[^;}]*)", css):
        stripped = decl
        while True:  # drop var(--jp-x, fallback) wholesale, innermost first
            nxt = re.sub(r"var\(--jp-[a-z0-9-]+(?:,[^()]*)?\)", "", stripped)
            if nxt == stripped:
                break
            stripped = nxt
        assert not colour.search(stripped), f"colour not from a --jp-* variable: {decl.strip()}"
    for ts in [p for p in (REPO_ROOT / "js").rglob("*.ts") if "node_modules" not in p.parts]:
        src = ts.read_text()
        assert not re.search(r"(?:color|background)\s*[:=]\s*['\"]?(?:#|rgb)", src), f"inline colour in {ts.name}"


# ---------------------------------------------------------------------------
# C15
# ---------------------------------------------------------------------------
C15_CELLS = [
    textwrap.dedent(
        """
        import tempfile, pathlib
        from agentscope.agent import Agent
        from agentscope.tool import Toolkit
        from nb_hitl import Session
        from nb_hitl.demo import make_sandbox, sandbox_tools
        from nb_hitl.models import ScriptedChatModel, Turn, tool_call, tool_results
        from nb_hitl.store import AuditLog
        box = make_sandbox()
        audit = pathlib.Path(tempfile.mkdtemp()) / "audit.jsonl"
        agent = Agent(
            name="c15", system_prompt="x",
            model=ScriptedChatModel([
                Turn("First.", [tool_call("delete_file", path="notes.txt")]),
                Turn("Second.", [tool_call("delete_file", path="draft.md")]),
                lambda msgs: Turn("States: " + ", ".join(str(r.state) for r in tool_results(msgs, "delete_file"))),
            ], on_exhausted="raise"),
            toolkit=Toolkit(tools=sandbox_tools(box)),
        )
        session = Session(agent, audit_log=str(audit))
        reply = await session.run("Delete two files")
        print("FINAL:", reply.get_text_content())
        """
    ),
    textwrap.dedent(
        """
        print("RESUMES", session.current.resumes)
        print("AUDIT", [(r["tool_name"], r["decision"]) for r in AuditLog(audit).records("answered")])
        print("FILES", sorted(p.name for p in box.iterdir()))
        """
    ),
]


def test_C15_double_click_and_approve_then_deny_give_one_decision(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "c15.ipynb", C15_CELLS)
    open_notebook(page, lab, "c15.ipynb")
    run_all_cells(page)

    first = card(page, "confirm")
    first.wait_for(timeout=60_000)
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="true"]').wait_for(timeout=30_000)
    first_id = first.get_attribute("data-tool-call-id")
    first.locator('[data-testid="nbh-approve"]').dblclick()

    second = page.locator(
        f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="open"]:not([data-tool-call-id="{first_id}"])'
    )
    second.wait_for(timeout=60_000)
    # Approve then Deny within the same task (a few microseconds apart)
    second.evaluate(
        """(el) => {
            el.querySelector('[data-testid="nbh-approve"]').click();
            el.querySelector('[data-testid="nbh-deny"]').click();
        }"""
    )
    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert final.inner_text() == "States: success, success"
    decisions = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"] [data-testid="nbh-decision"]')
    assert decisions.all_inner_texts() == ["Approved", "Approved"]
    assert page.locator(f'{OUT} [data-testid="nbh-reply"] [data-testid="nbh-error"]').count() == 0

    wait_execution_done(page)
    output_locator(page, "RESUMES 2").wait_for(timeout=30_000)
    output_locator(page, "AUDIT [('delete_file', 'approve'), ('delete_file', 'approve')]").wait_for(timeout=10_000)
    output_locator(page, "FILES ['old_log.txt']").wait_for(timeout=10_000)
    screenshot(page, "C15-one-decision")
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
