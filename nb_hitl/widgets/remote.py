"""The display of a remote AG-UI turn: view data drawn in a ReplyWidget.

:class:`RemoteReplyView` is the default view of
:class:`~nb_hitl.agui.remote.RemoteSession`: a
:class:`~nb_hitl.widgets.reply.ReplyWidget` whose handler is the session's
answer handler, updated from the view data the session produces
(:func:`~nb_hitl.agui.turn.view_data`: transcript entries, pause views,
status). It carries data only; every check is the session's.

The pause cards reach the page as what changed, as a local Session's do
(:meth:`CardFeed.push <nb_hitl.widgets._cards.CardFeed.push>`: a new card, a
card whose status changed, a card that left, one ``nbh_cards`` op each); the
page's card syncs are answered here (:meth:`CardFeed.answer_sync
<nb_hitl.widgets._cards.CardFeed.answer_sync>`), every other page message by
the session's handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ._cards import CardFeed
from .reply import ReplyWidget

__all__ = ["RemoteReplyView"]


class RemoteReplyView:
    """One remote turn drawn in a ``ReplyWidget``.

    Args:
        handler: ``(page_message) -> awaitable answer`` (the session's).
        agent_name: the name shown in the widget.
        prompt: the user message of the turn.
        display: show the widget in the current cell's output (IPython).

    Attributes:
        widget: the ``ReplyWidget``.
        cards: what its page was sent of the pause cards (:class:`~nb_hitl.widgets._cards.CardFeed`).
    """

    def __init__(
        self,
        handler: Callable[[Any], Awaitable[dict[str, Any]]],
        *,
        agent_name: str,
        prompt: str,
        display: bool = True,
    ) -> None:
        self.cards = CardFeed()

        def handle(message: Any) -> Any:
            synced = self.cards.answer_sync(message)
            return handler(message) if synced is None else synced

        self.widget = ReplyWidget(handler=handle, agent_name=agent_name, prompt=prompt)
        if display:
            try:
                from IPython.display import display as show

                show(self.widget)
            except Exception:  # noqa: BLE001 - outside IPython
                pass

    def update(self, data: dict[str, Any]) -> None:
        """Show ``data``: ``transcript``, ``pauses``, ``status``,
        ``status_reason``, ``final_text``, ``reply_id``.

        The transcript goes first, in its own update: the page places each
        card in its tool call's entry, which must exist by then. The cards
        that changed follow as one ``nbh_cards`` message (before a view
        connected: the ``pauses`` record, :meth:`CardFeed.push
        <nb_hitl.widgets._cards.CardFeed.push>`), then the status in one update.
        ``data["pauses"]`` holds fresh dicts (copies of the turn's views).
        """
        widget = self.widget
        widget.transcript = data["transcript"]
        with widget.hold_sync():
            self.cards.push(widget, data["pauses"])
            widget.status = data["status"]
            widget.status_reason = data["status_reason"]
            widget.final_text = data["final_text"]
            if data.get("reply_id"):
                widget.reply_id = data["reply_id"]
