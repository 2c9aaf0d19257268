"""A scripted, offline chat model: the default model of every demo and test.

:class:`ScriptedChatModel` is a real :class:`agentscope.model.ChatModelBase`
subclass. Instead of calling an API it plays back a script of
:class:`Turn` objects, one per model call, streaming or not. It needs no
network and no credentials, so notebooks run anywhere and tests are
deterministic.

A script item is either a :class:`Turn` or a callable
``(messages: list[Msg]) -> Turn``: a callable turn reads what the model was
sent (for example the result of the previous tool call) and answers with
it, which is how the demo's final answer reports what really happened.

Traps this class handles (see AgentScope 2.0.11 ``model/_base.py``):

* ``_call_api`` must be a coroutine that *returns* a ``ChatResponse`` or an
  async generator; writing it as an async generator function fails in
  ``ChatModelBase.__call__``.
* Streamed chunks are deltas and keep the same block ``id`` across chunks,
  or AgentScope's accumulator splits the text into several blocks.
* The agent reads ``model.formatter.supported_input_media_types`` on every
  user message, so a formatter must be set.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentscope.credential import CredentialBase
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import Msg, TextBlock, ToolCallBlock
from agentscope.model import ChatModelBase, ChatResponse
from pydantic import BaseModel

from ._agentscope import blocks_text, strip_system_reminders

__all__ = [
    "ScriptedChatModel",
    "Turn",
    "ToolCallSpec",
    "tool_call",
    "ScriptExhaustedError",
    "tool_results",
    "result_text",
    "result_shown",
]


class ScriptExhaustedError(RuntimeError):
    """Raised when the model is called more times than its script has turns
    and ``on_exhausted="raise"`` was chosen."""


@dataclass(frozen=True)
class ToolCallSpec:
    """One tool call a scripted turn makes.

    Attributes:
        name: the tool's name as registered in the agent's ``Toolkit``
            (e.g. ``"AskUser"``).
        input: the tool input as a JSON-able dict; sent to AgentScope as a
            JSON *string* (``ToolCallBlock.input``).
        id: the tool call id; a fresh ``call_<hex>`` when omitted.
    """

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


def tool_call(name: str, id: str | None = None, **input: Any) -> ToolCallSpec:
    """Shorthand for :class:`ToolCallSpec`: ``tool_call("delete_file", path="a.txt")``.

    Args:
        name: the tool name.
        id: an explicit tool call id (optional).
        **input: the tool input fields.

    Returns:
        ToolCallSpec: the call.
    """
    return ToolCallSpec(name=name, input=dict(input), id=id)


@dataclass(frozen=True)
class Turn:
    """What the scripted model answers on one call.

    Attributes:
        text: assistant text, streamed word by word when the model streams
            (may be empty).
        tool_calls: tool calls made after the text, in order.
    """

    text: str = ""
    tool_calls: Sequence[ToolCallSpec] = ()


ScriptItem = Turn | Callable[[list[Msg]], Turn]


def script_turn(script: Sequence[Any], index: int, messages: Any, on_exhausted: str, exhausted: str) -> Turn:
    """The ``index``-th turn of ``script`` (0-based) for a request of ``messages``.

    An item is a :class:`Turn` or a callable of the request's messages
    returning one. Past the end: :class:`ScriptExhaustedError` with the
    message ``exhausted`` when ``on_exhausted == "raise"``, else a turn
    saying the script is over. Shared by :class:`ScriptedChatModel` (AgentScope
    ``Msg`` lists) and the fake model servers (wire messages).

    Raises:
        ScriptExhaustedError: the script is over and ``on_exhausted="raise"``.
        TypeError: a callable item returned something else than a ``Turn``.
    """
    if index >= len(script):
        if on_exhausted == "raise":
            raise ScriptExhaustedError(exhausted)
        return Turn("(The scripted model has no more turns.)")
    item = script[index]
    turn = item(messages) if callable(item) else item
    if not isinstance(turn, Turn):
        raise TypeError(f"script item {index} returned {type(turn).__name__}, expected Turn")
    return turn


class CallLog(list[Any]):
    """A ``list`` that keeps its last ``max_len`` items (all when ``None``):
    appending beyond it drops the oldest."""

    def __init__(self, max_len: int | None) -> None:
        super().__init__()
        self.max_len = max_len

    def append(self, item: Any) -> None:
        """Append ``item``, dropping the oldest item when full."""
        super().append(item)
        if self.max_len is not None and len(self) > self.max_len:
            del self[0]


class ScriptedChatModel(ChatModelBase):
    """A ``ChatModelBase`` that plays back a script of turns, offline.

    Example::

        model = ScriptedChatModel([
            Turn("Let me look.", [tool_call("list_files")]),
            lambda messages: Turn(f"I saw {last_tool_output(messages)}"),
        ])
        agent = Agent(name="demo", system_prompt="...", model=model, toolkit=...)

    Args:
        script: the turns, one per model call, in order. An item is a
            :class:`Turn` or a callable ``(messages) -> Turn`` that receives
            the ``list[Msg]`` the agent sent on that call.
        stream: stream the answer in chunks (``True``, AgentScope's default)
            or return it whole.
        chunk_delay: seconds to wait between streamed chunks (``0`` by
            default; a small value makes a demo visibly stream).
        on_exhausted: ``"text"`` (default, forgiving for demos whose cells
            get re-run) answers further calls with the text
            ``"(The scripted model has no more turns.)"``; ``"raise"``
            raises :class:`ScriptExhaustedError` (use it in tests, so a wrong
            number of model calls fails loudly).
        model: the model name reported in AgentScope's events.
        max_calls: how many calls :attr:`calls` keeps (the most recent
            ones; default 50). Each call is a deep copy of the whole context
            sent, so keeping every call of a long session grows without
            bound; ``None`` keeps them all.

    Attributes:
        calls: the messages of the last ``max_calls`` calls,
            a :class:`CallLog` of ``list[Msg]`` (deep copies, oldest first;
            ``calls[-1]`` is the latest): what "the model saw", for tests and teaching.
        call_count: the number of calls so far (``len(calls)`` until
            ``max_calls`` is reached).
        tools_seen: the tool schemas offered on the last ``max_calls`` calls.
    """

    class Parameters(BaseModel):
        """No parameters: the script decides everything."""

    def __init__(
        self,
        script: Sequence[ScriptItem],
        *,
        stream: bool = True,
        chunk_delay: float = 0.0,
        on_exhausted: str = "text",
        model: str = "scripted",
        max_calls: int | None = 50,
    ) -> None:
        if max_calls is not None and max_calls < 1:
            raise ValueError(f"max_calls must be a positive number or None, got {max_calls!r}")
        if on_exhausted not in ("text", "raise"):
            raise ValueError(f"on_exhausted must be 'text' or 'raise', got {on_exhausted!r}")
        super().__init__(
            credential=CredentialBase(),
            model=model,
            parameters=self.Parameters(),
            stream=stream,
            max_retries=0,
            # no real context window: AgentScope's context compression (which
            # calls the model, and would consume a scripted turn) never starts
            context_size=1_000_000_000,
        )
        self.formatter = OpenAIChatFormatter()
        self.script: list[ScriptItem] = list(script)
        self.chunk_delay = chunk_delay
        self.on_exhausted = on_exhausted
        self.calls: CallLog = CallLog(max_calls)
        self.call_count = 0
        self.tools_seen: CallLog = CallLog(max_calls)

    @property
    def remaining(self) -> int:
        """Number of script items not played yet."""
        return max(0, len(self.script) - self.call_count)

    def _next_turn(self, messages: list[Msg]) -> Turn:
        index = self.call_count
        self.call_count += 1
        self.calls.append([m.model_copy(deep=True) for m in messages])
        said = f"ScriptedChatModel was called {index + 1} times but its script has {len(self.script)} turns"
        return script_turn(self.script, index, messages, self.on_exhausted, said)

    @staticmethod
    def _blocks(turn: Turn) -> tuple[TextBlock | None, list[ToolCallBlock]]:
        text = TextBlock(text=turn.text, id=f"text_{uuid.uuid4().hex[:12]}") if turn.text else None
        calls = [
            ToolCallBlock(
                id=spec.id or f"call_{uuid.uuid4().hex[:12]}",
                name=spec.name,
                input=json.dumps(spec.input, ensure_ascii=False),
            )
            for spec in turn.tool_calls
        ]
        return text, calls

    async def _call_api(
        self,
        model_name: str,
        messages: list[Msg],
        tools: list[dict] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        """Play the next turn (AgentScope's ``ChatModelBase._call_api`` hook).

        Returns:
            a whole ``ChatResponse`` when not streaming, else an async
            generator of delta chunks (``is_last=False``), each block keeping
            its id across chunks.

        Raises:
            ScriptExhaustedError: when the script is over and
                ``on_exhausted="raise"``.
        """
        self.tools_seen.append(tools)
        turn = self._next_turn(messages)
        text, calls = self._blocks(turn)
        if not self.stream:
            return ChatResponse(content=[b for b in [text, *calls] if b is not None], is_last=True)
        return self._stream(text, calls)

    async def _stream(self, text: TextBlock | None, calls: list[ToolCallBlock]) -> AsyncGenerator[ChatResponse, None]:
        response_id = f"resp_{uuid.uuid4().hex[:12]}"
        if text is not None:
            words = text.text.split(" ")
            for i, word in enumerate(words):
                piece = word if i == len(words) - 1 else word + " "
                yield ChatResponse(id=response_id, is_last=False, content=[TextBlock(id=text.id, text=piece)])
                if self.chunk_delay:
                    await asyncio.sleep(self.chunk_delay)
        for call in calls:
            # name first with empty input, then the arguments, as real APIs stream them
            yield ChatResponse(
                id=response_id,
                is_last=False,
                content=[ToolCallBlock(id=call.id, name=call.name, input="")],
            )
            yield ChatResponse(
                id=response_id,
                is_last=False,
                content=[ToolCallBlock(id=call.id, name=call.name, input=call.input)],
            )
            if self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)


def tool_results(messages: Sequence[Msg], name: str | None = None) -> list[Any]:
    """Every ``ToolResultBlock`` in ``messages`` (optionally of tool ``name``), oldest first.

    A helper for callable turns: ``lambda msgs: Turn(f"got {tool_results(msgs)[-1].output}")``.
    """
    from agentscope.message import ToolResultBlock

    out = []
    for msg in messages:
        if isinstance(msg.content, str):
            continue
        for block in msg.content:
            if isinstance(block, ToolResultBlock) and (name is None or block.name == name):
                out.append(block)
    return out


def result_text(block: Any) -> str:
    """The text of a ``ToolResultBlock.output`` (a string or a list of blocks)."""
    if block is None:
        return ""
    return blocks_text(block.output, data_label=False)


def result_shown(block: Any) -> str:
    """The text of a tool result as a person reads it: :func:`result_text` without AgentScope's
    ``<system-reminder>`` tags (their words kept), as the reply's transcript shows a result.
    For a scripted model's reply to a person; the model itself reads :func:`result_text`."""
    return strip_system_reminders(result_text(block))
