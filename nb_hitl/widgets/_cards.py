"""The pause cards' stream to the page: only what changed.

One road for every owner of a :class:`~nb_hitl.widgets.reply.ReplyWidget`:
the local Session (``SessionCore._push``), the AG-UI client's view
(:class:`~nb_hitl.widgets.remote.RemoteReplyView`) and the service console
(:class:`~nb_hitl.service.console.SessionConsole`) each keep a
:class:`CardFeed` and hand it the views as they are now (:meth:`CardFeed.push`);
a page's card sync is answered with its transcript's by
:func:`nb_hitl.widgets._transcript_feed.answer_sync`, for every owner.

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

A new card, a changed one and one that left travel alike, as one op each:
the widget's ``pauses`` trait (with ``cards_seq``) is the record, kept whole
in the kernel for a page that asks for the widget's state (a reload) and not
sent to the page once a view connected (:attr:`CardFeed.connected`); the page
writes the cards it holds into its own model, which is what a saved notebook
keeps. Before any view connected, the record goes instead of the ops: no view
listens for messages yet, and the page's model keeps a trait. See "Pause cards" in ``docs/design.md``.
The messages are typed here (:class:`CardsMessage`) and in ``js/messages.ts``
(``CardsMsg``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from ..pauses import Pause, PauseView
from ._feed import KeyedFeed

if TYPE_CHECKING:
    from .reply import ReplyWidget

__all__ = ["CardFeed", "CardOp", "DropOp", "CardsMessage"]


class CardOp(TypedDict):
    """A card new to the page (appended) or changed (replaced in place)."""

    op: Literal["card"]
    view: PauseView


class DropOp(TypedDict):
    """A card that left the reply, by its ``tool_call`` id."""

    op: Literal["drop"]
    id: str


class CardsMessage(TypedDict):
    """``{"type": "nbh_cards", "seq", "ops"}``: the page applies it in ``seq``
    order (``js/reply/feed.ts``; ``CardsMsg`` in ``js/messages.ts``)."""

    type: Literal["nbh_cards"]
    seq: int
    ops: list[CardOp | DropOp]


class CardFeed(KeyedFeed):
    """What the page of one reply was sent: the card views and their ``seq``
    (a :class:`~nb_hitl.widgets._feed.KeyedFeed` of ``nbh_cards`` messages,
    keyed by ``tool_call_id``; a sync answers ``{"seq", "pauses"}``).

    Attributes:
        connected: a view of the widget asked for a sync (it connected): the
            cards go as ops from then on, never the whole record.
        views_built: pause views built by :meth:`views_of` (a test and
            benchmark figure).
    """

    def __init__(self) -> None:
        super().__init__("nbh_cards", "tool_call_id", "card", "view", "pauses")
        self.views_built = 0
        self.connected = False
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

    def push(self, widget: ReplyWidget, views: list[dict[str, Any]], **record: Any) -> None:
        """Bring the page of ``widget`` to ``views``: what changed, as one ``nbh_cards`` message.

        The ops (:meth:`take_ops`: a new or changed card, a card that left) go
        as one custom message once a view connected (:attr:`connected`); before
        that, a push that changed cards sends the ``pauses`` record (with
        ``cards_seq``) as one comm update instead, as no view listens for
        messages yet. Either way the widget's record traits hold every view in
        the kernel (:meth:`ReplyWidget.set_record
        <nb_hitl.widgets.reply.ReplyWidget.set_record>`). Call it inside the
        widget's ``hold_sync()`` to send the record with the other traits of
        the same change; the card message goes at once, before them.

        Args:
            widget: the reply widget (its comm may be closed: the caller
                catches what ``send`` raises).
            views: every card's view (``Pause.to_view()`` dicts), in order;
                a dict passed before must not have been changed in place
                (it counts as unchanged).
            **record: other record traits set in the same call
                (``transcript``, ``transcript_seq``, ``final_text``).
        """
        ops = self.take_ops(views)
        whole = bool(ops) and not self.connected  # no view listens yet
        if ops and not whole:
            widget.send(self.message(ops))
        widget.set_record(send=whole, pauses=views, cards_seq=self.seq, **record)

    def message(self, ops: list[dict[str, Any]]) -> CardsMessage:
        """The ``nbh_cards`` message for ``ops`` just taken (:meth:`KeyedFeed.message`)."""
        return cast(CardsMessage, super().message(ops))

    @property
    def cards_sent(self) -> int:
        """Card views sent in ``nbh_cards`` messages."""
        return self.items_sent
