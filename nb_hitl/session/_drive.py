"""Driving the agent: consuming ``agent.reply_stream(...)`` and resuming it.

The driving task of a run calls ``reply_stream`` with the first input, turns
the stream into the run's :class:`~nb_hitl.session._transcript.Transcript`
and pauses (``RequireUserConfirmEvent`` / ``RequireExternalExecutionEvent``),
then waits for decisions and resumes the parked reply with AgentScope's own
``UserConfirmResultEvent``, ``ExternalExecutionResultEvent`` or
``UserInterruptEvent`` (one event per batch of decisions of a kind), until
the reply ends. The set of open pauses is re-read from the agent's state
after each stream (AgentScope re-sends no event for calls left open).
:func:`~nb_hitl.session._closing.close_dangling_tool_calls` gives a result to calls a crash left open.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from agentscope.event import (
    DataBlockDeltaEvent,
    ExceedMaxItersEvent,
    ExternalExecutionResultEvent,
    ReplyEndEvent,
    ReplyStartEvent,
    RequireExternalExecutionEvent,
    RequireUserConfirmEvent,
    TextBlockDeltaEvent,
    TextBlockStartEvent,
    ThinkingBlockDeltaEvent,
    ToolCallDeltaEvent,
    ToolCallStartEvent,
    ToolResultEndEvent,
    ToolResultStartEvent,
    ToolResultTextDeltaEvent,
    UserConfirmResultEvent,
    UserInterruptEvent,
)
from agentscope.message import Msg, TextBlock, ToolCallBlock, ToolCallState

from .._agentscope import (
    NOTES_CONTEXT_KEY,
    POLICY_CONTEXT_KEY,
    agentscope_tool_input,
    context_cut_result,
    context_map,
    enum_value,
    msg_text,
    permission_engine,
)
from ..answers.lifecycle import transition
from ..file_change import describe_file_pause
from ..pauses import Pause, build_pause
from ..shell_policy import describe_shell_pause
from ..team_steps import plumbing_step, tag_entry
from ._call_ids import renamed_calls, reused_id_message
from ._closing import (
    ASK_AGAIN_NOTE,
    close_dangling_tool_calls,
    close_delivered_tool_calls,
    decision_runs,
    delivered_marks,
)
from ._core import SessionCore
from ._names import called
from ._not_run import show_asked_again, show_not_run
from ._promise import apply_note, record_decision
from ._run import TERMINAL, ReplyRun
from ._run_error import run_error_text
from ._team import continue_stream, resume_batch
from ._transcript_events import record_event

__all__ = ["Driver", "close_dangling_tool_calls", "close_delivered_tool_calls"]

log = logging.getLogger("nb_hitl.session")

CONTINUE = object()
"""The input that continues a reply nothing is parked on: ``reply_stream(None)``
(AgentScope checks the calls it left ``pending``, see
:func:`~nb_hitl.session._closing.unchecked_calls`)."""

DELTA_EVENTS = (
    TextBlockDeltaEvent,
    ThinkingBlockDeltaEvent,
    ToolCallDeltaEvent,
    ToolResultTextDeltaEvent,
    DataBlockDeltaEvent,
)
"""Events that add streamed text (or data) to an entry."""

PACED_EVENTS = (*DELTA_EVENTS, TextBlockStartEvent)
"""The events whose changes wait for the stream's pacing: deltas, and a text
block's start (an empty entry, shown with its first delta). Every other event
sends what is pending at once."""


class Driver(SessionCore):
    """The driving loop of a session (mixed into :class:`~nb_hitl.session.Session`)."""

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
                for member in self.team.agents.values():
                    close_dangling_tool_calls(member)
            inp = first_input
            if adopt and self.unchecked_tool_calls():
                inp = CONTINUE  # a restored reply with calls AgentScope has not checked yet (unchecked_calls)
            elif adopt:
                await self._sync_pauses(run)
                inp = await self._next_input(run)
            while True:
                if inp is not None:
                    await self._consume(run, inp)
                if run.status in TERMINAL:
                    break
                if not self.team.is_parked():
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
                if self.team.is_parked() and not run.interrupt_requested:
                    # cancelled while parked, not interrupted on purpose: the
                    # agent still waits, and a new driver can adopt the reply
                    self._expire(
                        run,
                        "expired",
                        "The task driving this reply was cancelled while the agent waited; "
                        f"`await {called(self)}.resume()` shows its open pauses again.",
                    )
                else:
                    self._expire(run, "interrupted", run.reason or "The reply was cancelled.")
            self._checkpoint_quietly()
            self._notify("end", run)
            raise
        except BaseException as exc:
            self._discard_unapplied(run)
            run.error = exc
            self._expire(run, "error", run_error_text(exc))  # what failed, and what to set (a rejected key...)
            self._checkpoint_quietly()
            self._notify("end", run)
            raise
        if run.status not in TERMINAL:
            run.status = "finished"
        # one push sends the end: status, reason and the final text
        self._expire(run, run.status, run.reason or f"The reply {run.status}.", final_text=msg_text(run.final))
        self.checkpoint()
        self._notify("end", run)
        return run.final  # type: ignore[return-value]

    def _late_notes(self, run: ReplyRun) -> None:
        """Apply the notes (``replace``) of calls AgentScope closed on an
        interrupt: ``Agent._close_unfinished_tool_calls`` saves their result
        only after yielding its ``ToolResultEndEvent``, so they are in the
        state once the reply's ``ReplyEndEvent`` arrives (a deadline's
        "nobody answered", not "interrupted by the user")."""
        for member in self.team.agents.values():
            for tool_call_id, entry in list(context_map(member, NOTES_CONTEXT_KEY).items()):
                if not (isinstance(entry, dict) and entry.get("replace")):
                    continue
                told = apply_note(member, tool_call_id)
                if told is not None:
                    run.told[tool_call_id] = told
                    run.transcript.tool_result(tool_call_id, text=told)

    async def _interrupt_parked(self, prior: ReplyRun | None) -> None:
        if prior is not None and prior.live:
            was_running = prior.status == "running"
            self._request_interrupt(prior, "Interrupted: a new message was sent to the agent.")
            if prior.task is not None and not prior.task.done():
                if was_running:
                    prior.task.cancel()
                try:
                    await asyncio.shield(prior.task)
                except (asyncio.CancelledError, Exception):  # its own widget shows how it ended
                    log.debug("the interrupted reply ended with an error", exc_info=True)
        if self.team.is_parked():
            async for _ in self.team.stream(self.team.interrupt_event()):
                pass

    async def _next_input(self, run: ReplyRun) -> Any:
        """Wait for decisions and build the next resume event.

        Confirmations and external results go in separate events (each is
        one AgentScope input); all queued decisions of a kind go together.
        """
        while True:
            if run.interrupt_requested:
                run.interrupt_requested = False
                return (
                    self.team.interrupt_event() if self.team.is_pipeline else UserInterruptEvent(reply_id=run.reply_id)
                )
            if run.status in TERMINAL:
                return None
            # one resume event answers one agent's reply (a member's pauses carry its reply_id)
            reply_id, queue = resume_batch(run)
            confirms = [d for d in queue if d.confirm_result is not None]
            externals = [d for d in queue if d.tool_result is not None]
            if confirms or externals:
                batch = confirms or externals
                run.queue = [d for d in run.queue if d not in batch]
                marks = delivered_marks(self.team.owner(reply_id))  # in the state of the agent that asked
                for d in batch:
                    transition(run.pauses[d.tool_call_id], "delivered")
                    runs = decision_runs(d.confirm_result)  # an approval may run the tool: a restore never asks again
                    marks[d.tool_call_id] = {"action": d.action, "reply_id": reply_id, "at": time.time(), "runs": runs}
                    record_decision(self.team.owner(reply_id), d, run.pauses[d.tool_call_id].tool_name)
                # on disk before the agent gets it: a restore never asks again
                # for a call that may already have run
                self.checkpoint()
                run.resumes += 1
                run.resuming = True  # its cards follow the resumed stream's first event (_push_soon)
                if confirms:
                    return UserConfirmResultEvent(
                        reply_id=reply_id,
                        confirm_results=[d.confirm_result for d in confirms if d.confirm_result is not None],
                    )
                return ExternalExecutionResultEvent(
                    reply_id=reply_id,
                    execution_results=[d.tool_result for d in externals if d.tool_result is not None],
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
        awaiting = self.team.parked_calls()
        if awaiting and not run.reply_id:
            run.reply_id = self.team.parked_reply_id()
        for asker, tc in awaiting:
            if tc.id not in run.pauses or run.pauses[tc.id].status in ("delivered",):
                await self._add_pause(run, tc, asker)
        run.status = "paused"
        self.checkpoint()
        self._push(run, reply_id=run.reply_id)

    async def _add_pause(self, run: ReplyRun, tool_call: ToolCallBlock, asker: Any = None) -> Pause:
        # the agent that asks: its toolkit, engine, policies and reply_id (a team member's, in a pipeline)
        agent = asker if asker is not None else (self.team.owner_of_call(tool_call.id) or self.agent)
        tool = await agent.toolkit.get_tool(tool_call.name)
        permission = None
        if enum_value(tool_call.state) == ToolCallState.ASKING.value and tool is not None:
            try:
                permission = await permission_engine(agent).check_permission(
                    tool,
                    agentscope_tool_input(tool_call.input or "", tool.input_schema),  # AgentScope's reading
                )
            except Exception:  # the engine's message is informative only
                log.debug("no permission message for %s", tool_call.id, exc_info=True)
                permission = None
        reply_id = agent.state.reply_id if self.team.is_pipeline else (run.reply_id or self.agent.state.reply_id)
        pause = build_pause(reply_id, tool_call, tool, permission)
        if self.team.is_pipeline:
            pause.agent = agent.name
        pause.decisions = self.decisions.get(pause.tool_name, pause.decisions)  # Session(decisions=...)
        describe_shell_pause(agent, pause, tool)  # the simple commands of a shell call (nb_hitl.shell_policy)
        await describe_file_pause(tool, pause)  # the diff of a file-editing call (nb_hitl.file_change)
        policies = agent.state.middle_context.get(POLICY_CONTEXT_KEY, {})
        if isinstance(policies, dict) and tool_call.id in policies:
            pause.policy = str(policies[tool_call.id])
            from ..policy import describe_policy_pause  # the engine alone does not see the policy

            describe_policy_pause(agent, pause)
        # An external tool may take over its pause (nb_hitl's reviewed tools
        # and structured questions, ``nb_hitl.kinds.PauseShaper``):
        # ``async prepare_pause(pause, host)`` may set the kind, the result to
        # review or a response schema. A confirmation (state ``asking``) is
        # the engine's, never the tool's.
        prepare = getattr(tool, "prepare_pause", None)
        if prepare is not None and enum_value(tool_call.state) == ToolCallState.SUBMITTED.value:
            await prepare(pause, self)
        renamed = renamed_calls(agent).get(tool_call.id)
        if isinstance(renamed, dict):  # the model reused an id: the card and the audit log say so (_call_ids.py)
            said = reused_id_message(agent, str(renamed.get("sent")))
            pause.message = f"{said}\n\n{pause.message}" if pause.message else said
            if not renamed.get("audited"):
                renamed["audited"] = True
                self._audit_pause(
                    pause,
                    decision="id_reused",
                    decided_by="nb_hitl",
                    sent_tool_call_id=renamed.get("sent"),
                    reason=said,
                )
        show_asked_again(self, run, agent, pause)  # approved, then changed: asked again under a new id
        restored = delivered_marks(agent).get(tool_call.id)
        if isinstance(restored, dict) and restored.get("ask_again"):  # its answer was lost in a restart
            delivered_marks(agent).pop(tool_call.id)
            said = ASK_AGAIN_NOTE
            pause.message = f"{said}\n\n{pause.message}" if pause.message else said
        if self.deadline is not None:
            pause.deadline = pause.created_at + self.deadline
            loop = asyncio.get_running_loop()
            loop.call_later(self.deadline, self.desk.deadline_passed, run, pause)
        run.pauses[pause.tool_call_id] = pause
        self._opened(run, pause)
        return pause

    async def _consume(self, run: ReplyRun, inp: Any) -> None:
        """Consume one ``reply_stream`` call into the transcript and pauses."""
        run.status = "running"
        self._push_soon(run)  # after a resumed stream's first event (_push_soon)
        try:
            await self._events(run, inp)
        finally:  # a text block cut short (cancelled, failed) is rendered too
            self._stream_ended(run)
        if run.status not in TERMINAL:  # an ended reply is pushed once, with its end (``_expire``)
            self._push(run)

    async def _events(self, run: ReplyRun, inp: Any) -> None:
        tr = run.transcript

        def call_name(tool_call_id: str) -> str:
            pause = run.pauses.get(tool_call_id)
            return pause.tool_name if pause is not None else tr.call_name(tool_call_id)

        # the state is written before a tool runs (its call is ``allowed``: a
        # restore closes it as interrupted, never runs it again) and after
        # its result is in the state (AgentScope saves an external result
        # after yielding its end event: written at the next event)
        result_due = False
        started = False  # a tool result started: the state is written once its entry was sent
        async for ev in continue_stream(self.team) if inp is CONTINUE else self.team.stream(inp):
            if result_due:
                self.checkpoint()
                result_due = False
            for listener in self._event_listeners:
                try:
                    listener(ev, run)
                except Exception:  # a listener never stops the agent
                    log.warning("an on_event listener raised", exc_info=True)
            if isinstance(ev, Msg):
                interrupted = enum_value(getattr(ev, "finished_reason", None)) == "interrupted"
                # nb_hitl stopped it (a deadline): its own words, not AgentScope's "I notice the interruption"
                run.final = (
                    ev.model_copy(update={"content": [TextBlock(text=run.stop_text)]})
                    if interrupted and run.stop_text
                    else ev
                )
                continue
            changed = True
            if self.team.is_pipeline and plumbing_step(self.team, tr, ev):
                pass  # the pipeline's TeamAssign: a step of the transcript, never a card
            elif isinstance(ev, ReplyStartEvent):
                if self.team.owner_name(ev) == self.agent.name:  # a member's reply is not the run's
                    run.reply_id = ev.reply_id
                    self._push(run, reply_id=ev.reply_id)
                changed = False
            elif isinstance(ev, TextBlockStartEvent):
                tr.text(ev.block_id)
                changed = False
            elif isinstance(ev, TextBlockDeltaEvent):
                tr.text(ev.block_id, ev.delta)
            elif isinstance(ev, ToolCallStartEvent):
                tr.tool_call(ev.tool_call_id, ev.tool_call_name)
            elif isinstance(ev, ToolCallDeltaEvent):
                tr.tool_call(ev.tool_call_id, input_text=ev.delta)
            elif isinstance(ev, ToolResultStartEvent):
                tr.tool_result(ev.tool_call_id, state="running", name=ev.tool_call_name)
                started = True
            elif isinstance(ev, ToolResultTextDeltaEvent):
                tr.tool_result(ev.tool_call_id, ev.delta, name=call_name(ev.tool_call_id))
            elif isinstance(ev, ToolResultEndEvent):
                owner = self.team.owner(ev.reply_id)  # the agent whose call it is (a member in a team)
                told = apply_note(owner, ev.tool_call_id)  # before the next model call (_promise.py)
                if told is None:  # AgentScope may have cut a long result to fit the context
                    told = context_cut_result(owner, ev.tool_call_id)
                if told is not None:  # the result text as the model now reads it
                    run.told[ev.tool_call_id] = told
                    tr.tool_result(ev.tool_call_id, name=call_name(ev.tool_call_id), text=told)
                pause = run.pauses.get(ev.tool_call_id)
                if pause is not None and pause.status in ("decided", "delivered"):
                    transition(pause, "delivered")
                if not show_not_run(self, run, ev.tool_call_id, ev.metadata):  # approved, not run (_promise.py)
                    tr.tool_result(ev.tool_call_id, state=enum_value(ev.state), name=call_name(ev.tool_call_id))
                delivered_marks(owner).pop(ev.tool_call_id, None)
                result_due = True
            elif isinstance(ev, (RequireUserConfirmEvent, RequireExternalExecutionEvent)):
                asker = self.team.owner(ev.reply_id)
                if asker is self.agent:
                    run.reply_id = ev.reply_id
                for tc in ev.tool_calls:
                    if not (self.team.is_pipeline and self.team.is_plumbing(tc)):
                        await self._add_pause(run, tc, asker)
                self._push(run)  # the cards reach the page now, not when the stream ends
            elif isinstance(ev, ExceedMaxItersEvent):
                tr.note("The agent reached its iteration limit.")
            elif isinstance(ev, ReplyEndEvent) and run.live and self.team.ends_reply(ev):
                reason = enum_value(ev.finished_reason)
                run.status = "interrupted" if reason == "interrupted" else "finished"
                if run.status == "interrupted":
                    self._late_notes(run)
                if ev.error is not None:
                    run.status = "error"
                    run.reason = str(getattr(ev.error, "message", ev.error))
            else:
                changed = record_event(tr, ev)
            if self.team.is_pipeline:
                tag_entry(self.team, tr, ev)
            urgent = not isinstance(ev, PACED_EVENTS)  # pacing batches deltas only
            if changed or urgent:
                self._stream(run, urgent=urgent)
            self._resumed(run)
            if started:  # after its entry went to the page, before the stream goes on: the tool has not run on
                self.checkpoint()
                started = False
        if result_due:
            self.checkpoint()
