"""What a person clicks is what is sent: an AskUser card whose option preview changes on hover.

Hovering an option shows its preview beside the options. When that changed the
card's height, a card anchored at its bottom (the waiting banner's panel after a
reload without saving, C39) moved its options out from under the pointer: the
hover ended, the preview went, the options came back, and so on. Playwright saw
"element is not stable"; a person's click on draft.md could miss, and the answer
sent was the option picked before (notes.txt). Inline cards lost a first click
after hovering another option the same way. Here, in real JupyterLab: pick one
option, hover another, click a third, and check what the kernel received.
"""

from __future__ import annotations

import json
import shutil

from playwright.sync_api import Locator, Page

from tests.harness.lab import (
    REPO_ROOT,
    JupyterLabServer,
    card_locator,
    open_notebook,
    run_all_cells,
)

NOTEBOOK = REPO_ROOT / "notebooks" / "quickstart.ipynb"
BANNER = '[data-testid="nbh-waiting"]'
NO_AUTOSAVE = ("@jupyterlab/docmanager-extension:plugin", {"autosave": False})


# the width of each text box with a placeholder and of its placeholder's text in the box's own font
PLACEHOLDER_FITS_JS = """el => Array.from(el.querySelectorAll('input[placeholder]')).map(i => {
  const s = getComputedStyle(i), ctx = document.createElement('canvas').getContext('2d');
  ctx.font = `${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
  const room = i.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
  return [i.placeholder, Math.ceil(ctx.measureText(i.placeholder).width), Math.floor(room)];
})"""


def _boxes(ask: Locator) -> list[dict[str, float]]:
    """Where each option of the card is now (page pixels)."""
    return [o.bounding_box() for o in ask.locator('[data-testid="nbh-option"]').all()]  # type: ignore[misc]


def _pick_hover_click(page: Page, ask: Locator) -> None:
    """Pick notes.txt, rest the pointer on old_log.txt, then click draft.md and submit."""
    option = lambda label: ask.locator(f'[data-testid="nbh-option"][data-label="{label}"]')  # noqa: E731
    # the card in the middle of the view first: a card drawn at its bottom edge (JupyterLab still
    # scrolling to the output) would be scrolled by the hover itself, which moves every option
    ask.evaluate("el => el.scrollIntoView({block: 'center'})")
    page.wait_for_timeout(300)
    option("notes.txt").click()
    before = _boxes(ask)
    option("old_log.txt").hover()
    page.wait_for_timeout(300)  # a preview that moved the options would have moved them by now
    assert (
        ask.locator('[data-testid="nbh-preview-label"]').inner_text() == "Preview of old_log.txt (hover; not selected)"
    )
    assert _boxes(ask) == before, "the options moved under the pointer when the preview changed"
    page.wait_for_timeout(300)
    assert _boxes(ask) == before
    option("draft.md").click(timeout=5_000)
    assert option("draft.md").locator("input").is_checked()
    assert ask.locator('[data-testid="nbh-preview-label"]').inner_text() == "Preview of your choice: draft.md"
    # the "Other" box shows its whole placeholder (it was cut: a box of the browser's default size)
    fits = ask.evaluate(PLACEHOLDER_FITS_JS)
    assert fits and all(text <= room for _, text, room in fits), fits
    ask.locator('[data-testid="nbh-answer-submit"]').click()


def _asked_to_delete(scope: Page | Locator, outputs: bool) -> str:
    """The path of the delete_file call the model made from the answer the kernel received."""
    confirm = card_locator(scope, "confirm", outputs=outputs)
    confirm.wait_for(timeout=60_000)
    return json.loads(confirm.locator('[data-testid="nbh-input"]').inner_text())["path"]


def _quickstart_asks(page: Page, lab: JupyterLabServer, name: str) -> Locator:
    """The quickstart copied as ``name``, opened and Run All: its open AskUser card, once drawn."""
    shutil.copy(NOTEBOOK, lab.root / name)
    open_notebook(page, lab, name)
    run_all_cells(page)
    ask = card_locator(page, "ask_user")
    ask.wait_for(timeout=60_000)
    return ask


def test_inline_card_hover_one_option_click_another_sends_the_clicked_one(page, lab: JupyterLabServer) -> None:
    _pick_hover_click(page, _quickstart_asks(page, lab, "hover.ipynb"))
    assert _asked_to_delete(page, outputs=True) == "draft.md"


def test_c39_panel_hover_one_option_click_another_sends_the_clicked_one(page, lab: JupyterLabServer) -> None:
    lab.write_user_settings(*NO_AUTOSAVE)
    _quickstart_asks(page, lab, "hover_c39.ipynb")

    page.on("dialog", lambda dialog: dialog.accept())  # "leave the page with unsaved changes?"
    page.reload()  # without saving, while the cell awaits the AskUser pause
    banner = page.locator(BANNER)
    banner.wait_for(timeout=60_000)
    text = banner.locator('[data-testid="nbh-waiting-text"]')
    assert "no cell of this page shows its card" in text.inner_text()
    banner.locator('[data-testid="nbh-waiting-show"]').click()
    assert text.inner_text() == 'The agent "tidy" is waiting for your answer (1 open pause): its card is below.'
    panel = banner.locator('[data-testid="nbh-waiting-panel"]')
    ask = card_locator(panel, "ask_user", outputs=False)
    _pick_hover_click(page, ask)
    assert _asked_to_delete(panel, outputs=False) == "draft.md"
