"""The transcript a reply widget shows above its pause cards.

A :class:`Transcript` is an ordered list of entries built from a reply's
stream: text blocks, tool calls (their input text as it streams), tool
results and notes. Its methods take plain values (block ids, tool call ids,
deltas), not AgentScope events, so the same transcript can be built from
AgentScope's ``reply_stream`` here and from AG-UI events by a remote client.

Each entry is a dict the page renders as is (``js/reply.ts``, ``Entry``):
``{"kind": "text" | "tool_call" | "tool_result" | "note", "id", "text",
...}``; tool entries add ``name`` and ``tool_call_id``, results a ``state``
(``running`` then AgentScope's ``ToolResultState`` value).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Transcript"]


class Transcript(list[dict[str, Any]]):
    """Entries of one reply, in the order they started (a ``list`` of entry dicts).

    Entry ids: a text block's AgentScope ``block_id``; ``call:<tool_call_id>``
    for a tool call; ``result:<tool_call_id>`` for its result;
    ``note:<n>`` for a note.
    """

    def __init__(self) -> None:
        super().__init__()
        self._by_id: dict[str, dict[str, Any]] = {}

    def view(self) -> list[dict[str, Any]]:
        """Copies of the entries, for a widget trait."""
        return [dict(e) for e in self]

    def _entry(self, kind: str, key: str, **fields: Any) -> dict[str, Any]:
        e = self._by_id.get(key)
        if e is None:
            e = {"kind": kind, "id": key, "text": "", **fields}
            self._by_id[key] = e
            self.append(e)
        return e

    def call_name(self, tool_call_id: str) -> str:
        """The tool name of a call seen in this transcript (``""`` if unknown)."""
        call = self._by_id.get("call:" + tool_call_id)
        return str(call.get("name", "")) if call else ""

    def text(self, block_id: str, delta: str = "") -> dict[str, Any]:
        """Start a text block (``delta=""``) or append ``delta`` to it."""
        e = self._entry("text", block_id)
        e["text"] += delta
        return e

    def tool_call(self, tool_call_id: str, name: str | None = None, input_text: str = "") -> dict[str, Any]:
        """Start a tool call entry, or append ``input_text`` (streamed JSON) to it.

        Args:
            tool_call_id: AgentScope's / AG-UI's tool call id.
            name: the tool's name, when known (set on the first call only).
            input_text: a delta of the call's input JSON text.
        """
        fields: dict[str, Any] = {"tool_call_id": tool_call_id}
        if name is not None:
            fields = {"name": name, **fields}
        e = self._entry("tool_call", "call:" + tool_call_id, **fields)
        e["text"] += input_text
        return e

    def tool_result(
        self, tool_call_id: str, delta: str = "", state: str | None = None, name: str | None = None
    ) -> dict[str, Any]:
        """Start, extend or end the result entry of a tool call.

        Args:
            tool_call_id: the call the result answers.
            delta: text to append.
            state: ``"running"`` when the result starts, AgentScope's
                ``ToolResultState`` value (``"success"``, ``"error"``,
                ``"interrupted"``...) when it ends.
            name: the tool's name (defaults to the call's name seen earlier).
        """
        e = self._entry(
            "tool_result",
            "result:" + tool_call_id,
            name=name if name is not None else self.call_name(tool_call_id),
            tool_call_id=tool_call_id,
        )
        e["text"] += delta
        if state is not None:
            e["state"] = state
        return e

    def note(self, text: str) -> dict[str, Any]:
        """Append a note (e.g. "The agent reached its iteration limit.")."""
        e = {"kind": "note", "id": f"note:{len(self)}", "text": text}
        self.append(e)
        return e
