"""Drive one AgentScope agent inside the running kernel and show its pauses.

:class:`Session` consumes ``agent.reply_stream(...)`` on the kernel's own
asyncio loop (no loop patching), turns every ``RequireUserConfirmEvent`` /
``RequireExternalExecutionEvent`` into a :class:`~nb_hitl.pauses.Pause` shown
in a :class:`~nb_hitl.widgets.ReplyWidget`, and resumes the parked reply
exactly once per decision with AgentScope's own ``UserConfirmResultEvent``,
``ExternalExecutionResultEvent`` or ``UserInterruptEvent``.

Two ways to use it from a notebook cell, both seen working on ipykernel 7.4
(comm messages are dispatched while an async cell awaits):

* ``await session.run("...")``: the cell awaits until the reply ends; clicks
  are handled while it waits (case C10).
* ``session.start("...")``: returns an ``asyncio.Task`` at once; the reply
  goes on in the background and the widget updates itself.

The path of a click: page -> ``ReplyWidget`` -> :meth:`Session._on_action`
(synchronous: exactly-once check, pure :func:`~nb_hitl.decisions.decide`)
-> async checks (permission re-check of an edited input, the tool's own
external-result check) -> audit log (fsync) -> queue -> the driving task
resumes the agent. Every page message is answered.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentscope.event import (
    ExceedMaxItersEvent,
    ExternalExecutionResultEvent,
    ReplyEndEvent,
    ReplyStartEvent,
    RequireExternalExecutionEvent,
    RequireUserConfirmEvent,
    TextBlockDeltaEvent,
    TextBlockStartEvent,
    ToolCallDeltaEvent,
    ToolCallStartEvent,
    ToolResultEndEvent,
    ToolResultStartEvent,
    ToolResultTextDeltaEvent,
    UserConfirmResultEvent,
    UserInterruptEvent,
)
from agentscope.message import Msg, ToolCallBlock, ToolCallState, UserMsg
from agentscope.permission import PermissionEngine
from agentscope.state import AgentState

from ._agentscope import POLICY_CONTEXT_KEY
from .decisions import Decision, check_external_result, decide, recheck_permission
from .errors import AlreadyDecidedError, DecisionError, NbHitlError, PauseNotLiveError, PendingPauseError
from .pauses import Pause, build_pause
from .store import AuditLog, CheckpointStore

__all__ = ["Session", "ReplyRun", "close_dangling_tool_calls", "POLICY_CONTEXT_KEY"]

_SESSIONS: weakref.WeakKeyDictionary[Any, Session] = weakref.WeakKeyDictionary()

_TERMINAL = ("finished", "interrupted", "expired", "error")


def _state_value(state: Any) -> str:
    return getattr(state, "value", state)


def _msg_text(msg: Msg | None) -> str:
    if msg is None:
        return ""
    try:
        return msg.get_text_content() or ""
    except Exception:  # noqa: BLE001
        return str(msg.content)


_DANGLING_NOTE = (
    "<system-reminder>This tool call was interrupted: the process running it stopped before it "
    "returned a result, so it may or may not have taken effect.</system-reminder>"
)


def close_dangling_tool_calls(agent: Any) -> list[str]:
    """Give an ``interrupted`` result to tool calls left without one.

    A state restored after a crash mid-tool has a call in state ``allowed``
    (or ``pending``) and no result; AgentScope 2.0.11 then accepts a new
    message and sends the model a call without a result. This closes such
    calls in the agent's last message the way AgentScope's own interrupt
    path does (``Agent._close_unfinished_tool_calls``): state ``finished``
    plus a ``ToolResultBlock(state=INTERRUPTED)``. Calls that are parked on
    purpose (``asking``, ``submitted``) are left alone, and so are
    ``pending`` calls while the reply is parked: AgentScope leaves a call
    ``pending`` on purpose when it was de-duplicated in a concurrent batch or
    not reached yet in a sequential one, and re-checks it once the parked
    calls are answered (``Agent._next_action``).

    Returns:
        the ids of the calls closed.
    """
    from agentscope.message import ToolResultBlock, ToolResultState

    context = agent.state.context
    if not context:
        return []
    last = context[-1]
    if last.role != "assistant" or last.name != agent.name or isinstance(last.content, str):
        return []
    answered = {b.id for b in last.content if getattr(b, "type", None) == "tool_result"}
    closable = (ToolCallState.ALLOWED.value,)
    if not agent.state.has_awaiting_tool_calls(agent.name):
        closable += (ToolCallState.PENDING.value,)
    closed = []
    for block in list(last.content):
        if getattr(block, "type", None) != "tool_call" or block.id in answered:
            continue
        if _state_value(block.state) in closable:
            block.state = ToolCallState.FINISHED
            last.content.append(
                ToolResultBlock(id=block.id, name=block.name, output=_DANGLING_NOTE, state=ToolResultState.INTERRUPTED)
            )
            closed.append(block.id)
    return closed


@dataclass
class ReplyRun:
    """One reply of the agent as the session drives it.

    Attributes:
        reply_id: AgentScope's ``reply_id`` (known after ``REPLY_START``, or
            taken from the agent's state for a restored parked reply).
        widget: the inline view, or ``None`` when the session does not display.
        pauses: every pause seen in this reply, by ``tool_call`` id, in order.
        status: ``running`` | ``paused`` | ``finished`` | ``interrupted`` |
            ``expired`` | ``error``.
        final: the reply's final ``Msg`` once it ended.
        resumes: how many times the agent was resumed (one per event sent).
    """

    reply_id: str = ""
    prompt: str = ""
    widget: Any = None
    pauses: dict[str, Pause] = field(default_factory=dict)
    queue: list[Decision] = field(default_factory=list)
    interrupt_requested: bool = False
    status: str = "running"
    reason: str = ""
    final: Msg | None = None
    resumes: int = 0
    error: BaseException | None = None
    transcript: list[dict[str, Any]] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task | None = None

    @property
    def live(self) -> bool:
        """True while the reply can still take decisions."""
        return self.status not in _TERMINAL

    def open_pauses(self) -> list[Pause]:
        """Pauses still waiting for a decision."""
        return [p for p in self.pauses.values() if p.status == "open"]


class Session:
    """Drive an AgentScope ``Agent`` in the notebook's kernel.

    Args:
        agent: a real ``agentscope.agent.Agent``.
        display: show a :class:`~nb_hitl.widgets.ReplyWidget` for each reply
            in the current cell's output (``True``) or stay headless.
        audit_log: path (or :class:`~nb_hitl.store.AuditLog`) of a JSON-lines
            log; every decision is appended and fsynced before the agent is
            resumed.
        checkpoints: folder (or :class:`~nb_hitl.store.CheckpointStore`) where
            the agent's ``AgentState`` is written at every pause.
        session_id: the checkpoint's name; a fresh id when omitted.
        user_name: the ``name`` of user messages built from strings.
        deadline: seconds a pause stays open (like AG-UI's ``expires_at``);
            ``None`` (default) waits forever.
        on_deadline: what happens when it passes: ``"deny"`` (a confirmation
            is denied, an external call gets an ERROR result) or
            ``"interrupt"`` (the whole reply is interrupted). Either way the
            audit log records it and the widget says what happened.

    A new ``Session`` for an agent that already has one supersedes it: the
    old session's open pauses expire ("superseded") and refuse clicks, and
    the new one adopts the agent's parked reply (see :meth:`resume`).

    Raises:
        TypeError: ``agent`` does not look like an AgentScope ``Agent``.
    """

    def __init__(
        self,
        agent: Any,
        *,
        display: bool = True,
        audit_log: str | AuditLog | None = None,
        checkpoints: str | CheckpointStore | None = None,
        session_id: str | None = None,
        user_name: str = "user",
        deadline: float | None = None,
        on_deadline: str = "deny",
    ) -> None:
        if on_deadline not in ("deny", "interrupt"):
            raise ValueError(f"on_deadline must be 'deny' or 'interrupt', got {on_deadline!r}")
        if deadline is not None and not deadline > 0:
            raise ValueError(f"deadline must be a positive number of seconds, got {deadline!r}")
        if not hasattr(agent, "reply_stream") or not hasattr(agent, "state"):
            raise TypeError(f"Session needs an agentscope.agent.Agent, got {type(agent).__name__}")
        self.agent = agent
        self.display = display
        self.audit_log = (
            AuditLog(audit_log)
            if isinstance(audit_log, (str, bytes)) or hasattr(audit_log, "__fspath__")
            else audit_log
        )
        self.checkpoints = (
            CheckpointStore(checkpoints)
            if isinstance(checkpoints, (str, bytes)) or hasattr(checkpoints, "__fspath__")
            else checkpoints
        )
        self.session_id = session_id or f"session-{uuid.uuid4().hex[:12]}"
        self.user_name = user_name
        self.deadline = deadline
        self.on_deadline = on_deadline
        self.runs: list[ReplyRun] = []
        self.superseded_by: Session | None = None
        self._lock = threading.Lock()
        self._listeners: list[Callable[[str, ReplyRun], None]] = []
        self._event_listeners: list[Callable[[Any, ReplyRun], None]] = []
        # driving tasks of a superseded Session, still unwinding (cancelled)
        self._inherited: list[asyncio.Task] = []
        old = _SESSIONS.get(agent)
        if old is not None and old is not self:
            old._supersede(self)
        _SESSIONS[agent] = self

    # ------------------------------------------------------------------
    # public API
    # ------------------------------------------------------------------
    @property
    def current(self) -> ReplyRun | None:
        """The latest reply run, or ``None`` before the first."""
        return self.runs[-1] if self.runs else None

    @property
    def pending(self) -> list[Pause]:
        """Open pauses of the current reply (empty when nothing waits)."""
        run = self.current
        return run.open_pauses() if run and run.live else []

    def parked_tool_calls(self) -> list[ToolCallBlock]:
        """The agent's tool calls waiting for a person, from its state
        (``AgentState.get_awaiting_tool_calls``)."""
        return list(self.agent.state.get_awaiting_tool_calls(self.agent.name))

    async def run(self, message: str | Msg | list[Msg], *, interrupt_pending: bool = False) -> Msg:
        """Send a message and await the whole reply, answering pauses inline.

        Args:
            message: a string (sent as a user ``Msg``), a ``Msg`` or a list.
            interrupt_pending: when the agent is parked on open pauses,
                interrupt that reply first (``UserInterruptEvent``) instead
                of refusing.

        Returns:
            the reply's final ``Msg``.

        Raises:
            PendingPauseError: the agent is parked and ``interrupt_pending``
                is False (AgentScope would raise a bare ``ValueError``; C07).
            Exception: whatever the agent raised; the widget shows it too.
        """
        task = self.start(message, interrupt_pending=interrupt_pending)
        # Shielded: interrupting the cell (Kernel > Interrupt) stops waiting
        # here but does not cancel the reply, whose widget stays live.
        return await asyncio.shield(task)

    def start(self, message: str | Msg | list[Msg], *, interrupt_pending: bool = False) -> asyncio.Task:
        """Like :meth:`run`, but return the driving ``asyncio.Task`` at once.

        The cell returns; the reply continues on the kernel's loop and the
        widget updates itself. ``await`` the task for the final ``Msg``.

        Raises:
            PendingPauseError: see :meth:`run` (raised here, synchronously).
        """
        self._check_current()
        parked = self.parked_tool_calls()
        prior = self.current
        if (prior is not None and prior.task is not None and not prior.task.done()) or parked:
            if not interrupt_pending:
                names = ", ".join(f"{tc.name} ({tc.id})" for tc in parked) or "a running reply"
                shown = prior is not None and prior.live
                raise PendingPauseError(
                    f"The agent {self.agent.name!r} is still waiting on {names}. "
                    + (
                        "Answer the open pause(s) above"
                        if shown
                        else "No live widget shows them: `await session.resume()` shows them again"
                    )
                    + ", or call again with interrupt_pending=True to interrupt that reply first."
                )
        msgs = UserMsg(name=self.user_name, content=message) if isinstance(message, str) else message
        prompt = message if isinstance(message, str) else _msg_text(msgs if isinstance(msgs, Msg) else None)
        run = self._new_run(prompt=prompt)
        run.task = asyncio.get_running_loop().create_task(
            self._drive(run, msgs, interrupt_first=bool(interrupt_pending and (parked or prior)), prior=prior)
        )
        return run.task

    async def resume(self) -> Msg:
        """Adopt and drive a reply that is already parked in the agent's state
        (after :meth:`restore` or when this session superseded another):
        re-renders its open pauses and awaits the end of the reply.

        Raises:
            NbHitlError: the agent is not parked.
        """
        return await asyncio.shield(self.start_resume())

    def start_resume(self) -> asyncio.Task:
        """Like :meth:`resume` but returns the driving task at once."""
        self._check_current()
        parked = self.parked_tool_calls()
        if not parked:
            raise NbHitlError(f"The agent {self.agent.name!r} has no parked reply to resume.")
        run = self._new_run(prompt="(resumed)")
        run.reply_id = self.agent.state.reply_id
        self._push(run, reply_id=run.reply_id)
        run.task = asyncio.get_running_loop().create_task(self._drive(run, None, adopt=True))
        return run.task

    @classmethod
    def restore(
        cls,
        agent_factory: Callable[[Any], Any],
        checkpoints: str | CheckpointStore,
        session_id: str | None = None,
        **kwargs: Any,
    ) -> Session:
        """Rebuild a session after a kernel restart from its last checkpoint.

        Args:
            agent_factory: ``(state: AgentState) -> Agent``; must pass
                ``state=`` to the ``Agent`` constructor (replacing
                ``agent.state`` afterwards leaves the permission engine on
                the old rules, see AgentScope's ``Agent.__init__``).
            checkpoints: the checkpoint folder or store.
            session_id: which checkpoint; the newest when omitted.
            **kwargs: more :class:`Session` arguments (``audit_log``...).

        Returns:
            the session; call :meth:`resume` (or :meth:`start_resume`) to
            show the open pauses and continue.

        Raises:
            FileNotFoundError: no checkpoint.
        """
        store = checkpoints if isinstance(checkpoints, CheckpointStore) else CheckpointStore(checkpoints)
        if session_id is None:
            ids = store.sessions()
            if not ids:
                raise FileNotFoundError(f"No checkpoint in {store.folder}")
            session_id = ids[0]
        record = store.load(session_id)
        state = AgentState.model_validate_json(json.dumps(record["state"]))
        agent = agent_factory(state)
        close_dangling_tool_calls(agent)
        return cls(agent, checkpoints=store, session_id=session_id, **kwargs)

    async def interrupt(self, reason: str = "Interrupted by the user.") -> None:
        """Interrupt the current reply: a parked one gets AgentScope's
        ``UserInterruptEvent`` (every open call ends ``interrupted``); a
        running one has its driving task cancelled (AgentScope ends it
        ``interrupted``). Its open pauses expire with ``reason``."""
        run = self.current
        if run is None or not run.live:
            return
        self._request_interrupt(run, reason)
        if run.task is not None and not run.task.done():
            if run.status == "running":
                run.task.cancel()
            try:
                await asyncio.shield(run.task)
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass

    def act(self, message: dict[str, Any]) -> Any:
        """Take an action as the page would (``{"action", "tool_call_id", ...}``).

        The same path as a click: for programmatic answers and tests.
        Returns the handler's result (a coroutine for decisions: await it).

        Raises:
            NbHitlError: the refusal a widget would show.
        """
        run = self.current
        if run is None:
            raise PauseNotLiveError("Nothing has run yet.")
        return self._on_action(run, message)

    def audit_table(self) -> Any:
        """An :class:`~nb_hitl.widgets.AuditLogTable` of this session's audit log.

        Raises:
            NbHitlError: the session has no audit log.
        """
        if self.audit_log is None:
            raise NbHitlError("This Session has no audit_log; pass audit_log=PATH when creating it.")
        from .widgets.audit import AuditLogTable

        return AuditLogTable(self.audit_log)

    def on_event(self, listener: Callable[[Any, ReplyRun], None]) -> None:
        """Call ``listener(event, run)`` for every item of ``agent.reply_stream``
        this session consumes (AgentScope's ``AgentEvent``s and the final
        ``Msg``), in order, before nb_hitl acts on it. Used by the AG-UI server
        to translate the stream; a listener that raises is ignored."""
        self._event_listeners.append(listener)

    def on_change(self, listener: Callable[[str, ReplyRun], None]) -> None:
        """Call ``listener(kind, run)`` on ``"pause"``, ``"decision"`` and
        ``"end"`` (used by the AG-UI server and the permission explorer)."""
        self._listeners.append(listener)

    # ------------------------------------------------------------------
    # runs and widgets
    # ------------------------------------------------------------------
    def _check_current(self) -> None:
        if self.superseded_by is not None:
            raise PauseNotLiveError("This Session was superseded by a newer Session for the same agent; use that one.")

    def _new_run(self, prompt: str) -> ReplyRun:
        run = ReplyRun(prompt=prompt)
        if self.display:
            from .widgets.reply import ReplyWidget

            run.widget = ReplyWidget(
                handler=lambda msg, _run=run: self._on_action(_run, msg),
                agent_name=self.agent.name,
                prompt=prompt,
            )
            try:
                from IPython.display import display

                display(run.widget)
            except Exception:  # noqa: BLE001 - outside IPython
                pass
        self.runs.append(run)
        return run

    def _push(self, run: ReplyRun, **traits: Any) -> None:
        """Send the run's view to its widget (trait assignment = one comm update)."""
        if run.widget is None:
            return
        # transcript first: a pause card goes under its tool call's entry
        traits.setdefault("transcript", [dict(e) for e in run.transcript])
        traits.setdefault("pauses", [p.to_view() for p in run.pauses.values()])
        traits.setdefault("status", run.status)
        traits.setdefault("status_reason", run.reason)
        try:
            with run.widget.hold_sync():
                for name, value in traits.items():
                    setattr(run.widget, name, value)
        except Exception:  # noqa: BLE001 - a closed comm must not stop the agent
            pass

    def _notify(self, kind: str, run: ReplyRun) -> None:
        for listener in list(self._listeners):
            try:
                listener(kind, run)
            except Exception:  # noqa: BLE001
                pass

    def _expire(self, run: ReplyRun, status: str, reason: str) -> None:
        for pause in run.pauses.values():
            if pause.status in ("open", "deciding"):
                pause.status = "expired"
                pause.reason = reason
        for decision in run.queue:
            # recorded, but the reply ended before it reached the agent
            pause = run.pauses.get(decision.tool_call_id)
            if pause is not None:
                pause.status = "expired"
                pause.reason = f"Decided, but the reply ended before the agent got it: {reason}"
            if self.audit_log is not None:
                self.audit_log.append(
                    {
                        "session_id": self.session_id,
                        "agent": self.agent.name,
                        "reply_id": run.reply_id,
                        "tool_call_id": decision.tool_call_id,
                        "tool_name": pause.tool_name if pause else None,
                        "decision": "discarded",
                        "reason": reason,
                    }
                )
        run.queue = []
        run.status = status
        run.reason = reason
        run.wake.set()
        self._push(run)

    def _discard_unapplied(self, run: ReplyRun) -> None:
        """Decisions handed to the agent whose reply stopped before AgentScope
        applied them: the call still waits in the agent's state, so the
        decision never took effect. Say so in the audit log (``discarded``);
        a Session that adopts the reply asks for the call again."""
        awaiting = {tc.id for tc in self.parked_tool_calls()}
        for pause in run.pauses.values():
            if pause.status == "delivered" and pause.tool_call_id in awaiting:
                pause.status = "expired"
                pause.reason = "Decided, but the reply stopped before the agent applied the decision."
                self._audit_pause(pause, decision="discarded", reason=pause.reason)
        self._push(run)

    def _supersede(self, newer: Session) -> None:
        self.superseded_by = newer
        newer._inherited.extend(r.task for r in self.runs if r.task is not None and not r.task.done())
        for run in self.runs:
            if run.live:
                if run.task is not None and not run.task.done():
                    run.task.cancel()
                self._expire(run, "expired", "Superseded by a newer Session for this agent.")

    def _request_interrupt(self, run: ReplyRun, reason: str) -> None:
        run.interrupt_requested = True
        run.reason = reason
        for pause in run.pauses.values():
            if pause.status in ("open", "deciding"):
                pause.status = "expired"
                pause.reason = reason
        run.wake.set()
        self._push(run)

    # ------------------------------------------------------------------
    # the page's actions
    # ------------------------------------------------------------------
    def _on_action(self, run: ReplyRun, message: Any) -> Any:
        """Handle one page message for ``run`` (runs in the comm handler).

        Synchronous part: shape, liveness, exactly-once, pure decision.
        Returns a coroutine for the async part (checks, audit, queue).
        """
        if not isinstance(message, dict):
            raise DecisionError("A page message must be a JSON object.")
        action = message.get("action")
        if action == "interrupt":
            if not run.live:
                raise PauseNotLiveError(f"This reply is already {run.status}: {run.reason or 'nothing to interrupt'}")
            # a coroutine: the widget runs it on the session's loop, whatever
            # thread delivered the comm message (asyncio objects are not
            # thread-safe)
            return self._interrupt_from_page(run)
        tool_call_id = message.get("tool_call_id")
        if not isinstance(tool_call_id, str) or not tool_call_id:
            raise DecisionError("The message names no tool_call_id.", field="tool_call_id")
        with self._lock:
            pause = run.pauses.get(tool_call_id)
            if pause is None:
                raise DecisionError(f"This reply has no open tool call {tool_call_id[:80]!r}.", field="tool_call_id")
            reply_id = message.get("reply_id")
            if reply_id is not None and reply_id != pause.reply_id:
                raise DecisionError(
                    f"This decision names reply {str(reply_id)[:80]!r}, but the tool call belongs to "
                    f"reply {pause.reply_id!r}.",
                    field="reply_id",
                )
            if pause.decision is not None and pause.decision.get("action") == "timeout":
                raise PauseNotLiveError(
                    f"The deadline of this pause passed; {pause.decision.get('applied') or 'the default was applied'}."
                )
            if pause.status in ("deciding", "decided", "delivered"):
                raise AlreadyDecidedError(
                    f"Already decided: {pause.tool_name} ({tool_call_id}) has its decision"
                    + (f" ({pause.decision.get('action')})." if pause.decision else ".")
                )
            if pause.status == "expired" or not run.live or self.superseded_by is not None:
                raise PauseNotLiveError(
                    f"This pause is no longer live: {pause.reason or run.reason or 'the reply ended'}"
                )
            if pause.deadline is not None and time.time() > pause.deadline:
                raise PauseNotLiveError("The deadline of this pause has passed.")
            decision = decide(pause, message)
            pause.status = "deciding"
        self._push(run)
        return self._finish_decision(run, pause, decision)

    async def _interrupt_from_page(self, run: ReplyRun) -> dict[str, Any]:
        if not run.live:
            raise PauseNotLiveError(f"This reply is already {run.status}: {run.reason or 'nothing to interrupt'}")
        was_running = run.status == "running"
        self._request_interrupt(run, "Interrupted from the widget.")
        if was_running and run.task is not None and not run.task.done():
            run.task.cancel()
        return {"status": "interrupting"}

    async def _finish_decision(self, run: ReplyRun, pause: Pause, decision: Decision) -> dict[str, Any]:
        try:
            tool = await self.agent.toolkit.get_tool(pause.tool_name)
            if decision.edited_input is not None and tool is not None:
                await recheck_permission(self._engine(), tool, decision.edited_input)
            if decision.tool_result is not None and decision.tool_result.state == "success":
                await check_external_result(tool, decision.tool_result)
            if not run.live or pause.status != "deciding":
                raise PauseNotLiveError(
                    f"This pause is no longer live: {pause.reason or run.reason or 'the reply ended'}"
                )
            self._audit(pause, decision)
        except BaseException:
            if pause.status == "deciding":
                pause.status = "open"
                self._push(run)
            raise
        pause.status = "decided"
        pause.decision = decision.summary()
        run.queue.append(decision)
        run.wake.set()
        self._push(run)
        self._notify("decision", run)
        return {"status": "decided", "decision": pause.decision}

    def _engine(self) -> PermissionEngine:
        # The agent's engine holds the PermissionContext it was built with
        # (Agent.__init__); a new engine over that same context sees every
        # rule added since, including rules accepted through "Always allow".
        engine = getattr(self.agent, "_engine", None)
        context = getattr(engine, "context", None) or self.agent.state.permission_context
        return PermissionEngine(context)

    def _audit_pause(self, pause: Pause, **fields: Any) -> None:
        """Append one audit record about ``pause`` (fsynced; see :class:`AuditLog`)."""
        if self.audit_log is None:
            return
        self.audit_log.append(
            {
                "session_id": self.session_id,
                "agent": self.agent.name,
                "reply_id": pause.reply_id,
                "tool_call_id": pause.tool_call_id,
                "tool_name": pause.tool_name,
                "kind": pause.kind,
                "original_input": pause.input if pause.input is not None else pause.tool_call.input,
                "policy": pause.policy,
                **fields,
            }
        )

    def _audit(self, pause: Pause, decision: Decision) -> None:
        summary = decision.summary()
        self._audit_pause(
            pause,
            edited_input=decision.edited_input,
            decision=decision.action,
            confirmed=summary.get("confirmed"),
            accepted_rules=summary.get("accepted_rules", []),
            answers=summary.get("answers"),
            output=summary.get("output"),
        )

    # ------------------------------------------------------------------
    # driving the agent
    # ------------------------------------------------------------------
    async def _drive(
        self,
        run: ReplyRun,
        first_input: Any,
        *,
        interrupt_first: bool = False,
        prior: ReplyRun | None = None,
        adopt: bool = False,
    ) -> Msg:
        try:
            if interrupt_first:
                await self._interrupt_parked(prior)
            for old_task in self._inherited:
                # a superseded Session's reply is still unwinding: two
                # reply_stream calls must never overlap on one agent
                if not old_task.done():
                    await asyncio.wait([old_task])
            if not adopt:
                # only now: a reply still running until the interrupt above
                # has its running call closed by AgentScope itself, and
                # closing it here first would give it two results
                close_dangling_tool_calls(self.agent)
            inp = first_input
            if adopt:
                await self._sync_pauses(run)
                inp = await self._next_input(run)
            while True:
                if inp is not None:
                    await self._consume(run, inp)
                if run.status in _TERMINAL:
                    break
                if not self.agent.state.has_awaiting_tool_calls(self.agent.name):
                    # The stream ended without REPLY_END and nothing waits
                    run.status = "finished"
                    break
                await self._sync_pauses(run)
                inp = await self._next_input(run)
                if inp is None:
                    break
        except asyncio.CancelledError:
            self._discard_unapplied(run)
            if run.live:  # a superseded run is already "expired": keep that
                if self.agent.state.has_awaiting_tool_calls(self.agent.name) and not run.interrupt_requested:
                    # cancelled while parked, not interrupted on purpose: the
                    # agent still waits, and a new driver can adopt the reply
                    self._expire(
                        run,
                        "expired",
                        "The task driving this reply was cancelled while the agent waited; "
                        "`await session.resume()` shows its open pauses again.",
                    )
                else:
                    self._expire(run, "interrupted", run.reason or "The reply was cancelled.")
            self._notify("end", run)
            raise
        except BaseException as exc:
            self._discard_unapplied(run)
            run.error = exc
            self._expire(run, "error", f"{type(exc).__name__}: {exc}")
            self._notify("end", run)
            raise
        if run.status not in _TERMINAL:
            run.status = "finished"
        self._expire(run, run.status, run.reason or f"The reply {run.status}.")
        self._push(run, final_text=_msg_text(run.final))
        self._notify("end", run)
        return run.final  # type: ignore[return-value]

    async def _interrupt_parked(self, prior: ReplyRun | None) -> None:
        if prior is not None and prior.live:
            was_running = prior.status == "running"
            self._request_interrupt(prior, "Interrupted: a new message was sent to the agent.")
            if prior.task is not None and not prior.task.done():
                if was_running:
                    prior.task.cancel()
                try:
                    await asyncio.shield(prior.task)
                except (asyncio.CancelledError, Exception):  # noqa: BLE001
                    pass
        if self.agent.state.has_awaiting_tool_calls(self.agent.name):
            async for _ in self.agent.reply_stream(UserInterruptEvent(reply_id=self.agent.state.reply_id)):
                pass

    async def _next_input(self, run: ReplyRun) -> Any:
        """Wait for decisions and build the next resume event.

        Confirmations and external results go in separate events (each is
        one AgentScope input); all queued decisions of a kind go together.
        """
        while True:
            if run.interrupt_requested:
                run.interrupt_requested = False
                return UserInterruptEvent(reply_id=run.reply_id)
            if run.status in _TERMINAL:
                return None
            confirms = [d for d in run.queue if d.confirm_result is not None]
            externals = [d for d in run.queue if d.tool_result is not None]
            if confirms or externals:
                batch = confirms or externals
                run.queue = [d for d in run.queue if d not in batch]
                for d in batch:
                    run.pauses[d.tool_call_id].status = "delivered"
                run.resumes += 1
                if confirms:
                    return UserConfirmResultEvent(
                        reply_id=run.reply_id, confirm_results=[d.confirm_result for d in confirms]
                    )
                return ExternalExecutionResultEvent(
                    reply_id=run.reply_id, execution_results=[d.tool_result for d in externals]
                )
            run.status = "paused"
            self._push(run)
            run.wake.clear()
            await run.wake.wait()

    async def _sync_pauses(self, run: ReplyRun) -> None:
        """Make the run's pauses match the agent's awaiting tool calls.

        AgentScope re-sends no event for calls left open after a partial
        answer, and a restored state has no events at all: the state is the
        source of truth."""
        awaiting = self.parked_tool_calls()
        if awaiting and not run.reply_id:
            run.reply_id = self.agent.state.reply_id
        for tc in awaiting:
            if tc.id not in run.pauses or run.pauses[tc.id].status in ("delivered",):
                await self._add_pause(run, tc)
        run.status = "paused"
        self._checkpoint()
        self._push(run, reply_id=run.reply_id)

    async def _add_pause(self, run: ReplyRun, tool_call: ToolCallBlock) -> Pause:
        tool = await self.agent.toolkit.get_tool(tool_call.name)
        permission = None
        if _state_value(tool_call.state) == ToolCallState.ASKING.value and tool is not None:
            try:
                permission = await self._engine().check_permission(tool, json.loads(tool_call.input or "{}"))
            except Exception:  # noqa: BLE001 - the message is informative only
                permission = None
        pause = build_pause(run.reply_id or self.agent.state.reply_id, tool_call, tool, permission)
        policies = self.agent.state.middle_context.get(POLICY_CONTEXT_KEY, {})
        if isinstance(policies, dict) and tool_call.id in policies:
            pause.policy = str(policies[tool_call.id])
            from .policy import describe_policy_pause  # the engine alone does not see the policy

            describe_policy_pause(self.agent, pause)
        # An external tool may take over its pause (nb_hitl's reviewed tools
        # and structured questions): ``async prepare_pause(pause, session)``
        # may set the kind, the result to review or a response schema.
        prepare = getattr(tool, "prepare_pause", None)
        if prepare is not None and pause.kind != "confirm":
            await prepare(pause, self)
        if self.deadline is not None:
            pause.deadline = pause.created_at + self.deadline
            loop = asyncio.get_running_loop()
            loop.call_later(self.deadline, self._deadline_passed, run, pause)
        run.pauses[pause.tool_call_id] = pause
        self._notify("pause", run)
        return pause

    def _deadline_passed(self, run: ReplyRun, pause: Pause) -> None:
        """Apply the configured default to a pause whose deadline passed."""
        with self._lock:
            if pause.status != "open" or not run.live or run.pauses.get(pause.tool_call_id) is not pause:
                return
            if self.on_deadline == "interrupt":
                pause.status = "deciding"
            else:
                message = (
                    {"action": "deny", "tool_call_id": pause.tool_call_id}
                    if pause.kind == "confirm"
                    else {
                        "action": "return_error",
                        "tool_call_id": pause.tool_call_id,
                        "message": "The user did not answer before the deadline.",
                    }
                )
                decision = decide(pause, message)
                pause.status = "deciding"
        applied = (
            "reply interrupted"
            if self.on_deadline == "interrupt"
            else ("denied" if pause.kind == "confirm" else "error returned to the agent")
        )
        self._audit_pause(pause, decision="timeout", applied=applied)
        pause.decision = {"action": "timeout", "applied": applied}
        if self.on_deadline == "interrupt":
            pause.status = "expired"
            pause.reason = "The deadline passed; the reply was interrupted."
            self._request_interrupt(run, "The deadline of a pause passed; the reply was interrupted.")
        else:
            pause.status = "decided"
            run.queue.append(decision)
            run.wake.set()
            self._push(run)
        self._notify("decision", run)

    def _checkpoint(self) -> None:
        if self.checkpoints is None:
            return
        self.checkpoints.save(self.session_id, self.agent.name, self.agent.state.model_dump_json())

    checkpoint = _checkpoint  # PauseHost.checkpoint (nb_hitl.kinds); the session branch makes it public

    async def _consume(self, run: ReplyRun, inp: Any) -> None:
        """Consume one ``reply_stream`` call into the transcript and pauses."""
        run.status = "running"
        self._push(run)
        entries = {e["id"]: e for e in run.transcript if "id" in e}
        dirty = False
        last_push = 0.0

        def call_name(tool_call_id: str) -> str:
            pause = run.pauses.get(tool_call_id)
            if pause is not None:
                return pause.tool_name
            call = entries.get("call:" + tool_call_id)
            return call.get("name", "") if call else ""

        def entry(kind: str, key: str, **fields: Any) -> dict[str, Any]:
            e = entries.get(key)
            if e is None:
                e = {"kind": kind, "id": key, "text": "", **fields}
                entries[key] = e
                run.transcript.append(e)
            return e

        async for ev in self.agent.reply_stream(inp, yield_final_msg=True):
            for listener in self._event_listeners:
                try:
                    listener(ev, run)
                except Exception:  # noqa: BLE001 - a listener never stops the agent
                    pass
            if isinstance(ev, Msg):
                run.final = ev
                continue
            if isinstance(ev, ReplyStartEvent):
                run.reply_id = ev.reply_id
                self._push(run, reply_id=ev.reply_id)
            elif isinstance(ev, TextBlockStartEvent):
                entry("text", ev.block_id)
            elif isinstance(ev, TextBlockDeltaEvent):
                entry("text", ev.block_id)["text"] += ev.delta
                dirty = True
            elif isinstance(ev, ToolCallStartEvent):
                entry("tool_call", "call:" + ev.tool_call_id, name=ev.tool_call_name, tool_call_id=ev.tool_call_id)
                dirty = True
            elif isinstance(ev, ToolCallDeltaEvent):
                entry("tool_call", "call:" + ev.tool_call_id, tool_call_id=ev.tool_call_id)["text"] += ev.delta
                dirty = True
            elif isinstance(ev, ToolResultStartEvent):
                entry(
                    "tool_result",
                    "result:" + ev.tool_call_id,
                    name=ev.tool_call_name,
                    tool_call_id=ev.tool_call_id,
                    state="running",
                )
                dirty = True
            elif isinstance(ev, ToolResultTextDeltaEvent):
                entry(
                    "tool_result",
                    "result:" + ev.tool_call_id,
                    tool_call_id=ev.tool_call_id,
                    name=call_name(ev.tool_call_id),
                )["text"] += ev.delta
                dirty = True
            elif isinstance(ev, ToolResultEndEvent):
                e = entry(
                    "tool_result",
                    "result:" + ev.tool_call_id,
                    tool_call_id=ev.tool_call_id,
                    name=call_name(ev.tool_call_id),
                )
                e["state"] = _state_value(ev.state)
                pause = run.pauses.get(ev.tool_call_id)
                if pause is not None and pause.status in ("decided", "delivered"):
                    pause.status = "delivered"
                dirty = True
            elif isinstance(ev, (RequireUserConfirmEvent, RequireExternalExecutionEvent)):
                run.reply_id = ev.reply_id
                for tc in ev.tool_calls:
                    await self._add_pause(run, tc)
                dirty = True
            elif isinstance(ev, ExceedMaxItersEvent):
                run.transcript.append(
                    {
                        "kind": "note",
                        "id": f"note:{len(run.transcript)}",
                        "text": "The agent reached its iteration limit.",
                    }
                )
                dirty = True
            elif isinstance(ev, ReplyEndEvent) and run.live:
                reason = _state_value(ev.finished_reason)
                run.status = "interrupted" if reason == "interrupted" else "finished"
                if ev.error is not None:
                    run.status = "error"
                    run.reason = str(getattr(ev.error, "message", ev.error))
                dirty = True
            now = time.monotonic()
            if dirty and now - last_push > 0.03:
                self._push(run)
                dirty = False
                last_push = now
        self._push(run)
