"""Answering a service session's pauses: the console's road through nb_hitl.answers.

:class:`Answerer` (owned by a :class:`~nb_hitl.service.console.SessionConsole`,
which it reads and drives through the small :class:`ConsoleView` protocol)
takes a card's message through the same front door as a local session
(:func:`~nb_hitl.answers.front.admit` / :func:`~nb_hitl.answers.front.admit_all`
all or nothing, then :func:`~nb_hitl.answers.front.verify` with AgentScope's
tool where the console has it), moves the pauses through the one status
table (:func:`~nb_hitl.answers.lifecycle.transition`), records every answer in
the one audit record (:class:`~nb_hitl.service.ledger.AnswerLedger`, road
``"service"``), sends AgentScope's own events and judges them on the stream
(:mod:`nb_hitl.service.outcome`):

* ``open -> deciding``: the front door took the answer;
* ``deciding -> decided``: recorded (``sending``) and handed to the service;
* ``decided -> delivered``: only when this answer produced the call's result;
* ``decided -> expired``: settled by another answer (the card says by which,
  when the stream showed it);
* ``decided -> open``: not applied (the service did not take it); the call
  still waits and its card says what became of the last answer.

A call that needs several approvals is counted first, with every console
sharing the ledger (:mod:`nb_hitl.service.approving`); only the deciding answer is sent.
A call this console approved before and that asks again (a worker died after
the side effect) is refused once (:class:`AlreadyApprovedError`); the next
approval is the explicit second one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Protocol

from .._agentscope import enum_value
from ..answers import front
from ..answers.lifecycle import transition
from ..answers.record import decision_fields
from ..decisions import Decision
from ..errors import DecisionError, NbHitlError
from ..pauses import Pause
from .approving import count_admitted, recorded, tool_for
from .http import ServiceError, ServiceHTTP, confirm_body, external_body
from .ledger import APPROVING, AnswerLedger
from .outcome import Outcome, OutcomeError, answer_mark, await_outcome, call_state
from .required import approvals_metadata
from .settled import settled_by
from .told import UNTOLD, as_carried, notes_metadata

__all__ = ["Answerer", "ConsoleView", "AlreadyApprovedError", "OutcomeError", "tool_for"]


class AlreadyApprovedError(NbHitlError):
    """The console already approved this call; the next approval is the explicit second one."""

    code = "already_approved"


class ConsoleView(Protocol):
    """What an :class:`Answerer` reads and drives of its console: the pauses
    shown now (the dict is replaced on every refresh, so it is read each
    time), the stream cursor of the last ``/messages``, a redraw, a re-read."""

    @property
    def pauses(self) -> dict[str, Pause]:
        """``{tool_call_id: Pause}`` of the parked reply as shown now."""
        ...

    @property
    def cursor(self) -> str | None:
        """The stream cursor from the last ``/messages`` (``None`` before one)."""
        ...

    def push(self) -> None:
        """Show the pauses' current state (a closed view is no error)."""
        ...

    async def refresh(self) -> None:
        """Re-read the session; raises :class:`~nb_hitl.service.http.ServiceError`."""
        ...

    async def answered(self) -> None:
        """An answer was judged: re-read the session if a person sees it;
        raises :class:`~nb_hitl.service.http.ServiceError`."""
        ...


