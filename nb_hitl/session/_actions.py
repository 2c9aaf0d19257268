"""The page's actions on a reply and the deadline of a pause.

The path of a click: page -> ``ReplyWidget`` -> :meth:`Actions._on_action`
(synchronous: shape, liveness, exactly-once, the pure
:func:`~nb_hitl.decisions.decide`; the pause goes ``open -> deciding``) ->
:meth:`Actions._finish_decision` (async: permission re-check of an edited
input, the tool's own external-result check, audit record fsynced; the pause
goes ``deciding -> decided``, or back to ``open`` when a check refuses) ->
the run's queue -> the driving task resumes the agent.

A call that needs several approvals (``Policy(approvals=N)``) is counted
here, once for every road (:mod:`nb_hitl.answers.approvals`): an approval
that is not the last is audited and its pause goes back to ``open``
(``deciding -> open``) with the approval on it; nothing is queued.

A deadline that passes applies the session's default (deny / error result,
or interrupt the reply) through the same transitions and audits ``timeout``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .._agentscope import APPROVALS_KEY, permission_engine
from ..answers import approvals, front
from ..answers.lifecycle import settled, transition
from ..answers.record import KERNEL
from ..decisions import Decision, decide
from ..dry_run import dry_run
from ..edit_preview import preview_answer
from ..entries import entry_text
from ..errors import NbHitlError, PauseNotLiveError
from ..kinds import kind_spec
from ..pauses import UNANSWERED, Pause
from ..widgets import _transcript_feed as transcript_feed
from . import _whatif as whatif
from ._closing import stop_notes
from ._core import SessionCore
from ._promise import note
from ._run import ReplyRun

__all__ = ["Desk"]

log = logging.getLogger("nb_hitl.session")

MAX_BATCH = front.MAX_BATCH


class Desk:
    """Where a session's answers arrive: page actions, ``act`` and deadlines.

    A part of a :class:`~nb_hitl.session.Session` (``session.desk``), holding
    the session's shared state (:class:`~nb_hitl.session._core.SessionCore`)
    by reference; the driver (``_drive``) takes the queue it fills.

    Args:
        session: the session whose runs it answers.
    """

    def __init__(self, session: SessionCore) -> None:
        self.s = session
        self._judging: set[asyncio.Task[None]] = set()  # deadlines waiting for an answer's checks

    def on_action(
        self, run: ReplyRun, message: Any, decided_by: str | None = None, origin: dict[str, Any] | None = None
    ) -> Any:
        """Handle one page message for ``run`` (runs in the comm handler).

        Synchronous part: the front door (:func:`~nb_hitl.answers.front.admit`).
        Returns a coroutine for the async part (checks, audit, queue);
        ``decided_by`` (default: the session's) and ``origin`` (default: this
        kernel, :data:`~nb_hitl.answers.record.KERNEL`) go into the audit line.
        """
        action = front.as_message(message).get("action")
        # the page connected ("sync": both streams in one answer) or saw a gap in one
        synced = transcript_feed.answer_sync(message, run.widget, run.transcript, run.cards, lambda: self.s._push(run))
        if synced is not None:
            return synced
        if action == "entry_text":  # "Show all" on an entry the page shows a part of
            return entry_text(run.transcript.by_id, message.get("id"))
        if action == "interrupt":
            if not run.live:
                raise PauseNotLiveError(f"This reply is already {run.status}: {run.reason or 'nothing to interrupt'}")
            # a coroutine: the widget runs it on the session's loop, whatever
            # thread delivered the comm message (asyncio objects are not
            # thread-safe)
            return self.interrupt_from_page(run)
        if action == "batch":
            return self.on_batch(run, message, decided_by, origin)
        if (
            isinstance(action, str) and action in whatif.REQUESTS
        ):  # "Replay" / "What if…" on a finished reply: not answers
            return whatif.handle(self.s, run, message)  # type: ignore[arg-type]
        if action == "dry_run":  # not an answer: the pause stays open, nothing is audited
            with self.s._lock:
                pause = front.arrive(run.pauses, message, closed=self.closed(run))
            return self.dry_run(pause)
        if action == "preview":  # what an edit would change, before it is sent: not an answer either
            with self.s._lock:
                pause = front.arrive(run.pauses, message, closed=self.closed(run))
            return self.preview(pause, front.as_message(message))
        pause, decision = self.begin_decision(run, message)
        # pushed by finish_decision, on the loop: with the rest of what this answer changes
        return self.finish_decision(run, pause, decision, decided_by, origin)

    async def dry_run(self, pause: Pause) -> dict[str, Any]:
        """``{"action": "dry_run", "tool_call_id", "reply_id"}``: the call run in a
        temporary copy (:func:`nb_hitl.dry_run.dry_run`). Returns ``{"dry_run":
        DryRunView}``; raises ``DecisionError`` for a call that cannot be dry-run."""
        return {"dry_run": await dry_run(self.s.team.agent(pause.agent), pause)}

    async def preview(self, pause: Pause, message: dict[str, Any]) -> dict[str, Any]:
        """``{"action": "preview", "tool_call_id", "reply_id", "input" | "output"}``: what the edit
        would change, with the agent's tool (a file-editing call's file change):
        :func:`nb_hitl.edit_preview.preview_answer` (its returns and errors)."""
        tool = await self.s.team.agent(pause.agent).toolkit.get_tool(pause.tool_name)
        return await preview_answer(pause, message, tool)

    def closed(self, run: ReplyRun) -> str | None:
        """Why ``run`` takes no answer any more, or ``None`` while it does."""
        if self.s.superseded_by is not None:
            return run.reason or "Superseded by a newer Session for this agent."
        if not run.live:
            return run.reason or "the reply ended"
        return None

    def begin_decision(self, run: ReplyRun, message: Any) -> tuple[Pause, Decision]:
        """The front door for one answer; its pause goes ``deciding``."""
        with self.s._lock:
            return front.admit(run.pauses, message, closed=self.closed(run))

    async def interrupt_from_page(self, run: ReplyRun) -> dict[str, Any]:
        if not run.live:
            raise PauseNotLiveError(f"This reply is already {run.status}: {run.reason or 'nothing to interrupt'}")
        was_running = run.status == "running"
        self.s._request_interrupt(run, "Interrupted from the widget.")
        if was_running and run.task is not None and not run.task.done():
            run.task.cancel()
        return {"status": "interrupting"}

    async def finish_decision(
        self,
        run: ReplyRun,
        pause: Pause,
        decision: Decision,
        decided_by: str | None = None,
        origin: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The checks, the record and the queue of one admitted answer
        (``pause`` is ``deciding``). The page is sent ``deciding`` once the
        loop is free, with whatever the answer changed by then
        (:meth:`~nb_hitl.session._core.SessionCore._push_soon`)."""
        self.s._push_soon(run)
        final = await self.check_decision(run, pause, decision, decided_by, origin)
        if final is None:
            return self.approval_taken(run, pause)
        self.enqueue(run, [(pause, final)])
        return {"status": "decided", "decision": pause.decision}

    def approval_taken(self, run: ReplyRun, pause: Pause) -> dict[str, Any]:
        """An approval that is not the last one: the pause is open again for
        the next person. Returns ``{"status": "approval_recorded", "approvals",
        "approvals_needed"}``."""
        transition(pause, "open")
        self.s._push(run)
        self.s._notify("decision", run)
        self.s._tell(run, pause)  # after a Modify the input is new: its people are told again
        view = pause.to_view()
        return {
            "status": "approval_recorded",
            "approvals": view["approvals"],
            "approvals_needed": view["approvals_needed"],
        }

    def count(
        self, pause: Pause, decision: Decision, decided_by: str | None, origin: dict[str, Any] | None
    ) -> approvals.Count:
        """What this answer amounts to on a call that needs several approvals
        (:func:`nb_hitl.answers.approvals.count`; refuses a second approval
        by the same person)."""
        return approvals.count(pause, decision, decided_by or self.s.decided_by, origin or KERNEL)

    def audit_count(
        self,
        pause: Pause,
        decision: Decision,
        got: approvals.Count,
        decided_by: str | None,
        origin: dict[str, Any] | None,
    ) -> Decision | None:
        """The audit line of a counted answer, then the count on the pause;
        returns the decision the agent gets, or ``None`` (more approvals needed)."""
        self.s._audit(
            pause, got.final or decision, decided_by, origin or KERNEL, extra=approvals.audit_fields(pause, got)
        )
        approvals.apply(pause, got)
        if approvals.needs_more(pause):  # kept in the agent's state: a restart keeps the approvals so far
            kept = self.s.team.agent(pause.agent).state.middle_context.setdefault(APPROVALS_KEY, {})
            if got.final is None:
                kept[pause.tool_call_id] = approvals.saved(pause)
                self.s._checkpoint_quietly()
            else:
                kept.pop(pause.tool_call_id, None)
        return got.final

    async def check_decision(
        self,
        run: ReplyRun,
        pause: Pause,
        decision: Decision,
        decided_by: str | None = None,
        origin: dict[str, Any] | None = None,
    ) -> Decision | None:
        """:func:`~nb_hitl.answers.front.verify`, the approvals count, then the
        audit record; on refusal the pause goes back to ``open``. Returns the
        decision the agent gets, or ``None`` when the call needs more approvals."""
        try:
            agent = self.s.team.agent(pause.agent)  # the agent that asked: its tool, schema and engine
            tool = await agent.toolkit.get_tool(pause.tool_name)
            await front.verify(pause, decision, tool=tool, engine=permission_engine(agent))
            if not run.live or pause.status != "deciding":
                raise PauseNotLiveError(
                    f"This pause is no longer live: {pause.reason or run.reason or 'the reply ended'}"
                )
            got = self.count(pause, decision, decided_by, origin)
            return self.audit_count(pause, decision, got, decided_by, origin)
        except BaseException:
            if pause.status == "deciding":
                front.release(pause)
                self.s._push(run)
            raise

    def enqueue(self, run: ReplyRun, decided: list[tuple[Pause, Decision]]) -> None:
        """Queue checked decisions and wake the driver once (one resume for all)."""
        for pause, decision in decided:
            self._hand_over(run, pause, decision, decision.summary())
        run.wake.set()
        self.s._push_soon(run)  # with the resume, after the agent's next event (_push_soon)
        self.s._notify("decision", run)

    def on_batch(
        self,
        run: ReplyRun,
        message: dict[str, Any],
        decided_by: str | None,
        origin: dict[str, Any] | None = None,
        *,
        all_or_nothing: bool = False,
    ) -> Any:
        """``{"action": "batch", "items": [decision message, ...]}``: the page's
        group actions ("Approve all", "Submit all") as one message, and an
        AG-UI resume (``all_or_nothing``).

        Each item goes through the front door
        (:func:`~nb_hitl.answers.front.admit_all`); the accepted ones reach the
        agent together (one ``UserConfirmResultEvent`` /
        ``ExternalExecutionResultEvent`` per kind, one resume). Returns a
        coroutine answering ``{"status", "results": [{"tool_call_id", "ok",
        "error"?, "field"?, "code"?, "decision"?}]}`` in item order; without
        ``all_or_nothing`` an item refused does not stop the others.

        Raises:
            DecisionError: ``items`` is not a non-empty list of objects.
            BatchRefused: ``all_or_nothing`` and an item failed the front door
                (from the coroutine: or a later check; nothing was queued).
        """
        with self.s._lock:
            admitted, results = front.admit_all(
                run.pauses, message.get("items"), closed=self.closed(run), all_or_nothing=all_or_nothing
            )
        return self.finish_batch(run, admitted, results, decided_by, origin, all_or_nothing=all_or_nothing)

    async def finish_batch(
        self,
        run: ReplyRun,
        begun: list[tuple[int, Pause, Decision]],
        results: list[dict[str, Any]],
        decided_by: str | None,
        origin: dict[str, Any] | None = None,
        *,
        all_or_nothing: bool = False,
    ) -> dict[str, Any]:
        """The checks, records and queue of a batch's admitted items (see :meth:`on_batch`).
        Cancelled or failed half-way (the AG-UI client that sent the resume went away while
        an item was checked), every pause still ``deciding`` is open again."""
        try:
            return await self._finish_batch(run, begun, results, decided_by, origin, all_or_nothing=all_or_nothing)
        except BaseException:
            if any(pause.status == "deciding" for _, pause, _ in begun):
                for _, pause, _ in begun:
                    front.release(pause)
                self.s._push(run)
            raise

    async def _finish_batch(
        self,
        run: ReplyRun,
        begun: list[tuple[int, Pause, Decision]],
        results: list[dict[str, Any]],
        decided_by: str | None,
        origin: dict[str, Any] | None = None,
        *,
        all_or_nothing: bool = False,
    ) -> dict[str, Any]:
        if begun:  # the admitted cards, once the loop is free (as finish_decision)
            self.s._push_soon(run)
        checked: list[tuple[int, Pause, Decision]] = []
        counts: dict[int, approvals.Count] = {}
        for n, pause, decision in begun:
            try:
                agent = self.s.team.agent(pause.agent)
                tool = await agent.toolkit.get_tool(pause.tool_name)
                await front.verify(pause, decision, tool=tool, engine=permission_engine(agent))
                if not run.live or pause.status != "deciding":
                    raise PauseNotLiveError(
                        f"This pause is no longer live: {pause.reason or run.reason or 'the reply ended'}"
                    )
                counts[n] = self.count(pause, decision, decided_by, origin)
            except NbHitlError as exc:
                results[n] = front.item_result(results[n], exc)
                front.release(pause)
                continue
            except Exception as exc:  # one item's failure never drops the others
                log.exception("a batch decision failed")
                results[n] = front.item_result(results[n], NbHitlError(f"{type(exc).__name__}: {exc}"))
                results[n]["code"] = "internal"
                front.release(pause)
                continue
            checked.append((n, pause, decision))
        if all_or_nothing and len(checked) < len(begun):
            for _, pause, _ in checked:
                front.release(pause)
            self.s._push(run)
            refused = next(r for r in results if not r["ok"])
            raise front.BatchRefused(f"Nothing was sent: {refused['tool_call_id']!s:.80}: {refused['error']}", results)
        decided: list[tuple[Pause, Decision]] = []
        waiting: list[int] = []
        for n, pause, decision in checked:
            try:
                final = self.audit_count(pause, decision, counts[n], decided_by, origin)
            except Exception as exc:  # the audit line must be written before the agent is resumed
                log.exception("the audit record of a batch decision failed")
                said = f"The audit record of this answer could not be written ({type(exc).__name__}): it was not taken."
                results[n] = front.item_result(results[n], NbHitlError(said))
                results[n]["code"] = "internal"
                front.release(pause)
                continue
            if final is None:
                waiting.append(n)
                results[n].update(self.approval_taken(run, pause))
                continue
            decided.append((pause, final))
        if all_or_nothing and begun and not decided and not waiting:  # every audit failed: nothing was taken
            self.s._push(run)
            refused = next(r for r in results if not r["ok"])
            raise front.BatchRefused(f"Nothing was sent: {refused['tool_call_id']!s:.80}: {refused['error']}", results)
        if decided:
            self.enqueue(run, decided)
        elif begun:
            self.s._push(run)
        for n, pause, _ in checked:
            if results[n]["ok"] and n not in waiting:
                results[n]["decision"] = pause.decision
        status = "decided" if decided else ("approval_recorded" if waiting else "refused")
        return {"status": status, "results": results}

    def deadline_passed(self, run: ReplyRun, pause: Pause) -> None:
        """Apply the configured default to a pause whose deadline passed (the pause's timer
        runs it on the session's loop). A pause whose answer is being checked (``deciding``)
        is judged again once that answer settles (:meth:`_judge_when_settled`): an answer that
        leaves it open (refused, or an approval short of N) no longer may, the deadline
        having passed, so the default applies then."""
        with self.s._lock:
            if not run.live or run.pauses.get(pause.tool_call_id) is not pause:
                return
            if pause.status == "deciding":
                self._judge_when_settled(run, pause)
                return
            if pause.status != "open":
                return
            if self.s.on_deadline == "interrupt":
                transition(pause, "deciding")
            else:
                message = kind_spec(pause.kind).timeout_message(pause)
                decision = decide(pause, message)
                transition(pause, "deciding")
        applied = "reply interrupted" if self.s.on_deadline == "interrupt" else kind_spec(pause.kind).timeout_applied
        try:
            self.s._audit_pause(
                pause,
                event="answered",
                decision="timeout",
                decided_how="deadline",
                applied=applied,
                decided_by="deadline",
            )
        except Exception as exc:
            log.error("the deadline of %s passed but its audit record failed", pause.tool_call_id, exc_info=True)
            pause.deadline = None  # a person can still answer (and their answer is audited)
            transition(
                pause,
                "open",
                reason=f"The deadline passed, but the audit log could not be written ({type(exc).__name__}: {exc}); "
                "the default was not applied and the pause is still open.",
            )
            self.s._push(run)
            self.s._notify("decision", run)
            return
        pause.decision = {"action": "timeout", "applied": applied}
        if self.s.on_deadline == "interrupt":
            self._tell_deadline_stop(run, pause)
            transition(pause, "expired", reason="The deadline passed; the reply was interrupted.")
            was_running = run.status == "running"  # a question asked while a tool runs (an MCP server's)
            run.stop_text = (
                f"Nobody answered the {kind_spec(pause.kind).cancelled_what} about {pause.tool_name} "
                "before the deadline, so the reply was stopped."
            )
            self.s._request_interrupt(run, run.stop_text)
            if was_running and run.task is not None and not run.task.done():
                run.task.cancel()  # as an interrupt from the page: AgentScope ends the reply interrupted
        else:
            self._hand_over(run, pause, decision, pause.decision)
            run.wake.set()
            self.s._push(run)
        self.s._notify("decision", run)

    def _judge_when_settled(self, run: ReplyRun, pause: Pause) -> None:
        """Run :meth:`deadline_passed` again once ``pause`` leaves ``deciding``: a task on the
        running loop awaits :func:`~nb_hitl.answers.lifecycle.settled` (woken by the
        transition, whatever thread makes it). It is kept until it ends; an error is logged."""

        async def judge() -> None:
            await settled(pause, None)
            try:
                self.deadline_passed(run, pause)
            except Exception:
                log.exception("the deadline of %s could not be applied", pause.tool_call_id)

        task = asyncio.get_running_loop().create_task(judge())
        self._judging.add(task)
        task.add_done_callback(self._judging.discard)

    def _tell_deadline_stop(self, run: ReplyRun, passed: Pause) -> None:
        """Before a deadline stops the reply: record, for every call still
        waiting or running, the note the model reads instead of AgentScope's
        "interrupted by the user" (a ``replace`` note, applied once AgentScope
        saved the interrupted result, see :func:`~nb_hitl.session._promise.apply_note`;
        the transcript shows the same text). A call with a pause gets its kind's
        note; a call never asked, or running (a question asked while a tool
        ran, an MCP server's), gets :func:`~nb_hitl.session._closing.stop_notes`'."""
        what = kind_spec(passed.kind).cancelled_what
        for pause in run.pauses.values():
            if pause.status not in UNANSWERED:
                continue
            other = None if pause is passed else passed
            text = kind_spec(pause.kind).deadline_stop_note(pause, other, what)
            note(self.s.team.agent(pause.agent), pause.tool_call_id, text)
        cause = (
            f"Nobody answered the {what} about {passed.tool_name} before the deadline; the user did not interrupt it."
        )
        for agent in self.s.team.agents.values():
            for tool_call_id, text in stop_notes(agent, cause, skip=run.pauses).items():
                note(agent, tool_call_id, text)

    @staticmethod
    def _hand_over(run: ReplyRun, pause: Pause, decision: Decision, summary: dict[str, Any]) -> None:
        """A recorded decision goes ``decided``: queued for the agent, or, for a
        pause with a ``carrier`` (an MCP server awaiting its elicitation while
        the tool runs; the agent is not resumed), handed to it (``delivered``)."""
        transition(pause, "decided")
        pause.decision = summary
        if pause.carrier is None:
            run.queue.append(decision)
            return
        pause.carrier.deliver(decision)
        transition(pause, "delivered")
