"""The notebook as the human in the loop of a remote AG-UI agent.

* :class:`AguiClient`: one AG-UI run over HTTP POST + SSE (``httpx`` and
  ``httpx-sse``), each ``data:`` frame parsed into an ``ag_ui.core`` event.
* :class:`RemoteSession`: a conversation with any AG-UI endpoint, drawn in a
  :class:`~nb_hitl.widgets.ReplyWidget` like a local reply. Each interrupt
  of a paused run becomes a pause card: nb_hitl's own confirmation and
  AskUser views when the interrupt's metadata says it comes from
  :mod:`nb_hitl.agui.server`, otherwise a form generated from its
  ``response_schema`` (page kind ``"form"``, action ``submit``). Every answer
  is checked with ``jsonschema`` against the interrupt's schema when it is
  given; once **every** interrupt of the run is answered, the session sends
  **one** resume run with all entries (``auto_send=True``, the default; with
  ``auto_send=False`` call :meth:`RemoteSession.send_resume`).

The client does not rely on the server to catch its mistakes (ag-ui-langgraph,
for one, accepts a resume naming an interrupt id it never raised): before a
resume is sent, :func:`~nb_hitl.agui.mapping.check_resume` checks that the
entries name exactly the interrupts received, each once, none resolved past
its ``expires_at``, each payload valid. It also refuses a stream that does
not open with ``RUN_STARTED`` for its thread, or an outcome that repeats an
interrupt id.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    Event,
    EventType,
    FunctionCall,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from httpx_sse import SSEError, aconnect_sse
from pydantic import TypeAdapter, ValidationError

from ..errors import AlreadyDecidedError, DecisionError, NbHitlError, PauseNotLiveError, PendingPauseError
from .mapping import check_resume, interrupt_view, message_to_entry, parse_expires_at

__all__ = [
    "AguiClient",
    "AguiClientError",
    "RemoteSession",
    "RemoteTurn",
    "RunRecord",
    "RemoteRunError",
    "parse_event",
]

_EVENT = TypeAdapter(Event)


class AguiClientError(NbHitlError):
    """The peer answered with something that is not an AG-UI run: an HTTP
    error status, a body that is not ``text/event-stream``, a frame that is
    not an AG-UI event, a stream that breaks the run's framing.

    Attributes:
        status: the HTTP status, when there was one.
    """

    code = "transport"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RemoteRunError(NbHitlError):
    """The remote run ended with ``RUN_ERROR`` (or broke off); ``code`` is the
    peer's ``RUN_ERROR.code`` when it sent one."""

    code = "run_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code:
            self.code = code


def parse_event(data: str) -> BaseEvent:
    """One SSE ``data:`` payload -> an ``ag_ui.core`` event model.

    Raises:
        AguiClientError: not JSON, or not an AG-UI event.
    """
    try:
        return _EVENT.validate_json(data)
    except ValidationError as exc:
        raise AguiClientError(
            f"The server sent a frame that is not an AG-UI event: {exc.errors()[0].get('msg')} in {data[:200]!r}"
        ) from None


