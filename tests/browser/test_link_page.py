"""An approval link's page on a phone-sized Chromium (Debian's, via Playwright).

A real uvicorn server on 127.0.0.1 serves a real AgentScope ``Agent`` whose
payment needs two approvals; alice owns the thread. bob opens his link in a
390x844 viewport: the card (tool, input, "0 of 2") fits the width, the
page's CSP blocks nothing it needs (no console error), and his Approve is
recorded; opening the link again says it was already used.
"""

from __future__ import annotations

from playwright.sync_api import expect

from tests.agui.test_agui_links import World
from tests.harness.lab import new_page, screenshot


def test_a_link_page_on_a_phone_approves_once(browser, tmp_path) -> None:
    world = World(tmp_path, payee="ACME GmbH <billing@acme.example>")
    page = new_page(browser, width=390, height=844)
    try:
        url = world.link("bob")
        page.goto(url)
        expect(page.get_by_test_id("nbh-link-tool")).to_have_text("send_payment")
        expect(page.get_by_test_id("nbh-link-input")).to_contain_text("ACME GmbH <billing@acme.example>")
        expect(page.get_by_test_id("nbh-link-approvals")).to_have_text("0 of 2 approvals so far.")
        expect(page.get_by_test_id("nbh-link-approver")).to_have_text("bob")
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 390, width  # nothing wider than the phone
        box = page.get_by_test_id("nbh-link-approve").bounding_box()
        assert box is not None and box["height"] >= 44  # a thumb-sized button
        screenshot(page, "link-page-phone")
        page.get_by_test_id("nbh-link-approve").click()
        done = page.get_by_test_id("nbh-link-done")
        expect(done).to_contain_text("Your approval is recorded. 1 of 2 approvals: bob (")
        assert page.nbh_errors == [], page.nbh_errors  # type: ignore[attr-defined]  # no CSP violation either
        page.goto(url)
        expect(page.get_by_test_id("nbh-link-refused")).to_contain_text("This link was already used: bob answered")
        (line,) = world.answered()
        assert (line["decided_by"], line["origin"]["road"]) == ("bob", "agui")
        assert world.factory.runs == []
        assert [e for e in page.nbh_errors if "410 (Gone)" not in e] == [], page.nbh_errors  # type: ignore[attr-defined]
    finally:
        page.context.close()
        world.handle.stop()
