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

from ..widgets._feed import KeyedFeed

__all__ = ["CardFeed", "trait_due"]


class CardFeed(KeyedFeed):
    """What the page of one reply was sent: the card views and their ``seq``
    (a :class:`~nb_hitl.widgets._feed.KeyedFeed` of ``nbh_cards`` messages,
    keyed by ``tool_call_id``; a sync answers ``{"seq", "pauses"}``).

    Attributes:
        trait_ids, trait_seq: tool call ids and ``seq`` when the ``pauses``
            trait was last sent to the page (a new widget starts with no
            card, at ``seq`` 0).
    """

    def __init__(self) -> None:
        super().__init__("nbh_cards", "tool_call_id", "card", "view", "pauses")
        self.trait_ids: tuple[str, ...] = ()
        self.trait_seq = 0

    @property
    def cards_sent(self) -> int:
        """Card views sent in ``nbh_cards`` messages."""
        return self.items_sent


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
