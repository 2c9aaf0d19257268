"""The state of one remote turn, folded from AG-UI events (no I/O, no widget).

A :class:`RemoteTurn` is one user message and the AG-UI runs its resumes needed; a
:class:`RunRecord` is one of those runs. :class:`RunReader` folds a run's events into the turn:
transcript entries (a :class:`~nb_hitl.session._transcript.Transcript`, as a local
:class:`~nb_hitl.session.Session` keeps: its entries, its Markdown rendered as ``html`` when a
message ends, and its ops, which the display streams to the page), pause views for an interrupt outcome (:func:`~nb_hitl.agui.mapping.interrupt_view`),
the final text, and the history to send with the next run. :func:`view_data` is what a display
layer draws (see :mod:`nb_hitl.widgets.remote`).

Streamed text costs linear time: :class:`~nb_hitl.session._transcript.Transcript`
extends an entry's text in place, and a delta only extends the pending op of its entry.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    EventType,
    FunctionCall,
    Interrupt,
    ResumeEntry,
    ToolCall,
    ToolMessage,
)

from ..answers.lifecycle import transition
from ..answers.outcome import answered_elsewhere_text
from ..kinds import kind_spec
from ..pauses import PauseStatus
from ..session._transcript import Transcript
from .cards import checked_interrupt, metadata_problem, safe_view, view_problem
from .client import AguiClientError
from .mapping import META_KEY
from .refusals import refusal_words

__all__ = [
    "RemoteCard",
    "move",
    "RemoteTurn",
    "RunReader",
    "RunRecord",
    "answer_summary",
    "checked_interrupt",
    "metadata_problem",
    "safe_view",
    "view_data",
    "view_problem",
]


@dataclass
class RunRecord:
    """One AG-UI run of a turn.

    Attributes:
        run_id: the run's id.
        resume: the entries it sent, or ``None`` for a run with new input.
        events: every event received, in order.
        outcome: ``"interrupt"``, ``"success"``, ``"cancelled"``, ``"error"``
            or ``None`` while running.
        interrupts: the interrupts of an interrupt outcome.
        error: the ``RUN_ERROR`` message (or the transport failure).
        error_code: the ``RUN_ERROR.code``, or ``"stream_limit"`` when the
            client stopped reading at a cap of its
            :class:`~nb_hitl.guard.StreamBudget`.
        refused_input: the server's note when the run's new input was not
            taken because interrupts were open
            (``RUN_FINISHED.metadata.nb_hitl.refused_input``: ``code``,
            ``message``, ``message_ids``), else ``None``.
    """

    run_id: str
    resume: list[ResumeEntry] | None = None
    events: list[BaseEvent] = field(default_factory=list)
    outcome: str | None = None
    interrupts: list[Interrupt] = field(default_factory=list)
    error: str | None = None
    error_code: str | None = None
    refused_input: dict[str, Any] | None = None


class RemoteCard:
    """A remote interrupt's pause view as the front door and the status table see it
    (:class:`~nb_hitl.answers.front.Answerable`): the view dict is the state, this only reads
    and moves it; ``input`` is the call's JSON text. The interrupt's ``expires_at`` is judged by
    the client itself (an expired interrupt may still be cancelled: AG-UI): ``deadline`` is ``None``.

    Args:
        view: the pause view (see :func:`~nb_hitl.agui.mapping.interrupt_view`).
    """

    deadline, revision = None, 0  # revision: grows with each transition (Answerable; an instance's own once moved)

    def __init__(self, view: dict[str, Any]) -> None:
        self.view = view

    @property
    def lifecycle_key(self) -> dict[str, Any]:
        """The view: what :func:`~nb_hitl.answers.lifecycle.settled` waits on (any card of the view)."""
        return self.view

    @property
    def tool_call_id(self) -> str:
        return str(self.view["tool_call_id"])

    @property
    def reply_id(self) -> str:
        return str(self.view["reply_id"])

    @property
    def tool_name(self) -> str:
        return str(self.view["tool_name"])

    @property
    def input(self) -> Any:
        return self.view.get("input_text")

    @property
    def decision(self) -> dict[str, Any] | None:
        return self.view.get("decision")

    @property
    def status(self) -> Any:
        return self.view["status"]

    @status.setter
    def status(self, value: Any) -> None:
        self.view["status"] = value

    @property
    def reason(self) -> str | None:
        return self.view.get("reason")

    @reason.setter
    def reason(self, value: str | None) -> None:
        self.view["reason"] = value


def move(view: dict[str, Any], to: PauseStatus, *, reason: str | None = None) -> None:
    """Move a remote pause view's status along the one status table
    (:func:`~nb_hitl.answers.lifecycle.transition`); ``open -> decided``
    passes through ``deciding``, as a local answer does."""
    card = RemoteCard(view)
    if to == "decided" and card.status == "open":
        transition(card, "deciding")
    transition(card, to, reason=reason)


_DELTAS = frozenset(
    {
        EventType.TEXT_MESSAGE_CONTENT,
        EventType.TEXT_MESSAGE_CHUNK,
        EventType.TOOL_CALL_ARGS,
        EventType.REASONING_MESSAGE_CONTENT,
        EventType.REASONING_MESSAGE_CHUNK,
    }
)


def is_delta(ev: Any, turn: RemoteTurn) -> bool:
    """Whether the AG-UI event ``ev`` only adds streamed text to what ``turn``
    shows (a text, reasoning or tool-argument delta; a tool-call chunk of a
    call already shown), the changes the stream's pacing batches
    (:func:`~nb_hitl.session._pace.pace`). Read before the event is applied."""
    if ev.type == EventType.TOOL_CALL_CHUNK:
        return not ev.tool_call_id or ev.tool_call_id in turn.tool_calls
    return ev.type in _DELTAS


@dataclass
class RemoteTurn:
    """One user message and everything the remote agent did for it, across
    the runs its resumes (and polls) needed (like :class:`nb_hitl.session.ReplyRun`).

    Attributes:
        status: ``running`` | ``paused`` | ``finished`` | ``interrupted`` |
            ``error``; ``reason`` says why.
        view: the display of this turn (``update(view_data)``), or ``None``.
        pauses: pause views by key (see :func:`~nb_hitl.agui.mapping.interrupt_view`).
        interrupts: the open run's interrupts by id, as received.
        checked: the same, as the client uses them (:func:`checked_interrupt`: no patterns, nothing unsafe).
        answers: the answers given so far, by interrupt id.
        runs: the AG-UI runs of this turn.
        final_text: the agent's final text.
    """

    prompt: str
    view: Any = None
    status: str = "running"
    reason: str = ""
    transcript: Transcript = field(default_factory=Transcript)
    pauses: dict[str, dict[str, Any]] = field(default_factory=dict)
    interrupts: dict[str, Interrupt] = field(default_factory=dict)
    checked: dict[str, Interrupt] = field(default_factory=dict)
    answers: dict[str, ResumeEntry] = field(default_factory=dict)
    sent: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The page's message of each answer, by interrupt id (a refused one goes back to its card)."""
    runs: list[RunRecord] = field(default_factory=list)
    final_text: str = ""
    task: asyncio.Task[str] | None = None
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    resume_ready: asyncio.Event = field(default_factory=asyncio.Event)
    outbox: list[ResumeEntry] | None = None
    verdict: asyncio.Future[str | None] | None = None
    """Set when a resume run's first answer is in: the refusal text, or None."""
    tool_calls: dict[str, dict[str, str]] = field(default_factory=dict)
    """The tool calls streamed, by id: ``{"name"}`` (arguments: the ``call:<id>`` entry's text, :meth:`call_args`)."""

    @property
    def widget(self) -> Any:
        """The widget drawing this turn (the view's ``widget``, else the view)."""
        return getattr(self.view, "widget", self.view)

    def cards(self) -> dict[str, RemoteCard]:
        """The pause views as :class:`RemoteCard` s, by the key answers name."""
        return {key: RemoteCard(view) for key, view in self.pauses.items()}

    def open_pauses(self) -> list[dict[str, Any]]:
        """Pause views still waiting for an answer."""
        return [p for p in self.pauses.values() if p["status"] == "open"]

    def call_args(self, tool_call_id: str) -> str:
        """The arguments streamed for a tool call so far (its ``call:<id>`` entry's text)."""
        e = self.transcript.by_id("call:" + tool_call_id)
        return str(e["text"]) if e is not None else ""


