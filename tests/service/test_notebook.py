"""notebooks/service_console.ipynb runs headless, top to bottom, in a real kernel:
it starts the embedded service (SQLite, a throw-away Redis as its bus, fake
model), parks two chats, shows them in two consoles' inboxes (pushed by the
service's events), answers both through one console (the other's row leaves)
and stops."""

from __future__ import annotations

import pytest

from tests.harness import REPO_ROOT
from tests.support import run_notebook, widget_views

NOTEBOOK = REPO_ROOT / "notebooks" / "service_console.ipynb"

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(400)]


def test_service_console_notebook_runs_headless() -> None:
    nb, text = run_notebook(NOTEBOOK, timeout=240)
    assert "service up: True | message bus: Redis" in text
    assert "Pushed: the service's own events" in text
    assert "the other console lists: ['colour poll', 'release notes']" in text
    assert "the other console lists now: ['colour poll']" in text
    assert "writer  awaiting_permission" in text and 'text="v2.0 ships on Friday"' in text
    assert "asker   awaiting_external_result" in text and "Which colour for the release banner?" in text
    assert "confirm write_note {'text': 'v2.0 ships on Friday'}" in text
    assert "delivered - Applied by the service" in text
    assert "ask_user -> delivered" in text
    assert "DecisionError" in text
    assert "inbox now: []" in text
    assert "writer said: Done: Wrote note 'v2.0 ships on Friday'." in text
    assert "approve applied write_note" in text and "answer applied AskUser" in text
    assert "You said: Thanks, that is all." in text
    assert "service stopped: True" in text
    assert widget_views(nb)
