"""The service console's widget sends the page what changed of its pause cards, as a local
Session does, against the real cluster (tests/conftest.py: AgentScope workers on Redis and
PostgreSQL, nb_hitl's fake OpenAI server). What the console's ``ReplyWidget`` publishes on its
comm is read where ipywidgets publishes it (outside a kernel, ``comm.DummyComm``); page
messages go through the widget's comm handler."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from nb_hitl.service import ServiceClient
from nb_hitl.service.console import SessionConsole
from tests.service.cluster import Cluster
from tests.service.test_scale_out import note_prompt, park, until
from tests.session.test_card_stream import Wire, card_bytes, connect, page_view
from tests.support import run_async

pytestmark = pytest.mark.timeout(300)


async def stepping_console(workers: Cluster, tmp_path: Path, n: int) -> tuple[ServiceClient, SessionConsole]:
    """A session parked on the first of ``n`` ``write_note`` calls (AgentScope asks for
    each in turn), opened in a console (not shown): ``(client, console)``."""
    client = ServiceClient(
        workers.b.url, f"u-{uuid.uuid4().hex[:8]}", audit_path=tmp_path / "audit.jsonl", service_id="cluster"
    )
    prompt = "\n".join(note_prompt(f"step-{uuid.uuid4().hex[:6]}-{i}") for i in range(n))
    agent_id, sid = await park(client, workers.model.base_url, prompt)
    return client, await client.open(sid, agent_id, show=False)


async def approve_open(console: SessionConsole, then_next: str | None) -> str:
    """Approve the console's one open card; with ``then_next`` (what the wait is
    called), re-read until the next card is open. Returns the approved call's id."""
    (tcid,) = [t for t, p in console.pauses.items() if p.status == "open"]
    answer = await console.act({"action": "approve", "tool_call_id": tcid})
    assert answer["status"] == "delivered", answer
    if then_next is not None:

        async def next_card() -> bool:
            await console.refresh()
            return any(p.status == "open" and t != tcid for t, p in console.pauses.items())

        await until(next_card, then_next)
    return tcid


def test_each_new_console_card_is_one_op_and_its_bytes_do_not_grow_with_the_cards_shown(
    workers: Cluster, tmp_path: Path
) -> None:
    """A session whose reply writes 6 notes, one confirmation at a time (AgentScope asks for
    each ``write_note`` call in turn), answered in its console: the answered cards stay
    (delivered) beside the next. Before a view connected the cards went as the ``pauses``
    record; once it connected, a re-read of the unchanged session sends no card, each new
    card goes as one op with the bytes of the k-th flat as k grows (the whole list went
    with every change before), the ``pauses`` record never goes whole, and the page's copy
    built from the ops equals the kernel's record."""
    n = 6

    async def go() -> list[int]:
        client, console = await stepping_console(workers, tmp_path, n)
        widget = console.make_widget()
        assert [p["status"] for p in widget.pauses] == ["open"]
        assert console.cards.messages == 0  # no view listened yet: the record went whole
        connect(widget)
        wire, start, start_seq = Wire(widget), list(widget.pauses), widget.cards_seq
        await console.refresh()
        assert card_bytes(wire.messages) == 0  # nothing changed: no card
        per_card: list[int] = []
        for k in range(n):
            sent = len(wire.messages)
            tcid = await approve_open(console, f"card {k + 2}" if k < n - 1 else None)
            if k == n - 1:
                break
            new = [
                op["view"]["tool_call_id"]
                for c in wire.cards()
                if c in [m.get("content") for m in wire.messages[sent:]]
                for op in c["ops"]
                if op["op"] == "card" and op["view"]["status"] == "open"
            ]
            assert len(new) == 1 and new[0] != tcid  # the new card alone, once
            per_card.append(card_bytes(wire.messages[sent:]))
        assert len(widget.pauses) == n  # the answered cards stay beside the next
        assert wire.pause_traits() == []
        assert page_view(start, start_seq, wire) == (widget.cards_seq, widget.pauses)
        await client.aclose()
        return per_card

    per_card = run_async(go())
    # card 2 is drawn beside 1 card, card 6 beside 5: the same bytes, not 4 cards' worth more
    assert max(per_card) <= 1.2 * min(per_card), per_card
