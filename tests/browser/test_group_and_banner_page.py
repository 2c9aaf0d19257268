"""The group bar and the waiting banner in real JupyterLab + Chromium.

* A group action never drops what a person typed: "Approve all" with an open
  edit (its diff shown) approves that card as edited (the button says so
  before the click), and with a typed reason sends nothing and names the
  card; the group bar's note follows the cards as they are filled in.
* The waiting banner of a reloaded notebook is drawn in that notebook's panel:
  another notebook's tab neither shows it nor has its clicks caught by it; a
  kernel restart takes it away.
* A disabled Approve looks like any disabled button, not like a live one.
"""

from __future__ import annotations

import re
import textwrap

from playwright.sync_api import expect

from tests.browser.test_c39_reload_without_save import BANNER, NO_AUTOSAVE
from tests.browser.test_review_page import GROUP_SETUP, REPLY, kernel_json, run_cell
from tests.harness.lab import (
    JupyterLabServer,
    card_locator,
    open_notebook,
    output_locator,
    restart_kernel,
    run_all_cells,
    run_new_cell,
    screenshot,
    write_notebook,
)
from tests.support_agents import deletion_cell

STATE = textwrap.dedent(
    """
    run = session.current
    print("STATE", json.dumps({
        "sent": [[m.get("action"), m.get("reason") or m.get("input")] for m in sent
                 if m.get("action") in ("approve", "deny", "modify", "answer", "batch")],
        "resumes": run.resumes,
        "status": run.status,
        "files": sorted(p.name for p in box.iterdir()),
    }))
    """
)
REASON = "keep the log, it is evidence"


def test_group_actions_never_drop_typed_text_and_the_note_follows_the_cards(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "group_typed.ipynb", [GROUP_SETUP, STATE, STATE])  # a state cell per look
    open_notebook(page, lab, "group_typed.ipynb")
    run_cell(page, 0)
    reply = page.locator(REPLY)
    delete = card_locator(reply, "confirm", outputs=False)
    ask = card_locator(reply, "ask_user", outputs=False)
    delete.wait_for(timeout=60_000)
    ask.wait_for(timeout=60_000)
    group = reply.locator('[data-testid="nbh-group"]')
    approve_all = group.locator('[data-testid="nbh-approve-all"]')
    note = reply.locator('[data-testid="nbh-group-note"]')

    # Submit all with nothing answered says so; the note follows the cards as they are filled in
    group.locator('[data-testid="nbh-submit-all"]').click()
    expect(note).to_have_text(
        "Nothing to send yet: answer delete_file, AskUser first (confirmations: use their buttons, or Approve all / Deny all)."
    )
    delete.locator('[data-testid="nbh-deny-reason-open"]').click()
    delete.locator('[data-testid="nbh-deny-reason"]').fill(REASON)
    expect(note).to_have_text("Still to answer: AskUser (Submit all sends what is filled in).")

    # a typed reason under Approve all: nothing is sent, the card is named, the reason kept
    approve_all.click()
    expect(note).to_have_text(
        "Approve all sent nothing: delete_file has a reason you have not sent. "
        "Send it on its card, or cancel it there, then press Approve all again."
    )
    assert delete.locator('[data-testid="nbh-deny-reason"]').input_value() == REASON
    delete.locator('[data-testid="nbh-deny-cancel"]').click()
    expect(note).to_have_text("")  # no longer true: the note goes with the reason
    state = kernel_json(page, 1, "STATE")
    assert state == {"sent": [], "resumes": 0, "status": "paused", "files": ["draft.md", "notes.txt", "old_log.txt"]}

    # an open edit, its diff shown: Approve all approves that card as edited (the button says so first)
    delete.locator('[data-testid="nbh-modify"]').click()
    delete.locator('[data-testid="nbh-modify-input"]').fill('{"path": "notes.txt"}')
    expect(delete.locator('[data-testid="nbh-modify-preview"]')).to_contain_text("notes.txt", timeout=30_000)
    expect(approve_all).to_have_text("Approve all (1: delete_file as typed)")
    screenshot(page, "group-approve-all-with-an-open-edit")
    approve_all.click()
    expect(reply.locator('[data-testid="nbh-tool-result"]', has_text="delete_file")).to_contain_text(
        "Deleted notes.txt", timeout=60_000
    )
    expect(note).to_have_text("")
    ask.locator('[data-testid="nbh-option"][data-label="Yes"]').click()
    ask.locator('[data-testid="nbh-answer-submit"]').click()
    reply.locator('[data-testid="nbh-final-text"]').wait_for(timeout=60_000)
    state = kernel_json(page, 2, "STATE")
    assert state["sent"] == [["batch", None], ["answer", None]], state
    assert state["files"] == ["draft.md", "old_log.txt"], state  # what ran is the edit
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


