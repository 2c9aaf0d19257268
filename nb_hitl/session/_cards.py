"""The pause cards' stream to the page: only what changed.

A reply's pause cards reach the page as custom comm messages
``{"type": "nbh_cards", "seq", "ops"}`` holding the views that changed since
the last push (``{"op": "card", "view"}``: a new card is appended, a known one
replaced) and the pauses that left the reply (``{"op": "drop", "id"}``),
numbered by ``seq`` like the transcript stream. One decision therefore sends
one card, not every card of the reply again.

The widget's ``pauses`` trait stays the record (saved with the notebook,
read on reload); :func:`trait_due` says when it must also be sent to the
page: when the set of cards changed, and once the reply has ended; such a
push sends no card message (the trait holds the changes, and its
``cards_seq`` the ``seq`` they took). See "Pause cards" in ``docs/design.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["CardFeed", "trait_due"]


class CardFeed:
    """What the page of one reply was sent: the card views and their ``seq``.

    Attributes:
        seq: number of the last ``nbh_cards`` message (0: none yet); grows by
            one per message.
        messages: ``nbh_cards`` messages sent (a benchmark and test figure).
        cards_sent: card views sent in those messages.
    """

    def __init__(self) -> None:
        self.seq = 0
        self.messages = 0
        self.cards_sent = 0
        self._sent: dict[str, dict[str, Any]] = {}
        #: tool call ids and ``seq`` when the ``pauses`` trait was last sent to the
        #: page (a new widget starts with no card, at ``seq`` 0)
        self.trait_ids: tuple[str, ...] = ()
        self.trait_seq = 0

    def take_ops(self, views: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The ops that bring the page from what it was sent to ``views``.

        Args:
            views: every pause of the reply, in order (``Pause.to_view()`` dicts,
                keyed by ``tool_call_id``).

        Returns:
            ``[{"op": "card", "view"}, ..., {"op": "drop", "id"}, ...]``, empty
            when nothing changed; a non-empty list takes the next ``seq``.
        """
        ops: list[dict[str, Any]] = []
        fresh: dict[str, dict[str, Any]] = {}
        for view in views:
            key = view["tool_call_id"]
            fresh[key] = view
            if self._sent.get(key) != view:
                ops.append({"op": "card", "view": view})
        ops.extend({"op": "drop", "id": key} for key in self._sent if key not in fresh)
        self._sent = fresh
        if ops:
            self.seq += 1
        return ops

    def views(self) -> list[dict[str, Any]]:
        """Every card as last sent, in order (what the page holds at :attr:`seq`)."""
        return list(self._sent.values())

    def message(self, ops: list[dict[str, Any]]) -> dict[str, Any]:
        """The custom message for ``ops`` (just taken by :meth:`take_ops`), counted as sent.

        Ops not sent as a message (the ``pauses`` trait went with the same
        push) still took their ``seq``: the trait carries it as ``cards_seq``.
        """
        self.messages += 1
        self.cards_sent += sum(1 for op in ops if op["op"] == "card")
        return {"type": "nbh_cards", "seq": self.seq, "ops": ops}


def trait_due(feed: CardFeed, views: Sequence[dict[str, Any]], live: bool) -> bool:
    """Whether the ``pauses`` trait must be sent to the page with this push.

    It is when the reply gained or lost a card (what a reconnecting page and a
    saved notebook need at once), and once the reply ended, when a card changed
    since it was last sent (the final record). A decision on a known card only
    travels as its own card op.
    """
    ids = tuple(v["tool_call_id"] for v in views)
    if ids != feed.trait_ids or (not live and feed.seq != feed.trait_seq):
        feed.trait_ids = ids
        feed.trait_seq = feed.seq
        return True
    return False
