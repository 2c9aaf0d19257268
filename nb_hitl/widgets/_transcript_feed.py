"""A reply's transcript stream to the page: what changed, and the page's syncs.

One road for every owner of a :class:`~nb_hitl.widgets.reply.ReplyWidget`:
the local Session (``SessionCore._push`` and its paced stream), the AG-UI
client's view (:class:`~nb_hitl.widgets.remote.RemoteReplyView`, its
transcript built from AG-UI events) and the service console
(:class:`~nb_hitl.service.console.SessionConsole`, its transcript brought to
each read of ``/messages`` by :meth:`Transcript.follow
<nb_hitl.session._transcript.Transcript.follow>`) each keep a
:class:`~nb_hitl.session._transcript.Transcript` and send its ops here:

* :func:`flush` sends the pending ops as one ``{"type": "nbh_transcript",
  "seq", "ops"}`` custom message (:class:`TranscriptMessage`; ``TranscriptMsg``
  in ``js/messages.ts``), applied by ``js/reply/stream.ts``;
* :func:`record` gives the record traits (``transcript_seq``, ``transcript``)
  for :meth:`ReplyWidget.set_record <nb_hitl.widgets.reply.ReplyWidget.set_record>`:
  kept in the kernel for a page that asks for the widget's state (a reload),
  never sent as a trait update; :func:`final` does the same for a final text
  the page holds already (the last text entry's);
* :func:`sync` answers the page's ``transcript_sync`` (a gap, or on connect),
  and :func:`answer_sync` every sync a page asks of a reply (``sync`` on
  connect: the transcript and the cards in one answer; ``transcript_sync``;
  ``cards_sync``).

A long reply therefore costs the page the bytes of what changed per push,
whoever owns the widget, never the whole transcript again. See "Streaming"
in ``docs/design.md``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from ..entries import shown_entry

if TYPE_CHECKING:
    from ..session._transcript import Transcript
    from ._cards import CardFeed

__all__ = ["TranscriptMessage", "answer_sync", "final", "flush", "record", "sync"]

log = logging.getLogger(__name__)


class TranscriptMessage(TypedDict):
    """``{"type": "nbh_transcript", "seq", "ops"}``: the page applies it in ``seq``
    order; ``ops`` are :meth:`Transcript.take_ops <nb_hitl.session._transcript.Transcript.take_ops>`'s
    (``add`` / ``append`` / ``set``)."""

    type: Literal["nbh_transcript"]
    seq: int
    ops: list[dict[str, Any]]


def flush(widget: Any, tr: Transcript) -> bool:
    """Send the pending changes of ``tr`` to the page of ``widget`` now, as one message.

    A timer waiting to send them (the Session's pacing, ``tr.timer``) is
    cancelled. A comm that is closed is logged, never raised: a closed page
    must not stop the agent or the client.

    Args:
        widget: the :class:`~nb_hitl.widgets.reply.ReplyWidget` (``None``: none shown).
        tr: the reply's transcript.

    Returns:
        whether a message was made (there were changes and a widget).
    """
    if tr.timer is not None:
        tr.timer.cancel()
        tr.timer = None
    tr.first_change = None
    if widget is None or not tr.pending:
        return False
    # here, not at the top: the session package imports this module
    from ..session._pace import ENVELOPE, OP_BYTES

    seq, ops = tr.take_ops()
    tr.last_flush = time.monotonic()
    tr.overhead += ENVELOPE + OP_BYTES * len(ops)
    message: TranscriptMessage = {"type": "nbh_transcript", "seq": seq, "ops": ops}
    try:
        widget.send(message)
    except Exception:  # a closed comm must not stop the agent
        log.warning("could not stream to the reply widget", exc_info=True)
    return True


def record(tr: Transcript) -> dict[str, Any]:
    """The record traits of ``tr`` for ``set_record``, after a :func:`flush`:
    ``{"transcript_seq", "transcript"}`` (the ``seq`` first: a page that takes the
    record whole reads which messages it includes) when entries changed since the
    record was last made, else ``{}``."""
    if not tr.trait_dirty:
        return {}
    return {"transcript_seq": tr.seq, "transcript": tr.view()}


def final(tr: Transcript, final_text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """How a reply's final text reaches the page: ``(record, traits)``.

    When it is exactly the last text entry's text (the usual case), the page has
    it already: ``({"final_text"}, {"final_entry": <that entry's id>})``, the text
    kept in the kernel (``set_record``) and the entry named for the page. Else
    ``({}, {"final_text", "final_html"})``: the text goes, with its Markdown
    rendered as a text block is (:func:`~nb_hitl.session._transcript.final_html`).
    """
    from ..session._transcript import final_html  # here: the session package imports this module

    entry = tr.final_entry(final_text)
    if entry is not None:
        return {"final_text": final_text}, {"final_entry": entry}
    return {}, {"final_text": final_text, "final_html": final_html(final_text)}


def sync(widget: Any, tr: Transcript, page_seq: Any = None, *, connect: bool = False) -> dict[str, Any]:
    """The answer to the page's transcript sync (after a gap, or on connect):
    every entry as shown and the ``seq`` they include (stream messages with a
    higher ``seq`` follow). Pending changes are flushed first.

    Less when the page holds enough (``page_seq``, the ``seq`` it holds):
    ``{"seq", "current": True}`` when it holds that ``seq``; on connect
    (``connect=True``), ``{"seq", "sent": True}`` when it holds an earlier
    one: the messages up to ``seq`` went out before this answer, so a page
    that got them holds ``seq`` when it reads it, and one that did not
    (they left before it listened) asks again.

    Returns:
        ``{"seq", "entries"}``, ``{"seq", "current": True}`` or ``{"seq", "sent": True}``.
    """
    flush(widget, tr)
    seq = tr.seq
    held = page_seq if isinstance(page_seq, int) and not isinstance(page_seq, bool) else None
    if held == seq:
        return {"seq": seq, "current": True}
    if connect and held is not None and 0 <= held < seq:
        return {"seq": seq, "sent": True}
    return {"seq": seq, "entries": [shown_entry(e) for e in tr]}


def answer_sync(
    message: Any,
    widget: Any,
    tr: Transcript,
    cards: CardFeed,
    push: Callable[[], None] | None = None,
) -> dict[str, Any] | None:
    """The answer to a page's sync of a reply, or ``None`` for any other message.

    A view that asks connected: its cards go to it as ops from then on
    (:attr:`CardFeed.connected <nb_hitl.widgets._cards.CardFeed.connected>`).

    Args:
        message: a page message: ``{"action": "sync", "transcript_seq",
            "cards_seq"}`` (a view connected), ``{"action": "transcript_sync",
            "seq"}`` or ``{"action": "cards_sync", "seq"}`` (a gap).
        widget: the reply widget (its pending transcript changes are flushed first).
        tr: the reply's transcript.
        cards: what the page was sent of the reply's cards.
        push: brings the cards up to date before they are answered (the
            Session's push); owners that push on every change pass none.

    Returns:
        ``{"transcript": <sync>, "cards": <sync>}`` to ``sync``, :func:`sync`'s
        answer to ``transcript_sync``, :meth:`CardFeed.sync
        <nb_hitl.widgets._feed.KeyedFeed.sync>`'s to ``cards_sync``.
    """
    action = message.get("action") if isinstance(message, dict) else None
    if action == "transcript_sync":
        return sync(widget, tr, message.get("seq"))
    if action not in ("sync", "cards_sync"):
        return None
    answer: dict[str, Any] = {}
    if action == "sync":
        answer["transcript"] = sync(widget, tr, message.get("transcript_seq"), connect=True)
    cards.connected = True
    if push is not None:
        push()
    if action == "cards_sync":
        return cards.sync(message.get("seq"))
    answer["cards"] = cards.sync(message.get("cards_seq"))
    return answer
