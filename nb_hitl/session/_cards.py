"""The pause cards' stream to the page: only what changed.

A reply's pause cards reach the page as custom comm messages
``{"type": "nbh_cards", "seq", "ops"}`` holding the views that changed since
the last push (``{"op": "card", "view"}``: a new card is appended, a known one
replaced) and the pauses that left the reply (``{"op": "drop", "id"}``),
numbered by ``seq`` like the transcript stream. One decision therefore sends
one card, not every card of the reply again.

A push builds a pause's view only when the pause is new or went through a
transition since its view was built (its ``revision``,
:func:`~nb_hitl.answers.lifecycle.transition`, the one place that marks a
pause changed): :meth:`CardFeed.views_of`. The kernel's work per push
therefore follows what changed, not the number of cards.

The widget's ``pauses`` trait stays the record (saved with the notebook,
read on reload); :func:`trait_due` says when it must also be sent to the
page: when the set of cards changed, and once the reply has ended; such a
push sends no card message (the trait holds the changes, and its
``cards_seq`` the ``seq`` they took). See "Pause cards" in ``docs/design.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..pauses import Pause
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
        views_built: pause views built by :meth:`views_of` (a test and
            benchmark figure).
    """

    def __init__(self) -> None:
        super().__init__("nbh_cards", "tool_call_id", "card", "view", "pauses")
        self.trait_ids: tuple[str, ...] = ()
        self.trait_seq = 0
        self.views_built = 0
        # tool_call_id -> (the pause, its revision, its view) as last built
        self._built: dict[str, tuple[Pause, int, dict[str, Any]]] = {}

    def views_of(self, pauses: Mapping[str, Pause]) -> list[dict[str, Any]]:
        """Every pause's view, in order, building only those that changed.

        A view is rebuilt (:meth:`Pause.to_view <nb_hitl.pauses.Pause.to_view>`)
        when its pause is new to this feed (a new card, or a new pause under
        a known ``tool_call`` id) or its ``revision`` grew since: a
        transition (:func:`~nb_hitl.answers.lifecycle.transition`) marked it
        changed. Any other view is the very dict built before, which
        :meth:`take_ops` then skips without comparing it.

        Args:
            pauses: the reply's pauses by ``tool_call`` id (``ReplyRun.pauses``), in order.

        Returns:
            one :class:`~nb_hitl.pauses.PauseView` dict per pause.
        """
        built: dict[str, tuple[Pause, int, dict[str, Any]]] = {}
        views: list[dict[str, Any]] = []
        for key, pause in pauses.items():
            known = self._built.get(key)
            if known is None or known[0] is not pause or known[1] != pause.revision:
                known = (pause, pause.revision, dict(pause.to_view()))
                self.views_built += 1
            built[key] = known
            views.append(known[2])
        self._built = built
        return views

    @property
    def cards_sent(self) -> int:
        """Card views sent in ``nbh_cards`` messages."""
        return self.items_sent


def trait_due(feed: CardFeed, ids: tuple[str, ...], live: bool) -> bool:
    """Whether the ``pauses`` trait must be sent to the page with this push.

    It is when the reply gained or lost a card (what a reconnecting page and a
    saved notebook need at once), and once the reply ended, when a card changed
    since it was last sent (the final record). A decision on a known card only
    travels as its own card op.

    Args:
        feed: the reply's card feed.
        ids: the reply's cards' ``tool_call`` ids, in order (``tuple(ReplyRun.pauses)``).
        live: whether the reply still runs or waits.
    """
    if ids != feed.trait_ids or (not live and feed.seq != feed.trait_seq):
        feed.trait_ids = ids
        feed.trait_seq = feed.seq
        return True
    return False
