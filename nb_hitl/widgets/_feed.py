"""A keyed list the kernel sends to a page as what changed, numbered by ``seq``.

A :class:`KeyedFeed` remembers what the page of one widget was sent of a
list of views (JSON dicts, each keyed by one of its fields) and turns the
list as it is now into ops: ``{"op": <item op>, <field>: view}`` for a view
that is new or changed (the page appends a new one, replaces a known one)
and ``{"op": "drop", "id": key}`` for a view that left. A non-empty set of
ops takes the next ``seq``; the page applies the messages in order and asks
for a sync (every view and the ``seq`` it includes) when it finds a gap or
when it opens (``js/lib/seq_stream.ts``). One change therefore sends one
view, never the whole list again.

Used by the pause cards of a reply (``nbh_cards``:
:class:`nb_hitl.widgets._cards.CardFeed`) and the rows of the service
console's inbox (``nbh_inbox``: :class:`nb_hitl.widgets.inbox.InboxWidget`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["KeyedFeed"]


class KeyedFeed:
    """What a page was sent of a keyed list, and the ``seq`` of the last message.

    Args:
        msg_type: the custom message's ``type`` (``"nbh_cards"``, ``"nbh_inbox"``).
        key: the field of a view that identifies it (``"tool_call_id"``, ``"session_id"``).
        item_op: the op of a new or changed view (``"card"``, ``"row"``).
        field: the op's field holding the view (``"view"``, ``"row"``).
        list_name: the field of a full sync answer holding every view
            (``"pauses"``, ``"rows"``).

    Attributes:
        seq: number of the last message (0: none yet); grows by one per message.
        messages: messages made (a benchmark and test figure).
        items_sent: views sent in those messages.
    """

    def __init__(self, msg_type: str, key: str, item_op: str, field: str, list_name: str) -> None:
        self.msg_type = msg_type
        self.list_name = list_name
        self.key = key
        self.item_op = item_op
        self.field = field
        self.seq = 0
        self.messages = 0
        self.items_sent = 0
        self._sent: dict[str, dict[str, Any]] = {}

    def take_ops(self, views: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The ops that bring the page from what it was sent to ``views``.

        Args:
            views: every view, in order (dicts holding the feed's ``key``);
                a view that is the very dict sent before counts as unchanged
                (a caller must not change a view in place once sent).

        Returns:
            ``[{"op": item_op, field: view}, ..., {"op": "drop", "id": key}, ...]``,
            empty when nothing changed; a non-empty list takes the next ``seq``.
        """
        ops: list[dict[str, Any]] = []
        fresh: dict[str, dict[str, Any]] = {}
        for view in views:
            key = str(view[self.key])
            fresh[key] = view
            sent = self._sent.get(key)
            if sent is not view and sent != view:  # the same dict again: unchanged, not compared
                ops.append({"op": self.item_op, self.field: view})
        ops.extend({"op": "drop", "id": key} for key in self._sent if key not in fresh)
        self._sent = fresh
        if ops:
            self.seq += 1
        return ops

    def views(self) -> list[dict[str, Any]]:
        """Every view as last sent, in order (what the page holds at :attr:`seq`)."""
        return list(self._sent.values())

    def message(self, ops: list[dict[str, Any]]) -> Mapping[str, Any]:
        """The custom message ``{"type", "seq", "ops"}`` for ``ops`` (just taken by
        :meth:`take_ops`), counted as sent."""
        self.messages += 1
        self.items_sent += sum(1 for op in ops if op["op"] == self.item_op)
        return {"type": self.msg_type, "seq": self.seq, "ops": ops}

    def sync(self, page_seq: Any = None) -> dict[str, Any]:
        """The answer to a page's sync: ``{"seq", "current": True}`` when it holds
        :attr:`seq` already (``page_seq``), else ``{"seq", <list_name>: every view}``
        (messages with a higher ``seq`` follow it)."""
        if isinstance(page_seq, int) and not isinstance(page_seq, bool) and page_seq == self.seq:
            return {"seq": self.seq, "current": True}
        return {"seq": self.seq, self.list_name: self.views()}
