"""The display of a remote AG-UI turn: view data drawn in a ReplyWidget.

:class:`RemoteReplyView` is the default view of
:class:`~nb_hitl.agui.remote.RemoteSession`: a
:class:`~nb_hitl.widgets.reply.ReplyWidget` whose handler is the session's
answer handler, updated from the view data the session produces
(:func:`~nb_hitl.agui.turn.view_data`: transcript entries, pause views,
status). It carries data only; every check is the session's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

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
    """

    def __init__(
        self,
        handler: Callable[[Any], Awaitable[dict[str, Any]]],
        *,
        agent_name: str,
        prompt: str,
        display: bool = True,
    ) -> None:
        self.widget = ReplyWidget(handler=handler, agent_name=agent_name, prompt=prompt)
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
        card in its tool call's entry, which must exist by then.
        """
        widget = self.widget
        widget.transcript = data["transcript"]
        with widget.hold_sync():
            widget.pauses = data["pauses"]
            widget.status = data["status"]
            widget.status_reason = data["status_reason"]
            widget.final_text = data["final_text"]
            if data.get("reply_id"):
                widget.reply_id = data["reply_id"]
