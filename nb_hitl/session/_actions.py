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
from ..entries import entry_text
from ..errors import AlreadyDecidedError, DecisionError, NbHitlError, PauseNotLiveError
from ..kinds import kind_spec
from ..pauses import Pause
from ._core import SessionCore
from ._run import ReplyRun, transition

__all__ = ["Actions"]

log = logging.getLogger("nb_hitl.session")

#: the most decisions one ``batch`` page message may hold ("Approve all" on a
#: reply of 10,000 cards is still one message and one resume)
MAX_BATCH = 10_000


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
        if action == "sync":  # the page connected: both streams in one answer
            return {
                "transcript": self._transcript_sync(run, message.get("transcript_seq"), connect=True),
                "cards": self._cards_sync(run, message.get("cards_seq")),
            }
        if action == "transcript_sync":  # the page saw a gap in the stream
            return self._transcript_sync(run, message.get("seq"))
        if action == "cards_sync":  # the same for the pause cards
            return self._cards_sync(run, message.get("seq"))
        if action == "entry_text":  # "Show all" on an entry the page shows a part of
            return entry_text(run.transcript.by_id, message.get("id"))
        if action == "interrupt":
            if not run.live:
                raise PauseNotLiveError(f"This reply is already {run.status}: {run.reason or 'nothing to interrupt'}")
            # a coroutine: the widget runs it on the session's loop, whatever
            # thread delivered the comm message (asyncio objects are not
            # thread-safe)
            return self._interrupt_from_page(run)
        if action == "batch":
            return self._on_batch(run, message, decided_by)
        pause, decision = self._begin_decision(run, message)
        self._push(run)
        return self._finish_decision(run, pause, decision, decided_by)

    def _begin_decision(self, run: ReplyRun, message: dict[str, Any]) -> tuple[Pause, Decision]:
        """The synchronous checks of one decision; its pause goes ``deciding``."""
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
        return pause, decision

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
        await self._check_decision(run, pause, decision, decided_by)
        self._enqueue(run, [(pause, decision)])
        return {"status": "decided", "decision": pause.decision}

    async def _check_decision(
        self, run: ReplyRun, pause: Pause, decision: Decision, decided_by: str | None = None
    ) -> None:
        """The async checks and the audit record; on refusal the pause goes back to ``open``."""
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

    def _enqueue(self, run: ReplyRun, decided: list[tuple[Pause, Decision]]) -> None:
        """Queue checked decisions and wake the driver once (one resume for all)."""
        for pause, decision in decided:
            transition(pause, "decided")
            pause.decision = decision.summary()
            run.queue.append(decision)
        run.wake.set()
        self._push(run)
        self._notify("decision", run)

    def _on_batch(self, run: ReplyRun, message: dict[str, Any], decided_by: str | None) -> Any:
        """``{"action": "batch", "items": [decision message, ...]}``: the page's
        group actions ("Approve all", "Submit all") as one message.

        Each item goes through the same checks as a single decision; the
        accepted ones reach the agent together (one
        ``UserConfirmResultEvent`` / ``ExternalExecutionResultEvent`` per
        kind, one resume). Returns a coroutine answering ``{"results":
        [{"tool_call_id", "ok", "error"?, "field"?, "decision"?}]}`` in item
        order; an item refused does not stop the others.

        Raises:
            DecisionError: ``items`` is not a non-empty list of objects.
        """
        items = message.get("items")
        if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
            raise DecisionError("A batch names its decisions in 'items', a non-empty list of objects.", field="items")
        if len(items) > MAX_BATCH:
            raise DecisionError(f"A batch holds at most {MAX_BATCH} decisions.", field="items")
        begun: list[tuple[int, Pause, Decision]] = []
        results: list[dict[str, Any]] = []
        for n, item in enumerate(items):
            results.append({"tool_call_id": item.get("tool_call_id"), "ok": True})
            if item.get("action") in ("batch", "interrupt", "sync", "transcript_sync", "cards_sync", "entry_text"):
                results[n].update(ok=False, error="A batch holds decisions only.", field="action")
                continue
            try:
                pause, decision = self._begin_decision(run, item)
            except NbHitlError as exc:
                results[n].update(ok=False, error=str(exc), field=exc.field, code=exc.code)
                continue
            begun.append((n, pause, decision))
        if begun:
            self._push(run)
        return self._finish_batch(run, begun, results, decided_by)

    async def _finish_batch(
        self,
        run: ReplyRun,
        begun: list[tuple[int, Pause, Decision]],
        results: list[dict[str, Any]],
        decided_by: str | None,
    ) -> dict[str, Any]:
        decided: list[tuple[Pause, Decision]] = []
        for n, pause, decision in begun:
            try:
                await self._check_decision(run, pause, decision, decided_by)
            except NbHitlError as exc:
                results[n].update(ok=False, error=str(exc), field=exc.field, code=exc.code)
                continue
            except Exception as exc:  # one item's failure never drops the others
                log.exception("a batch decision failed")
                results[n].update(ok=False, error=f"{type(exc).__name__}: {exc}", code="internal")
                if pause.status == "deciding":
                    transition(pause, "open")
                continue
            decided.append((pause, decision))
        if decided:
            self._enqueue(run, decided)
        for n, pause, _ in begun:
            if results[n]["ok"]:
                results[n]["decision"] = pause.decision
        return {"status": "decided" if decided else "refused", "results": results}

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
