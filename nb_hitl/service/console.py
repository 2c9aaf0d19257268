"""One session of the service, opened in the notebook: transcript and pause cards.

:class:`SessionConsole` reads ``/messages`` into the transcript entries and
the pauses of nb_hitl's :class:`~nb_hitl.widgets.reply.ReplyWidget` (the same
cards as a local pause: each parked tool-call block becomes a
:class:`~nb_hitl.pauses.Pause` through :func:`~nb_hitl.pauses.build_pause`),
and answers the card's messages through nb_hitl's one pipeline of answers
(its :class:`~nb_hitl.service.answering.Answerer`: the front door, the
status table, the audit record, AgentScope's events judged on the stream; the
card says ``delivered`` only when this answer produced the call's result).

While open it follows the session's stream and re-reads ``/messages`` when a
reply ends, so late output of a tool the service moved to the background
shows up in the transcript.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from ..answers import front
from ..answers.approvals import needs_more
from ..answers.lifecycle import transition
from ..edit_preview import preview_answer
from ..entries import entry_text
from ..pauses import Pause
from ..policy import Policy
from ..session._transcript import Transcript
from ..widgets import _transcript_feed as transcript_feed
from ..widgets._cards import CardFeed
from .answering import AlreadyApprovedError, Answerer, OutcomeError
from .approving import console_policies, parked_pause, put, shared
from .http import ServiceError, ServiceHTTP, user_msg_body
from .inbox import PARKED, parked_calls
from .ledger import AnswerLedger
from .outcome import Outcome
from .say import not_idle, said
from .transcript import transcript_entries

__all__ = ["SessionConsole", "transcript_entries", "AlreadyApprovedError", "OutcomeError"]

log = logging.getLogger(__name__)

IN_FLIGHT = ("deciding", "decided")
"""Pause statuses of an answer on its way (a refresh keeps them)."""

CLOSED = (
    "Closed: this console no longer follows the session (it was closed, e.g. by the client's aclose()). "
    "What is shown is the session as last read; open it in a new console to follow or answer it."
)
"""What a closed console's session widget says (its status ``closed``) and why its open pauses expired."""


