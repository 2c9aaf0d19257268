"""Pause cards reach the page as what changed (``nbh_cards`` messages), and
"Approve all" on a reply of many confirmations is one resume.

The agent is a real ``agentscope.agent.Agent`` on ScriptedChatModel asking
for N parallel calls of a tool whose every call is a safety check (so
AgentScope asks for each). What the kernel sends to the page is read where
ipywidgets publishes it (outside a kernel the widget's comm is
``comm.DummyComm``); page messages go through the widget's comm handler.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from agentscope.agent import Agent
from agentscope.tool import Toolkit

from benchmarks.approve_all import AskEachTime, archive, connect, make_agent, page_message
from nb_hitl import Session
from nb_hitl.answers.lifecycle import transition
from nb_hitl.models import ScriptedChatModel, Turn, tool_call
from tests.support import apply_ops, run_async, wait_until


class Wire:
    """Every comm message the reply widget publishes (what the page would receive)."""

    def __init__(self, widget: Any) -> None:
        self.messages: list[dict[str, Any]] = []
        publish = widget.comm.publish_msg

        def capture(msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any) -> Any:
            self.messages.append(json.loads(json.dumps(data, default=str)))
            return publish(msg_type, data, metadata, buffers, **keys)

        widget.comm.publish_msg = capture

    def custom(self, msg_type: str) -> list[dict[str, Any]]:
        """The custom messages of one ``type`` (``nbh_cards``, ``nbh_inbox``...), in order."""
        return [
            m["content"]
            for m in self.messages
            if m.get("method") == "custom"
            and isinstance(m.get("content"), dict)
            and m["content"].get("type") == msg_type
        ]

    def cards(self) -> list[dict[str, Any]]:
        return self.custom("nbh_cards")

    def pause_traits(self) -> list[dict[str, Any]]:
        return [m["state"] for m in self.messages if m.get("method") == "update" and "pauses" in m.get("state", {})]

    def bytes(self) -> int:
        return sum(len(json.dumps(m)) for m in self.messages)

    def since(self, index: int) -> Wire:
        """The messages from ``index`` on, as a ``Wire`` of their own (not capturing)."""
        part = Wire.__new__(Wire)
        part.messages = self.messages[index:]
        return part

    def transcript_traits(self) -> list[dict[str, Any]]:
        """Trait updates that carried the ``transcript`` record (whole)."""
        return [m["state"] for m in self.messages if m.get("method") == "update" and "transcript" in m.get("state", {})]

    def transcript_costs(self) -> list[tuple[int, int]]:
        """Per ``nbh_transcript`` message, in order: ``(bytes as published, characters
        of entry text its ops carry)``; the difference is what the message costs beyond
        the text it brings (flat when only what changed is sent)."""
        costs = []
        for m in self.messages:
            msg = m.get("content") if m.get("method") == "custom" else None
            if isinstance(msg, dict) and msg.get("type") == "nbh_transcript":
                text = sum(len(op.get("text") or op.get("entry", {}).get("text", "")) for op in msg["ops"])
                costs.append((len(json.dumps(m)), text))
        return costs

    def page_transcript(self, start: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """The entries a page holding ``start`` (default none) builds from the
        ``nbh_transcript`` messages on the wire, applied in ``seq`` order."""
        entries = [dict(e) for e in start or []]
        for msg in self.custom("nbh_transcript"):
            apply_ops(entries, msg["ops"])
        return entries


def page_view(start: list[dict[str, Any]], start_seq: int, wire: Wire) -> tuple[int, list[dict[str, Any]]]:
    """What a page holding ``start`` at ``start_seq`` shows after the card
    messages and trait updates on the wire, applied as js/reply/feed.ts does."""
    seq, order, views = start_seq, [v["tool_call_id"] for v in start], {v["tool_call_id"]: v for v in start}
    for m in wire.messages:
        if m.get("method") == "update" and "pauses" in m.get("state", {}):
            if m["state"]["cards_seq"] >= seq:
                seq = m["state"]["cards_seq"]
                order = [v["tool_call_id"] for v in m["state"]["pauses"]]
                views = {v["tool_call_id"]: v for v in m["state"]["pauses"]}
            continue
        msg = m.get("content") if m.get("method") == "custom" else None
        if not (isinstance(msg, dict) and msg.get("type") == "nbh_cards") or msg["seq"] <= seq:
            continue
        assert msg["seq"] == seq + 1, "a gap in the card stream"
        for op in msg["ops"]:
            if op["op"] == "card":
                key = op["view"]["tool_call_id"]
                order += [] if key in views else [key]
                views[key] = op["view"]
            else:
                order.remove(op["id"])
                views.pop(op["id"])
        seq = msg["seq"]
    return seq, [views[k] for k in order]


@dataclass
class Parked:
    """A reply parked on all of its ``n`` calls, the wire from then on, and the
    page's view (cards, ``seq``) at that moment."""

    agent: Any
    session: Session
    task: asyncio.Task
    run: Any
    wire: Wire
    start: list[Any]
    start_seq: int

    def page_view(self) -> tuple[int, list[dict[str, Any]]]:
        """What the page holds now: the view at parking plus every message since (:func:`page_view`)."""
        return page_view(self.start, self.start_seq, self.wire)


