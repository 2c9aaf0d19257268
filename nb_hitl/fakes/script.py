"""Scripts for the fake model servers: the turns they answer, played in order.

A fake server plays the same :class:`~nb_hitl.models.Turn` objects as
:class:`~nb_hitl.models.ScriptedChatModel`, one per request. A script item is
a ``Turn`` or a callable ``(messages: list[dict]) -> Turn`` that receives the
request's messages *as they came over the wire* (the provider's JSON shape:
``{"role": "tool", "content": ..., "tool_call_id": ...}`` and so on).

:class:`RawToolCall` sends a tool call's argument string verbatim, which is
how a script makes a malformed or truncated argument string
(:func:`truncated`). :class:`ScriptPlayer` hands out the turns, thread-safe.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..models import ToolCallSpec, Turn, script_turn

__all__ = [
    "RawToolCall",
    "truncated",
    "arguments_of",
    "FakeScriptItem",
    "ScriptPlayer",
    "wire_tool_results",
]

FakeScriptItem = Turn | Callable[[list[dict[str, Any]]], Turn]
"""One item of a fake server's script: a ``Turn`` or ``(wire messages) -> Turn``."""


@dataclass(frozen=True)
class RawToolCall(ToolCallSpec):
    """A tool call whose argument string is sent exactly as given.

    Use it for what real models do now and then: arguments that are not
    valid JSON, cut off mid-string, or not an object. ``input`` is ignored.

    Attributes:
        arguments: the argument string sent over the wire (OpenAI's
            ``function.arguments``), e.g. ``'{"path": "notes.t'``.
    """

    arguments: str = ""


def truncated(spec: ToolCallSpec, keep: int | None = None) -> RawToolCall:
    """The same call with its JSON arguments cut short, as a model that ran
    out of tokens sends them.

    Args:
        spec: the call, e.g. ``tool_call("delete_file", path="notes.txt")``.
        keep: how many characters of the JSON to keep (default: all but the
            last 4, so the string is never valid JSON).

    Returns:
        RawToolCall: with the same ``name`` and ``id``.

    Raises:
        ValueError: when ``keep`` would keep the whole string (still valid).
    """
    full = json.dumps(spec.input, ensure_ascii=False)
    cut = len(full) - 4 if keep is None else keep
    if cut >= len(full) or cut < 0:
        raise ValueError(f"keep={keep} does not cut {full!r}")
    return RawToolCall(name=spec.name, input=dict(spec.input), id=spec.id, arguments=full[:cut])


def arguments_of(spec: ToolCallSpec) -> str:
    """The argument string sent for ``spec``: verbatim for a :class:`RawToolCall`, else its input as JSON."""
    if isinstance(spec, RawToolCall):
        return spec.arguments
    return json.dumps(spec.input, ensure_ascii=False)


class ScriptPlayer:
    """Hands out a script's turns, one per request, thread-safe.

    Args:
        script: the items, in order (see :data:`FakeScriptItem`).
        on_exhausted: ``"text"`` answers further requests with
            ``"(The scripted model has no more turns.)"``; ``"raise"`` raises
            :class:`~nb_hitl.models.ScriptExhaustedError` (the servers answer
            it with HTTP 400, which AgentScope does not retry).

    Attributes:
        messages: the wire messages of every request so far, in order.
    """

    def __init__(self, script: Sequence[FakeScriptItem], on_exhausted: str = "text") -> None:
        if on_exhausted not in ("text", "raise"):
            raise ValueError(f"on_exhausted must be 'text' or 'raise', got {on_exhausted!r}")
        self.script = list(script)
        self.on_exhausted = on_exhausted
        self.messages: list[list[dict[str, Any]]] = []
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """Number of items not played yet."""
        with self._lock:
            return max(0, len(self.script) - len(self.messages))

    def next_turn(self, messages: list[dict[str, Any]]) -> Turn:
        """The turn answering a request whose messages are ``messages``.

        Raises:
            ScriptExhaustedError: the script is over and ``on_exhausted="raise"``.
            TypeError: a callable item returned something else than a ``Turn``.
        """
        with self._lock:
            index = len(self.messages)
            self.messages.append(messages)
        said = f"the fake server got request {index + 1} but its script has {len(self.script)} turns"
        return script_turn(self.script, index, messages, self.on_exhausted, said)


def wire_tool_results(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The text of every ``role: "tool"`` message in wire ``messages``, oldest first.

    Works for the OpenAI, DashScope and Ollama shapes (``content`` a string
    or a list of ``{"type": "text", "text": ...}`` parts). A helper for
    callable turns: ``lambda msgs: Turn(f"The tool said: {wire_tool_results(msgs)[-1]}")``.
    """
    out = []
    for message in messages:
        if message.get("role") != "tool":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        out.append(str(content or ""))
    return out
