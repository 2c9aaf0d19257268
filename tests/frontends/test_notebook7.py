"""nb_hitl's reply widget in Jupyter Notebook 7 (the ``notebook`` package), real Chromium, light and dark.

One Notebook 7 server for the module (``python -m notebook`` with its own
config/data/runtime dirs). A notebook runs the demo agent with
``await session.run(...)``; the test picks a file in the AskUser panel,
clicks Approve in the confirmation card, and checks that the agent resumed
in the kernel: the widget shows the final text, the awaiting cell prints it,
and the file is really gone. The theme is Notebook 7's JupyterLab theme
setting (``@jupyterlab/apputils-extension:themes``): the card must be light
in "JupyterLab Light" and dark in "JupyterLab Dark" (from ``--jp-*``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.frontends.cards import answer_demo, background_luminance
from tests.frontends.servers import NotebookServer
from tests.harness.lab import screenshot, write_notebook

THEMES = "@jupyterlab/apputils-extension:themes"
FINAL = "Done. Deleted draft.md. The folder now holds: notes.txt, old_log.txt."
CELLS = [
    "from nb_hitl import Session\nfrom nb_hitl.demo import demo_agent\n"
    "agent = demo_agent()\nprint('sandbox:', agent.sandbox)",
    "session = Session(agent)\nreply = await session.run('Please tidy up my sandbox folder.')\n"
    "print('FINAL:', reply.get_text_content())\n"
    "print('files left:', sorted(p.name for p in agent.sandbox.iterdir()))",
]


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NotebookServer]:
    server = NotebookServer(tmp_path_factory.mktemp("nb7-root"))
    server.start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_notebook7_pause_approve(page, notebook7: NotebookServer, theme: str) -> None:
    # Notebook 7 itself throws "Cannot read properties of undefined (reading 'schema')"
    # from its shortcuts plugin on load, with or without nb_hitl: count only errors
    # whose first frame is not in Notebook's own bundle
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(e.stack or str(e)))
    notebook7.reset_user_settings()
    notebook7.write_user_settings(THEMES, {"theme": theme})
    name = f"demo-{theme.split()[-1].lower()}.ipynb"
    write_notebook(notebook7.root / name, CELLS)
    page.goto(notebook7.url(f"notebooks/{name}"))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
    page.wait_for_function(
        "(t) => document.body.dataset.jpThemeName === t",
        arg=theme,
        timeout=60_000,
    )
    page.wait_for_function(
        """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                   const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
                   return !!k && k.connectionStatus === "connected" && k.status === "idle"; }""",
        timeout=90_000,
    )
    # not awaited: the command settles only when every cell has run, and a cell awaits our clicks
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    printed = page.locator(".jp-OutputArea-output").get_by_text("sandbox:").first
    printed.wait_for(timeout=90_000)
    sandbox = Path(printed.inner_text().strip().removeprefix("sandbox:").strip())
    page.locator('.jp-OutputArea-output [data-testid="nbh-card"][data-kind="ask_user"]').wait_for(timeout=90_000)
    lum = background_luminance(page.locator(".jp-OutputArea-output .nbh").first)
    if theme.endswith("Dark"):
        assert lum < 0.25, f"card background too light in {theme}: {lum:.2f}"
    else:
        assert lum > 0.75, f"card background too dark in {theme}: {lum:.2f}"
    screenshot(page, f"notebook7-{theme.split()[-1].lower()}-pause")

    answer_demo(page)
    page.locator('[data-testid="nbh-final-text"]').get_by_text(FINAL).wait_for(timeout=90_000)
    assert page.locator('[data-testid="nbh-status"]').first.get_attribute("data-status") == "finished"
    out = page.locator(".jp-OutputArea-output")
    out.get_by_text(f"FINAL: {FINAL}").wait_for(timeout=60_000)
    out.get_by_text("files left: ['notes.txt', 'old_log.txt']").wait_for(timeout=60_000)
    assert sorted(p.name for p in sandbox.iterdir()) == ["notes.txt", "old_log.txt"]
    screenshot(page, f"notebook7-{theme.split()[-1].lower()}-done")
    ours = [e for e in errors if "/static/notebook/" not in (e.splitlines()[1:2] or [""])[0]]
    assert not ours, ours
    notebook7.shutdown_kernels()