def view_data(turn: RemoteTurn) -> dict[str, Any]:
    """What a display shows of ``turn``: ``transcript`` (the turn's
    :class:`~nb_hitl.session._transcript.Transcript` itself: its entries, and the ops
    not taken yet, which the display sends to its page), ``pauses`` (a list of dict
    copies), ``status``, ``status_reason``, ``final_text``, ``reply_id`` (the last
    run's id, or ``None``)."""
    return {
        "transcript": turn.transcript,
        "pauses": [dict(p) for p in turn.pauses.values()],
        "status": turn.status,
        "status_reason": turn.reason,
        "final_text": turn.final_text,
        "reply_id": turn.runs[-1].run_id if turn.runs else None,
    }


def answer_summary(entry: ResumeEntry, message: dict[str, Any], view: dict[str, Any]) -> dict[str, Any]:
    """The ``decision`` shown on a pause card once ``message`` was turned into ``entry``."""
    action = message.get("action")
    if entry.status == "cancelled":
        if isinstance(entry.payload, dict) and entry.payload.get("message"):  # the person's text, as sent
            return {"action": "return_error", "state": "error", "output": entry.payload["message"]}
        return {"action": "return_error" if action == "return_error" else "cancel"}
    return kind_spec(view["kind"]).answer_summary(entry.payload, message, view)


