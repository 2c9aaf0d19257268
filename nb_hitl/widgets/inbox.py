"""``InboxWidget``: every parked session of a service user, in one list.

The widget only carries data: :class:`~nb_hitl.service.ServiceClient` gives
it the rows (``InboxEntry.to_view()``: ``agent``, ``session``, ``status``,
``tool``, ``summary``, ``since``, ``note``, ``may_answer``...) with
:meth:`InboxWidget.show_rows` and answers the page's ``open``, ``say`` and
``approve_selected`` actions. The rows reach the page as what changed: one
``{"type": "nbh_inbox", "seq", "ops"}`` custom message per change
(``{"op": "row", "row"}``: a row added or changed, ``{"op": "drop", "id":
session_id}``: a row that left; :class:`~nb_hitl.widgets._feed.KeyedFeed`),
never the whole list again. Every view of the widget asks for all rows once,
when it opens or finds a gap (``rows_sync``, answered by the widget itself),
so a second view, or one opened late, gets them too. The page
(``js/inbox.ts``) draws a count badge, the filters (agent, tool, waiting
since, who may answer), one page of rows at a time, ticks the "waiting"
times, shows which row is open and each row's outcome after "Approve
selected".

:class:`InboxView` is what ``ServiceClient.inbox()`` returns: the list above
the opened session, which is a :class:`~nb_hitl.widgets.reply.ReplyWidget`
(the same cards as a local pause).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets
import traitlets

from ..errors import NbHitlError
from ._base import Handler, RequestWidget
from ._feed import KeyedFeed

__all__ = ["InboxWidget", "InboxView"]


class InboxWidget(RequestWidget):
    """The list of parked sessions.

    Traits: ``service`` (URL), ``user_id``, ``opened``
    (the open session id), ``error`` (the last poll's failure), ``updated``
    (``time.time()`` of the last change), ``live`` (how the rows are kept
    up to date, one sentence), ``page_size`` (rows per page), ``outcomes``
    (``{session_id: {"ok", "code", "text"}}``: the last "Approve selected"),
    ``closed`` (the client was closed: the inbox follows and answers nothing).

    The rows are not a trait: :meth:`show_rows` sends what changed and
    :attr:`rows` is what the page holds once it applied every message.

    Args:
        rows: the rows known when the widget is made (no page holds them yet).
        handler: answers ``{"action": "open", "session_id", "agent_id"}``,
            ``{"action": "say", "session_id", "text"}``,
            ``{"action": "approve_selected", "items": [{"session_id", "agent_id"}]}``
            and ``{"action": "refresh"}``. ``{"action": "rows_sync", "seq"}``
            is answered by the widget (:meth:`rows_sync`).

    Attributes:
        feed: the :class:`~nb_hitl.widgets._feed.KeyedFeed` of the rows
            (``seq``, ``messages`` and ``items_sent`` count what was sent).
        before_sync: called before a sync is answered, so the rows it
            answers with are current (the client sets it: it pushes what
            changed since its last push).
    """

    _page_code = "inbox"
    _repr_fields = ("service", "user_id")

    service = traitlets.Unicode("").tag(sync=True)
    user_id = traitlets.Unicode("").tag(sync=True)
    opened = traitlets.Unicode("").tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    updated = traitlets.Float(0.0).tag(sync=True)
    live = traitlets.Unicode("").tag(sync=True)
    page_size = traitlets.Int(50).tag(sync=True)
    outcomes = traitlets.Dict().tag(sync=True)
    closed = traitlets.Bool(False).tag(sync=True)

    def __init__(
        self, handler: Handler | None = None, *, rows: list[dict[str, Any]] | None = None, **traits: Any
    ) -> None:
        self.feed = KeyedFeed("nbh_inbox", "session_id", "row", "row", "rows")
        # no page exists yet: the rows known now are held, not sent (each view asks for them)
        self.feed.take_ops(rows or [])
        self.before_sync: Callable[[], None] | None = None
        self._owner = handler
        super().__init__(handler=self._on_action, **traits)

    def set_handler(self, handler: Handler | None) -> None:
        """Replace the owner's handler (``rows_sync`` stays the widget's)."""
        self._owner = handler

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The rows as last sent, oldest pause first (what each page holds)."""
        return self.feed.views()

    def show_rows(self, rows: list[dict[str, Any]]) -> int:
        """Send the page what changed between the rows it holds and ``rows``.

        Args:
            rows: every row, in order (``InboxEntry.to_view()`` dicts, keyed
                by ``session_id``).

        Returns:
            the number of ops sent (0: nothing changed, nothing sent).
        """
        ops = self.feed.take_ops(rows)
        if ops:
            self.send(self.feed.message(ops))
        return len(ops)

    def rows_sync(self, page_seq: Any = None) -> dict[str, Any]:
        """A page's sync: ``{"seq", "rows"}`` (every row, and the ``seq`` of
        the last message they include), or ``{"seq", "current": True}`` when
        the page holds that ``seq`` already."""
        if self.before_sync is not None:
            self.before_sync()
        return self.feed.sync(page_seq)

    def _on_action(self, message: dict[str, Any]) -> Any:
        if message.get("action") == "rows_sync":
            return self.rows_sync(message.get("seq"))
        if self._owner is None:
            raise NbHitlError("This widget is not connected to anything that can act on it.")
        return self._owner(message)


class InboxView(ipywidgets.VBox):
    """The inbox list with the opened session below it.

    Attributes:
        inbox: the :class:`InboxWidget`.
        detail: the box holding the opened session's ``ReplyWidget``.
    """

    def __init__(self, inbox: InboxWidget) -> None:
        self.inbox = inbox
        self.detail = ipywidgets.VBox()
        super().__init__(children=(inbox, self.detail))

    def show(self, widget: Any | None) -> None:
        """Show ``widget`` (a ReplyWidget) under the list, or nothing."""
        self.detail.children = () if widget is None else (widget,)
