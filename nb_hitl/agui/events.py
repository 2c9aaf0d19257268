"""AgentScope's event stream and history as AG-UI events and messages (pure).

:class:`EventTranslator` turns the events of ``Agent.reply_stream``
(``agentscope.event``) into AG-UI events (``ag_ui.core``): text blocks into
``TEXT_MESSAGE_*``, thinking blocks into ``REASONING_*``, tool calls into
``TOOL_CALL_START/ARGS/END`` and each tool result into one
``TOOL_CALL_RESULT``; pauses become the run's interrupt outcome (server).
:func:`messages_snapshot` turns the agent's history (``AgentState.context``)
into AG-UI messages for ``MESSAGES_SNAPSHOT``, one assistant message per
round and one tool message per result, with ids that match the stream;
:func:`reply_rounds` is where a reply is split into rounds, also for
:func:`last_reply_text`.
The full table is in ``docs/design.md`` ("AG-UI").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    FunctionCall,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    SystemMessage,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from agentscope import event as ase
from agentscope.message import Msg, TextBlock, ToolCallBlock, ToolResultBlock

from .._agentscope import blocks_text, enum_value

__all__ = [
    "EventTranslator",
    "Round",
    "last_reply_text",
    "messages_snapshot",
    "now_ms",
    "reply_rounds",
    "result_message_id",
]


def now_ms() -> int:
    """Milliseconds since the epoch (the unit every AG-UI SDK uses for
    ``BaseEvent.timestamp``)."""
    return int(time.time() * 1000)


def result_message_id(reply_id: str, tool_call_id: str) -> str:
    """The AG-UI message id of one tool result (stream and snapshot agree)."""
    return f"{reply_id}:result:{tool_call_id}"


class EventTranslator:
    """AgentScope events -> AG-UI events for one AG-UI run.

    Feed every event of the reply streams the run drives; call
    :meth:`close` before the run's terminal event to end any text, tool
    call or reasoning stream left open (a reply cut short).

    Args:
        reading: the result of a tool call as the model reads it, when that
            is not what the tool streamed (``None`` otherwise): nb_hitl's note
            (a denial's reason) or AgentScope's cut of a result longer than
            its ``tool_result_limit`` (``ReplyRun.told``). ``TOOL_CALL_RESULT``
            then carries what the model read, as the local transcript does.

    Attributes:
        text: the assistant text streamed in this run, by message id.
    """

    def __init__(self, reading: Callable[[str], str | None] | None = None) -> None:
        self._reading = reading
        self._open_text: set[str] = set()
        self._open_tools: set[str] = set()
        self._ending: dict[str, None] = {}
        """Calls AgentScope ended, whose END waits: with parallel calls
        streamed interleaved, AgentScope ends a call each time the model
        switches to another and starts it again (AG-UI allows one START per
        id), so END is sent at the next event that is not a tool-call chunk."""
        self._open_reasoning: set[str] = set()
        self._results: dict[str, list[str]] = {}
        self.text: dict[str, str] = {}

    def _stamp(self, ev: BaseEvent) -> BaseEvent:
        ev.timestamp = now_ms()
        return ev

    def feed(self, ev: Any) -> list[BaseEvent]:
        """The AG-UI events for one AgentScope event (possibly none)."""
        out: list[BaseEvent] = []
        tool_call_event = isinstance(ev, ase.ToolCallStartEvent | ase.ToolCallDeltaEvent | ase.ToolCallEndEvent)
        if not tool_call_event:
            out += self._end_tools()
        if isinstance(ev, ase.TextBlockStartEvent):
            out += self._start_text(ev.block_id)
        elif isinstance(ev, ase.TextBlockDeltaEvent):
            out += self._start_text(ev.block_id)
            if ev.delta:
                self.text[ev.block_id] = self.text.get(ev.block_id, "") + ev.delta
                out.append(TextMessageContentEvent(message_id=ev.block_id, delta=ev.delta))
        elif isinstance(ev, ase.TextBlockEndEvent):
            if ev.block_id in self._open_text:
                self._open_text.discard(ev.block_id)
                out.append(TextMessageEndEvent(message_id=ev.block_id))
        elif isinstance(ev, ase.ThinkingBlockStartEvent):
            out += self._start_reasoning(ev.block_id)
        elif isinstance(ev, ase.ThinkingBlockDeltaEvent):
            out += self._start_reasoning(ev.block_id)
            if ev.delta:
                out.append(ReasoningMessageContentEvent(message_id=ev.block_id, delta=ev.delta))
        elif isinstance(ev, ase.ThinkingBlockEndEvent):
            out += self._end_reasoning(ev.block_id)
        elif isinstance(ev, ase.ToolCallStartEvent):
            if ev.tool_call_id in self._ending:  # the model went back to a call AgentScope ended
                del self._ending[ev.tool_call_id]
            elif ev.tool_call_id not in self._open_tools:
                self._open_tools.add(ev.tool_call_id)
                out.append(ToolCallStartEvent(tool_call_id=ev.tool_call_id, tool_call_name=ev.tool_call_name))
        elif isinstance(ev, ase.ToolCallDeltaEvent):
            self._ending.pop(ev.tool_call_id, None)
            if ev.delta and ev.tool_call_id in self._open_tools:
                out.append(ToolCallArgsEvent(tool_call_id=ev.tool_call_id, delta=ev.delta))
        elif isinstance(ev, ase.ToolCallEndEvent):
            if ev.tool_call_id in self._open_tools:
                self._ending[ev.tool_call_id] = None
        elif isinstance(ev, ase.ToolResultStartEvent):
            self._results.setdefault(ev.tool_call_id, [])
        elif isinstance(ev, ase.ToolResultTextDeltaEvent):
            self._results.setdefault(ev.tool_call_id, []).append(ev.delta)
        elif isinstance(ev, ase.ToolResultDataDeltaEvent):
            self._results.setdefault(ev.tool_call_id, []).append(f"[{ev.media_type}]")
        elif isinstance(ev, ase.ToolResultEndEvent):
            text = "".join(self._results.pop(ev.tool_call_id, []))
            told = self._reading(ev.tool_call_id) if self._reading is not None else None
            if told is not None:
                text = told
            out.append(
                ToolCallResultEvent(
                    message_id=result_message_id(ev.reply_id, ev.tool_call_id),
                    tool_call_id=ev.tool_call_id,
                    content=text or f"({enum_value(ev.state)})",
                    role="tool",
                )
            )
        return [self._stamp(e) for e in out]

    def _end_tools(self) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        for tool_call_id in self._ending:
            self._open_tools.discard(tool_call_id)
            out.append(ToolCallEndEvent(tool_call_id=tool_call_id))
        self._ending.clear()
        return out

    def _start_text(self, block_id: str) -> list[BaseEvent]:
        if block_id in self._open_text:
            return []
        self._open_text.add(block_id)
        return [TextMessageStartEvent(message_id=block_id, role="assistant")]

    def _start_reasoning(self, block_id: str) -> list[BaseEvent]:
        if block_id in self._open_reasoning:
            return []
        self._open_reasoning.add(block_id)
        return [ReasoningStartEvent(message_id=block_id), ReasoningMessageStartEvent(message_id=block_id)]

    def _end_reasoning(self, block_id: str) -> list[BaseEvent]:
        if block_id not in self._open_reasoning:
            return []
        self._open_reasoning.discard(block_id)
        return [ReasoningMessageEndEvent(message_id=block_id), ReasoningEndEvent(message_id=block_id)]

    def close(self) -> list[BaseEvent]:
        """End every stream still open (text, tool call, reasoning)."""
        out: list[BaseEvent] = []
        for block_id in sorted(self._open_text):
            out.append(TextMessageEndEvent(message_id=block_id))
        self._open_text.clear()
        out += self._end_tools()
        for tool_call_id in sorted(self._open_tools):
            out.append(ToolCallEndEvent(tool_call_id=tool_call_id))
        self._open_tools.clear()
        for block_id in sorted(self._open_reasoning):
            out += self._end_reasoning(block_id)
        return [self._stamp(e) for e in out]


@dataclass
class Round:
    """One round of an assistant ``Msg``: what the model wrote before it waited for tools.

    Attributes:
        texts: its text blocks (``agentscope.message.TextBlock``), in order.
        calls: the tool calls it made after them (``ToolCallBlock``), in order; empty for
            the text the reply ends with.
    """

    texts: list[TextBlock] = field(default_factory=list)
    calls: list[ToolCallBlock] = field(default_factory=list)


def reply_rounds(content: list[Any]) -> list[Round | ToolResultBlock]:
    """An assistant ``Msg``'s blocks split into rounds: the one rule of what a round is, read by
    :func:`messages_snapshot` (one AG-UI assistant message per round) and :func:`last_reply_text`
    (the last round).

    Args:
        content: the ``Msg.content`` block list.

    Returns:
        :class:`Round` and ``ToolResultBlock`` items in the blocks' order: a text after a tool
        call starts a new round, a tool result ends the round before it and stands on its own;
        a round with neither text nor calls is left out, and so are blocks of other kinds
        (thinking, hints, data).
    """
    out: list[Round | ToolResultBlock] = []
    current = Round()
    for block in content:
        if isinstance(block, TextBlock):
            if current.calls:
                out.append(current)
                current = Round()
            current.texts.append(block)
        elif isinstance(block, ToolCallBlock):
            current.calls.append(block)
        elif isinstance(block, ToolResultBlock):
            if current.texts or current.calls:
                out.append(current)
                current = Round()
            out.append(block)
    if current.texts or current.calls:
        out.append(current)
    return out


def last_reply_text(context: list[Msg]) -> str | None:
    """What the agent said last in an AgentScope history (``AgentState.context``), as a reply's final
    ``Msg`` reads: the text of its last message's last round (:func:`reply_rounds`) when that round
    made no tool call; ``""`` when the message ends with a tool call or result; ``None`` when the
    history does not end with the assistant's message (a user message came after it)."""
    if not context or context[-1].role != "assistant":
        return None
    content = context[-1].content
    if isinstance(content, str):
        return content
    parts = reply_rounds(content)
    last = parts[-1] if parts else None
    if not isinstance(last, Round) or last.calls:
        return ""
    return "".join(block.text for block in last.texts)


def messages_snapshot(context: list[Msg]) -> list[Any]:
    """AG-UI messages for an AgentScope history (``AgentState.context``).

    Args:
        context: the agent's ``Msg`` list.

    Returns:
        ``UserMessage`` / ``SystemMessage`` for user and system messages
        (same ids); for each assistant ``Msg``, an ``AssistantMessage`` per
        round (:func:`reply_rounds`: its text and ``tool_calls``, arguments
        as the model sent them; its id is its first text block's, else
        ``"<msg id>:<round number>"``) and a ``ToolMessage`` per tool result
        (``error`` = the result state when it is not ``success``). Hint and
        thinking blocks are left out.
    """
    out: list[Any] = []
    for msg in context:
        if msg.role == "user":
            out.append(UserMessage(id=msg.id, content=blocks_text(msg.content), name=msg.name or None))
            continue
        if msg.role == "system":
            out.append(SystemMessage(id=msg.id, content=blocks_text(msg.content)))
            continue
        if isinstance(msg.content, str):
            out.append(AssistantMessage(id=msg.id, content=msg.content, name=msg.name or None))
            continue
        round_no = 0
        for part in reply_rounds(msg.content):
            if isinstance(part, Round):
                calls = [
                    ToolCall(id=c.id, function=FunctionCall(name=c.name, arguments=c.input or "")) for c in part.calls
                ]
                out.append(
                    AssistantMessage(
                        id=part.texts[0].id if part.texts else f"{msg.id}:{round_no}",
                        content="".join(t.text for t in part.texts) or None,
                        tool_calls=calls or None,
                        name=msg.name or None,
                    )
                )
                round_no += 1
                continue
            state = str(enum_value(part.state))
            out.append(
                ToolMessage(
                    id=result_message_id(msg.id, part.id),
                    tool_call_id=part.id,
                    content=blocks_text(part.output) or f"({state})",
                    error=None if state == "success" else state,
                )
            )
    return out
