"""Drive one AgentScope agent inside the running kernel and show its pauses.

:class:`Session` consumes ``agent.reply_stream(...)`` on the kernel's own
asyncio loop (no loop patching), turns every ``RequireUserConfirmEvent`` /
``RequireExternalExecutionEvent`` into a :class:`~nb_hitl.pauses.Pause` shown
in a :class:`~nb_hitl.widgets.ReplyWidget`, and resumes the parked reply
exactly once per decision with AgentScope's own events.

* ``await session.run("...")``: the cell awaits until the reply ends; clicks
  are handled while it waits (comm messages are dispatched while an async
  cell awaits, ipykernel 7.4).
* ``session.start("...")``: returns an ``asyncio.Task`` at once.

The parts: ``_run`` (run state, pause transitions), ``_drive`` (the stream,
checkpoints), ``_actions`` (clicks, deadlines), ``_transcript``, ``_calls``
(awaitables that say how to use them), ``_core`` (shared bits).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentscope.message import Msg, UserMsg

from .._agentscope import POLICY_CONTEXT_KEY, msg_text
from ..answers.lifecycle import PauseTransitionError, transition
from ..audit.checked import install_checked, remove_checked
from ..errors import NbHitlError, PauseNotLiveError, PendingPauseError
from ..notify import Notices, Notify
from ..pauses import Pause
from ..shell_policy import install_shell_rules
from ..store import AuditLog, CheckpointLock, CheckpointStore, current_user
from ..team import Team
from ._actions import Desk
from ._calls import PendingAction, ReplyCall, ReplyTask, install_kernel_hints
from ._closing import close_dangling_tool_calls
from ._drive import Driver
from ._names import called
from ._promise import allowed_decisions, install_guard
from ._recording import Recording
from ._replay import Replaying
from ._restore import reopen
from ._run import ReplyRun, pending_message
from ._transcript import Transcript

__all__ = [
    "Session",
    "ReplyRun",
    "Transcript",
    "ReplyCall",
    "ReplyTask",
    "PendingAction",
    "PauseTransitionError",
    "transition",
    "close_dangling_tool_calls",
    "POLICY_CONTEXT_KEY",
    "Recording",
]

log = logging.getLogger("nb_hitl.session")

_SESSIONS: weakref.WeakKeyDictionary[Any, Session] = weakref.WeakKeyDictionary()
_BY_CHECKPOINT: weakref.WeakValueDictionary[str, Session] = weakref.WeakValueDictionary()


class Session(Replaying, Driver):
    """Drive an AgentScope ``Agent`` in the notebook's kernel.

    Args:
        agent: a real ``agentscope.agent.Agent``, or an AgentScope
            ``TeamPipeline`` / ``GoalPipeline``: the members' pauses are shown
            too, each naming the agent that asks (:mod:`nb_hitl.team`);
            ``session.agent`` is then the leader (the executor).
        display: show a :class:`~nb_hitl.widgets.ReplyWidget` for each reply
            in the current cell's output (``True``) or stay headless.
        audit_log: path (or :class:`~nb_hitl.store.AuditLog`) of a JSON-lines
            log; every decision is appended and fsynced before the agent is
            resumed, and every tool call's permission check is recorded
            too, asked or not (:mod:`nb_hitl.audit.checked`). Each line is
            chained and sealed (:func:`nb_hitl.audit.verify`).
        checkpoints: folder (or :class:`~nb_hitl.store.CheckpointStore`) where
            the agent's ``AgentState`` is written (signed) at every pause,
            before and after every tool call and when a reply ends.
        session_id: the checkpoint's name; a fresh id when omitted.
        user_name: the ``name`` of user messages built from strings.
        deadline: seconds a pause stays open (like AG-UI's ``expires_at``);
            ``None`` (default) waits forever.
        on_deadline: what happens when it passes: ``"deny"`` (a confirmation
            is denied, an external call gets an ERROR result) or
            ``"interrupt"`` (the whole reply is interrupted). Either way the
            audit log records it and the widget says what happened.
        decided_by: who answers this session's pauses, recorded as
            ``decided_by`` on every audit line; the OS user when omitted.
        decisions: per tool, the decisions a confirmation offers
            (LangGraph's ``allowed_decisions``), e.g.
            ``{"send_payment": ["approve", "deny"]}`` removes Modify and the
            "Always" choices for that tool, on the page and in the kernel.
            Choose from ``approve``, ``deny`` (required), ``modify``,
            ``always_allow``, ``always_deny``; unlisted tools offer all.
        shell_rules: judge shell commands (AgentScope's ``Bash``, tools with
            a ``shell_command_field``) one simple command at a time with the
            agent's own permission engine (:mod:`nb_hitl.shell_policy`): a
            deny rule's program denies wherever it appears, a call asks
            unless every simple command in it is allowed, and what cannot be
            parsed asks. On by default; ``False`` leaves AgentScope's
            whole-line matching alone.
        notify: a :class:`~nb_hitl.notify.Notify`: a URL to POST to, or a
            callable, told once when a pause opens that the people it names
            may answer (``session.notices``; failures are logged and noted in
            the transcript, never raised).

    :meth:`replay` plays a recorded session again offline and :meth:`fork`
    answers one of its pauses differently (:mod:`nb_hitl.session._replay`).

    A new ``Session`` for an agent, or for a checkpoint, that already has one
    in this process supersedes it: the old session's open pauses expire
    ("superseded") and refuse clicks, and the new one adopts the agent's
    parked reply (see :meth:`resume`). A checkpoint is driven by one process
    at a time: the session holds its lock until it is closed or the process
    ends.

    Raises:
        TypeError: ``agent`` is not an AgentScope ``Agent`` or pipeline.
        CheckpointLockedError: another process drives this checkpoint.
        ValueError: a bad ``on_deadline``, ``deadline`` or ``decisions``.
    """

    def __init__(
        self,
        agent: Any,
        *,
        display: bool = True,
        audit_log: str | os.PathLike[str] | AuditLog | None = None,
        checkpoints: str | os.PathLike[str] | CheckpointStore | None = None,
        session_id: str | None = None,
        user_name: str = "user",
        deadline: float | None = None,
        on_deadline: str = "deny",
        decided_by: str | None = None,
        decisions: Mapping[str, Sequence[str]] | None = None,
        shell_rules: bool = True,
        notify: Notify | None = None,
    ) -> None:
        if on_deadline not in ("deny", "interrupt"):
            raise ValueError(f"on_deadline must be 'deny' or 'interrupt', got {on_deadline!r}")
        if deadline is not None and not deadline > 0:
            raise ValueError(f"deadline must be a positive number of seconds, got {deadline!r}")
        # one agent, or a TeamPipeline's / GoalPipeline's agents (nb_hitl.team)
        self.team = Team.of(agent)
        self.agent = self.team.leader
        self.decisions = allowed_decisions(decisions)
        for member in self.team.agents.values():
            install_guard(member)  # an approval binds to the input shown (_promise.py)
            if shell_rules:  # shell commands judged one simple command at a time (nb_hitl.shell_policy)
                install_shell_rules(member)
        self.display = display
        self.audit_log = audit_log if audit_log is None or isinstance(audit_log, AuditLog) else AuditLog(audit_log)
        for member in self.team.agents.values():  # every call on the record, asked or not (nb_hitl.audit.checked)
            if self.audit_log is not None:
                install_checked(member, self._audit_record)
            else:
                remove_checked(member)
        self.checkpoints = (
            checkpoints
            if checkpoints is None or isinstance(checkpoints, CheckpointStore)
            else CheckpointStore(checkpoints)
        )
        self.session_id = session_id or f"session-{uuid.uuid4().hex[:12]}"
        self.user_name = user_name
        self.deadline = deadline
        self.on_deadline = on_deadline
        self.decided_by = decided_by or current_user()
        self.runs: list[ReplyRun] = []
        self.desk = Desk(self)  # where answers arrive (clicks, act, deadlines)
        self.notices = Notices(self, notify) if notify is not None else None  # who is told of a pause
        self.superseded_by: Session | None = None
        self._lock = threading.Lock()
        self._listeners: list[Callable[[str, ReplyRun], None]] = []
        self._event_listeners: list[Callable[[Any, ReplyRun], None]] = []
        # driving tasks of a superseded Session, still unwinding (cancelled)
        self._inherited: list[asyncio.Task] = []
        self._checkpoint_lock: CheckpointLock | None = None
        if self.checkpoints is not None:
            self._checkpoint_lock = self.checkpoints.lock(self.session_id)
            holder = _BY_CHECKPOINT.get(self._checkpoint_lock.key)
            if holder is not None and holder is not self and holder.superseded_by is None:
                holder._supersede(self)
            _BY_CHECKPOINT[self._checkpoint_lock.key] = self
        old = _SESSIONS.get(self.agent)
        if old is not None and old is not self and old.superseded_by is None:
            old._supersede(self)
        _SESSIONS[self.agent] = self
        install_kernel_hints()

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

    def run(self, message: str | Msg | list[Msg], *, interrupt_pending: bool = False) -> ReplyCall[Msg]:
        """Send a message and await the whole reply, answering pauses inline:
        ``final = await session.run("...")``.

        Args:
            message: a string (sent as a user ``Msg``), a ``Msg`` or a list.
            interrupt_pending: when the agent is parked on open pauses,
                interrupt that reply first (``UserInterruptEvent``) instead
                of refusing.

        Returns:
            a :class:`ReplyCall`: awaiting it sends the message and gives the
            reply's final ``Msg``. Nothing is sent until it is awaited; shown
            as a cell's value, it says to write ``await``.

        Raises:
            PendingPauseError: (when awaited) the agent is parked and
                ``interrupt_pending`` is False (AgentScope would raise a bare
                ``ValueError``; C07). The message names only the pauses still
                open.
            Exception: whatever the agent raised; the widget shows it too.
        """

        async def body() -> Msg:
            # a ReplyTask: interrupting the cell (Kernel > Interrupt) stops waiting
            # here at once but does not cancel the reply, whose widget stays live
            return await self.start(message, interrupt_pending=interrupt_pending)

        return ReplyCall(body, "run(...)", self)

    def start(self, message: str | Msg | list[Msg], *, interrupt_pending: bool = False) -> ReplyTask:
        """Like :meth:`run`, but return the driving task at once.

        The cell returns; the reply continues on the kernel's loop and the
        widget updates itself. ``await`` the task for the final ``Msg``
        (its ``result()`` before the end says so).

        Raises:
            PendingPauseError: see :meth:`run` (raised here, synchronously).
        """
        self._check_current()
        parked = self.parked_tool_calls()
        # a team's leader may wait on a TeamAssign alone (its member's call was closed after a crash)
        parked_any = bool(parked) or self.team.is_parked()
        prior = self.current
        if (prior is not None and prior.task is not None and not prior.task.done()) or parked_any:
            if not interrupt_pending:
                raise PendingPauseError(pending_message(self.agent.name, prior, parked, called(self)))
            if prior is not None and prior.live:
                # now, before the old reply's task runs again: a decision it
                # has queued is never handed to the agent afterwards; it is
                # discarded, and its card and the audit log say so
                self._request_interrupt(prior, "Interrupted: a new message was sent to the agent.")
        msgs = UserMsg(name=self.user_name, content=message) if isinstance(message, str) else message
        prompt = message if isinstance(message, str) else msg_text(msgs if isinstance(msgs, Msg) else None)
        run = self._new_run(prompt=prompt)
        task = ReplyTask(
            self._drive(run, msgs, interrupt_first=bool(interrupt_pending and (parked_any or prior)), prior=prior),
            owner=self,
            loop=asyncio.get_running_loop(),
        )
        run.task = task
        return task

    def resume(self) -> ReplyCall[Msg]:
        """Adopt and drive a reply that is already parked in the agent's state
        (after :meth:`restore` or when this session superseded another):
        ``await session.resume()`` re-renders its open pauses and awaits the
        end of the reply (a :class:`ReplyCall`, like :meth:`run`).

        Raises:
            NbHitlError: (when awaited) the agent is not parked.
        """

        async def body() -> Msg:
            return await self.start_resume()

        return ReplyCall(body, "resume()", self)

    def start_resume(self) -> ReplyTask:
        """Like :meth:`resume` but returns the driving task at once."""
        self._check_current()
        parked = self.parked_tool_calls() or self.unchecked_tool_calls()
        if not parked:
            raise NbHitlError(f"The agent {self.agent.name!r} has no parked reply to resume.")
        run = self._new_run(prompt="(resumed)")
        run.reply_id = self.team.parked_reply_id()
        self._push(run, reply_id=run.reply_id)
        task = ReplyTask(self._drive(run, None, adopt=True), owner=self, loop=asyncio.get_running_loop())
        run.task = task
        return task

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
                the old rules, see AgentScope's ``Agent.__init__``). For a
                team's checkpoint it gets ``{agent name: AgentState}`` and
                returns the pipeline, every agent built with its ``state=``.
            checkpoints: the checkpoint folder or store.
            session_id: which checkpoint; the newest when omitted.
            **kwargs: more :class:`Session` arguments (``audit_log``...).

        Returns:
            the session; call :meth:`resume` (or :meth:`start_resume`) to
            show the open pauses and continue.

        Raises:
            FileNotFoundError: no checkpoint.
            CheckpointLockedError: another process drives this checkpoint
                (the message names it: pid, host, user).
            CheckpointIntegrityError: the checkpoint was changed after it was
                written (its HMAC does not match) or is not signed.
        """
        store = checkpoints if isinstance(checkpoints, CheckpointStore) else CheckpointStore(checkpoints)
        session_id = store.session(session_id)
        lock = store.lock(session_id)  # before reading: the file cannot change under us
        try:
            record = store.load(session_id)
            # a team's checkpoint holds every agent: the factory gets {name: AgentState};
            # the one restore (_restore.py): calls that may have run are closed
            agent = reopen(record, agent_factory)
            return cls(agent, checkpoints=store, session_id=session_id, **kwargs)
        except BaseException:
            if _BY_CHECKPOINT.get(lock.key) is None:
                lock.release()  # taken for this restore only
            raise

    def close(self) -> None:
        """Stop driving: expire this session's live replies (their driving
        tasks are cancelled) and release the checkpoint's lock, so another
        process may restore it. Idempotent."""
        for run in self.runs:
            if run.live:
                if run.task is not None and not run.task.done() and not run.task.get_loop().is_closed():
                    run.task.cancel()
                self._expire(run, "expired", "The session was closed.")
        lock, self._checkpoint_lock = self._checkpoint_lock, None
        if lock is not None and _BY_CHECKPOINT.get(lock.key) is self:
            del _BY_CHECKPOINT[lock.key]
            lock.release()

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
            except (asyncio.CancelledError, Exception):  # its widget shows how it ended
                log.debug("the interrupted reply ended with an error", exc_info=True)

    def act(
        self, message: dict[str, Any], *, decided_by: str | None = None, origin: dict[str, Any] | None = None
    ) -> Any:
        """Take an action as the page would (``{"action", "tool_call_id", ...}``).

        The same path as a click: for programmatic answers and tests. The
        synchronous checks run now; the rest (re-checks, audit, queue) runs
        when awaited, or by itself at the loop's next step when it is not,
        so a call that is never awaited never leaves the pause ``deciding``.

        Args:
            message: the page's message.
            decided_by: recorded as ``decided_by`` in the audit line
                (default: the session's ``decided_by``).
            origin: recorded as the answer's ``origin``
                (:func:`nb_hitl.answers.record.origin`; default: this kernel).

        Returns:
            a :class:`PendingAction` giving the
            handler's answer (``{"status": "decided", ...}``): ``await`` it to
            see a refusal of the async checks. Without a running loop, the
            coroutine itself.

        Raises:
            NbHitlError: the refusal a widget would show.
        """
        run = self.current
        if run is None:
            raise PauseNotLiveError("Nothing has run yet.")
        result = self.desk.on_action(run, message, decided_by, origin)
        if asyncio.iscoroutine(result):
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return result
            return PendingAction(result, loop)
        return result

    async def act_all(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        decided_by: str | None = None,
        origin: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Answer several pauses at once, all or nothing: one resume.

        Every message goes through the front door and the checks a click
        gets (:mod:`nb_hitl.answers.front`); if any is refused, none is taken
        and every pause stays open. Used by the AG-UI server for a resume
        (every open interrupt answered in one run).

        Args:
            messages: page messages (``{"action", "tool_call_id", ...}``).
            decided_by: recorded as ``decided_by`` (default: the session's).
            origin: recorded as the answers' ``origin``
                (:func:`nb_hitl.answers.record.origin`; default: this kernel).

        Returns:
            ``{"status": "decided", "results": [{"tool_call_id", "ok", "decision"}]}``.

        Raises:
            BatchRefused: an answer was refused; ``results`` says which and why.
            PauseNotLiveError: nothing has run yet.
        """
        run = self.current
        if run is None:
            raise PauseNotLiveError("Nothing has run yet.")
        return await self.desk.on_batch(run, {"items": list(messages)}, decided_by, origin, all_or_nothing=True)

    def audit_table(self) -> Any:
        """An :class:`~nb_hitl.widgets.AuditLogTable` of this session's audit log.

        Raises:
            NbHitlError: the session has no audit log.
        """
        if self.audit_log is None:
            raise NbHitlError("This Session has no audit_log; pass audit_log=PATH when creating it.")
        from ..widgets.audit import AuditLogTable

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

    def off_change(self, listener: Callable[[str, ReplyRun], None]) -> None:
        """Stop calling ``listener`` (added by :meth:`on_change`); one not added is ignored."""
        if listener in self._listeners:
            self._listeners.remove(listener)
