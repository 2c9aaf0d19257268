"""nb_hitl's Jupyter server extension: kernel websockets send each message at once.

A person's click on a card travels page -> kernel websocket -> kernel, and the
kernel's answer comes back as a few small websocket frames (status busy, the
comm message, status idle). jupyter_server leaves Nagle's algorithm on for the
kernel websocket, so the second small frame waits in the server until the
browser acknowledges the first, and the browser delays that acknowledgement
(Linux: 40 ms). Tornado recommends :meth:`tornado.websocket.WebSocketHandler.set_nodelay`
for interactive websocket traffic; this extension calls it for every kernel
websocket, which takes the answer from about 43 ms to a few ms.

How it hooks in: jupyter_server builds one connection object per kernel
websocket from the web application's ``kernel_websocket_connection_class``
setting (the ``ServerApp.kernel_websocket_connection_class`` trait, the
documented place to change that connection). When the extension loads, that
setting is replaced by a subclass of whatever class is configured (the
default ``ZMQChannelsWebsocketConnection``, a gateway's connection, or one a
person set) whose ``connect()`` first turns Nagle off; nothing of
jupyter_server is patched. ``connect()`` runs from the handler's ``open()``,
where tornado documents ``set_nodelay`` is to be called.

Enabled by ``etc/jupyter/jupyter_server_config.d/nb_hitl.json`` (installed with
the package); switched off with ``c.KernelWebsocketNodelay.enabled = False``
(or ``--KernelWebsocketNodelay.enabled=False``).

This is its own top-level package so that the server does not import
:mod:`nb_hitl` (AgentScope and the widgets) to load it.
"""

from __future__ import annotations

from typing import Any

from traitlets import Bool
from traitlets.config import LoggingConfigurable

#: The web application setting jupyter_server reads the connection class from.
CONNECTION_CLASS_SETTING = "kernel_websocket_connection_class"


class KernelWebsocketNodelay(LoggingConfigurable):
    """The extension's configuration (section ``KernelWebsocketNodelay``)."""

    enabled = Bool(
        True,
        config=True,
        help=(
            "Turn Nagle's algorithm off (TCP_NODELAY) on every kernel websocket, so small kernel "
            "messages (a widget's answer to a click) reach the browser at once instead of up to "
            "~40 ms later. Changes the kernel websockets of the whole server."
        ),
    )


def nodelay_connection_class(base: type[Any]) -> type[Any]:
    """A subclass of the kernel websocket connection class ``base`` whose
    ``connect()`` first calls ``set_nodelay(True)`` on its websocket handler.

    Args:
        base: the configured connection class (a subclass of jupyter_server's
            ``BaseKernelWebsocketConnection`` with a ``websocket_handler``).

    Returns:
        The subclass (named ``Nodelay<base name>``); ``base`` itself if it already is one.
    """
    if getattr(base, "nb_hitl_nodelay", False):
        return base

    class NodelayConnection(base):
        nb_hitl_nodelay = True

        async def connect(self) -> Any:
            self.websocket_handler.set_nodelay(True)
            return await super().connect()

    NodelayConnection.__name__ = NodelayConnection.__qualname__ = f"Nodelay{base.__name__}"
    return NodelayConnection


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "nb_hitl_serverext"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Swap the web application's kernel websocket connection class for its
    :func:`nodelay_connection_class` subclass, unless ``KernelWebsocketNodelay.enabled`` is False."""
    settings = serverapp.web_app.settings
    if not KernelWebsocketNodelay(parent=serverapp).enabled:
        serverapp.log.info("nb_hitl: kernel websockets keep Nagle's algorithm (KernelWebsocketNodelay.enabled=False)")
        return
    base = settings[CONNECTION_CLASS_SETTING]
    settings[CONNECTION_CLASS_SETTING] = nodelay_connection_class(base)
    serverapp.log.info("nb_hitl: kernel websockets send without delay (TCP_NODELAY on %s)", base.__name__)
