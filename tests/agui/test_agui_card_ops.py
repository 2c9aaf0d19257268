"""The AG-UI client's widget sends the page what changed of its pause cards, as a local Session does.

A real ``agentscope.agent.Agent`` on ScriptedChatModel, served by nb_hitl's
``AguiServer`` on 127.0.0.1 (uvicorn), archives files one at a time: each call
asks for confirmation (an AG-UI interrupt) and the next comes once it is
answered, so the remote turn's cards pile up (the answered ones stay, delivered).
A ``RemoteSession`` drives the turn; what its ``ReplyWidget`` publishes on its
comm is read where ipywidgets publishes it (outside a kernel, ``comm.DummyComm``)
and page messages go through the widget's comm handler.
"""

from __future__ import annotations

import asyncio
from typing import Any

from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
from tests.session.test_card_stream import Wire, card_bytes, connect, page_view, stepper
from tests.support import run_async


def test_each_new_remote_card_is_one_op_and_its_bytes_do_not_grow_with_the_cards_shown() -> None:
    """Once a view connected (its ``sync``), every push of the turn sends the cards that
    changed as one ``nbh_cards`` message: the ``pauses`` record never goes whole again;
    the card bytes of the k-th new card (with the previous one's decided and delivered)
    stay flat as k grows (they grew with k when every push set the whole list); the page's
    copy built from the ops equals the kernel's record; before the view connected, the
    record went whole (no view listened for messages)."""
    n = 8
    server = AguiServer(lambda _thread_id: stepper(n), interrupt_ttl=600)
    handle = serve_in_background(server, announce=False)

    async def scenario() -> tuple[list[int], Wire, Any, RemoteSession]:
        remote = RemoteSession(handle.url, token=handle.token, display=False, thread_id="steps")
        task = remote.start("Archive the files.")
        widget = remote.current.view.widget  # type: ignore[union-attr]
        before = Wire(widget)
        (first,) = await remote.until_paused()
        assert before.pause_traits()[-1]["pauses"][0]["tool_call_id"] == first["tool_call_id"]
        assert before.cards() == []  # no view listened yet: the record, never ops
        connect(widget)
        wire, start, start_seq = Wire(widget), list(widget.pauses), widget.cards_seq
        per_card: list[int] = []
        for i in range(n):
            (view,) = remote.pending
            assert view["tool_call_id"] == f"a{i}"
            sent = len(wire.messages)
            answer = await remote.act({"action": "approve", "tool_call_id": view["tool_call_id"]})
            assert answer["sent"] is True, answer
            await remote.until_paused()
            if i < n - 1:
                new = [
                    op["view"]["tool_call_id"]
                    for c in wire.custom("nbh_cards")
                    if c in [m.get("content") for m in wire.messages[sent:]]
                    for op in c["ops"]
                    if op["op"] == "card" and op["view"]["status"] == "open"
                ]
                assert new == [f"a{i + 1}"]  # the new card alone, once
                per_card.append(card_bytes(wire.messages[sent:]))
        assert await asyncio.wait_for(task, 30) == "Done."
        return per_card, wire, (start, start_seq), remote

    per_card, wire, (start, start_seq), remote = run_async(scenario())
    handle.stop()
    widget = remote.current.view.widget  # type: ignore[union-attr]
    assert wire.pause_traits() == []  # the whole record never again once a view connected
    assert len(widget.pauses) == n and all(p["status"] == "delivered" for p in widget.pauses)
    assert page_view(start, start_seq, wire) == (widget.cards_seq, widget.pauses)
    # card 2 is drawn next to 1 card, card 8 next to 7: the same bytes (a card's view,
    # the one before it decided and delivered), not 7 cards' worth more
    assert max(per_card) <= 1.2 * min(per_card), per_card