class Answerer:
    """The answers of one service session (see the module docstring).

    Args:
        console: the console whose pauses it answers (:class:`ConsoleView`).
        http: the user's :class:`~nb_hitl.service.http.ServiceHTTP`.
        ledger: where answers are recorded.
        agent_id, session_id: the session.
        agent_name: recorded with every answer.
        outcome_timeout: seconds to wait for the service's verdict on an answer.
        take_within: seconds a worker has to take an answer (echo it on the
            stream) before the service counts as not taking answers.
        console_id: this console's name in the answers it sends.
        decided_by: the person answering, recorded as ``decided_by`` and
            counted for calls that need several approvals (default: the service user).
        on_answered: called with ``(session_id, outcome)`` after every answer.

    Attributes:
        outcomes: every :class:`Outcome`, in order.
        outcome_timeout, take_within: as given (may be changed between answers).
    """

    def __init__(
        self,
        console: ConsoleView,
        http: ServiceHTTP,
        ledger: AnswerLedger,
        agent_id: str,
        session_id: str,
        *,
        console_id: str,
        agent_name: str = "",
        outcome_timeout: float = 10.0,
        take_within: float = 8.0,
        on_answered: Callable[[str, Outcome], None] | None = None,
        decided_by: str | None = None,
    ) -> None:
        self.console = console
        self.decided_by = decided_by or http.user_id
        self.http = http
        self.ledger = ledger
        self.agent_id = agent_id
        self.session_id = session_id
        self.console_id = console_id
        self.agent_name = agent_name
        self.outcome_timeout = outcome_timeout
        self.take_within = take_within
        self.on_answered = on_answered
        self.outcomes: list[Outcome] = []
        self._armed: set[str] = set()

    def flag(self, pause: Pause) -> None:
        """Say on a confirmation's card that this console approved the call
        before (a worker died after the side effect and the service asks
        again): approving again may run the tool a second time."""
        first = self.ledger.approved(self.session_id, pause.tool_call_id)
        if first is None or enum_value(pause.tool_call.state) != "asking":  # only a confirmation is approved
            return
        pause.message = (
            f"Already approved from this console at {first.get('time')} ({first.get('phase')}), and asking again: "
            "the service keeps state only at the end of a run, so the tool may have run already. "
            "Approving again may run it a second time."
        )

    async def act(self, message: Any) -> dict[str, Any]:
        """Check, record, send and judge one page message (``{"action",
        "tool_call_id", ...}``), as :meth:`nb_hitl.Session.act` does locally.

        The front door (:func:`~nb_hitl.answers.front.admit`, then
        :func:`~nb_hitl.answers.front.verify` with AgentScope's tool where the
        console has it), the second-approval guard, then
        :meth:`carry`.

        Returns:
            ``{"status": "delivered", "decision": {...}, "outcome": str}``
            (only when this answer produced the call's result).

        Raises:
            DecisionError, AlreadyDecidedError, PauseNotLiveError: the front
                door refused it (nothing sent).
            AlreadyApprovedError: the call was approved before; send the
                approval again to confirm a second run.
            OutcomeError: sent, and not applied (``code``: the outcome's status).
        """
        pause, decision = front.admit(self.console.pauses, message)
        self.console.push()
        second = await self._checked([(0, pause, decision)])
        (counted,) = self._count([(0, pause, decision)])
        if counted is None:
            return recorded(pause)
        (outcome,) = await self.carry([(pause, counted)], second)
        if not outcome.applied:
            raise OutcomeError(outcome)
        return {"status": "delivered", "decision": pause.decision, "outcome": outcome.detail}

    async def act_all(self, messages: Any) -> dict[str, Any]:
        """Several page messages at once (the items of the card's "Submit all"
        / "Approve all", as :meth:`nb_hitl.Session.act_all` locally): all or
        nothing through the front door
        (:func:`~nb_hitl.answers.front.admit_all`: not a list is refused), then
        ONE answer event per kind (confirmations first; AgentScope takes one
        event per resume).

        Returns:
            ``{"status": "delivered" | "not_applied", "results": [...],
            "outcome": str}`` as the local session answers a batch: per item
            ``{"tool_call_id", "ok", "error"?, "code"?, "decision"?}``.

        Raises:
            BatchRefused: an item was refused at the front door or by a
                check (nothing sent).
            AlreadyApprovedError: an item was approved before (nothing sent).
            OutcomeError: nothing of the batch was applied.
        """
        admitted, results = front.admit_all(self.console.pauses, messages, all_or_nothing=True)
        self.console.push()
        second = await self._checked(admitted, results)
        finals = self._count(admitted, results)
        for (n, pause, _), final in zip(admitted, finals, strict=True):
            if final is None:  # an approval short of the count: recorded, nothing sent
                results[n].update(recorded(pause))
        items = [(p, d) for (_, p, _), d in zip(admitted, finals, strict=True) if d is not None]
        if not items:
            return {"status": "approval_recorded", "results": results, "outcome": "Approvals recorded; nothing sent."}
        outcomes = await self.carry(items, second)
        by_call = {t: o for o in outcomes for t in o.states} if outcomes else {}
        for (n, pause, _), final in zip(admitted, finals, strict=True):
            if final is None:
                continue
            got = by_call.get(pause.tool_call_id, outcomes[-1])
            if pause.status == "delivered":
                results[n]["decision"] = pause.decision
            elif pause.status == "open":  # handed back unsent (see carry)
                results[n].update(ok=False, error=pause.message, code="not_applied")
            else:
                results[n].update(ok=False, error=got.detail, code=got.status)
        if not any(r["ok"] for r in results):
            raise OutcomeError(outcomes[-1])
        return {
            "status": "delivered" if all(r["ok"] for r in results) else "not_applied",
            "results": results,
            "outcome": " ".join(o.detail for o in outcomes),
        }

    async def _checked(
        self, admitted: list[tuple[int, Pause, Decision]], results: list[dict[str, Any]] | None = None
    ) -> set[str]:
        """The second-approval guard and :func:`~nb_hitl.answers.front.verify`
        for admitted answers; the calls whose approval is the explicit second.
        On any refusal every pause is handed back (``open``); a batch's
        refusal is :class:`~nb_hitl.answers.front.BatchRefused`."""
        try:
            second = self._second_approvals([p for _, p, d in admitted if d.action in APPROVING])
            for n, pause, decision in admitted:
                try:
                    await front.verify(pause, decision, tool=tool_for(pause.tool_name), engine=None)
                except NbHitlError as exc:
                    if results is None:
                        raise
                    results[n] = front.item_result(results[n], exc)
                    raise front.BatchRefused(
                        f"Nothing was sent: {results[n]['tool_call_id']!s:.80}: {exc}", results
                    ) from None
        except BaseException:
            for _, pause, _ in admitted:
                front.release(pause)
            self.console.push()
            raise
        return second

    def _count(
        self, admitted: list[tuple[int, Pause, Decision]], results: list[dict[str, Any]] | None = None
    ) -> list[Decision | None]:
        """:func:`~nb_hitl.service.approving.count_admitted` for this session
        (per item the decision to send, or ``None``: an approval short of the
        count); on a refusal every pause still ``deciding`` is handed back."""
        try:
            return count_admitted(
                self.ledger,
                self.decided_by,
                admitted,
                results,
                session_id=self.session_id,
                agent_id=self.agent_id,
                agent=self.agent_name,
            )
        except BaseException:
            for _, pause, _ in admitted:
                front.release(pause)
            raise
        finally:
            self.console.push()

    def _second_approvals(self, approving: list[Pause]) -> set[str]:
        """Calls this console approved before: the first Approve after that is
        refused (:class:`AlreadyApprovedError`, the calls armed), the next one
        is the explicit second approval."""
        before: dict[str, dict[str, Any]] = {}
        for p in approving:
            first = self.ledger.approved(self.session_id, p.tool_call_id)
            if first is not None:
                before[p.tool_call_id] = first
        unarmed = [t for t in before if t not in self._armed]
        if unarmed:
            self._armed.update(unarmed)
            first = before[unarmed[0]]
            raise AlreadyApprovedError(
                f"Already approved at {first.get('time')} from this console; the service asks again because it "
                "lost the end of that run. Approve again to run the tool a second time.",
                field="action",
            )
        return set(before)

    async def send_raw(self, body: dict[str, Any], tool_call_ids: list[str], action: str = "raw") -> Outcome:
        """Send an answer body as given (no :func:`~nb_hitl.decisions.decide`)
        and judge it; the verdict is shown on the cards of ``tool_call_ids``.
        For operators and tests.

        Raises:
            DecisionError: none of the calls is open.
        """
        shown = self.console.pauses
        pauses = [shown[t] for t in tool_call_ids if t in shown and shown[t].status == "open"]
        if not pauses:
            raise DecisionError("None of these tool calls is open in this session.", field="tool_call_id")
        for p in pauses:
            transition(p, "deciding")
        return await self._send([(p, None) for p in pauses], body, {"decision": action}, set())

    async def carry(self, items: list[tuple[Pause, Decision]], second: set[str]) -> list[Outcome]:
        """Send admitted answers (pauses ``deciding``) to the service and judge them.

        One event per kind, confirmations first: AgentScope takes one
        ``UserConfirmResultEvent`` or ``ExternalExecutionResultEvent`` per
        resume, and parks again on the calls left open. The external results
        go only once the confirmations were applied and the session waits
        again; otherwise their pauses are handed back (``open``).

        Returns:
            one :class:`Outcome` per event sent.
        """
        confirms = [(p, d) for p, d in items if d.confirm_result is not None]
        externals = [(p, d) for p, d in items if d.tool_result is not None]
        outcomes: list[Outcome] = []
        for group in (confirms, externals):
            if not group:
                continue
            if outcomes and not (outcomes[-1].applied and await self._parked_again(group)):
                for p, _ in group:
                    front.release(p)
                    p.message = (
                        "Not sent: the confirmations sent with it were not applied, or the session did not wait again."
                    )
                self.console.push()
                continue
            reply_id = group[0][0].reply_id
            mark = {**answer_mark(self.http.user_id, self.console_id), **notes_metadata([d for _, d in group])}
            mark.update(approvals_metadata(group, self.decided_by))  # the service checks them (required.py)
            if group is confirms:
                body = confirm_body(reply_id, [d.confirm_result for _, d in group if d.confirm_result], mark)
            else:
                body = external_body(reply_id, [d.tool_result for _, d in group if d.tool_result], mark)
            outcomes.append(await self._send([(p, d) for p, d in group], body, {}, second))
        return outcomes

    async def _parked_again(self, group: list[tuple[Pause, Decision]]) -> bool:
        ids = {p.tool_call_id for p, _ in group}
        for _ in range(int(self.outcome_timeout / 0.25) + 1):
            with contextlib.suppress(ServiceError):
                status, parked, _ = await call_state(self.http, self.agent_id, self.session_id, ids)
                if status != "running":
                    return parked
            await asyncio.sleep(0.25)
        return False

    async def _send(
        self,
        group: list[tuple[Pause, Decision | None]],
        body: dict[str, Any],
        raw: dict[str, Any],
        second: set[str],
    ) -> Outcome:
        """Record (``sending``), hand over (``deciding -> decided``), send, judge,
        record the verdict and settle the pauses (:meth:`_settle`)."""
        ids = [p.tool_call_id for p, _ in group]
        event_id = str(body.get("id"))

        def record(pause: Pause, decision: Decision | None, phase: str, **extra: Any) -> None:
            self.ledger.record(
                pause,
                decision_fields(decision) if decision is not None else raw,
                service_session_id=self.session_id,
                agent_id=self.agent_id,
                agent=self.agent_name,
                event_id=event_id,
                phase=phase,
                decided_by=self.decided_by,
                **extra,
            )

        try:
            for p, d in group:
                record(p, d, "sending", second_approval=p.tool_call_id in second)
        except BaseException:
            for p, _ in group:
                front.release(p)
            self.console.push()
            raise
        for p, d in group:
            transition(p, "decided")
            p.decision = as_carried(d) if d is not None else raw
        self.console.push()
        outcome = await self._judge(body, ids)
        for p, d in group:
            extra = {k: v for k, v in (("by", outcome.by), ("at", outcome.at)) if v}
            elsewhere = outcome.states.get(p.tool_call_id) == "answered_elsewhere"
            record(
                p,
                d,
                "answered_elsewhere" if elsewhere else outcome.status,
                detail=outcome.detail,
                second_approval=p.tool_call_id in second,
                **extra,
            )
        self.outcomes.append(outcome)
        for p, d in group:  # the service's ToldMiddleware put the note in the call's result
            if d is not None and d.note and p.tool_call_id in outcome.told:
                p.decision = {**(p.decision or {}), "note": d.note}
        untold = {p.tool_call_id for p, d in group if d is not None and d.action == "deny" and d.reason} - outcome.told
        self._settle([p for p, _ in group], outcome, untold)
        if self.on_answered is not None:
            self.on_answered(self.session_id, outcome)
        with contextlib.suppress(ServiceError):
            await self.console.answered()
        return outcome

    async def _judge(self, body: dict[str, Any], ids: list[str]) -> Outcome:
        """Send ``body`` and judge it on the stream (:func:`await_outcome`),
        once the calls are found still waiting (checked while the stream
        subscribes; a stale console sends nothing)."""

        async def still_waiting() -> Outcome | None:
            try:
                status, parked = "running", True
                for _ in range(int(min(self.outcome_timeout, 5.0) / 0.25) + 1):
                    status, parked, _ = await call_state(self.http, self.agent_id, self.session_id, set(ids))
                    if status != "running":
                        break
                    await asyncio.sleep(0.25)
            except ServiceError as exc:
                return Outcome("not_applied", f"Not sent: the service could not be read ({exc}).")
            if status == "running":
                return Outcome(
                    "not_applied",
                    "Not sent: the session is running (another answer or message is being worked on); "
                    "answer again once it waits.",
                )
            if not parked:
                return await settled_by(
                    self.http, self.agent_id, self.session_id, ids, after=self.console.cursor, ours=self.ledger.sent
                )
            return None

        try:
            return await await_outcome(
                self.http,
                self.agent_id,
                self.session_id,
                body,
                ids,
                send=lambda: self.http.chat(self.agent_id, self.session_id, body),
                timeout=self.outcome_timeout,
                take_within=min(self.take_within, self.outcome_timeout),
                sent_here=self.ledger.sent,
                before_send=still_waiting,
            )
        except ServiceError as exc:
            return Outcome("not_applied", f"Not sent: {exc}")

    def _settle(self, pauses: list[Pause], outcome: Outcome, untold: set[str]) -> None:
        """Move the pauses by the verdict: ``delivered`` only for a call this
        answer produced the result of (a denial's reason in ``untold`` is
        said not to reach the agent, :data:`UNTOLD`); ``expired`` (with the
        reason) for a call settled elsewhere; ``open`` again for a call still
        waiting, saying what became of the last answer."""
        for p in pauses:
            state = outcome.states.get(p.tool_call_id)
            if p.tool_call_id in outcome.not_run:  # the service's policy did not run it (required.py)
                transition(p, "expired", reason=outcome.not_run[p.tool_call_id])
            elif outcome.applied and state != "answered_elsewhere":
                transition(p, "delivered")
                p.message = UNTOLD if p.tool_call_id in untold else None
                self._armed.discard(p.tool_call_id)
            elif outcome.status == "answered_elsewhere" or state == "answered_elsewhere":
                transition(p, "expired", reason=outcome.detail)
            else:  # the service did not take it: the call still waits, and says why
                transition(p, "open")
                p.decision = p.message = None
                self.flag(p)
                p.message = " ".join(x for x in (f"Last answer not applied: {outcome.detail}", p.message) if x)
        self.console.push()