async def parked_on_all(n: int) -> Parked:
    """Start a reply of ``n`` archive calls and wait until it is parked on all of them."""
    agent = make_agent(n)
    session = Session(agent)
    task = session.start("Archive them all.")
    while not (session.current and session.current.status == "paused" and len(session.pending) == n):
        assert not task.done(), task
        await asyncio.sleep(0.005)
    run = session.current
    connect(run.widget)
    return Parked(agent, session, task, run, Wire(run.widget), list(run.widget.pauses), run.widget.cards_seq)


def stepper(n: int) -> Agent:
    """A real agent that archives ``n`` files one at a time: each call (ids ``a0``,
    ``a1``...) asks for confirmation, and the next comes once it is answered."""
    return Agent(
        name="stepper",
        system_prompt="Archive one file at a time.",
        model=ScriptedChatModel(
            [Turn(f"File {i}.", [tool_call("archive", id=f"a{i}", path=f"f{i}.txt")]) for i in range(n)]
            + [Turn("Done.")]
        ),
        toolkit=Toolkit(tools=[AskEachTime(archive)]),
    )


def card_bytes(messages: list[dict[str, Any]]) -> int:
    """Bytes of the card traffic among comm ``messages`` (as JSON): the ``nbh_cards``
    messages and the ``pauses`` / ``cards_seq`` of trait updates."""
    total = 0
    for m in messages:
        if (
            m.get("method") == "custom"
            and isinstance(m.get("content"), dict)
            and m["content"].get("type") == "nbh_cards"
        ):
            total += len(json.dumps(m))
        elif m.get("method") == "update":
            total += sum(len(json.dumps({k: v})) for k, v in m.get("state", {}).items() if k in ("pauses", "cards_seq"))
    return total


def test_approve_all_of_50_is_one_resume_one_model_call_and_o_n_card_pushes() -> None:
    n = 50

    async def scenario() -> tuple[Any, Wire]:
        parked = await parked_on_all(n)
        run = parked.run
        calls_before = len(parked.agent.model.calls)
        pending = parked.session.pending
        items = [{"action": "approve", "tool_call_id": c.tool_call_id, "reply_id": c.reply_id} for c in pending]
        page_message(run.widget, {"request_id": "all", "action": "batch", "items": items})
        final = await asyncio.wait_for(parked.task, 60)
        assert final.get_text_content() == f"Archived {n} files."
        assert len(parked.agent.model.calls) == calls_before + 1  # the model, once, after every result
        assert parked.page_view() == (run.cards.seq, run.widget.pauses)
        return run, parked.wire

    run, wire = run_async(scenario())
    assert run.resumes == 1
    assert all(p.status == "delivered" for p in run.pauses.values())
    # every card's final state is what the page holds: never a view left from before the answer
    final = [dict(p.to_view()) for p in run.pauses.values()]
    assert [(v["status"], (v["decision"] or {}).get("action")) for v in final] == [("delivered", "approve")] * n
    assert run.widget.pauses == final and run.cards.views() == final
    # each card's view was built once when it opened and once per push that carried its change
    assert run.cards.views_built <= 4 * n, run.cards.views_built
    # O(n): a handful of card messages, each card sent a bounded number of times
    cards = wire.cards()
    assert 1 <= len(cards) <= 6
    assert sum(len(c["ops"]) for c in cards) <= 4 * n
    # the whole list never went to the page: the page wrote it from the ops
    assert wire.pause_traits() == []


