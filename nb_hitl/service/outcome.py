"""Judge an answer by what follows it on the session's stream, not by the HTTP code.

AgentScope's ``POST /chat/`` answers 200 to anything that parses; the answer
is queued, a worker takes it and publishes it on the session's stream (the
same event ``id`` the console sent: its *echo*), then a ``REPLY_START``. A
call's ``TOOL_RESULT_*`` frames belong to the answer echoed last before them.
What comes next tells the outcome:

* results of the answered calls after this answer's echo: ``applied`` (the
  confirmed tool ran, or the external result entered the history);
* results after another answer's echo, or the calls gone from ``/messages``
  without a result after this echo: ``answered_elsewhere`` (the other
  answer's event id, its time and, for an nb_hitl console, its user and
  console from the event's ``metadata``, :func:`answer_mark`);
* ``REPLY_END`` with an ``error`` after the echo, the same call asked for
  again, or the run over with the call still parked: ``not_applied``;
* a run that failed before the echo (the worker could not load the session:
  its storage was down): ``not_applied``;
* no echo within ``take_within`` s while the call still waits and the
  service answers: ``not_applied``, the workers are not taking answers
  (:func:`not_taken`: AgentScope's workers lose their Redis subscription
  for good when redis-server restarts).

:class:`OutcomeJudge` is the pure part (feed it frames); :func:`await_outcome`
opens the stream, sends, and also polls ``/status`` + ``/messages`` so a
quiet stream still ends in a verdict within ``timeout`` seconds;
:func:`~nb_hitl.service.settled.settled_by` says who settled calls a stale console found closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from ..answers.outcome import Outcome, answered_elsewhere_text, applied_text
from ..errors import NbHitlError
from .http import ServiceError, ServiceHTTP, denied_in
from .inbox import parked_calls
from .required import not_run_text
from .told import NOTES_KEY, TOLD_KEY

__all__ = [
    "Outcome",
    "OutcomeError",
    "OutcomeJudge",
    "await_outcome",
    "answer_mark",
    "answered_by",
    "call_state",
    "elsewhere",
    "is_not_taken",
    "not_taken",
]


class OutcomeError(NbHitlError):
    """An answer was sent and not applied; ``code`` is the outcome's status
    (``answered_elsewhere``, ``not_applied``, ``unknown``).

    Attributes:
        outcome: the :class:`~nb_hitl.answers.outcome.Outcome`.
    """

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.detail)
        self.outcome = outcome
        self.code = outcome.status


_ASK_EVENTS = ("REQUIRE_USER_CONFIRM", "REQUIRE_EXTERNAL_EXECUTION")


ANSWER_EVENTS = ("USER_CONFIRM_RESULT", "EXTERNAL_EXECUTION_RESULT")
"""Stream frames that echo an answer as a worker takes it (its ``id`` is the sender's)."""
MARK = "nb_hitl"
"""The key of the sender's mark in an answer event's ``metadata`` (:func:`answer_mark`)."""


def answer_mark(user_id: str, console: str) -> dict[str, Any]:
    """The ``metadata`` an answer event carries so another console can say who sent it."""
    return {MARK: {"by": user_id, "console": console}}


def answered_by(frame: dict[str, Any]) -> dict[str, str]:
    """Who sent an echoed answer and when, as far as the frame tells:
    ``{"event_id", "at"?, "by"?}`` (``by`` from :func:`answer_mark`, absent
    for an answer from another kind of client)."""
    meta = frame.get("metadata")
    mark = meta.get(MARK) if isinstance(meta, dict) else None
    out = {"event_id": str(frame.get("id"))}
    if isinstance(frame.get("created_at"), str):
        out["at"] = frame["created_at"]
    if isinstance(mark, dict) and mark.get("by"):
        out["by"] = f"{str(mark['by'])[:80]} ({str(mark.get('console') or 'another console')[:80]})"
    return out


def elsewhere(info: dict[str, str] | None, *, ours: bool = False, sent: bool = True) -> Outcome:
    """The :class:`Outcome` of an answer another answer beat (``info``:
    :func:`answered_by`; ``ours``: that answer came from this console;
    ``sent``: this answer was sent at all)."""
    info = info or {}
    if ours:
        who = "an earlier answer from this console"
    elif info.get("by"):
        who = f"another answer, from {info['by']}"
    elif info.get("event_id"):
        who = "another answer (without a sender's mark: another client of the service)"
    else:
        who = "another answer (the stream did not show which)"
    when = f" at {info['at']}" if info.get("at") else ""
    return Outcome(
        "answered_elsewhere",
        answered_elsewhere_text(
            f"the call was settled by {who}{when}; this answer was {'not applied' if sent else 'not sent'}."
        ),
        by="this console" if ours else info.get("by"),
        at=info.get("at"),
    )


def _error_text(frame: dict[str, Any]) -> str:
    err = frame.get("error")
    text = err.get("message") if isinstance(err, dict) else err
    return str(text or "no reason given")[:300]


class OutcomeJudge:
    """The stream-reading state machine for one answer.

    A worker echoes each answer event on the session's stream as it takes it
    (the sender's ``id``), then runs it; a ``TOOL_RESULT_*`` frame of a call
    belongs to the answer echoed last before it. So the calls' results after
    this answer's echo are this answer's (applied), after another's echo that
    other answer's (the outcome ``answered_elsewhere``).

    Args:
        event_id: the ``id`` of the event the console sent (echoed on the stream).
        tool_call_ids: the calls the answer resolves.

    Attributes:
        echoed: this answer's echo was seen (a worker took it).
        started: a ``REPLY_START`` followed the echo.
        states: ``{tool_call_id: result state}`` produced by this answer.
        others: ``{tool_call_id: answered_by(...)}`` for calls another answer settled.
        noted: calls the answer carries a note for (their result's end is awaited).
        to_end: ``noted`` and the calls the answer denies (``denied``): their
            result's end is awaited (a start frame carries no state, and a
            denied call never "started").
        told: those whose note the model read (the end frame's ``TOLD_KEY``).
        not_run: ``{tool_call_id: why}`` of confirmed calls the service's
            policy did not run (:func:`~nb_hitl.service.required.not_run_text`).
        failed_before: the error of a run that failed before this answer was
            echoed (the worker could not load the session: storage down), or ``None``.
    """

    def __init__(
        self, event_id: str, tool_call_ids: Iterable[str], noted: Iterable[str] = (), denied: Iterable[str] = ()
    ) -> None:
        self.event_id = event_id
        self.ids = set(tool_call_ids)
        self.noted = set(noted)
        self.to_end = self.noted | set(denied)  # judged at their result's end: a start says nothing of them
        self.told: set[str] = set()
        self.not_run: dict[str, str] = {}
        self.echoed = False
        self.started = False
        self.states: dict[str, str] = {}
        self.others: dict[str, dict[str, str]] = {}
        self.current: dict[str, str] | None = None
        self.failed_before: str | None = None

    def _settled(self) -> Outcome | None:
        if not self.ids <= set(self.states):
            return None
        not_run = " ".join(dict.fromkeys(self.not_run.values()))
        said = f"Answered. {not_run}" if self.not_run else applied_text(self.states)  # not run: never "applied"
        return Outcome("applied", said, dict(self.states), told=set(self.told), not_run=dict(self.not_run))

    def closed(
        self, broke: str | None = None, ours: Callable[[str], bool] | None = None, *, sent: bool = True
    ) -> Outcome:
        """The verdict once the calls no longer wait: applied for the calls
        this answer produced results of, the rest settled by another answer
        (the one the stream showed, when it did).

        Args:
            broke: why the stream broke, if it did (then which answer settled
                the calls may be unknown).
            ours: whether an event id was sent by this console.
            sent: this answer was sent (``False``: the console saw the calls
                settled before sending).
        """
        rest = self.ids - set(self.states)
        info = next((self.others[t] for t in rest if t in self.others), None)
        if info is None and self.current is not None and not self.echoed:
            info = self.current
        if self.states:
            states = {**{t: "answered_elsewhere" for t in rest}, **self.states}
            elsewhere_n = f"{len(rest)} call{'s' if len(rest) > 1 else ''}"
            return Outcome(
                "applied",
                f"{applied_text(self.states)[:-1]}; {elsewhere_n} settled by another answer.",
                states,
                told=set(self.told),
                not_run=dict(self.not_run),
            )
        if info is None and broke:
            return Outcome(
                "unknown",
                "The call no longer waits, but the session's stream broke before it showed which answer settled "
                f"it ({broke}). Check the session's transcript.",
            )
        if info is None and sent:  # nothing seen: this answer may have been the one; never say "elsewhere"
            return Outcome(
                "unknown",
                "The call no longer waits, but the session's stream did not show which answer settled it (this "
                "one or another) while it was watched. Check the session's transcript before answering again.",
            )
        return elsewhere(info, ours=bool(info and ours is not None and ours(info["event_id"])), sent=sent)

    def feed(self, frame: dict[str, Any]) -> Outcome | None:
        """One stream frame; an :class:`Outcome` once the frames decide it."""
        kind = frame.get("type")
        if kind in ANSWER_EVENTS:
            self.current = answered_by(frame)
            if frame.get("id") == self.event_id:
                self.echoed = True
            return None
        tcid = frame.get("tool_call_id")
        if kind in ("TOOL_RESULT_START", "TOOL_RESULT_END") and tcid in self.ids and self.current is not None:
            if self.current["event_id"] == self.event_id:
                if said := not_run_text(frame):
                    self.not_run[str(tcid)] = said  # the service's policy did not run it (required.py)
                if kind == "TOOL_RESULT_START" and tcid in self.to_end:
                    return None  # its end says whether the model read the note (ToldMiddleware), or the denial
                self.states[str(tcid)] = str(frame.get("state") or "running")
                if isinstance(frame.get("metadata"), dict) and frame["metadata"].get(TOLD_KEY):
                    self.told.add(str(tcid))
            else:  # settled by that answer, unless this one's result follows (a run that died half way)
                self.others[str(tcid)] = self.current
            return self._settled()
        failed = kind == "REPLY_END" and (frame.get("error") or frame.get("finished_reason") == "error")
        if not self.echoed:
            if failed:
                self.failed_before = _error_text(frame)
            return None
        if (self.current or {}).get("event_id") != self.event_id:
            return None
        if kind == "REPLY_START":
            self.started = True
        elif failed:
            if self.ids <= set(self.others):
                return None  # another answer settled the calls, if they no longer wait: the poll tells
            return Outcome("not_applied", f"The service's run failed: {_error_text(frame)}.")
        elif kind in _ASK_EVENTS:
            asked = {str(tc.get("id")) for tc in frame.get("tool_calls") or [] if isinstance(tc, dict)}
            if asked & (self.ids - set(self.states)):
                return Outcome("not_applied", "The service asked for this call again; the answer was not applied.")
        return None


STATE_MESSAGES = 5  #: how many of a session's last messages :func:`call_state` reads (its parked calls)


async def call_state(http: ServiceHTTP, agent_id: str, session_id: str, ids: set[str]) -> tuple[str, bool, str | None]:
    """``(session status, whether any of ids is still parked, the stream
    cursor of the stored state)``; a running session counts as parked (its
    stored state says nothing yet; no cursor then).

    Raises:
        ServiceError: ``/status`` or ``/messages`` failed.
    """
    status = await http.status(agent_id, session_id)
    if status == "running":
        return status, True, None
    body = await http.messages(agent_id, session_id, limit=STATE_MESSAGES)
    _reply, calls, _msg = parked_calls(body.get("messages") or [])
    return status, bool(ids & {str(c.get("id")) for c in calls}), body.get("event_cursor")


NOT_TAKEN = "no worker took it"
"""Words of every :func:`not_taken` outcome (:func:`is_not_taken`)."""


def not_taken(waited: float) -> Outcome:
    """The :class:`Outcome` of an answer the service accepted but no worker took."""
    return Outcome(
        "not_applied",
        f"Not applied: the service accepted the answer, but {NOT_TAKEN} within {waited:.0f} s while the "
        "service still answers. Its workers are not taking work from their message bus (Redis): after a "
        "redis-server restart AgentScope's workers lose their subscription and do not renew it. Restart the "
        "service's worker processes, then answer again. Until they restart the answer stays in the service's "
        "queue; a restarted worker takes it first (this console then shows the call as settled).",
    )


def is_not_taken(outcome: Outcome) -> bool:
    """Whether ``outcome`` says the service is not taking answers (:func:`not_taken`)."""
    return outcome.status == "not_applied" and NOT_TAKEN in outcome.detail


async def await_outcome(
    http: ServiceHTTP,
    agent_id: str,
    session_id: str,
    body: dict[str, Any],
    tool_call_ids: Iterable[str],
    *,
    send: Callable[[], Awaitable[Any]],
    timeout: float = 10.0,
    poll: float = 0.5,
    take_within: float = 5.0,
    sent_here: Callable[[str], bool] | None = None,
    stream_grace: float = 6.0,
    open_within: float = 5.0,
    before_send: Callable[[], Awaitable[Outcome | None]] | None = None,
) -> Outcome:
    """Open the session's stream, send an answer once the stream is live, and
    wait (at most ``timeout`` s after sending) for its verdict.

    The stream is read from the start of the session's replay log. AgentScope
    trims that log to the stored state's last event (``event_cursor``: for a
    parked call, its pause event) each time it stores a run, so the first
    frame is the pause itself: it proves the subscription is live, and only
    then is ``body`` sent. Sent earlier, a fast run could be over and trimmed
    from the log before a slow subscription came up, and the stream would
    never show which answer settled the calls ("Approve selected" on 50
    sessions read one "unknown" in about ten loaded runs).

    Args:
        body: the event JSON being sent (its ``id`` is looked for on the stream).
        send: the coroutine function that posts ``body``.
        poll: seconds between ``/status`` checks.
        take_within: seconds a worker has to take (echo) the answer while
            the call still waits and the service answers; after that the
            service is not taking answers (:func:`not_taken`).
        sent_here: whether an event id was sent by this console (an earlier
            answer of its own that settled the call).
        stream_grace: seconds the stream may lag behind the stored state: calls
            found closed before the stream showed what settled them are judged
            only after this (judged at once, an applied answer read "unknown").
        open_within: seconds to wait for the stream's first frame before
            sending anyway (AgentScope's own subscription gives up after 5 s).
        before_send: checks run while the stream subscribes (whether the
            calls still wait); an :class:`Outcome` from it is returned as is,
            and nothing is sent.

    Returns:
        Outcome: ``applied`` only when this answer produced the calls'
        results; ``answered_elsewhere``, ``not_applied`` or ``unknown``
        otherwise (:class:`~nb_hitl.answers.outcome.Outcome`).

    Raises:
        ServiceError: the POST itself failed (nothing was queued).
    """
    notes = (body.get("metadata") or {}).get(NOTES_KEY)
    judge = OutcomeJudge(str(body.get("id")), tool_call_ids, notes if isinstance(notes, dict) else (), denied_in(body))
    verdict: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
    broke: list[str] = []
    live = asyncio.Event()
    t0 = time.monotonic()

    def settle(out: Outcome) -> None:
        if not verdict.done():
            verdict.set_result(out)

    async def read_stream() -> None:
        # a stream the service ends early (a loaded worker gives up subscribing
        # after 5 s) is opened again: the replay log holds every frame of the
        # run still going, so the judge sees them again in the same order
        reason = ""
        for _attempt in range(3):
            try:
                async with contextlib.aclosing(http.stream(agent_id, session_id)) as frames:
                    async for frame in frames:
                        live.set()
                        out = judge.feed(frame)
                        if out is not None:
                            settle(out)
                            return
                reason = "the service ended the session's stream"
            except ServiceError as exc:
                reason = str(exc)
            await asyncio.sleep(0.25)
        broke.append(reason)

    closed_at: list[float] = []

    def seen_closed() -> float:
        """When the poll first found the calls closed."""
        if not closed_at:
            closed_at.append(time.monotonic())
        return closed_at[0]

    reader = asyncio.create_task(read_stream())
    try:
        if before_send is not None and (early := await before_send()) is not None:
            return early  # nothing sent
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(live.wait(), timeout=open_within)
        t0 = time.monotonic()
        await send()
        deadline = t0 + timeout
        while not verdict.done() and time.monotonic() < deadline:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(verdict), timeout=poll)
                break
            # a quiet stream: the stored state decides once the run is over
            waited = time.monotonic() - t0
            if not (judge.started or waited > 2.0):
                continue
            try:
                status, still_open, _ = await call_state(http, agent_id, session_id, judge.ids - set(judge.states))
            except ServiceError:
                continue
            if status == "running" or verdict.done():
                continue
            if not still_open:
                unseen = judge.ids - set(judge.states) - set(judge.others)
                if unseen and not broke and time.monotonic() - seen_closed() < stream_grace:
                    continue  # the stream has not shown what settled them yet: it lags behind the stored state
                settle(judge.closed(broke[0] if broke else None, sent_here))
            elif judge.started:
                settle(
                    Outcome(
                        "not_applied",
                        "The service did not apply this answer: its run ended with the call still waiting "
                        "(it gives no reason on the stream; its log may). The call can be answered again.",
                    )
                )
            elif not judge.echoed and judge.failed_before is not None:
                settle(
                    Outcome(
                        "not_applied",
                        f"Not applied: the service's run failed before it took this answer ({judge.failed_before}); "
                        "the worker could not load or save the session (its storage may have been unreachable). "
                        "The call still waits: answer again once the service's storage is back.",
                    )
                )
            elif not judge.echoed and waited >= take_within:
                settle(not_taken(waited))
        out = (
            verdict.result()
            if verdict.done()
            else Outcome(
                "unknown",
                f"No verdict from the service within {timeout:g} s"
                + (": a worker took the answer and is still running it. " if judge.echoed else ". ")
                + "It is recorded; a second approval of this call will be asked for explicitly.",
            )
        )
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader
    out.seconds = time.monotonic() - t0
    return out
