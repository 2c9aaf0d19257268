"""A conversation with a remote AG-UI agent, answered from the notebook.

:class:`RemoteSession` drives turns over an :class:`~nb_hitl.agui.client.AguiClient`:
each interrupt of a paused run becomes a pause view (nb_hitl's confirmation
and AskUser views for interrupts from :mod:`nb_hitl.agui.server`, else a
form from the interrupt's ``response_schema``); answers are checked with
``jsonschema`` and, once every interrupt is answered, sent as **one** resume
run. The session never trusts the server to catch its mistakes: a resume is
checked (:func:`~nb_hitl.agui.mapping.check_resume`) before it is sent. It
knows no widget: it hands view data (:func:`~nb_hitl.agui.turn.view_data`)
to a view made by its ``view`` factory, by default
:class:`nb_hitl.widgets.remote.RemoteReplyView` (imported when first used).
A run that passes a cap of the client's :class:`~nb_hitl.guard.StreamBudget`
is stopped and its stream closed; the turn ends in ``error`` and its
reason (the view's header) names the cap, its value and what to do.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ag_ui.core import EventType, ResumeEntry, UserMessage

from ..answers import front
from ..entries import entry_text
from ..errors import AlreadyDecidedError, DecisionError, PauseNotLiveError, PendingPauseError
from ..guard import StreamBudget, StreamLimitReached
from ..kinds import kind_spec
from ..kinds._schema import validate_payload
from ..session._calls import ReplyTask, install_kernel_hints
from ..session._pace import pace
from .client import AguiClient, AguiClientError, RemoteRunError
from .ids import parse_expires_at
from .interrupt_views import message_to_entry, our_kind
from .remote_checks import check_entries, refusal_named, reopen_refused
from .remote_view import TurnView, ViewFactory, default_view
from .turn import RemoteTurn, RunReader, RunRecord, answer_summary, is_delta, move, view_data

__all__ = ["RemoteSession", "TurnView", "ViewFactory"]

log = logging.getLogger(__name__)


class RemoteSession:
    """A conversation with a remote AG-UI agent, answered from the notebook.

    Args:
        url: the AG-UI endpoint.
        thread_id: the conversation id (a fresh one when omitted).
        display: show each turn's view in the current cell's output (the
            view exists either way).
        view: ``(handler, *, agent_name, prompt, display) -> TurnView``,
            called once per turn; ``handler(page_message)`` answers as
            :meth:`act` does. Default: a ``ReplyWidget``
            (:class:`nb_hitl.widgets.remote.RemoteReplyView`).
        auto_send: send the resume as soon as every interrupt of the paused
            run is answered.
        agent_name: the name shown in the widget.
        token: the server's token (``Authorization: Bearer``).
        client: an :class:`AguiClient` (else one for ``url``, ``token`` and
            ``budget``).
        budget: the caps on reading each run (bytes, events, seconds, one
            event's size; :class:`~nb_hitl.guard.StreamBudget`), for the
            client this session makes; a given ``client`` has its own.
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
        token: str | None = None,
        client: AguiClient | None = None,
        view: ViewFactory | None = None,
        clock: Callable[[], float] = time.time,
        user_name: str = "user",
        budget: StreamBudget | None = None,
    ) -> None:
        if client is not None and budget is not None:
            raise ValueError("Give the budget to the AguiClient (AguiClient(url, budget=...)), not to both.")
        self.url = url
        self.thread_id = thread_id or f"thread-{uuid.uuid4().hex[:16]}"
        self.display = display
        self.auto_send = auto_send
        self.agent_name = agent_name
        self.client = client or AguiClient(url, token=token, budget=budget)
        self.verdict_timeout = 30.0
        self.view = view
        self.clock = clock
        self.user_name = user_name
        self.messages: list[Any] = []
        self.turns: list[RemoteTurn] = []
        self.polling: RemoteTurn | None = None  # the turn a run of :meth:`follow` is out for
        install_kernel_hints()  # asyncio.run(remote.run(...)) in a cell: the error says to await

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
            reopen for new answers and the reason is shown. When the thread
            already waits on interrupts (raised for another client), the
            server runs nothing and repeats them (AG-UI 1.0): this turn shows
            them with the server's note (``RunRecord.refused_input``) and the
            message is not given to the agent.

        Raises:
            PendingPauseError: the current turn still waits for answers
                (AG-UI: new input on a thread with open interrupts is not
                taken).
        """
        prior = self.current
        if prior is not None and prior.task is not None and not prior.task.done():
            raise PendingPauseError(
                "The remote agent still waits on the previous message"
                + (" (answer its open interrupts first)." if prior.status == "paused" else ".")
            )
        turn = RemoteTurn(prompt=message)
        factory = self.view if self.view is not None else default_view

        def handler(msg: Any, _turn: RemoteTurn = turn) -> Awaitable[dict[str, Any]]:
            return self._on_action(_turn, msg)

        turn.view = factory(
            handler,
            agent_name=self.agent_name,
            prompt=message,
            display=self.display,
        )
        self.turns.append(turn)
        user = UserMessage(id=f"msg-{uuid.uuid4().hex}", content=message, name=self.user_name)
        # awaiting it never cancels the turn (Kernel > Interrupt stops only the cell's wait)
        turn.task = ReplyTask(self._drive(turn, user), owner=self, loop=asyncio.get_running_loop())
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
            AlreadyDecidedError: an entry answers an interrupt that already
                has a different answer in this turn (a later cell cannot
                silently change a choice made in the widget).
            PauseNotLiveError: the turn is not paused.
        """
        turn = self._paused_turn()
        entries = list(entries)
        for e in entries:
            kept = turn.answers.get(e.interrupt_id)
            if kept is not None and (kept.status, kept.payload) != (e.status, e.payload):
                raise AlreadyDecidedError(
                    f"Interrupt {e.interrupt_id[:80]} already has an answer in this turn ({kept.status}); "
                    "a resume cannot send a different one. Answer the open interrupts instead."
                )
        self._queue_resume(turn, entries)
        by_id = {e.interrupt_id: e for e in entries}
        for view in turn.pauses.values():
            entry = by_id.get(view["interrupt_id"])
            if entry is not None and view["status"] == "open":
                move(view, "decided")
                view["decision"] = (
                    {"action": "cancel"}
                    if entry.status == "cancelled"
                    else {"action": "submit", "value": entry.payload}
                )
        self._push(turn)

    async def follow(self, *, every: float = 1.0, timeout: float | None = None) -> str:
        """Catch up with interrupts answered elsewhere (an approval link, :mod:`nb_hitl.agui.links`): a run
        without input every ``every`` s until the server no longer repeats them; returns the turn's status.
        An answer sent from this notebook meanwhile (a click on the card) is waited for: the turn is judged
        as its run left it, never while it runs (a refused answer leaves the same interrupts: polling goes on).
        Raises PauseNotLiveError (not paused), TimeoutError (the same interrupts after ``timeout`` s)."""
        turn = self._paused_turn()
        waiting, end = set(turn.interrupts), None if timeout is None else time.monotonic() + timeout
        while True:
            # an answer given in this notebook meanwhile (its run is on its way or "running") polls
            # too: wait for its run to end, then judge the turn as that run left it
            if turn.status == "paused" and turn.outbox is None and not turn.resume_ready.is_set():
                self.polling = turn
                turn.outbox = []
                turn.settled.clear()
                turn.resume_ready.set()
            await turn.settled.wait()
            self.polling = None
            if turn.status != "paused" or set(turn.interrupts) != waiting:
                return turn.status
            if end is not None and time.monotonic() > end:
                raise TimeoutError(f"The interrupts {', '.join(sorted(waiting))} are still open.")
            await asyncio.sleep(every)

    # ------------------------------------------------------------ internals
    def _paused_turn(self) -> RemoteTurn:
        turn = self.current
        if turn is None or turn.status != "paused":
            raise PauseNotLiveError("The remote agent is not paused on interrupts.")
        if turn.outbox is not None or turn.resume_ready.is_set():
            raise AlreadyDecidedError("A resume for this run is already on its way.")
        return turn

    def _queue_resume(self, turn: RemoteTurn, entries: list[ResumeEntry]) -> None:
        check_entries(turn, entries, self.clock())
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
        action = front.as_message(message).get("action")
        if action == "interrupt":
            return self._cancel_all(turn)
        if action == "entry_text":  # "Show all" on an entry shown in part
            return entry_text(turn.transcript.by_id, message.get("id"))
        if action == "preview":  # the edit is checked by the server when it is sent
            raise DecisionError("A remote agent's card shows no diff of an edit before it is sent.", field="action")
        if self.polling is turn:
            await turn.settled.wait()  # a poll of :meth:`follow` is out: the answer goes once it is back
        closed, why = None, f": {turn.reason}" if turn.reason else ""
        if turn is not self.current or turn.status != "paused":
            closed = f"this turn is not waiting for answers ({turn.status or 'not started'}{why})"
        view = front.arrive(turn.cards(), message, closed=closed).view  # the one front door's checks
        if turn.outbox is not None or turn.resume_ready.is_set():
            raise AlreadyDecidedError("The answers of this run are already being sent.")
        interrupt = turn.checked[view["interrupt_id"]]
        cancelling = action in ("cancel", "return_error")
        kind = our_kind(interrupt)
        needs = kind_spec(kind).return_error_needs_text if kind is not None else None
        typed = str(front.as_message(message).get("message") or "").strip()
        if action == "return_error" and needs and not view.get("unanswerable") and not typed:
            raise DecisionError(needs, field="message")  # as a local card: an empty one would read "cancelled"
        if view.get("unanswerable") and not cancelling:
            raise DecisionError(view["form_error"])
        deadline = parse_expires_at(interrupt.expires_at)
        if deadline is not None and self.clock() > deadline and not cancelling:
            raise PauseNotLiveError(
                f"This interrupt expired at {interrupt.expires_at}; it can only be cancelled now.", field=None
            )
        entry = message_to_entry(interrupt, message)
        if entry.status == "resolved":
            validate_payload(turn.interrupts[interrupt.id].response_schema, entry.payload)
        answers = {**turn.answers, interrupt.id: entry}
        complete = all(i in answers for i in turn.interrupts)
        if complete and self.auto_send:
            check_entries(turn, [answers[i] for i in turn.interrupts], self.clock())
        turn.answers = answers
        move(view, "decided")
        view["decision"] = answer_summary(entry, message, view)
        view["refused"] = view["reason"] = view["refused_answer"] = None
        page_ids = ("tool_call_id", "reply_id", "request_id")
        turn.sent[interrupt.id] = {k: v for k, v in front.as_message(message).items() if k not in page_ids}
        sent = False
        if complete and self.auto_send:
            turn.outbox = [answers[i] for i in turn.interrupts]
            turn.verdict = asyncio.get_running_loop().create_future()
            turn.settled.clear()
            turn.resume_ready.set()
            sent = True
        self._push(turn)
        if sent and turn.verdict is not None:
            # the server answers a resume at once: wait for its verdict, so a
            # refusal is shown where the person clicked (and the card reopens)
            try:
                refusal = await asyncio.wait_for(asyncio.shield(turn.verdict), self.verdict_timeout)
            except TimeoutError:
                refusal = None
            if refusal and view["status"] == "open":  # this card's answer was refused: it is open again
                others = " Your other answers are kept; fix this one and answer it again." if turn.answers else ""
                _, field = refusal_named(turn.runs[-1])
                raise DecisionError(f"{view['refused'] or refusal}{others}", field=field)
            sent = not refusal  # another card's answer was refused: it says so; this one's is kept
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
            if view["status"] in ("open", "decided"):  # kept answers are cancelled too
                if view["status"] == "open":
                    move(view, "decided")
                view["decision"] = {"action": "cancel"}
        self._push(turn)
        return {"status": "cancelling"}

    def _push(self, turn: RemoteTurn) -> None:
        """Show ``turn`` as it is now (its transcript's pending changes, cards, status)."""
        if turn.view is None:
            return
        try:
            turn.view.update(view_data(turn))
        except Exception:
            log.debug("the view of a remote turn failed to update", exc_info=True)

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
                    move(view, "expired", reason=turn.reason or f"The turn {turn.status}.")
            self._push(turn)
            turn.settled.set()
            if turn.verdict is not None and not turn.verdict.done():
                turn.verdict.set_result(None)
        if turn.status == "error":
            last = turn.runs[-1] if turn.runs else None
            raise RemoteRunError(turn.reason, code=last.error_code if last else None)
        return turn.final_text

    async def _one_run(self, turn: RemoteTurn, resume: list[ResumeEntry] | None) -> None:
        inp = self.client.make_input(self.thread_id, self.messages, resume)
        record = RunRecord(run_id=inp.run_id, resume=resume)
        turn.runs.append(record)
        turn.status, turn.reason = "running", ""
        self._push(turn)
        reader = RunReader(turn, record, self.thread_id)
        try:
            async for ev in self.client.stream(inp):
                delta = is_delta(ev, turn)
                reader.feed(ev)
                accepted = len(record.events) >= 2 and record.events[-1].type != EventType.RUN_ERROR
                if accepted and turn.verdict is not None and not turn.verdict.done():
                    turn.verdict.set_result(None)  # the server took the resume and goes on
                # streamed text is paced as a local reply's is; any other event is shown at once
                if delta and turn.view is not None:
                    pace(turn.transcript, self._push, turn)
                else:
                    self._push(turn)
            reader.end()
        except StreamLimitReached as exc:  # the client stopped reading and closed the stream
            record.outcome, record.error, record.error_code = "error", str(exc), exc.code
            turn.status, turn.reason = "error", str(exc)
        except AguiClientError as exc:
            record.outcome, record.error = "error", str(exc)
            turn.status, turn.reason = "error", str(exc)
        self.messages = reader.history(self.messages)
        cut = record.error_code == StreamLimitReached.code
        refused = resume is not None and record.outcome == "error" and len(record.events) <= 2 and not cut
        if refused:
            reopen_refused(turn, record)
        if turn.verdict is not None and not turn.verdict.done():
            turn.verdict.set_result(turn.reason if refused else None)
        self._push(turn)