def console_name() -> str:
    """This console's name in the answers it sends (``host:pid:random``), so
    another console can say where an answer came from."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def session_label(name: str) -> str:
    """How the console's header names a service session: ``session "release notes"`` by its name
    (AgentScope's ``SessionRecord`` config name), never by its id; ``a session with no name`` without one."""
    return f'session "{name}"' if name else "a session with no name"


def in_shown_order(shown: dict[str, Pause], fresh: dict[str, Pause]) -> dict[str, Pause]:
    """``fresh`` (pauses by ``tool_call`` id) with those already ``shown`` first, in their
    order, then the new ones in theirs: a card stays where the page drew it (a card op
    replaces a known card in place and appends a new one; it never moves one)."""
    kept = [key for key in shown if key in fresh]
    return {key: fresh[key] for key in [*kept, *(key for key in fresh if key not in shown)]}


class SessionConsole:
    """The console of one service session.

    Args:
        http: the user's :class:`~nb_hitl.service.http.ServiceHTTP`.
        ledger: where answers are recorded.
        agent_id, session_id: the session.
        agent_name: shown in the card header.
        session_name: the session's name (AgentScope's session config name), shown in the card
            header instead of its id (see :func:`session_label`).
        outcome_timeout: seconds to wait for the service's verdict on an answer.
        on_answered: called with ``(session_id, outcome)`` after every answer.
        stranded_after: seconds ``running`` before the header says the
            session looks stranded (a worker died mid-turn).
        take_within: seconds a worker has to take an answer (echo it on the
            stream) before the console says the service is not taking answers.
        console_id: this console's name in the answers it sends (default
            :func:`console_name`).
        policies: :class:`~nb_hitl.policy.Policy` objects the console applies
            to the parked confirmations (by tool name, ``when``,
            ``predicate``): a call that needs several approvals
            (``approvals=N``) is counted with every console recording in the
            same ledger (:mod:`nb_hitl.service.approving`).
        decided_by: the person answering here (``decided_by`` in the ledger,
            and who is counted; default: the service user).

    Attributes:
        pauses: ``{tool_call_id: Pause}`` of the parked reply.
        transcript: the entries shown (:class:`~nb_hitl.session._transcript.Transcript`),
            brought to each read of ``/messages`` as ops; an entry a later
            read no longer holds (it reads at most 50 messages) stays.
        status: AgentScope's session status at the last refresh.
        cursor: the stream cursor from the last ``/messages``.
        cards: what the widget's page was sent of the pause cards
            (:class:`~nb_hitl.widgets._cards.CardFeed`).
        closed: :meth:`end` was called (the console follows and answers nothing any more).
        answerer: the :class:`~nb_hitl.service.answering.Answerer` that
            checks, sends and judges this console's answers (its
            ``outcome_timeout`` and ``take_within`` may be changed between answers).
    """

    def __init__(
        self,
        http: ServiceHTTP,
        ledger: AnswerLedger,
        agent_id: str,
        session_id: str,
        *,
        agent_name: str = "",
        session_name: str = "",
        outcome_timeout: float = 10.0,
        on_answered: Callable[[str, Outcome], None] | None = None,
        stranded_after: float = 60.0,
        take_within: float = 8.0,
        console_id: str | None = None,
        policies: Sequence[Policy] = (),
        decided_by: str | None = None,
    ) -> None:
        self.http = http
        self.ledger = ledger
        self.agent_id = agent_id
        self.session_id = session_id
        self.agent_name = agent_name
        self.session_name = session_name if session_name != session_id else ""
        self.pauses: dict[str, Pause] = {}
        self.transcript = Transcript()
        self.status = ""
        self.reply_id: str | None = None
        self.cursor: str | None = None
        self.widget: Any = None
        self.cards = CardFeed()
        self.closed = False
        self._watch: asyncio.Task[None] | None = None
        self._approvals_watch: asyncio.Task[None] | None = None
        self.console_id = console_id or console_name()
        self.stranded_after = stranded_after
        self._running_since: float | None = None
        self.policies = console_policies(policies)
        self.answerer = Answerer(
            self,
            http,
            ledger,
            agent_id,
            session_id,
            console_id=self.console_id,
            agent_name=agent_name,
            outcome_timeout=outcome_timeout,
            take_within=take_within,
            on_answered=on_answered,
            decided_by=decided_by,
        )

    @property
    def outcomes(self) -> list[Outcome]:
        """Every :class:`Outcome` of this console's answers, in order."""
        return self.answerer.outcomes

    # -- view --------------------------------------------------------------
    def make_widget(self) -> Any:
        """The :class:`~nb_hitl.widgets.reply.ReplyWidget` showing this session (created once)."""
        if self.widget is None:
            from ..widgets.reply import ReplyWidget

            self.widget = ReplyWidget(
                handler=self.handle, agent_name=self.agent_name, prompt=session_label(self.session_name)
            )
            self.push()
        return self.widget

    def push(self) -> None:
        """Show the current transcript, pauses and status in the widget (if made).

        Both go as what changed, as a local Session's do: the transcript's ops
        since the last push as one ``nbh_transcript`` message
        (:func:`nb_hitl.widgets._transcript_feed.flush`; :meth:`refresh` made
        them by :meth:`Transcript.follow <nb_hitl.session._transcript.Transcript.follow>`),
        then the cards (:meth:`CardFeed.push <nb_hitl.widgets._cards.CardFeed.push>`):
        every pause's view is built and compared with what the page was sent, so a
        new card, a changed status or approval count, and a card that left
        travel as one ``nbh_cards`` op each, never the whole list again. The
        ``transcript`` and ``pauses`` records stay in the kernel for a page
        that asks for the widget's state."""
        if self.widget is None:
            return
        status = {"awaiting_permission": "paused", "awaiting_external_result": "paused", "idle": "finished"}.get(
            self.status, self.status or "running"
        )
        reason = ""
        if self.closed:  # nothing is followed any more: never "running" with a live Interrupt
            status, reason = "closed", CLOSED
        elif self.stranded:
            status = "stranded"
            reason = (
                "Stranded: a worker holds this session's run lock but nothing moves (it may have died mid-turn). "
                "AgentScope frees the lock when its TTL (600 s) runs out; then the session can be answered again."
            )
        try:
            transcript_feed.flush(self.widget, self.transcript)  # before the cards: they go under its entries
            with self.widget.hold_sync():
                # fresh views, compared with what the page holds: the cards that changed go as ops
                views = [dict(p.to_view()) for p in self.pauses.values()]
                self.cards.push(self.widget, views, **transcript_feed.record(self.transcript))
                self.widget.reply_id = self.reply_id or ""
                self.widget.status = status
                self.widget.status_reason = reason
        except Exception:  # a closed comm must not stop the console
            log.debug("could not update the session widget", exc_info=True)

    # -- reading -----------------------------------------------------------
    async def refresh(self) -> None:
        """Re-read ``/status`` and ``/messages``; rebuild transcript and pauses.

        Pauses keep their local status while an answer is in flight; a call
        this console approved before is flagged with the time of that approval.
        """
        status, body = await asyncio.gather(
            self.http.status(self.agent_id, self.session_id),
            self.http.messages(self.agent_id, self.session_id, limit=50),
        )
        if self.closed:  # closed while reading: the widget keeps saying so
            return
        messages = body.get("messages") or []
        self.status = status
        self.cursor = body.get("event_cursor") or self.cursor
        self.transcript.follow(transcript_entries(messages))  # what changed since the last read, as ops
        reply_id, calls, _msg = parked_calls(messages) if status != "running" else (None, [], None)
        self.reply_id = reply_id or self.reply_id
        fresh: dict[str, Pause] = {}
        for block in calls:
            tcid = str(block.get("id"))
            old = self.pauses.get(tcid)
            if old is not None and old.reply_id == reply_id and old.status in ("open", *IN_FLIGHT):
                fresh[tcid] = old
                continue
            pause = parked_pause(str(reply_id), block, self.policies)
            self.answerer.flag(pause)
            fresh[tcid] = pause
        for tcid, old in self.pauses.items():
            if tcid in fresh:
                continue
            if status == "running" or old.status in IN_FLIGHT:
                fresh[tcid] = old  # a run is on, or an answer on its way: the stored state says nothing yet
            elif old.status == "open":
                transition(
                    old,
                    "expired",
                    reason="No longer waiting on the service: another answer settled it, or the reply ended.",
                )
                fresh[tcid] = old
            elif old.status in ("delivered", "expired") and old.reply_id == self.reply_id:
                fresh[tcid] = old  # the record of the last parked reply stays on its card
        self.pauses = in_shown_order(self.pauses, fresh)
        self._show_approvals()
        if status != "running":
            self._running_since = None
        elif self._running_since is None:
            self._running_since = time.monotonic()
        self.push()

    async def answered(self) -> None:
        """After an answer was judged: :meth:`refresh` when the session is shown
        or followed (its card shows what the service did next). A console
        "Approve selected" opened without showing it reads nothing more (a
        ``/status`` and a ``/messages`` per session saved); :meth:`refresh`
        reads it when it is opened.

        Raises:
            ServiceError: the service could not be read.
        """
        if self.widget is not None or (self._watch is not None and not self._watch.done()):
            await self.refresh()

    def _show_approvals(self) -> None:
        """The approvals so far of each open call that needs several, as every
        console recording in the ledger gave them (:func:`~nb_hitl.service.approving.shared`)."""
        counted = [p for p in self.pauses.values() if p.status == "open" and needs_more(p)]
        if not counted:
            return
        self.ledger.catch_up()
        now = time.time()
        for pause in counted:
            put(pause, shared(self.ledger, self.session_id, pause.tool_call_id, now=now))

    @property
    def in_flight(self) -> bool:
        """An answer of this console is on its way (a pause ``deciding`` or ``decided``)."""
        return any(p.status in IN_FLIGHT for p in self.pauses.values())

    @property
    def stranded(self) -> bool:
        """``running`` for longer than ``stranded_after`` seconds (as seen by this console)."""
        return self._running_since is not None and time.monotonic() - self._running_since >= self.stranded_after

    # -- acting ------------------------------------------------------------
    def handle(self, message: Any) -> Any:
        """The ReplyWidget handler (page message -> awaitable answer); the page's
        syncs of the transcript and the cards are answered by
        :func:`nb_hitl.widgets._transcript_feed.answer_sync`."""
        synced = transcript_feed.answer_sync(message, self.widget, self.transcript, self.cards)
        if synced is not None:
            return synced
        action = front.as_message(message).get("action")
        if action == "interrupt":
            return self.interrupt()
        if action == "entry_text":  # "Show all" on an entry shown in part
            return entry_text(self.transcript.by_id, message.get("id"))
        if action == "batch":  # "Submit all" / "Approve all"
            return self.act_all(message.get("items"))
        if action == "preview":  # the diff of an edit being typed: not an answer, nothing is sent
            return preview_answer(front.arrive(self.pauses, message), message)  # no tool here: no file diff
        return self.act(message)

    async def act(self, message: Any) -> dict[str, Any]:
        """Answer one pause as its card would (``{"action", "tool_call_id",
        ...}``, as :meth:`nb_hitl.Session.act` locally): :meth:`Answerer.act
        <nb_hitl.service.answering.Answerer.act>` (its returns and errors)."""
        return await self.answerer.act(message)

    async def act_all(self, messages: Any) -> dict[str, Any]:
        """Answer several pauses at once, all or nothing (the card's "Submit
        all", as :meth:`nb_hitl.Session.act_all` locally):
        :meth:`Answerer.act_all <nb_hitl.service.answering.Answerer.act_all>`
        (its returns and errors)."""
        return await self.answerer.act_all(messages)

    async def send_raw(self, body: dict[str, Any], tool_call_ids: list[str], action: str = "raw") -> Outcome:
        """Send an answer body as given, for operators and tests:
        :meth:`Answerer.send_raw <nb_hitl.service.answering.Answerer.send_raw>`."""
        return await self.answerer.send_raw(body, tool_call_ids, action)

    async def say(self, text: str) -> str:
        """Send a new user message, only to an ``idle`` session, and judge it
        on the stream (:mod:`nb_hitl.service.say`: a parked session takes only
        the answer to its pause; the service would end the message's run at once).

        Returns:
            ``"started"`` (the session began its reply) or ``"quiet"`` (no sign
            of the run within ``answerer.take_within`` s: the service may be busy).

        Raises:
            PendingPauseError: the session waits on a pause (the text names its
                tools and says to answer it first); nothing was sent, or the
                service did not take it.
            MessageNotTakenError: the session is running a reply, or the
                service ended the message's run at once (the text says why).
            ServiceError: the service could not be reached or refused.
        """
        status, page = await asyncio.gather(
            self.http.status(self.agent_id, self.session_id),
            self.http.messages(self.agent_id, self.session_id, limit=1),
        )
        if status != "idle":
            if status in PARKED:
                await self.refresh()  # the open pauses the text names, and the cards shown
            raise not_idle(status, [p.tool_name for p in self.pauses.values() if p.status == "open"])
        try:
            await self.http.chat(self.agent_id, self.session_id, user_msg_body(text))
        except ServiceError as exc:
            if exc.status == 409:  # a run began between the check and the message
                raise not_idle("running") from None
            raise
        self.status = "running"
        self.push()
        return await said(
            self.http, self.agent_id, self.session_id, page.get("event_cursor"), within=self.answerer.take_within
        )

    async def interrupt(self, timeout: float = 12.0) -> dict[str, Any]:
        """``POST /sessions/{id}/interrupt`` (AgentScope closes the open calls
        as interrupted), then wait at most ``timeout`` s for the session to
        settle. Returns ``{"status": <session status>}``."""
        await self.http.interrupt(self.agent_id, self.session_id)
        open_before = [p for p in self.pauses.values() if p.status == "open"]
        status = ""
        for _ in range(int(timeout / 0.25)):
            await asyncio.sleep(0.25)
            status = await self.http.status(self.agent_id, self.session_id)
            if status == "idle":
                break
        await self.refresh()
        for p in open_before:
            if p.status == "expired":
                p.reason = "Interrupted from the console."
        self.push()
        return {"status": status}

    # -- following the stream ----------------------------------------------
    def follow(self) -> asyncio.Task[None]:
        """Follow the session's stream on the running loop: refresh when a
        reply starts, parks, ends or the session changes (background tool
        output arrives as a new reply), and show the approvals other consoles
        record in the ledger (:meth:`follow_approvals`). Returns the stream's
        task (:meth:`close` stops both)."""
        if self._watch is None or self._watch.done():
            loop = asyncio.get_running_loop()
            self._watch = loop.create_task(self._follow())
            self._approvals_watch = loop.create_task(self.follow_approvals())
        return self._watch

    async def follow_approvals(self, every: float = 1.0) -> None:
        """Every ``every`` s while a call that needs several approvals is open:
        when the ledger file changed (another console recorded an approval: it
        sends nothing the stream would show), show the approvals so far
        (:meth:`~nb_hitl.service.ledger.AnswerLedger.watch`)."""

        def changed() -> None:
            self._show_approvals()
            self.push()

        await self.ledger.watch(
            lambda: any(p.status == "open" and needs_more(p) for p in self.pauses.values()), changed, every
        )

    async def _follow(self) -> None:
        triggers = {"REPLY_START", "REPLY_END", "REQUIRE_USER_CONFIRM", "REQUIRE_EXTERNAL_EXECUTION", "CUSTOM"}
        for _attempt in range(1000):
            try:
                async with contextlib.aclosing(self.http.stream(self.agent_id, self.session_id, self.cursor)) as frames:
                    async for frame in frames:
                        if frame.get("type") in triggers and not self.in_flight:
                            with contextlib.suppress(ServiceError):
                                await self.refresh()
            except ServiceError:
                pass
            await asyncio.sleep(1.0)

    def close(self) -> None:
        """Stop following the stream and the ledger (the console still answers)."""
        for task in (self._watch, self._approvals_watch):
            if task is not None:
                task.cancel()

    def end(self) -> None:
        """End this console for good (its client closes its connections): stop
        following (:meth:`close`) and tell the widget: its status becomes
        ``closed`` (:data:`CLOSED` says why; no Interrupt) and its open pauses
        expire with that reason (nothing here can answer them any more). Idempotent."""
        self.close()
        self.closed = True
        for pause in self.pauses.values():
            if pause.status == "open":
                transition(pause, "expired", reason=CLOSED)
        self.push()