class AguiClient:
    """Run an AG-UI agent over HTTP POST + SSE.

    Args:
        url: the endpoint (``POST``).
        headers: extra request headers (e.g. authorization).
        timeout: connect/write timeout in seconds; reads wait up to
            ``read_timeout`` between two frames.
        read_timeout: seconds between frames before giving up.
        http: an ``httpx.AsyncClient`` to use (else one per run).

    Attributes:
        posts: how many runs were POSTed (for tests: a refused resume sends
            nothing).
    """

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        timeout: float = 30.0,
        read_timeout: float = 300.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.timeout = httpx.Timeout(timeout, read=read_timeout)
        self.http = http
        self.posts = 0

    @staticmethod
    def make_input(
        thread_id: str,
        messages: Sequence[Any],
        resume: Sequence[ResumeEntry] | None = None,
        *,
        run_id: str | None = None,
        state: Any = None,
        tools: Sequence[Any] | None = None,
        context: Sequence[Any] | None = None,
        forwarded_props: Any = None,
    ) -> RunAgentInput:
        """A ``RunAgentInput`` (``protocol_version="1.0"``, a fresh ``run_id``
        unless given; ``state``, ``tools``, ``context``, ``forwarded_props``
        default to empty, as AG-UI's own clients send them)."""
        return RunAgentInput(
            thread_id=thread_id,
            run_id=run_id or f"run-{uuid.uuid4().hex}",
            protocol_version="1.0",
            state=state if state is not None else {},
            messages=list(messages),
            tools=list(tools or []),
            context=list(context or []),
            forwarded_props=forwarded_props if forwarded_props is not None else {},
            resume=list(resume) if resume else None,
        )

    async def run(
        self,
        thread_id: str,
        messages: Sequence[Any],
        resume: Sequence[ResumeEntry] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[BaseEvent]:
        """Start a run and yield its events as they arrive.

        Args:
            thread_id: the conversation.
            messages: the AG-UI messages (the whole history, as AG-UI
                clients send it).
            resume: resume entries, for a run that answers interrupts.
            **kwargs: more :meth:`make_input` arguments (``run_id``...).

        Yields:
            ``ag_ui.core`` events.

        Raises:
            AguiClientError: see the class.
        """
        async for event in self.stream(self.make_input(thread_id, messages, resume, **kwargs)):
            yield event

    async def stream(self, inp: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """POST ``inp`` and yield the run's events (see :meth:`run`)."""
        body = inp.model_dump(mode="json", by_alias=True)
        own = self.http is None
        http = self.http or httpx.AsyncClient(timeout=self.timeout)
        self.posts += 1
        try:
            async with aconnect_sse(http, "POST", self.url, json=body, headers=dict(self.headers)) as source:
                response = source.response
                if response.status_code >= 400:
                    detail = (await response.aread()).decode("utf-8", "replace")[:500]
                    raise AguiClientError(
                        f"The server answered HTTP {response.status_code}: {detail}", status=response.status_code
                    )
                try:
                    async for sse in source.aiter_sse():
                        if not sse.data:
                            continue
                        yield parse_event(sse.data)
                except SSEError as exc:
                    raise AguiClientError(str(exc), status=response.status_code) from None
        except httpx.HTTPError as exc:
            raise AguiClientError(f"{type(exc).__name__}: {exc}") from None
        finally:
            if own:
                await http.aclose()


# ---------------------------------------------------------------------------
# RemoteSession
# ---------------------------------------------------------------------------
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
        error_code: the ``RUN_ERROR.code``.
    """

    run_id: str
    resume: list[ResumeEntry] | None = None
    events: list[BaseEvent] = field(default_factory=list)
    outcome: str | None = None
    interrupts: list[Interrupt] = field(default_factory=list)
    error: str | None = None
    error_code: str | None = None


@dataclass
class RemoteTurn:
    """One user message and everything the remote agent did for it, across
    the runs its resumes needed (like :class:`nb_hitl.session.ReplyRun`).

    Attributes:
        status: ``running`` | ``paused`` | ``finished`` | ``interrupted`` |
            ``error``; ``reason`` says why.
        widget: the :class:`~nb_hitl.widgets.ReplyWidget` drawing it.
        pauses: pause views by key (see :func:`~nb_hitl.agui.mapping.interrupt_view`).
        interrupts: the open run's interrupts by id.
        answers: the answers given so far, by interrupt id.
        runs: the AG-UI runs of this turn.
        final_text: the agent's final text.
    """

    prompt: str
    widget: Any = None
    status: str = "running"
    reason: str = ""
    transcript: list[dict[str, Any]] = field(default_factory=list)
    pauses: dict[str, dict[str, Any]] = field(default_factory=dict)
    interrupts: dict[str, Interrupt] = field(default_factory=dict)
    answers: dict[str, ResumeEntry] = field(default_factory=dict)
    runs: list[RunRecord] = field(default_factory=list)
    final_text: str = ""
    task: asyncio.Task | None = None
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    resume_ready: asyncio.Event = field(default_factory=asyncio.Event)
    outbox: list[ResumeEntry] | None = None
    tool_calls: dict[str, dict[str, str]] = field(default_factory=dict)

    def open_pauses(self) -> list[dict[str, Any]]:
        """Pause views still waiting for an answer."""
        return [p for p in self.pauses.values() if p["status"] == "open"]


def _summary(entry: ResumeEntry, message: dict[str, Any], view: dict[str, Any]) -> dict[str, Any]:
    action = message.get("action")
    if entry.status == "cancelled":
        return {"action": "return_error" if action == "return_error" else "cancel"}
    payload = entry.payload
    if view["kind"] == "confirm":
        out: dict[str, Any] = {"action": action, "confirmed": bool(payload.get("approved"))}
        if "editedArgs" in payload:
            out["edited_input"] = payload["editedArgs"]
        labels = {r["index"]: r["label"] for r in view["suggested_rules"]}
        if payload.get("acceptedRules"):
            out["accepted_rules"] = [labels.get(i, str(i)) for i in payload["acceptedRules"]]
        return out
    if view["kind"] == "ask_user":
        return {"action": "answer", "answers": payload["answers"]}
    if view["kind"] == "external":
        return {"action": "external_result", "state": payload.get("state", "success")}
    return {"action": "submit", "value": payload}


class RemoteSession:
    """A conversation with a remote AG-UI agent, answered from the notebook.

    Args:
        url: the AG-UI endpoint.
        thread_id: the conversation id (a fresh one when omitted).
        display: show a :class:`~nb_hitl.widgets.ReplyWidget` per turn in
            the current cell's output (the widget exists either way).
        auto_send: send the resume as soon as every interrupt of the paused
            run is answered.
        agent_name: the name shown in the widget.
        client: an :class:`AguiClient` (else one for ``url``).
        clock: ``() -> epoch seconds``, for ``expires_at``.
        user_name: the ``name`` of the user messages sent.

    Usage in a notebook::

        remote = RemoteSession(handle.url)
        task = remote.start("Tidy up the sandbox")   # the widget shows the run
        await remote.until_paused()                  # interrupts drawn as cards
        # click in the widget, or answer from code through the same handler:
        await remote.act({"action": "approve", "tool_call_id": "call_..."})
        final_text = await task
    """

    def __init__(
        self,
        url: str,
        *,
        thread_id: str | None = None,
        display: bool = True,
        auto_send: bool = True,
        agent_name: str = "remote agent",
        client: AguiClient | None = None,
        clock: Callable[[], float] = time.time,
        user_name: str = "user",
    ) -> None:
        self.url = url
        self.thread_id = thread_id or f"thread-{uuid.uuid4().hex[:16]}"
        self.display = display
        self.auto_send = auto_send
        self.agent_name = agent_name
        self.client = client or AguiClient(url)
        self.clock = clock
        self.user_name = user_name
        self.messages: list[Any] = []
        self.turns: list[RemoteTurn] = []

    # ------------------------------------------------------------ public API
    @property
    def current(self) -> RemoteTurn | None:
        """The latest turn, or ``None``."""
        return self.turns[-1] if self.turns else None

    @property
    def pending(self) -> list[dict[str, Any]]:
        """The open pause views of the current turn."""
        turn = self.current
        return turn.open_pauses() if turn and turn.status == "paused" else []

    def start(self, message: str) -> asyncio.Task:
        """Send ``message`` in a new run and drive the turn in the background.

        Returns:
            the driving ``asyncio.Task``; it resolves to the final text once
            a run of the turn finishes without an interrupt (the resumes in
            between are sent when the interrupts are answered), and raises
            :class:`RemoteRunError` when a run ends with ``RUN_ERROR`` or
            the peer breaks the protocol (the widget shows why too). A
            resume the server refuses at once (``RUN_STARTED``, ``RUN_ERROR``)
            does not end the turn: nothing was resumed, so the interrupts
            reopen for new answers and the reason is shown.

        Raises:
            PendingPauseError: the current turn still waits for answers
                (AG-UI: new input on a thread with open interrupts is an
                error).
        """
        prior = self.current
        if prior is not None and prior.task is not None and not prior.task.done():
            raise PendingPauseError(
                "The remote agent still waits on the previous message"
                + (" (answer its open interrupts first)." if prior.status == "paused" else ".")
            )
        turn = RemoteTurn(prompt=message)
        from ..widgets.reply import ReplyWidget

        turn.widget = ReplyWidget(
            handler=lambda msg, _turn=turn: self._on_action(_turn, msg),
            agent_name=self.agent_name,
            prompt=message,
        )
        if self.display:
            try:
                from IPython.display import display

                display(turn.widget)
            except Exception:  # noqa: BLE001 - outside IPython
                pass
        self.turns.append(turn)
        user = UserMessage(id=f"msg-{uuid.uuid4().hex}", content=message, name=self.user_name)
        turn.task = asyncio.get_running_loop().create_task(self._drive(turn, user))
        return turn.task

    async def run(self, message: str) -> str:
        """:meth:`start` and await the turn's final text (clicks in the
        widget are handled while the cell awaits).

        Raises:
            PendingPauseError: see :meth:`start`.
            RemoteRunError: the turn ended in an error.
        """
        return await self.start(message)

    async def until_paused(self) -> list[dict[str, Any]]:
        """Wait until the current turn is paused on interrupts or ended.

        Returns:
            the open pause views (empty when the turn ended).
        """
        turn = self.current
        if turn is None:
            return []
        await turn.settled.wait()
        return turn.open_pauses() if turn.status == "paused" else []

    def act(self, message: dict[str, Any]) -> Awaitable[dict[str, Any]]:
        """Answer as the widget would (``{"action", "tool_call_id", ...}``):
        the same handler, the same checks. Await the result.

        Returns:
            an awaitable of ``{"status": "decided", "decision": ...,
            "sent": bool}`` (``sent``: this answer completed the set and the
            resume is on its way).

        Raises:
            NbHitlError: (when awaited) the refusal the widget would show.
        """
        turn = self.current
        if turn is None:
            raise PauseNotLiveError("Nothing has run yet.")
        return self._on_action(turn, message)

    def send_resume(self) -> list[ResumeEntry]:
        """Send the answers given so far as one resume (for
        ``auto_send=False``).

        Raises:
            ResumeError: an interrupt is not answered, or an answer no
                longer passes :func:`~nb_hitl.agui.mapping.check_resume`.
        """
        turn = self._paused_turn()
        entries = [turn.answers[i] for i in turn.interrupts if i in turn.answers]
        self._queue_resume(turn, entries)
        return entries

    def resume(self, entries: Sequence[ResumeEntry]) -> None:
        """Send hand-written resume entries for the paused run.

        They are checked first against the interrupts received
        (:func:`~nb_hitl.agui.mapping.check_resume`): nothing is sent when
        an id is unknown, missing or repeated, a resolved entry is past its
        ``expires_at``, or a payload breaks its ``response_schema``.

        Raises:
            ResumeError: the check failed (``code`` says which rule).
            PauseNotLiveError: the turn is not paused.
        """
        turn = self._paused_turn()
        entries = list(entries)
        self._queue_resume(turn, entries)
        by_id = {e.interrupt_id: e for e in entries}
        for view in turn.pauses.values():
            entry = by_id.get(view["interrupt_id"])
            if entry is not None and view["status"] == "open":
                view["status"] = "decided"
                view["decision"] = (
                    {"action": "cancel"}
                    if entry.status == "cancelled"
                    else {"action": "submit", "value": entry.payload}
                )
        self._push(turn, force=True)

    # ------------------------------------------------------------ internals
    def _paused_turn(self) -> RemoteTurn:
        turn = self.current
        if turn is None or turn.status != "paused":
            raise PauseNotLiveError("The remote agent is not paused on interrupts.")
        if turn.outbox is not None or turn.resume_ready.is_set():
            raise AlreadyDecidedError("A resume for this run is already on its way.")
        return turn

    def _queue_resume(self, turn: RemoteTurn, entries: list[ResumeEntry]) -> None:
        check_resume(list(turn.interrupts.values()), entries, now=self.clock())
        turn.outbox = entries
        turn.settled.clear()
        turn.resume_ready.set()

    def _on_action(self, turn: RemoteTurn, message: Any) -> Awaitable[dict[str, Any]]:
        """The widget's handler. It returns a coroutine: ``RequestWidget``
        runs it on the loop that owns the widget (the loop driving the turn),
        so answers and the resume signal never cross threads even when the
        kernel dispatches the comm message elsewhere."""
        return self._act(turn, message)

    async def _act(self, turn: RemoteTurn, message: Any) -> dict[str, Any]:
        if not isinstance(message, dict):
            raise DecisionError("A page message must be a JSON object.")
        action = message.get("action")
        if action == "interrupt":
            return self._cancel_all(turn)
        if turn is not self.current or turn.status != "paused":
            raise PauseNotLiveError(
                "This turn is not waiting for answers"
                + (f" ({turn.status}{': ' + turn.reason if turn.reason else ''})." if turn.status else ".")
            )
        key = message.get("tool_call_id")
        view = turn.pauses.get(key) if isinstance(key, str) else None
        if view is None:
            raise DecisionError(f"The paused run has no interrupt {str(key)[:80]!r}.", field="tool_call_id")
        reply_id = message.get("reply_id")
        if reply_id is not None and reply_id != view["reply_id"]:
            raise DecisionError(
                f"This answer names run {str(reply_id)[:80]!r}, not {view['reply_id']!r}.", field="reply_id"
            )
        if view["status"] != "open":
            raise AlreadyDecidedError(f"Already answered: {view['tool_name']} ({view['interrupt_id']}).")
        if turn.outbox is not None or turn.resume_ready.is_set():
            raise AlreadyDecidedError("The answers of this run are already being sent.")
        interrupt = turn.interrupts[view["interrupt_id"]]
        deadline = parse_expires_at(interrupt.expires_at)
        if deadline is not None and self.clock() > deadline and action not in ("cancel", "return_error"):
            raise PauseNotLiveError(
                f"This interrupt expired at {interrupt.expires_at}; it can only be cancelled now.", field=None
            )
        entry = message_to_entry(interrupt, message)
        answers = {**turn.answers, interrupt.id: entry}
        complete = all(i in answers for i in turn.interrupts)
        if complete and self.auto_send:
            ordered = [answers[i] for i in turn.interrupts]
            check_resume(list(turn.interrupts.values()), ordered, now=self.clock())
        turn.answers = answers
        view["status"] = "decided"
        view["decision"] = _summary(entry, message, view)
        sent = False
        if complete and self.auto_send:
            turn.outbox = [answers[i] for i in turn.interrupts]
            turn.settled.clear()
            turn.resume_ready.set()
            sent = True
        self._push(turn, force=True)
        return {"status": "decided", "decision": view["decision"], "sent": sent}

    def _cancel_all(self, turn: RemoteTurn) -> dict[str, Any]:
        if turn is not self.current or turn.status != "paused":
            raise PauseNotLiveError(
                "A remote run cannot be stopped from here while it runs (AG-UI has no cancel request); "
                "it can be cancelled when it pauses on interrupts."
            )
        if turn.outbox is not None or turn.resume_ready.is_set():
            raise AlreadyDecidedError("The answers of this run are already being sent.")
        entries = [ResumeEntry(interrupt_id=i, status="cancelled") for i in turn.interrupts]
        self._queue_resume(turn, entries)
        for view in turn.pauses.values():
            if view["status"] == "open":
                view["status"] = "decided"
                view["decision"] = {"action": "cancel"}
        self._push(turn, force=True)
        return {"status": "cancelling"}

    def _push(self, turn: RemoteTurn, force: bool = False) -> None:
        widget = turn.widget
        if widget is None:
            return
        now = time.monotonic()
        if not force and now - getattr(turn, "_last_push", 0.0) < 0.03:
            return
        turn._last_push = now  # type: ignore[attr-defined]
        try:
            # the transcript first, in its own update: the page places each
            # card in its tool call's entry, which must exist by then
            widget.transcript = [dict(e) for e in turn.transcript]
            with widget.hold_sync():
                widget.pauses = [dict(p) for p in turn.pauses.values()]
                widget.status = turn.status
                widget.status_reason = turn.reason
                widget.final_text = turn.final_text
                if turn.runs:
                    widget.reply_id = turn.runs[-1].run_id
        except Exception:  # noqa: BLE001 - a closed comm must not stop the turn
            pass

    async def _drive(self, turn: RemoteTurn, user: UserMessage) -> str:
        try:
            self.messages = [*self.messages, user]
            await self._one_run(turn, None)
            while turn.status == "paused":
                turn.settled.set()
                await turn.resume_ready.wait()
                entries = turn.outbox or []
                turn.resume_ready.clear()
                turn.outbox = None
                turn.settled.clear()
                await self._one_run(turn, entries)
        except asyncio.CancelledError:
            turn.status, turn.reason = "interrupted", "The turn was cancelled in the notebook."
            raise
        except Exception as exc:
            turn.status, turn.reason = "error", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            for view in turn.pauses.values():
                if view["status"] == "open" and turn.status != "paused":
                    view["status"], view["reason"] = "expired", turn.reason or f"The turn {turn.status}."
            self._push(turn, force=True)
            turn.settled.set()
        if turn.status == "error":
            last = turn.runs[-1] if turn.runs else None
            raise RemoteRunError(turn.reason, code=last.error_code if last else None)
        return turn.final_text

    def _entry(self, turn: RemoteTurn, kind: str, key: str, **fields: Any) -> dict[str, Any]:
        for e in turn.transcript:
            if e["id"] == key:
                return e
        e = {"kind": kind, "id": key, "text": "", **fields}
        turn.transcript.append(e)
        return e

    async def _one_run(self, turn: RemoteTurn, resume: list[ResumeEntry] | None) -> None:
        inp = self.client.make_input(self.thread_id, self.messages, resume)
        record = RunRecord(run_id=inp.run_id, resume=resume)
        turn.runs.append(record)
        turn.status, turn.reason = "running", ""
        self._push(turn, force=True)
        started = False
        terminal = False
        snapshot = None
        streamed: list[Any] = []
        texts: dict[str, str] = {}
        calls_here: set[str] = set()
        last_chunk: str | None = None
        last_text = ""
        try:
            async for ev in self.client.stream(inp):
                record.events.append(ev)
                if terminal:
                    continue  # nothing may follow a terminal event; keep it only in the record
                t = ev.type
                if not started:
                    if t != EventType.RUN_STARTED or ev.thread_id != self.thread_id:
                        raise AguiClientError(
                            f"The run did not open with RUN_STARTED for thread {self.thread_id!r} (got {t.value})."
                        )
                    started = True
                    continue
                if t == EventType.TEXT_MESSAGE_START:
                    self._entry(turn, "text", ev.message_id)
                    texts.setdefault(ev.message_id, "")
                elif t in (EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_CHUNK):
                    mid = ev.message_id or (list(texts)[-1] if texts else f"text-{record.run_id}")
                    if ev.delta:
                        self._entry(turn, "text", mid)["text"] += ev.delta
                        texts[mid] = texts.get(mid, "") + ev.delta
                        last_text = texts[mid]
                elif t in (EventType.TOOL_CALL_START, EventType.TOOL_CALL_CHUNK) and ev.tool_call_id:
                    call = turn.tool_calls.setdefault(ev.tool_call_id, {"name": "", "args": ""})
                    e = self._entry(
                        turn, "tool_call", "call:" + ev.tool_call_id, name=call["name"], tool_call_id=ev.tool_call_id
                    )
                    if ev.tool_call_id not in calls_here:
                        # a peer may re-announce a call of an earlier run
                        # (ag-ui-langgraph does on resume): start it afresh
                        calls_here.add(ev.tool_call_id)
                        call["args"], e["text"] = "", ""
                    if ev.tool_call_name:
                        call["name"] = e["name"] = ev.tool_call_name
                    if t == EventType.TOOL_CALL_CHUNK:
                        last_chunk = ev.tool_call_id
                        if ev.delta:
                            call["args"] += ev.delta
                            e["text"] += ev.delta
                elif t == EventType.TOOL_CALL_CHUNK and last_chunk and ev.delta:
                    # a chunk without an id continues the call of the chunk before it
                    turn.tool_calls[last_chunk]["args"] += ev.delta
                    self._entry(turn, "tool_call", "call:" + last_chunk)["text"] += ev.delta
                elif t == EventType.TOOL_CALL_ARGS:
                    calls_here.add(ev.tool_call_id)
                    call = turn.tool_calls.setdefault(ev.tool_call_id, {"name": "", "args": ""})
                    call["args"] += ev.delta
                    self._entry(turn, "tool_call", "call:" + ev.tool_call_id, tool_call_id=ev.tool_call_id)["text"] += (
                        ev.delta
                    )
                elif t == EventType.TOOL_CALL_RESULT:
                    content = (
                        ev.content
                        if isinstance(ev.content, str)
                        else "".join(getattr(p, "text", "") for p in ev.content)
                    )
                    name = turn.tool_calls.get(ev.tool_call_id, {}).get("name", "")
                    e = self._entry(
                        turn,
                        "tool_result",
                        "result:" + ev.tool_call_id,
                        name=name,
                        tool_call_id=ev.tool_call_id,
                        state="done",
                    )
                    e["text"] = content
                    streamed.append(ToolMessage(id=ev.message_id, tool_call_id=ev.tool_call_id, content=content))
                elif t == EventType.MESSAGES_SNAPSHOT:
                    snapshot = list(ev.messages)
                    for m in snapshot:
                        if isinstance(m, ToolMessage) and m.error:
                            for e in turn.transcript:
                                if e["id"] == "result:" + m.tool_call_id:
                                    e["state"] = m.error
                elif t == EventType.RUN_FINISHED:
                    terminal = True
                    self._finished(turn, record, ev, last_text)
                elif t == EventType.RUN_ERROR:
                    terminal = True
                    record.outcome, record.error, record.error_code = "error", ev.message, ev.code
                    turn.status = "error"
                    turn.reason = ev.message + (f" ({ev.code})" if ev.code else "")
                self._push(turn)
            if not started or not terminal:
                raise AguiClientError("The stream ended without RUN_FINISHED or RUN_ERROR.")
        except AguiClientError as exc:
            record.outcome, record.error = "error", str(exc)
            turn.status, turn.reason = "error", str(exc)
        # history for the next run: the server's snapshot, else what streamed
        if snapshot is not None:
            self.messages = snapshot
        else:
            calls = [
                ToolCall(id=i, function=FunctionCall(name=c["name"], arguments=c["args"]))
                for i, c in turn.tool_calls.items()
                if i in calls_here
            ]
            text = "".join(texts.values())
            if text or calls:
                self.messages = [
                    *self.messages,
                    AssistantMessage(id=f"msg-{uuid.uuid4().hex}", content=text or None, tool_calls=calls or None),
                    *streamed,
                ]
        if resume is not None and record.outcome == "error" and len(record.events) <= 2:
            # Refused at once (RUN_STARTED, RUN_ERROR): the server resumed
            # nothing, so the interrupts are still open; let the person retry.
            turn.status = "paused"
            code = f" ({record.error_code})" if record.error_code else ""
            turn.reason = f"The server refused the answers{code}: {record.error}"
            turn.answers = {}
            for view in turn.pauses.values():
                if view["status"] == "decided":
                    view["status"], view["decision"] = "open", None
        self._push(turn, force=True)

    def _finished(self, turn: RemoteTurn, record: RunRecord, ev: Any, last_text: str) -> None:
        outcome = ev.outcome
        kind = getattr(outcome, "type", None) or "success"
        record.outcome = kind
        if kind == "interrupt":
            interrupts = list(outcome.interrupts)
            ids = [i.id for i in interrupts]
            if len(set(ids)) != len(ids):
                raise AguiClientError(
                    "The server's interrupt outcome repeats an interrupt id; it cannot be answered safely."
                )
            record.interrupts = interrupts
            for view in turn.pauses.values():
                if view["status"] in ("open", "decided"):
                    view["status"] = "delivered" if view["status"] == "decided" else "expired"
                    if view["status"] == "expired":
                        view["reason"] = "The server no longer waits for this answer."
            turn.interrupts = {i.id: i for i in interrupts}
            turn.answers = {}
            counts: dict[str, int] = {}
            for i in interrupts:
                if i.tool_call_id:
                    counts[i.tool_call_id] = counts.get(i.tool_call_id, 0) + 1
            for i in interrupts:
                key = i.tool_call_id if i.tool_call_id and counts[i.tool_call_id] == 1 else i.id
                if key in turn.pauses and turn.pauses[key].get("interrupt_id") != i.id:
                    turn.pauses.pop(key)
                call = turn.tool_calls.get(i.tool_call_id or "", {})
                turn.pauses[key] = interrupt_view(
                    i,
                    key=key,
                    run_id=record.run_id,
                    tool_call_text=call.get("args") or None,
                    tool_call_name=call.get("name") or None,
                )
            turn.status, turn.reason = "paused", ""
            return
        for view in turn.pauses.values():
            if view["status"] == "decided":
                view["status"] = "delivered"
        if kind == "cancelled":
            turn.status, turn.reason = "interrupted", "The agent cancelled the run."
            return
        turn.status = "finished"
        turn.final_text = ev.result if isinstance(ev.result, str) else last_text