def test_a_push_after_one_cards_change_builds_and_sends_that_view_alone() -> None:
    """20 open cards; a push with no change builds no view and sends no card;
    one card's change (a transition) builds and sends that card's view alone;
    a real answer to one card sends only that card, whatever the others."""
    n = 20

    async def scenario() -> None:
        parked = await parked_on_all(n)
        session, run, wire = parked.session, parked.run, parked.wire
        built = run.cards.views_built
        session._push(run)
        assert run.cards.views_built == built and wire.cards() == []
        first, second = list(run.pauses.values())[:2]
        transition(second, "deciding")  # as an answer's arrival at the front door
        session._push(run)
        assert run.cards.views_built == built + 1
        [message] = wire.cards()
        assert [op["view"]["tool_call_id"] for op in message["ops"]] == [second.tool_call_id]
        assert message["ops"][0]["view"]["status"] == "deciding"
        transition(second, "open")  # refused: open again, its buttons back
        session._push(run)
        assert wire.cards()[-1]["ops"] == [{"op": "card", "view": dict(second.to_view())}]
        built, sent = run.cards.views_built, len(wire.cards())
        page_message(run.widget, {"request_id": "one", "action": "approve", "tool_call_id": first.tool_call_id})
        await wait_until(lambda: run.resumes == 1 and run.status == "paused", "the reply parked again")
        await wait_until(lambda: first.status == "delivered" and not run.push_due, "the answer's card pushed")
        ops = [op for c in wire.cards()[sent:] for op in c["ops"]]
        assert ops and {op["view"]["tool_call_id"] for op in ops} == {first.tool_call_id}
        assert run.cards.views_built - built <= 3  # deciding, decided, delivered at most: one view a push
        assert ops[-1]["view"]["status"] == "delivered"
        assert wire.pause_traits() == []  # the set of cards did not change: no whole list
        assert parked.page_view()[1] == [dict(p.to_view()) for p in run.pauses.values()]
        parked.task.cancel()

    run_async(scenario())


def one_at_a_time(n: int) -> tuple[Any, Wire]:
    async def scenario() -> tuple[Any, Wire]:
        parked = await parked_on_all(n)
        run = parked.run
        for k, pause in enumerate(list(parked.session.pending)):
            page_message(run.widget, {"request_id": f"r{k}", "action": "approve", "tool_call_id": pause.tool_call_id})
            if k < n - 1:
                while run.resumes < k + 1 or run.status != "paused":
                    await asyncio.sleep(0.002)
                # the page sees the decision before the reply ends: as a card message
                assert parked.page_view()[1] == run.widget.pauses
        await asyncio.wait_for(parked.task, 60)
        assert parked.page_view() == (run.cards.seq, run.widget.pauses)
        return run, parked.wire

    result: tuple[Any, Wire] = run_async(scenario())
    return result


def test_one_decision_sends_one_card_not_every_card() -> None:
    small, big = one_at_a_time(10), one_at_a_time(30)
    for n, (run, wire) in ((10, small), (30, big)):
        assert run.resumes == n
        card_ops = [op for c in wire.cards() for op in c["ops"]]
        # each decision's own card a few times (deciding, decided, delivered), never the others
        assert len(card_ops) <= 4 * n, len(card_ops)
        assert wire.pause_traits() == []  # never the whole list, not even at the end
    # bytes to the page per decision stay flat as n grows (they grew with n when
    # every card, and the whole transcript, went again with each decision)
    per_decision = (big[1].bytes() / 30) / (small[1].bytes() / 10)
    assert per_decision < 1.5, per_decision


def wire_kinds(wire: Wire, click_id: str) -> list[str]:
    """What the page got, in order: ``answer`` (to the click), ``result`` (a
    tool result's entry added), ``cards:<status>`` (the click's card),
    ``status:<status>`` (a trait update with the reply's status), ``other``."""
    kinds: list[str] = []
    for m in wire.messages:
        content = m.get("content") if m.get("method") == "custom" else None
        if isinstance(content, dict) and content.get("request_id") is not None:
            kinds.append("answer")
        elif isinstance(content, dict) and content.get("type") == "nbh_transcript":
            added = [op["entry"]["kind"] for op in content["ops"] if op["op"] == "add"]
            kinds.append("result" if "tool_result" in added else "other")
        elif isinstance(content, dict) and content.get("type") == "nbh_cards":
            views = [op["view"] for op in content["ops"] if op["op"] == "card"]
            kinds += [f"cards:{v['status']}" for v in views if v["tool_call_id"] == click_id] or ["other"]
        elif m.get("method") == "update" and "status" in m.get("state", {}):
            kinds.append(f"status:{m['state']['status']}")
        else:
            kinds.append("other")
    return kinds


