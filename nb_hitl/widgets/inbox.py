"""``InboxWidget``: every parked session of a service user, in one list.

The widget only carries data: :class:`~nb_hitl.service.ServiceClient` writes
``entries`` (``InboxEntry.to_view()`` rows: ``agent``, ``session``,
``status``, ``tool``, ``summary``, ``since``, ``note``, ``may_answer``...) and
answers the page's ``open``, ``say`` and ``approve_selected`` actions; the page
(``js/inbox.ts``) draws a count badge, the filters (agent, tool, waiting
since, who may answer), one page of rows at a time, ticks the "waiting"
times, shows which row is open and each row's outcome after "Approve
selected".

:class:`InboxView` is what ``ServiceClient.inbox()`` returns: the list above
the opened session, which is a :class:`~nb_hitl.widgets.reply.ReplyWidget`
(the same cards as a local pause).
"""

from __future__ import annotations

from typing import Any

import ipywidgets
import traitlets

from ._base import Handler, RequestWidget

__all__ = ["InboxWidget", "InboxView"]


class InboxWidget(RequestWidget):
    """The list of parked sessions.

    Traits: ``service`` (URL), ``user_id``, ``entries`` (rows), ``opened``
    (the open session id), ``error`` (the last poll's failure), ``updated``
    (``time.time()`` of the last change), ``live`` (how the rows are kept
    up to date, one sentence), ``page_size`` (rows per page), ``outcomes``
    (``{session_id: {"ok", "code", "text"}}``: the last "Approve selected").

    Args:
        handler: answers ``{"action": "open", "session_id", "agent_id"}``,
            ``{"action": "say", "session_id", "text"}``,
            ``{"action": "approve_selected", "items": [{"session_id", "agent_id"}]}``
            and ``{"action": "refresh"}``.
    """

    _page_code = "inbox"
    _repr_fields = ("service", "user_id")

    service = traitlets.Unicode("").tag(sync=True)
    user_id = traitlets.Unicode("").tag(sync=True)
    entries = traitlets.List(traitlets.Dict()).tag(sync=True)
    opened = traitlets.Unicode("").tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    updated = traitlets.Float(0.0).tag(sync=True)
    live = traitlets.Unicode("").tag(sync=True)
    page_size = traitlets.Int(50).tag(sync=True)
    outcomes = traitlets.Dict().tag(sync=True)

    def __init__(self, handler: Handler | None = None, **traits: Any) -> None:
        super().__init__(handler=handler, **traits)


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