class RunReader:
    """Fold one run's events into its turn (see the module docstring).

    Args:
        turn: the turn the run belongs to.
        record: the run's record (events are appended to it).
        thread_id: the thread the run must open with (``RUN_STARTED``).

    Raises (from :meth:`feed`, :meth:`end`):
        AguiClientError: the stream breaks the run's framing.
    """

    def __init__(self, turn: RemoteTurn, record: RunRecord, thread_id: str) -> None:
        self.turn, self.record, self.thread_id = turn, record, thread_id
        self.started = False
        self.terminal = False
        self.snapshot: list[Any] | None = None
        self.streamed: list[Any] = []
        self.texts: dict[str, list[str]] = {}  # each message's deltas, joined when read
        self.calls_here: set[str] = set()
        self.last_chunk: str | None = None
        self.last_message: str | None = None  # the message the last text delta belongs to

    def feed(self, ev: Any) -> None:
        """Apply one event (events after the terminal one are only recorded)."""
        turn, record = self.turn, self.record
        record.events.append(ev)
        if self.terminal:
            return  # nothing may follow a terminal event; keep it only in the record
        t = ev.type
        if not self.started:
            if t != EventType.RUN_STARTED or ev.thread_id != self.thread_id:
                raise AguiClientError(
                    f"The run did not open with RUN_STARTED for thread {self.thread_id!r} (got {t.value})."
                )
            self.started = True
            return
        tr = turn.transcript
        if t == EventType.TEXT_MESSAGE_START:
            tr.text(ev.message_id)
            self.texts.setdefault(ev.message_id, [])
        elif t == EventType.TEXT_MESSAGE_END:
            tr.end_text(ev.message_id)
        elif t in (EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_CHUNK):
            mid = ev.message_id or (next(reversed(self.texts)) if self.texts else f"text-{record.run_id}")
            if ev.delta:
                tr.text(mid, ev.delta)
                self.texts.setdefault(mid, []).append(ev.delta)
                self.last_message = mid
        elif t in (EventType.TOOL_CALL_START, EventType.TOOL_CALL_CHUNK) and ev.tool_call_id:
            self._call_start_or_chunk(ev)
        elif t == EventType.TOOL_CALL_CHUNK and self.last_chunk and ev.delta:
            # a chunk without an id continues the call of the chunk before it
            tr.tool_call(self.last_chunk, input_text=ev.delta)
        elif t == EventType.TOOL_CALL_ARGS:
            self.calls_here.add(ev.tool_call_id)
            turn.tool_calls.setdefault(ev.tool_call_id, {"name": ""})
            tr.tool_call(ev.tool_call_id, input_text=ev.delta)
        elif t == EventType.TOOL_CALL_RESULT:
            self._result(ev)
        elif t == EventType.MESSAGES_SNAPSHOT:
            self.snapshot = list(ev.messages)
            for m in self.snapshot:
                shown = tr.by_id("result:" + m.tool_call_id) if isinstance(m, ToolMessage) else None
                if shown is not None and m.error:
                    tr.add("tool_result", shown["id"], state=m.error)
        elif t == EventType.RUN_FINISHED:
            self.terminal = True
            tr.finish()  # text entries whose messages had no end (chunks) are rendered
            self._finished(ev)
        elif t == EventType.RUN_ERROR:
            self.terminal = True
            tr.finish()
            record.outcome, record.error, record.error_code = "error", ev.message, ev.code
            turn.status = "error"
            turn.reason = refusal_words(ev.message, None)  # in words: the code stays in the record

    def _call_start_or_chunk(self, ev: Any) -> None:
        tr = self.turn.transcript
        call = self.turn.tool_calls.setdefault(ev.tool_call_id, {"name": ""})
        e = tr.tool_call(ev.tool_call_id, call["name"])
        if ev.tool_call_id not in self.calls_here:
            # a peer may re-announce a call of an earlier run
            # (ag-ui-langgraph does on resume): start it afresh
            self.calls_here.add(ev.tool_call_id)
            tr.add("tool_call", e["id"], text="")
        if ev.tool_call_name:
            call["name"] = ev.tool_call_name
            tr.add("tool_call", e["id"], name=ev.tool_call_name)
        if ev.type == EventType.TOOL_CALL_CHUNK:
            self.last_chunk = ev.tool_call_id
            if ev.delta:
                tr.tool_call(ev.tool_call_id, input_text=ev.delta)

    def _result(self, ev: Any) -> None:
        content = ev.content if isinstance(ev.content, str) else "".join(getattr(p, "text", "") for p in ev.content)
        name = self.turn.tool_calls.get(ev.tool_call_id, {}).get("name", "")
        self.turn.transcript.tool_result(ev.tool_call_id, name=name, text=content, state="done")
        self.streamed.append(ToolMessage(id=ev.message_id, tool_call_id=ev.tool_call_id, content=content))

    def end(self) -> None:
        """The stream is over: it must have opened and ended a run."""
        if not self.started or not self.terminal:
            raise AguiClientError("The stream ended without RUN_FINISHED or RUN_ERROR.")

    def history(self, messages: list[Any]) -> list[Any]:
        """The AG-UI messages to send with the next run: the server's last
        ``MESSAGES_SNAPSHOT``, else ``messages`` plus what streamed."""
        if self.snapshot is not None:
            return self.snapshot
        calls = [
            ToolCall(id=i, function=FunctionCall(name=c["name"], arguments=self.turn.call_args(i)))
            for i, c in self.turn.tool_calls.items()
            if i in self.calls_here
        ]
        text = "".join("".join(parts) for parts in self.texts.values())
        if not text and not calls:
            return messages
        assistant = AssistantMessage(id=f"msg-{uuid.uuid4().hex}", content=text or None, tool_calls=calls or None)
        return [*messages, assistant, *self.streamed]

    def _finished(self, ev: Any) -> None:
        turn, record = self.turn, self.record
        outcome = ev.outcome
        kind = getattr(outcome, "type", None) or "success"
        record.outcome = kind
        self._answered_elsewhere(ev)  # before the interrupts: a card answered elsewhere is not "no longer waited for"
        if kind == "interrupt":
            self._interrupted(list(outcome.interrupts))
            self._held(ev)
            return
        for view in turn.pauses.values():
            if view["status"] == "decided":
                move(view, "delivered")
        if kind == "cancelled":
            turn.status, turn.reason = "interrupted", "The agent cancelled the run."
            return
        turn.status = "finished"
        last = "".join(self.texts.get(self.last_message or "", []))
        turn.final_text = ev.result if isinstance(ev.result, str) else last

    def _answered_elsewhere(self, ev: Any) -> None:
        """The open cards another answer decided (an approval link, another principal's resume, the
        server's deadline: ``RUN_FINISHED.metadata.nb_hitl.answered_elsewhere``) go ``decided``, saying by
        whom (or that the deadline passed and what it applied)."""
        meta = ev.metadata.get(META_KEY) if isinstance(ev.metadata, dict) else None
        elsewhere = meta.get("answered_elsewhere") if isinstance(meta, dict) else None
        for a in elsewhere if isinstance(elsewhere, list) else []:
            for view in self.turn.pauses.values():
                if isinstance(a, dict) and view["interrupt_id"] == a.get("interrupt_id") and view["status"] == "open":
                    if a.get("action") == "expired":  # closed on the server without an answer
                        move(view, "expired", reason=str(a.get("reason") or "The reply ended on the server.")[:2000])
                        continue
                    move(view, "decided")
                    if a.get("action") == "timeout":  # the server's deadline applied its default
                        applied = str(a.get("applied") or "the default was applied")[:200]
                        view["decision"] = {"action": "timeout", "applied": applied}
                        view["reason"] = f"The deadline passed on the server: {applied}."
                        continue
                    at = a.get("at") if isinstance(a.get("at"), (int, float)) else None  # when, for the card
                    by = str(a["by"])[:200] if a.get("by") else None  # None: the server could not tell who
                    what = str(a.get("action"))[:40]
                    view["decision"] = {"action": what, "by": by, "at": at}
                    view["reason"] = answered_elsewhere_text(f"{by} ({what})." if by else f"{what}.")

    def _interrupted(self, interrupts: list[Interrupt]) -> None:
        turn, record = self.turn, self.record
        given: dict[str, int] = {}
        firsts: dict[str, Interrupt] = {}
        for i in interrupts:  # an id given twice gets one card (the first given), answerable only by cancelling
            given[i.id] = given.get(i.id, 0) + 1
            firsts.setdefault(i.id, i)
        record.interrupts = interrupts
        for view in turn.pauses.values():
            if view["status"] == "decided":
                move(view, "delivered")
            elif view["status"] == "open":
                move(view, "expired", reason="The server no longer waits for this answer.")
        turn.interrupts = firsts
        turn.answers, turn.checked = {}, {}  # a later run's interrupts replace the earlier ones
        counts: dict[str, int] = {}
        for i in interrupts:
            if i.tool_call_id:
                counts[i.tool_call_id] = counts.get(i.tool_call_id, 0) + 1
        for i in turn.interrupts.values():
            key = i.tool_call_id if i.tool_call_id and counts[i.tool_call_id] == 1 else i.id
            earlier = turn.pauses.get(key)  # the server repeats an interrupt on every run until it is answered:
            same = earlier is not None and earlier.get("interrupt_id") == i.id  # its card keeps the run that raised it
            # a new interrupt for the same call replaces its card where it is (as the page's card op does)
            call = turn.tool_calls.get(i.tool_call_id or "", {})
            checked, problem = checked_interrupt(i, given[i.id])
            turn.checked[i.id] = checked
            turn.pauses[key] = safe_view(
                checked,
                problem,
                key=key,
                run_id=earlier["reply_id"] if same and earlier is not None else record.run_id,
                tool_call_text=(turn.call_args(i.tool_call_id) if i.tool_call_id else "") or None,
                tool_call_name=call.get("name") or None,
            )
        turn.status, turn.reason = "paused", ""

    def _held(self, ev: Any) -> None:
        """An interrupt outcome that answers new input (AG-UI 1.0: the server
        ran nothing and repeats its open interrupts): say so in the turn."""
        meta = ev.metadata.get(META_KEY) if isinstance(ev.metadata, dict) else None
        note = meta.get("refused_input") if isinstance(meta, dict) else None
        if self.record.resume is not None or not isinstance(note, dict):
            return
        told = str(note["message"]) if isinstance(note.get("message"), str) else ""
        self.record.refused_input = dict(note)
        reason = told[:500] or "Your message was not given to the agent: it waits for answers to its open interrupts."
        self.turn.reason = reason
        self.turn.transcript.add("note", f"note:{self.record.run_id}", text=reason)
