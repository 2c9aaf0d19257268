"""The service console's inbox and cards in real JupyterLab + Debian Chromium.

A local AgentScope service (embedded: SQLite, in-memory bus, the fake model)
has three parked sessions of one user: a ``write_note`` confirmation and an
``AskUser`` question. The notebook shows ``ServiceClient(...).inbox()``; the
person clicks a row, the session opens below with nb_hitl's card, Approve
runs the tool once on the service; the other row's question is answered by
clicking an option; a third session is approved with "Approve selected"
(its outcome shown); the count badge and a filter work; a message typed to
the parked session is not sent and the page says to answer its pause first.
Every row leaves the inbox. The rows reach the page as a sync, then ops.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from nb_hitl.service.embedded import ServiceProcess, fake_model_url
from nb_hitl.service.http import ServiceHTTP, user_msg_body
from tests.harness.lab import ARTIFACTS, JupyterLabServer, open_notebook, run_all_cells, write_notebook
from tests.support import run_async

OUT = ".jp-OutputArea-output"
QUESTION = {
    "questions": [
        {
            "question": "Which colour for the banner?",
            "header": "Banner",
            "options": [{"label": "green", "description": "calm"}, {"label": "orange", "description": "loud"}],
        }
    ]
}


@pytest.fixture(scope="module")
def service() -> Iterator[ServiceProcess]:
    proc = ServiceProcess(data_dir=Path(tempfile.mkdtemp(prefix="nbh-browser-service-"))).start(timeout=180)
    try:
        yield proc
    finally:
        proc.stop()


async def _park_two(url: str, user: str) -> dict[str, str]:
    http = ServiceHTTP(url, user)
    cred = await http.create_credential(fake_model_url(url))
    ids = {}
    for agent, prompt in (
        ("writer", 'call: write_note {"text": "clicked-' + user + '"}'),
        ("asker", "call: AskUser " + json.dumps(QUESTION)),
        ("batcher", 'call: write_note {"text": "selected-' + user + '"}'),
    ):
        aid = await http.create_agent(agent)
        sid = await http.create_session(aid, cred, name=agent)
        await http.chat(aid, sid, user_msg_body(prompt))
        ids[agent] = sid
    import asyncio

    for _ in range(120):
        statuses = [s["status"] for a in await http.list_agents() for s in await http.list_sessions(a["id"])]
        if sorted(statuses) == ["awaiting_external_result", "awaiting_permission", "awaiting_permission"]:
            break
        await asyncio.sleep(0.25)
    else:
        raise AssertionError(f"the chats did not park: {statuses}")
    await http.aclose()
    return ids


def test_inbox_and_cards_answered_by_clicks(page, lab: JupyterLabServer, service: ServiceProcess) -> None:  # type: ignore[no-untyped-def]
    user = f"ana-{uuid.uuid4().hex[:6]}"
    ids = run_async(_park_two(service.url, user))
    audit = lab.root / f"audit-{user}.jsonl"
    cell = (
        "from nb_hitl.service import ServiceClient\n"
        f"svc = ServiceClient({service.url!r}, user_id={user!r}, audit_path={str(audit)!r})\n"
        "svc.inbox()"
    )
    write_notebook(lab.root / "service_inbox.ipynb", [cell])
    open_notebook(page, lab, "service_inbox.ipynb")
    run_all_cells(page)

    rows = page.locator(f'{OUT} [data-testid="nbh-inbox-row"]')
    rows.nth(2).wait_for(timeout=60_000)
    assert rows.count() == 3
    assert page.locator(f'{OUT} [data-testid="nbh-inbox-count"]').inner_text() == "3"
    # no error now: the error boxes above and below the list draw nothing (no empty pink bar)
    for empty in ("nbh-inbox-error", "nbh-inbox-message"):
        assert page.locator(f'{OUT} [data-testid="{empty}"]').bounding_box() is None, empty
    # no bus given: the inbox says it lists (the one-process service's bus has no outside door)
    assert "Listed every 1 s" in page.locator(f'{OUT} [data-testid="nbh-inbox-live"]').inner_text()
    # a filter keeps one tool's rows
    page.locator(f'{OUT} [data-testid="nbh-inbox-filter-tool"]').select_option("AskUser")
    assert rows.count() == 1 and rows.first.get_attribute("data-session-id") == ids["asker"]
    page.locator(f'{OUT} [data-testid="nbh-inbox-filter-tool"]').select_option("")
    assert rows.count() == 3

    # "Approve selected" on the batcher's session: its own outcome in the results
    batch_row = page.locator(f'{OUT} [data-testid="nbh-inbox-row"][data-session-id="{ids["batcher"]}"]')
    batch_row.locator('[data-testid="nbh-inbox-select"]').check()
    page.locator(f'{OUT} [data-testid="nbh-inbox-approve-selected"]').click()
    result = page.locator(f'{OUT} [data-testid="nbh-inbox-result"][data-session-id="{ids["batcher"]}"]')
    result.wait_for(timeout=60_000)
    assert result.get_attribute("data-ok") == "true", result.inner_text()
    batch_row.wait_for(state="detached", timeout=30_000)
    assert page.locator(f'{OUT} [data-testid="nbh-inbox-count"]').inner_text() == "2"
    writer_row = page.locator(f'{OUT} [data-testid="nbh-inbox-row"][data-session-id="{ids["writer"]}"]')
    assert writer_row.get_attribute("data-status") == "awaiting_permission"
    assert "write_note" in writer_row.inner_text() and f"clicked-{user}" in writer_row.inner_text()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(f'{OUT} [data-testid="nbh-inbox"]').screenshot(path=str(ARTIFACTS / "service-inbox.png"))

    # open the writer's session: nb_hitl's confirmation card, under the list
    writer_row.click()
    card = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="open"]')
    card.wait_for(timeout=30_000)
    assert "write_note" in card.inner_text()
    # the console's header names the session by its name, never by its id
    opened = '[data-testid="nbh-reply"]:has([data-testid="nbh-card"][data-kind="confirm"][data-status="open"])'
    header = page.locator(f"{OUT} {opened}").first.inner_text()
    assert '← session "writer"' in header and ids["writer"] not in header, header
    # a new message to this parked session is not sent: the page says why and what to do
    page.locator(f'{OUT} [data-testid="nbh-inbox-say-text"]').fill("hello, are you there?")
    page.locator(f'{OUT} [data-testid="nbh-inbox-say-send"]').click()
    said = page.locator(f'{OUT} [data-testid="nbh-inbox-say-msg"][data-ok="false"]')
    said.wait_for(timeout=30_000)
    assert said.inner_text().startswith("Not sent: this session waits for a confirmation on write_note")
    assert "Answer the open pause first" in said.inner_text()
    card.locator('[data-testid="nbh-approve"]').click()
    page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="delivered"]').wait_for(
        timeout=30_000
    )
    writer_row.wait_for(state="detached", timeout=30_000)

    # the AskUser question of the other session
    asker_row = page.locator(f'{OUT} [data-testid="nbh-inbox-row"][data-session-id="{ids["asker"]}"]')
    asker_row.click()
    ask = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="ask_user"][data-status="open"]')
    ask.wait_for(timeout=30_000)
    ask.locator('[data-testid="nbh-option"][data-label="orange"]').click()
    ask.locator('[data-testid="nbh-answer-submit"]').click()
    page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="ask_user"][data-status="delivered"]').wait_for(
        timeout=30_000
    )
    asker_row.wait_for(state="detached", timeout=30_000)
    page.locator(f'{OUT} [data-testid="nbh-inbox-empty"]').wait_for(state="visible", timeout=30_000)

    # the tool ran once on the service; the console recorded both answers as applied
    runs = [json.loads(line) for line in service.ledger.read_text().splitlines()]
    assert [r["text"] for r in runs].count(f"clicked-{user}") == 1
    assert [r["text"] for r in runs].count(f"selected-{user}") == 1
    phases = [(r["decision"], r["phase"]) for r in map(json.loads, audit.read_text().splitlines())]
    assert ("approve", "applied") in phases and ("answer", "applied") in phases
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