def test_waiting_banner_is_its_notebooks_and_goes_with_its_kernel(page, lab: JupyterLabServer) -> None:
    lab.write_user_settings(*NO_AUTOSAVE)
    write_notebook(lab.root / "wb_a.ipynb", [deletion_cell("tidy"), "reply = await session.run('tidy up')"])
    write_notebook(lab.root / "wb_b.ipynb", ["print('b ran')"])
    open_notebook(page, lab, "wb_a.ipynb")
    run_all_cells(page)
    card_locator(page, "confirm").wait_for(timeout=60_000)
    page.on("dialog", lambda dialog: dialog.accept())  # "leave the page with unsaved changes?"
    page.reload()
    banner = page.locator(BANNER)
    banner.wait_for(timeout=60_000)
    panel_a = page.locator(".jp-NotebookPanel", has=page.locator(BANNER))
    expect(panel_a).to_have_count(1)  # drawn in its notebook's panel, not over the page
    banner.locator('[data-testid="nbh-waiting-show"]').click()
    card_locator(banner, "confirm", outputs=False).wait_for(timeout=30_000)
    box = banner.bounding_box()
    assert box is not None

    # another notebook's tab: the banner is not shown there, and a click where it was lands on that notebook
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:open', {path: 'wb_b.ipynb'})")
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget; return !!w && w.context && w.context.path === 'wb_b.ipynb'; }",
        timeout=30_000,
    )
    expect(banner).to_be_hidden()
    at = {"x": box["x"] + box["width"] / 2, "y": box["y"] + box["height"] / 2}
    under = page.evaluate(
        "(p) => { const el = document.elementFromPoint(p.x, p.y); return !!el && !!el.closest('[data-testid=\"nbh-waiting-region\"]'); }",
        at,
    )
    assert under is False
    run_new_cell(page, "print('b is free')")
    output_locator(page, "b is free").wait_for(timeout=60_000)

    # back on its notebook it is there; a kernel restart takes it away (its reply can no longer be answered)
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:open', {path: 'wb_a.ipynb'})")
    expect(banner).to_be_visible(timeout=30_000)
    restart_kernel(page, lab)
    expect(page.locator(BANNER)).to_have_count(0, timeout=20_000)
    expect(page.locator('[data-testid="nbh-waiting-region"]')).to_have_count(0)
    screenshot(page, "waiting-banner-gone-after-restart")


def test_a_disabled_approve_looks_disabled(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "disabled.ipynb", [deletion_cell("tidy") + "task = session.start('tidy up')\n"])
    open_notebook(page, lab, "disabled.ipynb")
    run_all_cells(page)
    card = card_locator(page, "confirm")
    card.wait_for(timeout=60_000)
    restart_kernel(page, lab)
    expect(card).to_contain_text(re.compile("Not answering|No longer live"), timeout=30_000)
    approve = card.locator('[data-testid="nbh-approve"]')
    expect(approve).to_be_disabled()
    looks = page.evaluate(
        """() => {
            const card = document.querySelector('.jp-OutputArea-output [data-testid="nbh-card"]');
            const style = (el) => { const s = getComputedStyle(el); return [s.backgroundColor, s.color]; };
            const probe = document.createElement("button");
            probe.className = "nbh-primary";
            card.append(probe);  // an enabled primary button in the same card: the live look
            const live = style(probe);
            probe.remove();
            return {
                approve: style(card.querySelector('[data-testid="nbh-approve"]')),
                deny: style(card.querySelector('[data-testid="nbh-deny"]')),
                plain: style(card.querySelector('[data-testid="nbh-deny-reason-open"]')),
                live,
            };
        }"""
    )
    assert looks["approve"] == looks["plain"] == looks["deny"], looks
    assert looks["approve"][0] != looks["live"][0], looks
    screenshot(page, "disabled-buttons-after-restart")
