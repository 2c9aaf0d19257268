"""nb_hitl's reply widget in marimo (``marimo run``), real Chromium, light and dark.

``notebooks/marimo_quickstart.py`` starts the demo agent; its reply widget is
drawn by marimo's anywidget support. The test answers AskUser and clicks
Approve in the card, then checks that the agent finished (the file is gone
from the sandbox, the final text shows) and that marimo's reactivity saw it:
the cells reading ``mo.state`` fed from the widget's ``status`` / ``pending``
traits reran (the status line says ``finished`` and 0 pauses; the last cell
printed the agent's answer). The theme is marimo's ``?theme=light|dark``
(its display theme): the card must be light on light and dark on dark
(marimo sets no ``--jp-*`` variables, so the card uses nb_hitl's fallback
palette, which follows marimo's ``dark``/``light`` classes), also when the
system's ``prefers-color-scheme`` says the opposite.

``marimo run`` gives each page a fresh kernel, so the two tests share one server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.frontends.cards import answer_demo, background_luminance, card
from tests.frontends.servers import MarimoServer
from tests.harness.lab import REPO_ROOT, screenshot

NOTEBOOK = REPO_ROOT / "notebooks" / "marimo_quickstart.py"
FINAL = "Done. Deleted draft.md. The folder now holds: notes.txt, old_log.txt."


@pytest.fixture(scope="module")
def marimo() -> Iterator[MarimoServer]:
    server = MarimoServer(NOTEBOOK, mode="run")
    server.start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_marimo_pause_approve_and_cells_react(page, marimo: MarimoServer, theme: str) -> None:
    # the system asks for the opposite scheme: marimo's own setting must win
    page.emulate_media(color_scheme="light" if theme == "dark" else "dark")
    page.goto(f"{marimo.base_url}/?theme={theme}")
    status = page.get_by_text("Reply status:")
    status.first.wait_for(timeout=90_000)

    ask = card(page, "ask_user")
    ask.wait_for(timeout=90_000)
    page.get_by_text("pauses waiting for you: 1").first.wait_for(timeout=30_000)
    body_dark = page.evaluate("() => document.body.classList.contains('dark')")
    assert body_dark is (theme == "dark")
    lum = background_luminance(page.locator(".nbh").first)
    if theme == "dark":
        assert lum < 0.25, f"card background too light in marimo's dark theme: {lum:.2f}"
    else:
        assert lum > 0.75, f"card background too dark in marimo's light theme: {lum:.2f}"
    screenshot(page, f"marimo-{theme}-pause")

    answer_demo(page)
    page.locator('[data-testid="nbh-final-text"]').get_by_text(FINAL).wait_for(timeout=90_000)
    assert card(page, "confirm", "open").count() == 0
    # the cells that read the widget's traits (through mo.state) reran
    page.get_by_text("Reply status: finished").first.wait_for(timeout=30_000)
    page.get_by_text("pauses waiting for you: 0").first.wait_for(timeout=30_000)
    page.get_by_text(f"Agent: {FINAL}").first.wait_for(timeout=30_000)
    page.get_by_text("Files left: notes.txt, old_log.txt").first.wait_for(timeout=30_000)
    screenshot(page, f"marimo-{theme}-done")
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
