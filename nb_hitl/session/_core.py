"""What every part of a :class:`~nb_hitl.session.Session` shares.

:class:`SessionCore` holds the session's fields and the small operations the
driving loop (``_drive``), the desk where answers arrive (``_actions.Desk``,
``session.desk``, a part held by reference) and the public API all use: new runs and their widgets, pushing a run's view, notifying
listeners, expiring pauses, requesting an interrupt, writing the checkpoint
and the audit records. The pause status only changes through
:func:`~nb_hitl.answers.lifecycle.transition`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agentscope.message import ToolCallBlock

from ..answers.lifecycle import can_transition, transition
from ..answers.record import KERNEL, RECORD_VERSION, decision_fields, pause_fields
from ..decisions import Decision
from ..pauses import UNANSWERED, Pause
from ..store import AuditLog, CheckpointLock, CheckpointStore
from ..team import Team
from ..widgets import _transcript_feed as transcript_feed
from ..widgets._iopub import let_out
from ._pace import RESUME_QUIET, pace
from ._run import DELIVERED_CONTEXT_KEY, ReplyRun
from ._settle import answered, stepped
from ._team import unchecked_team_calls

if TYPE_CHECKING:
    from ..notify import Notices
    from . import Session
    from ._actions import Desk

__all__ = ["SessionCore"]

log = logging.getLogger("nb_hitl.session")


class SessionCore:
    """Fields and shared operations of a session (see :class:`~nb_hitl.session.Session`)."""

    agent: Any
    team: Team
    display: bool
    audit_log: AuditLog | None
    checkpoints: CheckpointStore | None
    session_id: str
    user_name: str
    deadline: float | None
    on_deadline: str
    decided_by: str
    _checkpoint_lock: CheckpointLock | None
    decisions: dict[str, tuple[str, ...]]
    runs: list[ReplyRun]
    superseded_by: Session | None
    _lock: threading.Lock
    _listeners: list[Callable[[str, ReplyRun], None]]
    _event_listeners: list[Callable[[Any, ReplyRun], None]]
    _inherited: list[asyncio.Task]

    desk: Desk
    notices: Notices | None
    #: where a new reply's widget goes: ``None`` shows it in the current cell's
    #: output; a replay started from a page sets it (below the reply it came from)
    show: Callable[[Any], None] | None = None

    # -- state -----------------------------------------------------------
    def parked_tool_calls(self) -> list[ToolCallBlock]:
        """The agent's tool calls waiting for a person, from its state
        (``AgentState.get_awaiting_tool_calls``)."""
        return [tc for _, tc in self.team.parked_calls()]

    def unchecked_tool_calls(self) -> list[ToolCallBlock]:
        """Calls of a restored reply AgentScope has not checked yet (state
        ``pending``, nothing parked): :meth:`resume` continues the reply and
        AgentScope checks them, asking a person where its permission says
        so (:func:`~nb_hitl.session._closing.unchecked_calls`); in a team, those
        of every agent whose reply can be continued (:func:`~nb_hitl.session._team.unchecked_team_calls`)."""
        return [tc for _, tc in unchecked_team_calls(self.team)]

    def checkpoint(self) -> None:
        """Write the agent's ``AgentState`` to the session's checkpoint now.

        A no-op without ``checkpoints``, and for a session that was
        superseded or closed (the newer session owns the file). Tools that
        shape a pause (reviewed tools) call it around work that must survive
        a kernel restart.
        """
        if self.checkpoints is None or self.superseded_by is not None or self._checkpoint_lock is None:
            return
        self.checkpoints.save(self.session_id, self.agent.name, self.team.state_json())

    def _checkpoint_quietly(self) -> None:
        """:meth:`checkpoint` on a path that is already failing: log, do not raise."""
        try:
            self.checkpoint()
        except Exception:
            log.warning("could not write the checkpoint of %s", self.session_id, exc_info=True)

    # -- runs and widgets ------------------------------------------------
    def _check_current(self) -> None:
        from ..errors import PauseNotLiveError

        if self.superseded_by is not None:
            raise PauseNotLiveError("This Session was superseded by a newer Session for the same agent; use that one.")

    def _new_run(self, prompt: str) -> ReplyRun:
        run = ReplyRun(prompt=prompt)
        run.transcript.recording = self.display  # no widget: no stream to take the ops
        if self.display:
            from ..widgets.reply import ReplyWidget

            def handler(msg: Any, _run: ReplyRun = run) -> Any:
                answer = self.desk.on_action(_run, msg)
                # its comm message ends once what it set going reached the page (_settle)
                return answered(_run, for_page(answer)) if inspect.isawaitable(answer) else answer

            run.widget = ReplyWidget(
                handler=handler,
                agent_name=self.agent.name,
                prompt=prompt,
            )
            try:
                from IPython.display import display

                (self.show or display)(run.widget)
            except Exception:  # outside IPython the widget is only kept
                log.debug("could not display the reply widget", exc_info=True)
        self.runs.append(run)
        return run

    def _push(self, run: ReplyRun, **traits: Any) -> None:
        """Send the run's view to its widget: what changed, and the traits given.

        The transcript's pending changes go first as one stream message
        (:meth:`_flush_transcript`), then the pause cards that changed as one
        ``nbh_cards`` message (:class:`~nb_hitl.widgets._cards.CardFeed`),
        then the traits in one comm update. The record traits ``pauses`` and
        ``transcript`` (what a reload shows) always hold everything in the
        kernel; once a view of the widget connected (``CardFeed.connected``)
        they never go to the page from here: the page builds both from the
        streams and writes them into its own model (what a saved notebook
        keeps). A new card, a decision on one card, a card that left: each
        builds and sends that card's view or drop only
        (:meth:`~nb_hitl.widgets._cards.CardFeed.views_of`). Until a view
        connected, a push that changed cards sends the ``pauses`` record
        instead of the ops: no view listens for messages yet, and the widget
        manager keeps a trait on the page's model, so the first view draws
        its cards at once. A ``final_text`` that is the last
        text block's text stays in the kernel too, and ``final_entry`` names
        that block for the page.
        """
        self._cancel_push_soon(run)  # this push sends what it was due to send
        widget = run.widget
        if widget is None:
            return
        self._flush_transcript(run)
        views = run.cards.views_of(run.pauses)  # rebuilt: the pauses a transition marked
        record = transcript_feed.record(run.transcript)  # the stream was flushed above
        if "final_text" in traits:  # the page has it when it is the last text block
            kept, sent = transcript_feed.final(run.transcript, traits.pop("final_text"))
            record.update(kept)
            traits.update(sent)
        traits.setdefault("status", run.status)
        traits.setdefault("status_reason", run.reason)
        try:
            with widget.hold_sync():
                # after the transcript's message: a card goes under its tool call's entry
                run.cards.push(widget, views, **record)
                for name, value in traits.items():
                    setattr(widget, name, value)
        except Exception:  # a closed comm must not stop the agent
            log.warning("could not update the reply widget", exc_info=True)
        stepped(run)

    def _push_soon(self, run: ReplyRun) -> None:
        """:meth:`_push` once the loop is free: the pushes asked for while one
        answer travels through the session go to the page as one, after the
        agent's next event.

        A click makes three changes within a millisecond or so (the front door
        takes the answer, its check records it, the driving task hands it to
        the agent). Pushed one by one they were three card messages and three
        trait updates, each crossing Jupyter's server and redrawn by the page,
        all queued before the agent's next event. Here they wait until the
        loop is free and, while the run's decisions are on their way to the
        agent (queued for the woken driving task, or handed over with no event
        of the resumed stream yet), until the resumed stream's first event:
        the driving task then sends that event, then this push
        (:meth:`_stream`, :meth:`_resumed`). So the agent's next event reaches
        the page first and the cards right behind it. A resumed stream that
        says nothing for :data:`RESUME_QUIET` seconds gets the push anyway.
        Without a running loop (or a widget) it pushes at once.
        """
        if run.widget is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._push(run)
            return
        if run.push_due is None:
            run.push_due = loop.call_soon(self._push_when_free, run, True)

    def _push_when_free(self, run: ReplyRun, may_wait: bool) -> None:
        run.push_due = None
        if may_wait and (run.resuming or (run.queue and run.wake.is_set())):
            # the resumed stream's first event sends it (_resumed), or this, if it says nothing
            run.push_due = asyncio.get_running_loop().call_later(RESUME_QUIET, self._push_when_free, run, False)
            return
        self._push(run)

    def _resumed(self, run: ReplyRun) -> None:
        """The stream yielded an event (sent already, unless a paced delta): if
        it is a resumed stream's first, the push waiting for it goes now
        (:meth:`_push_soon`)."""
        if not run.resuming:
            return
        run.resuming = False
        if run.push_due is not None:
            self._push(run)
        stepped(run)

    @staticmethod
    def _stream_ended(run: ReplyRun) -> None:
        """A ``reply_stream`` call ended or was cut short: a text block cut
        short is rendered, and nothing waits for its first event any more."""
        run.transcript.finish()
        run.resuming = False
        stepped(run)

    @staticmethod
    def _cancel_push_soon(run: ReplyRun) -> None:
        if run.push_due is not None:
            run.push_due.cancel()
            run.push_due = None

    def _stream(self, run: ReplyRun, *, urgent: bool = False) -> None:
        """The transcript changed: send its pending changes when they are due.

        Pacing batches streamed text only: a change that is not a delta
        (``urgent``: a tool call or result starts or ends, a model call
        starts or ends, a block ends) goes out at once with whatever text is
        pending, so what follows a person's answer is never held back; a push
        waiting for it (:meth:`_push_soon`) follows it at once. The resumed
        stream's first such event, then that push, each leave the kernel
        before the agent runs on (:func:`~nb_hitl.widgets._iopub.let_out`). Deltas
        are sent when due (:func:`~nb_hitl.session._pace.pace`: once the
        stream is quiet, or the oldest change has waited long enough, at most
        20 times a second); a timer on the running loop sends them if nothing
        else comes (a trailing flush), so the last delta shows even if the
        model stalls. Per delta this only notes the time while a timer is armed.
        """
        if run.widget is None:
            return
        if urgent:
            self._flush_transcript(run)
            if run.resuming:  # the agent's first event after an answer: sent before the agent runs on
                let_out(run.widget)
            if run.push_due is not None:  # the cards and status waiting for this event (_push_soon)
                self._push(run)
                if run.resuming:
                    let_out(run.widget)
            return
        pace(run.transcript, self._flush_transcript, run)

    def _flush_transcript(self, run: ReplyRun) -> None:
        """Send the transcript's pending changes now (:func:`nb_hitl.widgets._transcript_feed.flush`)."""
        transcript_feed.flush(run.widget, run.transcript)

    def _opened(self, run: ReplyRun, pause: Pause) -> None:
        """A pause was added to ``run``, open: the listeners hear ``"pause"``
        and the people of ``Session(notify=...)`` are told
        (:meth:`nb_hitl.notify.Notices.opened`, once per call and input). Every
        road that adds a pause comes here."""
        self._notify("pause", run)
        self._tell(run, pause)

    def _tell(self, run: ReplyRun, pause: Pause) -> None:
        """``pause`` is open (added, or open again for the next approval): tell
        the people of ``Session(notify=...)`` if they were not told of this
        call and input yet."""
        if self.notices is not None:
            try:
                self.notices.opened(run, pause)
            except Exception:  # a notification never stops the agent
                log.warning("could not notify of %s", pause.tool_call_id, exc_info=True)

    def _notify(self, kind: str, run: ReplyRun) -> None:
        for listener in list(self._listeners):
            try:
                listener(kind, run)
            except Exception:  # a listener never stops the agent
                log.warning("an on_change listener raised on %r", kind, exc_info=True)

    def _expire(self, run: ReplyRun, status: str, reason: str, **traits: Any) -> None:
        """End the run (``status``, ``reason``): open pauses and queued
        decisions expire (audited as ``discarded``); one push sends the end
        with ``traits`` (e.g. ``final_text``)."""
        # an interrupt ends the calls; otherwise they wait for a Session to adopt them
        for pause in run.pauses.values():
            self._close_unanswered(pause, reason, ends_call=status == "interrupted")
        for decision in run.queue:
            # recorded, but the reply ended before it reached the agent
            queued = run.pauses.get(decision.tool_call_id)
            if queued is not None and can_transition(queued, "expired"):
                transition(queued, "expired", reason=f"Decided, but the reply ended before the agent got it: {reason}")
            self._audit_record(
                {
                    "reply_id": run.reply_id,
                    "tool_call_id": decision.tool_call_id,
                    "tool_name": queued.tool_name if queued else None,
                    "decision": "discarded",
                    "reason": reason,
                }
            )
        run.queue = []
        run.status = status
        run.reason = reason
        run.wake.set()
        if status == "finished":  # what its "Replay" and "What if…" offer (nb_hitl.session._whatif)
            from ._whatif import offer

            replay = offer(self, run)  # type: ignore[arg-type]
            if run.widget is not None:
                traits.setdefault("replay", replay)
        self._push(run, **traits)

    def _discard_unapplied(self, run: ReplyRun) -> None:
        """Decisions handed to the agent whose reply stopped before AgentScope
        applied them: the call still waits in the agent's state, so the
        decision never took effect. Say so in the audit log (``discarded``);
        a Session that adopts the reply asks for the call again."""
        awaiting = {tc.id for tc in self.parked_tool_calls()}
        for pause in run.pauses.values():
            if pause.status == "delivered" and pause.tool_call_id in awaiting:
                marks = self.team.agent(pause.agent).state.middle_context.get(DELIVERED_CONTEXT_KEY)
                if isinstance(marks, dict):
                    marks.pop(pause.tool_call_id, None)  # known: never applied
                transition(
                    pause, "expired", reason="Decided, but the reply stopped before the agent applied the decision."
                )
                self._audit_pause(pause, decision="discarded", reason=pause.reason)
        self._push(run)

    def _supersede(self, newer: SessionCore) -> None:
        self.superseded_by = newer  # type: ignore[assignment]
        # tasks of a loop that is closed (another asyncio.run) never run again
        tasks = [r.task for r in self.runs if r.task is not None and not r.task.done()]
        live = [t for t in tasks if not t.get_loop().is_closed()]
        newer._inherited.extend(live)
        for run in self.runs:
            if run.live:
                if run.task in live:
                    run.task.cancel()
                self._expire(run, "expired", "Superseded by a newer Session for this agent.")

    def _request_interrupt(self, run: ReplyRun, reason: str) -> None:
        run.interrupt_requested = True
        run.reason = reason
        for pause in run.pauses.values():
            self._close_unanswered(pause, reason, ends_call=True)
        run.wake.set()
        self._push(run)

    def _close_unanswered(self, pause: Pause, reason: str, *, ends_call: bool) -> None:
        """Close ``pause`` if it still waits for its answer (:data:`~nb_hitl.pauses.UNANSWERED`): it
        expires with ``reason``. When this also ends its call with no answer (``ends_call``: an
        interrupt, after which AgentScope gives the call an interrupted result), the audit log gets a
        line saying so (``decision: "expired"``, ``decided_by: "nb_hitl"``, one of
        :data:`~nb_hitl.answers.record.NOT_ANSWERS`), so every call that asked ends on the record with
        an answer or with why it had none. A reply superseded, closed or cancelled while parked
        leaves its calls waiting in the agent's state for a Session to adopt and ask again: no line.
        A pause that carries a peer's request (an MCP server's) is written by its road, which says
        what the peer was told (``nb_hitl.mcp._ask``). A line that cannot be written is logged:
        closing a pause runs nothing."""
        if pause.status not in UNANSWERED:
            return
        transition(pause, "expired", reason=reason)
        if not ends_call or pause.carrier is not None:
            return
        try:
            self._audit_pause(pause, event="answered", decision="expired", reason=reason, decided_by="nb_hitl")
        except Exception:
            log.error(
                "the audit line of %s, closed unanswered, could not be written", pause.tool_call_id, exc_info=True
            )

    # -- audit -----------------------------------------------------------
    def _audit_record(self, fields: dict[str, Any]) -> None:
        """Append one audit record (fsynced; see :class:`~nb_hitl.store.AuditLog`),
        in the one shape of :mod:`nb_hitl.answers.record`."""
        if self.audit_log is None:
            return
        self.audit_log.append(
            {
                "v": RECORD_VERSION,
                "session_id": self.session_id,
                "agent": self.agent.name,
                "decided_by": self.decided_by,
                "origin": KERNEL,
                **fields,
            }
        )

    def _audit_pause(self, pause: Pause, **fields: Any) -> None:
        """Append one audit record about ``pause``."""
        self._audit_record({**pause_fields(pause), **fields})

    def _audit(
        self,
        pause: Pause,
        decision: Decision,
        decided_by: str | None = None,
        origin: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Append the record of an answer (``origin``: where it came from;
        ``extra``: more fields, e.g. the approvals of an M-of-N call)."""
        self._audit_pause(
            pause,
            event="answered",  # its ask was recorded when it was checked (nb_hitl.audit.checked)
            decided_by=decided_by or self.decided_by,
            origin=origin or KERNEL,
            **decision_fields(decision),
            **(extra or {}),
        )


async def for_page(answer: Awaitable[Any]) -> Any:
    """A decision's answer as the page gets it: once the answer was taken for
    the agent (``status`` ``decided``), ``card_follows: True`` tells the page
    that the card's new view is on its way (after the agent's next event,
    :meth:`SessionCore._push_soon`), so the card stays "Sending…" until then
    instead of being drawn open again for a moment (``js/reply/card.ts``)."""
    got = await answer
    if isinstance(got, dict) and got.get("status") == "decided":
        return {**got, "card_follows": True}
    return got