def test_a_click_sends_the_answer_then_the_agents_next_event_then_the_card_once() -> None:
    """What an Approve changes (its card deciding, decided, delivered; the reply
    running) goes to the page after the agent's next event, as one card message
    and one update: nothing of it queues before that event in Jupyter's server
    and the page, and nothing waits for a timer (the resumed stream's first event
    sends it). Undone, the card went three times, the first before the tool ran.
    ``benchmarks/click_to_resume.py`` measures the time."""

    async def scenario() -> list[str]:
        parked = await parked_on_all(1)
        (pause,) = parked.session.pending
        page_message(parked.run.widget, {"request_id": "r0", "action": "approve", "tool_call_id": pause.tool_call_id})
        await asyncio.wait_for(parked.task, 60)
        (answer,) = [m["content"] for m in parked.wire.messages if m.get("content", {}).get("request_id") == "r0"]
        assert answer["card_follows"] is True  # the page keeps the card "Sending…" until it comes
        return wire_kinds(parked.wire, pause.tool_call_id)

    kinds = run_async(scenario())
    assert kinds[:2] == ["answer", "result"], kinds  # the answer to the click, then the tool's result
    mine = [k for k in kinds if k.startswith("cards:")]
    assert mine and mine[0] == "cards:delivered", kinds  # never "deciding" nor "decided" on their own
    assert kinds.index("status:running") > kinds.index("result"), kinds
    assert kinds.index(mine[0]) < kinds.index("status:finished"), kinds  # sent with the resume, not left to the end


def test_before_a_view_connects_the_cards_go_as_the_record() -> None:
    """No view of the widget has connected (it was just displayed): no view listens
    for messages, so the cards reach the page's model as the ``pauses`` record
    (with the ``cards_seq`` it holds), never as ops nobody applies; after a view's
    ``sync`` a change goes as one op only."""

    async def scenario() -> None:
        session = Session(make_agent(3))
        task = session.start("Archive them all.")
        run = session.current
        wire = Wire(run.widget)
        await wait_until(lambda: len(session.pending) == 3, "the cards")
        assert wire.cards() == []
        (last,) = wire.pause_traits()[-1:]
        assert [p["tool_call_id"] for p in last["pauses"]] == list(run.pauses)
        assert last["cards_seq"] == run.cards.seq
        connect(run.widget)
        sent = len(wire.messages)
        first = next(iter(run.pauses.values()))
        transition(first, "deciding")
        session._push(run)
        assert wire.pause_traits()[-1] == last  # no record again
        [message] = [m for m in wire.cards() if m in [x.get("content") for x in wire.messages[sent:]]]
        assert [op["view"]["tool_call_id"] for op in message["ops"]] == [first.tool_call_id]
        task.cancel()

    run_async(scenario())


def test_a_new_card_reaches_the_page_as_one_op_never_the_whole_list() -> None:
    """A reply that asks again after each answer: once a view connected, every
    card it adds goes to the page as one ``card`` op of that card (the ``pauses``
    trait never goes whole), and the page's copy, built from the ops, equals
    fresh views of every pause."""
    n = 4
    agent = stepper(n)

    async def scenario() -> None:
        session = Session(agent)
        task = session.start("Archive the files.")
        await wait_until(lambda: len(session.pending) == 1, "the first card")
        run = session.current
        connect(run.widget)
        wire, start, start_seq = Wire(run.widget), list(run.widget.pauses), run.widget.cards_seq
        for i in range(n):
            (pause,) = session.pending
            sent = len(wire.cards())
            page_message(run.widget, {"request_id": f"r{i}", "action": "approve", "tool_call_id": pause.tool_call_id})
            if i < n - 1:
                await wait_until(
                    lambda p=pause: len(session.pending) == 1 and session.pending[0] is not p, "the next card"
                )
                await wait_until(lambda: run.push_due is None, "the push")
                new = [
                    op["view"]["tool_call_id"]
                    for c in wire.cards()[sent:]
                    for op in c["ops"]
                    if op["op"] == "card" and op["view"]["status"] == "open"
                ]
                assert new == [f"a{i + 1}"]  # the new card alone, once
        await asyncio.wait_for(task, 60)
        assert wire.pause_traits() == []
        assert page_view(start, start_seq, wire) == (run.cards.seq, [dict(p.to_view()) for p in run.pauses.values()])
        ops = [op for c in wire.cards() for op in c["ops"]]
        assert len(ops) <= 3 * n  # each card: opened, delivered (and perhaps decided), never the others again

    run_async(scenario())
