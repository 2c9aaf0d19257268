"""Every session's events from the service's own message bus, over one connection.

AgentScope's service publishes each event of a session on its message bus
(``publish_session_event``: appended to the session's replay log, then
``PUBLISH``-ed on the channel ``MessageBusKeys.session_events(session_id)``).
Over HTTP the service offers only one SSE stream per session
(``GET /sessions/{id}/stream``); with the Redis bus of a scaled-out service,
one ``PSUBSCRIBE`` on the pattern of those channels receives the events of
every session, from every worker, on a single connection.

:class:`BusWatch` does that and hands ``(session_id, event type)`` to a
callback. Redis Pub/Sub is best-effort (a message published while the
connection is down is lost), so after every (re)connection the watch calls
``on_connect``: the inbox lists once then, and the events carry it from there.
The in-memory bus of a one-process service has no outside door: a console of
such a service polls (one batched listing per interval).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

__all__ = ["BusWatch", "channel_pattern", "session_of"]

log = logging.getLogger(__name__)


def channel_pattern() -> str:
    """The Pub/Sub pattern of every session's event channel (AgentScope's
    ``MessageBusKeys.session_events`` with ``*`` for the session id)."""
    from agentscope.app.message_bus import MessageBusKeys

    return MessageBusKeys.session_events("*")


def session_of(channel: str, pattern: str) -> str | None:
    """The session id in a channel name matched by ``pattern`` (``prefix*suffix``), else ``None``."""
    prefix, _star, suffix = pattern.partition("*")
    if not channel.startswith(prefix) or not channel.endswith(suffix):
        return None
    sid = channel[len(prefix) : len(channel) - len(suffix)]
    return sid or None


def event_type(data: Any) -> str:
    """The ``type`` of a published event (JSON text or bytes), ``""`` when unreadable."""
    try:
        frame = json.loads(data)
    except (TypeError, ValueError):
        return ""
    return str(frame.get("type") or "") if isinstance(frame, dict) else ""


class BusWatch:
    """One ``PSUBSCRIBE`` on the service's Redis bus for every session's events.

    Args:
        redis_url: the service's bus, ``redis://host:port/db`` (the URL its
            ``RedisMessageBus`` uses).
        on_event: called with ``(session_id, event_type)`` for each event
            (on the event loop; it must not block).
        on_connect: called after each (re)subscription, before any event of
            it (events published while disconnected are lost: re-list then).
        on_error: called with the error text when the connection fails or breaks.
        retry: seconds between reconnection attempts.

    Attributes:
        connected: subscribed now.
        error: why the last connection failed, or ``""``.
        events: events received so far.
        connections: subscriptions made so far (1 while nothing broke).
    """

    def __init__(
        self,
        redis_url: str,
        on_event: Callable[[str, str], None],
        on_connect: Callable[[], None] | None = None,
        *,
        on_error: Callable[[str], None] | None = None,
        retry: float = 1.0,
    ) -> None:
        self.redis_url = redis_url
        self.on_event = on_event
        self.on_connect = on_connect
        self.on_error = on_error
        self.retry = retry
        self.pattern = channel_pattern()
        self.connected = False
        self.error = ""
        self.events = 0
        self.connections = 0
        self.ready = asyncio.Event()

    async def run(self) -> None:
        """Follow the bus until cancelled, reconnecting after ``retry`` s when it breaks."""
        import redis.asyncio as aioredis
        from redis.exceptions import RedisError

        while True:
            client = aioredis.from_url(self.redis_url)
            try:
                pubsub = client.pubsub()
                await pubsub.psubscribe(self.pattern)
                self.connected, self.error = True, ""
                self.connections += 1
                self.ready.set()
                if self.on_connect is not None:
                    self.on_connect()
                while True:
                    msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                    if msg is None or msg.get("type") != "pmessage":
                        continue
                    channel = msg.get("channel")
                    channel = channel.decode() if isinstance(channel, bytes) else str(channel)
                    sid = session_of(channel, self.pattern)
                    if sid is None:
                        continue
                    self.events += 1
                    try:
                        self.on_event(sid, event_type(msg.get("data")))
                    except Exception:  # a listener never stops the watch
                        log.exception("bus event listener failed")
            except (RedisError, OSError) as exc:
                self.error = f"The service's bus ({self.redis_url}) could not be followed: {type(exc).__name__} {exc}"
                if self.on_error is not None:
                    self.on_error(self.error)
            finally:
                self.connected = False
                self.ready.clear()
                await asyncio.shield(client.aclose())
            await asyncio.sleep(self.retry)
