"""What displays a remote turn: the view protocol of :class:`~nb_hitl.agui.remote.RemoteSession`.

A :class:`TurnView` is given the turn's view data
(:func:`~nb_hitl.agui.turn.view_data`) after every change; a
:data:`ViewFactory` makes one per turn with the handler its clicks call. The
default, :class:`nb_hitl.widgets.remote.RemoteReplyView`, is imported only
when first used (the agui package knows no widget).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

__all__ = ["Handler", "TurnView", "ViewFactory", "default_view"]

Handler = Callable[[Any], Awaitable[dict[str, Any]]]
"""The answer handler a view calls with a page message; awaitable result."""


class TurnView(Protocol):
    """A display of one remote turn."""

    def update(self, data: dict[str, Any]) -> None:
        """Show ``data`` (:func:`~nb_hitl.agui.turn.view_data`)."""


ViewFactory = Callable[..., TurnView]
"""``(handler, *, agent_name, prompt, display) -> TurnView``."""


def default_view(handler: Handler, *, agent_name: str, prompt: str, display: bool) -> TurnView:
    """The default view: a ``ReplyWidget`` (:class:`nb_hitl.widgets.remote.RemoteReplyView`)."""
    from ..widgets.remote import RemoteReplyView  # the widget layer, loaded on first use

    return RemoteReplyView(handler, agent_name=agent_name, prompt=prompt, display=display)
