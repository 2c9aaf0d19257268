"""The state of one remote turn, folded from AG-UI events (no I/O, no widget).

A :class:`RemoteTurn` is one user message and the AG-UI runs its resumes needed; a
:class:`RunRecord` is one of those runs. :class:`RunReader` folds a run's events into the turn:
transcript entries (the same ``{"kind", "id", "text", ...}`` dicts a local
:class:`~nb_hitl.session.Session` produces, a text entry's Markdown rendered as ``html`` when its
message ends), pause views for an interrupt outcome (:func:`~nb_hitl.agui.mapping.interrupt_view`),
the final text, and the history to send with the next run. :func:`view_data` is what a display
layer draws (see :mod:`nb_hitl.widgets.remote`).

Streamed text costs linear time: deltas are kept as parts
(:meth:`RemoteTurn.grow`) and joined into their entry when someone reads it
(:meth:`RemoteTurn.flush`, called by :func:`view_data` and before the
reader uses a text), never appended to a growing string one by one.
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
from ..entries import shown_entry
from ..kinds import kind_spec
from ..markdown import markdown_html
from ..pauses import PauseStatus
from .cards import checked_interrupt, metadata_problem, safe_view, view_problem
from .client import AguiClientError
from .mapping import META_KEY

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
    transcript: list[dict[str, Any]] = field(default_factory=list)
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
    last_push: float = 0.0
    pending: dict[str, list[str]] = field(default_factory=dict)
    """Deltas not joined into their transcript entry yet, by entry id."""
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    """The transcript entries by id (the same dicts)."""

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

    def entry(self, kind: str, key: str, **fields: Any) -> dict[str, Any]:
        """The transcript entry ``key``, added (``kind``, empty text) if new."""
        e = self.by_id.get(key)
        if e is None:
            e = self.by_id[key] = {"kind": kind, "id": key, "text": "", **fields}
            self.transcript.append(e)
        return e

    def grow(self, kind: str, key: str, delta: str, **fields: Any) -> None:
        """Add ``delta`` to the text of entry ``key`` (made if new): kept as
        a part until :meth:`flush`."""
        self.entry(kind, key, **fields)
        self.pending.setdefault(key, []).append(delta)

    def flush(self) -> None:
        """Join the pending deltas into their entries: one join per entry,
        appended to its text in place (the entry's reference is dropped
        first, so CPython grows the string instead of copying it)."""
        for key, parts in self.pending.items():
            e = self.by_id[key]
            text, e["text"] = e["text"], ""
            text += "".join(parts)
            e["text"] = text
        self.pending.clear()

    def call_args(self, tool_call_id: str) -> str:
        """The arguments streamed for a tool call so far (its ``call:<id>`` entry's text)."""
        self.flush()
        e = self.by_id.get("call:" + tool_call_id)
        return str(e["text"]) if e is not None else ""


def view_data(turn: RemoteTurn) -> dict[str, Any]:
    """What a display shows of ``turn``: ``transcript`` and ``pauses`` (lists of dict copies), ``status``,
    ``status_reason``, ``final_text``, ``reply_id`` (the last run's id, or ``None``). Pending deltas are
    joined first (:meth:`RemoteTurn.flush`)."""
    turn.flush()
    return {
        "transcript": [shown_entry(e) for e in turn.transcript],
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
        self.ended: set[str] = set()  # text entries whose Markdown was rendered

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
        if t == EventType.TEXT_MESSAGE_START:
            turn.entry("text", ev.message_id)
            self.texts.setdefault(ev.message_id, [])
        elif t == EventType.TEXT_MESSAGE_END:
            self._render(ev.message_id)
        elif t in (EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_CHUNK):
            mid = ev.message_id or (next(reversed(self.texts)) if self.texts else f"text-{record.run_id}")
            if ev.delta:
                turn.grow("text", mid, ev.delta)
                self.texts.setdefault(mid, []).append(ev.delta)
                self.last_message = mid
        elif t in (EventType.TOOL_CALL_START, EventType.TOOL_CALL_CHUNK) and ev.tool_call_id:
            self._call_start_or_chunk(ev)
        elif t == EventType.TOOL_CALL_CHUNK and self.last_chunk and ev.delta:
            # a chunk without an id continues the call of the chunk before it
            turn.grow("tool_call", "call:" + self.last_chunk, ev.delta)
        elif t == EventType.TOOL_CALL_ARGS:
            self.calls_here.add(ev.tool_call_id)
            turn.tool_calls.setdefault(ev.tool_call_id, {"name": ""})
            turn.grow("tool_call", "call:" + ev.tool_call_id, ev.delta, tool_call_id=ev.tool_call_id)
        elif t == EventType.TOOL_CALL_RESULT:
            self._result(ev)
        elif t == EventType.MESSAGES_SNAPSHOT:
            self.snapshot = list(ev.messages)
            for m in self.snapshot:
                shown = turn.by_id.get("result:" + m.tool_call_id) if isinstance(m, ToolMessage) else None
                if shown is not None and m.error:
                    shown["state"] = m.error
        elif t == EventType.RUN_FINISHED:
            self.terminal = True
            self._render()
            self._finished(ev)
        elif t == EventType.RUN_ERROR:
            self.terminal = True
            self._render()
            record.outcome, record.error, record.error_code = "error", ev.message, ev.code
            turn.status = "error"
            turn.reason = ev.message + (f" ({ev.code})" if ev.code else "")

    def _render(self, message_id: str | None = None) -> None:
        """Give a text entry that ended its Markdown as ``html``
        (:func:`~nb_hitl.markdown.markdown_html`), as a local transcript does:
        the message ``message_id`` (``TEXT_MESSAGE_END``), or, at the run's
        end, every text entry not rendered yet (chunks have no end event)."""
        self.turn.flush()
        if message_id is not None:
            one = self.turn.by_id.get(message_id)
            entries = [one] if one is not None else []
        else:
            entries = self.turn.transcript
        for e in entries:
            if e["kind"] != "text" or e["id"] in self.ended or "html" in e:
                continue
            self.ended.add(e["id"])
            html = markdown_html(e["text"])
            if html is not None:
                e["html"] = html

    def _call_start_or_chunk(self, ev: Any) -> None:
        turn = self.turn
        key = "call:" + ev.tool_call_id
        call = turn.tool_calls.setdefault(ev.tool_call_id, {"name": ""})
        e = turn.entry("tool_call", key, name=call["name"], tool_call_id=ev.tool_call_id)
        if ev.tool_call_id not in self.calls_here:
            # a peer may re-announce a call of an earlier run
            # (ag-ui-langgraph does on resume): start it afresh
            self.calls_here.add(ev.tool_call_id)
            e["text"] = ""
            turn.pending.pop(key, None)
        if ev.tool_call_name:
            call["name"] = e["name"] = ev.tool_call_name
        if ev.type == EventType.TOOL_CALL_CHUNK:
            self.last_chunk = ev.tool_call_id
            if ev.delta:
                turn.grow("tool_call", key, ev.delta)

    def _result(self, ev: Any) -> None:
        content = ev.content if isinstance(ev.content, str) else "".join(getattr(p, "text", "") for p in ev.content)
        name = self.turn.tool_calls.get(ev.tool_call_id, {}).get("name", "")
        e = self.turn.entry(
            "tool_result", "result:" + ev.tool_call_id, name=name, tool_call_id=ev.tool_call_id, state="done"
        )
        e["text"] = content
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
        self.turn.flush()
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
        if kind == "interrupt":
            self._interrupted(list(outcome.interrupts))
            self._held(ev)
            return
        meta = ev.metadata.get(META_KEY) if isinstance(ev.metadata, dict) else None
        elsewhere = meta.get("answered_elsewhere") if isinstance(meta, dict) else None
        for a in elsewhere if isinstance(elsewhere, list) else []:  # an approval link decided them
            for view in turn.pauses.values():
                if isinstance(a, dict) and view["interrupt_id"] == a.get("interrupt_id") and view["status"] == "open":
                    move(view, "decided")
                    at = a.get("at") if isinstance(a.get("at"), (int, float)) else None  # when, for the card
                    view["decision"] = {"action": str(a.get("action"))[:40], "by": str(a.get("by"))[:200], "at": at}
                    view["reason"] = answered_elsewhere_text(f"{str(a.get('by'))[:200]} ({str(a.get('action'))[:40]}).")
        for view in turn.pauses.values():
            if view["status"] == "decided":
                move(view, "delivered")
        if kind == "cancelled":
            turn.status, turn.reason = "interrupted", "The agent cancelled the run."
            return
        turn.status = "finished"
        last = "".join(self.texts.get(self.last_message or "", []))
        turn.final_text = ev.result if isinstance(ev.result, str) else last

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
        self.turn.entry("note", f"note:{self.record.run_id}", text=reason)
