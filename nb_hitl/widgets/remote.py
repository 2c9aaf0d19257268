"""The display of a remote AG-UI turn: view data drawn in a ReplyWidget.

:class:`RemoteReplyView` is the default view of
:class:`~nb_hitl.agui.remote.RemoteSession`: a
:class:`~nb_hitl.widgets.reply.ReplyWidget` whose handler is the session's
answer handler, updated from the view data the session produces
(:func:`~nb_hitl.agui.turn.view_data`: transcript entries, pause views,
status). It carries data only; every check is the session's.

The transcript and the pause cards reach the page as what changed, as a
local Session's do: the transcript's ops (the turn's
:class:`~nb_hitl.session._transcript.Transcript`, built from AG-UI events) as
``nbh_transcript`` messages (:func:`nb_hitl.widgets._transcript_feed.flush`),
the cards through :meth:`CardFeed.push <nb_hitl.widgets._cards.CardFeed.push>`
(a new card, a card whose status changed, a card that left, one ``nbh_cards``
op each). The page's syncs are answered here
(:func:`nb_hitl.widgets._transcript_feed.answer_sync`), every other page
message by the session's handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..session._transcript import Transcript
from . import _transcript_feed as transcript_feed
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
        transcript: the turn's transcript (:class:`~nb_hitl.session._transcript.Transcript`),
            whose ops reach the page as ``nbh_transcript`` messages.
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
        self.transcript: Transcript = Transcript()  # the turn's, from the first update on

        def handle(message: Any) -> Any:
            synced = transcript_feed.answer_sync(message, self.widget, self.transcript, self.cards)
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
        ``status_reason``, ``final_text``, ``reply_id``
        (:func:`~nb_hitl.agui.turn.view_data`).

        The transcript's changes since the last update go first, as one
        ``nbh_transcript`` message (:func:`~nb_hitl.widgets._transcript_feed.flush`):
        the page places each card in its tool call's entry, which must exist
        by then. The cards that changed follow as one ``nbh_cards`` message
        (before a view connected: the ``pauses`` record, :meth:`CardFeed.push
        <nb_hitl.widgets._cards.CardFeed.push>`), then the status in one update.
        A final text that is the last text entry's is kept in the kernel too
        (``final_entry`` names that entry; :func:`~nb_hitl.widgets._transcript_feed.final`).
        The ``transcript`` and ``pauses`` records are kept in the kernel
        (:meth:`ReplyWidget.set_record <nb_hitl.widgets.reply.ReplyWidget.set_record>`)
        for a page that asks for the widget's state.

        Args:
            data: ``data["transcript"]`` is the turn's
                :class:`~nb_hitl.session._transcript.Transcript` (its ops are
                taken here); ``data["pauses"]`` holds fresh dicts (copies of
                the turn's views).
        """
        widget = self.widget
        self.transcript = tr = data["transcript"]
        transcript_feed.flush(widget, tr)
        kept, final = transcript_feed.final(tr, data["final_text"])  # the last text entry's: not sent again
        with widget.hold_sync():
            self.cards.push(widget, data["pauses"], **transcript_feed.record(tr), **kept)
            widget.status = data["status"]
            widget.status_reason = data["status_reason"]
            for name, value in final.items():
                setattr(widget, name, value)
            if data.get("reply_id"):
                widget.reply_id = data["reply_id"]
