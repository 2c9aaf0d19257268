"""The page's actions on a reply and the deadline of a pause.

The path of a click: page -> ``ReplyWidget`` -> :meth:`Actions._on_action`
(synchronous: shape, liveness, exactly-once, the pure
:func:`~nb_hitl.decisions.decide`; the pause goes ``open -> deciding``) ->
:meth:`Actions._finish_decision` (async: permission re-check of an edited
input, the tool's own external-result check, audit record fsynced; the pause
goes ``deciding -> decided``, or back to ``open`` when a check refuses) ->
the run's queue -> the driving task resumes the agent.

A deadline that passes applies the session's default (deny / error result,
or interrupt the reply) through the same transitions and audits ``timeout``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from .._agentscope import permission_engine
from ..decisions import Decision, check_external_result, check_rules_match, decide, recheck_permission
from ..errors import AlreadyDecidedError, DecisionError, PauseNotLiveError
from ..kinds import kind_spec
from ..pauses import Pause
from ._core import SessionCore
from ._run import ReplyRun, transition

__all__ = ["Actions"]

log = logging.getLogger("nb_hitl.session")


class Actions(SessionCore):
    """Page actions and deadlines of a session (mixed into :class:`~nb_hitl.session.Session`)."""

    def _on_action(self, run: ReplyRun, message: Any, decided_by: str | None = None) -> Any:
        """Handle one page message for ``run`` (runs in the comm handler).

        Synchronous part: shape, liveness, exactly-once, pure decision.
        Returns a coroutine for the async part (checks, audit, queue);
        ``decided_by`` (default: the session's) goes into the audit line.
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
            transition(pause, "deciding")
        self._push(run)
        return self._finish_decision(run, pause, decision, decided_by)

    async def _interrupt_from_page(self, run: ReplyRun) -> dict[str, Any]:
        if not run.live:
            raise PauseNotLiveError(f"This reply is already {run.status}: {run.reason or 'nothing to interrupt'}")
        was_running = run.status == "running"
        self._request_interrupt(run, "Interrupted from the widget.")
        if was_running and run.task is not None and not run.task.done():
            run.task.cancel()
        return {"status": "interrupting"}

    async def _finish_decision(
        self, run: ReplyRun, pause: Pause, decision: Decision, decided_by: str | None = None
    ) -> dict[str, Any]:
        try:
            agent = self.team.agent(pause.agent)  # the agent that asked: its tool, schema and engine
            tool = await agent.toolkit.get_tool(pause.tool_name)
            if decision.edited_input is not None and tool is not None:
                # the agent's own engine: it holds every rule added since the
                # agent was built, including rules accepted through "Always allow"
                await recheck_permission(permission_engine(agent), tool, decision.edited_input)
            if decision.accepted_rules and tool is not None:  # edited "Always allow" rules (C18)
                await check_rules_match(tool, decision.accepted_rules, decision.approved_input)
            if decision.tool_result is not None and decision.tool_result.state == "success":
                await check_external_result(tool, decision.tool_result)
            if not run.live or pause.status != "deciding":
                raise PauseNotLiveError(
                    f"This pause is no longer live: {pause.reason or run.reason or 'the reply ended'}"
                )
            self._audit(pause, decision, decided_by)
        except BaseException:
            if pause.status == "deciding":
                transition(pause, "open")
                self._push(run)
            raise
        transition(pause, "decided")
        pause.decision = decision.summary()
        run.queue.append(decision)
        run.wake.set()
        self._push(run)
        self._notify("decision", run)
        return {"status": "decided", "decision": pause.decision}

    def _deadline_passed(self, run: ReplyRun, pause: Pause) -> None:
        """Apply the configured default to a pause whose deadline passed."""
        with self._lock:
            if pause.status != "open" or not run.live or run.pauses.get(pause.tool_call_id) is not pause:
                return
            if self.on_deadline == "interrupt":
                transition(pause, "deciding")
            else:
                message = kind_spec(pause.kind).timeout_message(pause)
                decision = decide(pause, message)
                transition(pause, "deciding")
        applied = "reply interrupted" if self.on_deadline == "interrupt" else kind_spec(pause.kind).timeout_applied
        try:
            self._audit_pause(pause, decision="timeout", applied=applied, decided_by="deadline")
        except Exception as exc:
            log.error("the deadline of %s passed but its audit record failed", pause.tool_call_id, exc_info=True)
            transition(pause, "open")
            pause.deadline = None  # a person can still answer (and their answer is audited)
            pause.reason = (
                f"The deadline passed, but the audit log could not be written ({type(exc).__name__}: {exc}); "
                "the default was not applied and the pause is still open."
            )
            self._push(run)
            self._notify("decision", run)
            return
        pause.decision = {"action": "timeout", "applied": applied}
        if self.on_deadline == "interrupt":
            transition(pause, "expired", reason="The deadline passed; the reply was interrupted.")
            self._request_interrupt(run, "The deadline of a pause passed; the reply was interrupted.")
        else:
            transition(pause, "decided")
            run.queue.append(decision)
            run.wake.set()
            self._push(run)
        self._notify("decision", run)
