"""Serve an AgentScope agent over AG-UI (HTTP POST + SSE), pauses as interrupts.

:class:`AguiServer` is an ASGI app (Starlette). ``POST <path>`` takes a
``RunAgentInput`` (``ag_ui.core``) and answers with a ``text/event-stream``
of AG-UI events (``ag_ui.encoder.EventEncoder``). Each ``threadId`` is one
conversation with its own agent, built by the factory you pass and driven by
its own headless :class:`~nb_hitl.session.Session`: pause handling,
validation, the permission re-check and the exactly-once resume are the
Session's. A paused reply ends its run with ``RUN_FINISHED`` and an
``interrupt`` outcome; a resume run answers every open interrupt at once;
new input while interrupts are open runs nothing and repeats them; every
run ends with :func:`~nb_hitl.agui.run_end.closing_events`. The
rules a resume must follow, the order of a run's events and how the
Session's listeners feed the stream are described in ``docs/design.md``
("AG-UI"). Running it: :func:`~nb_hitl.agui.background.serve_in_background`.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Literal

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    Interrupt,
    MessagesSnapshotEvent,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunStartedEvent,
)
from agentscope.message import UserMsg
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._agentscope import blocks_text
from ..answers.front import BatchRefused
from ..answers.outcome import answered_elsewhere_text
from ..answers.record import origin
from ..errors import DecisionError, PendingPauseError
from ..pauses import Pause
from .background import ServerHandle, serve_in_background
from .events import EventTranslator, messages_snapshot, now_ms
from .guard import Access, AuthHook
from .http import Limits, close_unread, handle_close, handle_run
from .link_page import link_route
from .links import Links
from .mapping import META_KEY, ResumeError, check_resume, pause_to_interrupt, resume_to_message
from .refusals import Refusal, held_input, interrupt_named, refusal_at, refusal_of, stale_refusal
from .run_end import closing_events
from .threads import ThreadRegistry, ThreadState, answers_settled, canonical

__all__ = ["AguiServer", "ServerHandle", "serve_in_background", "AgentFactory"]

AgentFactory = Callable[[str], Any]
"""``(thread_id) -> Agent`` (or an awaitable of one)."""


class AguiServer:
    """An AG-UI endpoint serving one AgentScope agent per thread.

    Args:
        agent_factory: ``(thread_id) -> Agent`` (sync or async), called
            once per thread; with ``checkpoints`` in ``session_kwargs`` it
            is also called as ``agent_factory(thread_id, state=AgentState)``
            to rebuild a thread after a restart.
        path: the endpoint's path (``POST``); ``GET <path>/health`` answers
            ``{"status": "ok"}`` (no auth; it says nothing about threads);
            ``DELETE <path>/threads/<thread_id>`` (same auth as a run) lets
            the owner close a thread that waits on nothing (its checkpoint
            is deleted too): 200, 404 ``thread_not_found``, 409 ``thread_busy``;
            ``<path>/links/<token>``: an approval link's page (:mod:`nb_hitl.agui.links`).
        token: the shared secret clients send as ``Authorization: Bearer
            <token>``; ``None``: a random one is made (:attr:`token`, shown
            by ``serve_in_background``); ``False``: no token (only with an
            ``auth`` hook, or for a server that only this process reaches).
        auth: ``(request) -> principal | None`` (sync or async), a real
            deployment's authentication; replaces the token.
        allowed_hosts: host names accepted in ``Host:`` besides localhost,
            127.0.0.1 and ::1 (``"*"``: any; use behind a proxy that checks).
        allowed_origins: browser origins allowed besides the server's own.
        max_body: request body limit in bytes (413 beyond).
        body_timeout: seconds to receive a body after its headers (408
            beyond; under :func:`~nb_hitl.agui.background.serve_in_background`
            a connection still sending a body to any other path is closed).
        ping: seconds between SSE keep-alive comments.
        max_threads: threads kept at most (finished ones are evicted LRU).
        thread_ttl: seconds a finished, idle thread is kept.
        interrupt_ttl: seconds an interrupt stays answerable after its pause
            appeared (``Interrupt.expires_at``); ``None``: only the pause's
            own ``deadline``, if any.
        clock: ``() -> epoch seconds`` used for expiry (tests pass a fake).
        session_kwargs: more :class:`~nb_hitl.session.Session` arguments
            (``audit_log``, ``checkpoints``...); ``display`` is always False.
        user_name: the ``name`` of user ``Msg``s built from AG-UI messages
            without one.

    The object is an ASGI application (``await server(scope, receive,
    send)``); :meth:`run` is the same logic without HTTP.
    """

    def __init__(
        self,
        agent_factory: AgentFactory,
        *,
        path: str = "/",
        token: str | Literal[False] | None = None,
        auth: AuthHook | None = None,
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        max_body: int = 1024 * 1024,
        body_timeout: float = 30.0,
        ping: float | None = 15.0,
        max_threads: int = 1000,
        thread_ttl: float | None = 3600.0,
        interrupt_ttl: float | None = None,
        clock: Callable[[], float] = time.time,
        session_kwargs: dict[str, Any] | None = None,
        user_name: str = "user",
    ) -> None:
        if not callable(agent_factory):
            raise TypeError("agent_factory must be callable: (thread_id) -> Agent")
        self.agent_factory = agent_factory
        self.path = "/" + path.strip("/") if path.strip("/") else "/"
        self.token: str | None = None if token is False or auth is not None else (token or secrets.token_urlsafe(32))
        self.token_generated = token is None and auth is None
        self.access = Access(
            token=self.token,
            auth=auth,
            allowed_hosts=Access.hosts(allowed_hosts),
            allowed_origins=frozenset(allowed_origins or ()),
        )
        self.limits = Limits(max_body=max_body, body_timeout=body_timeout, ping=ping)
        self.interrupt_ttl = interrupt_ttl
        self.clock = clock
        self.session_kwargs = {k: v for k, v in (session_kwargs or {}).items() if k != "display"}
        self.user_name = user_name
        self.registry = ThreadRegistry(agent_factory, self.session_kwargs, max_threads=max_threads, ttl=thread_ttl)
        self.links = Links(self)  # one-time approval links: links.issue(thread_id, tool_call_id, approver, base_url=)
        self.registry.links = self.links  # notifications (session_kwargs={"notify": ...}) carry a link
        health = self.path.rstrip("/") + "/health"
        threads = self.path.rstrip("/") + "/threads/{thread_id}"
        # a browser app on an allowed origin sends a CORS preflight first (Authorization, JSON): answer it
        cors = (
            [
                Middleware(
                    CORSMiddleware,
                    allow_origins=sorted(self.access.allowed_origins),
                    allow_methods=["POST", "GET", "DELETE"],
                    allow_headers=["authorization", "content-type", "accept"],
                )
            ]
            if self.access.allowed_origins
            else []
        )
        self.app = Starlette(
            routes=[
                Route(self.path, self._endpoint, methods=["POST"]),
                Route(health, self._health, methods=["GET"]),
                Route(threads, self._close_thread, methods=["DELETE"]),
                link_route(self.links),
            ],
            middleware=cors,
        )
        self._asgi = close_unread(self.app)

    @property
    def threads(self) -> dict[str, ThreadState]:
        """The live threads by id."""
        return self.registry.threads

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """The ASGI entry point (delegates to the Starlette app; a response
        sent before its body was read closes the connection: :func:`close_unread`)."""
        await self._asgi(scope, receive, send)

    # ------------------------------------------------------------------ HTTP
    async def _health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def _endpoint(self, request: Request) -> Response:
        return await handle_run(request, self.access, self.limits, self.run)

    async def _close_thread(self, request: Request) -> Response:
        return await handle_close(request, self.access, self.registry.close, Refusal)

    def _open(self, thread: ThreadState) -> list[tuple[Interrupt, Pause]]:
        """The thread's open interrupts, in pause order (ids and expiry stay
        the same each time they are announced)."""
        run = thread.session.current
        if run is None or not run.live:
            return []
        out = []
        for pause in run.pauses.values():
            if pause.status != "open":
                continue
            ttl_deadline = pause.created_at + self.interrupt_ttl if self.interrupt_ttl is not None else None
            interrupt = pause_to_interrupt(pause, thread.thread_id, expires_at=ttl_deadline)
            known = thread.interrupts.get(interrupt.id)
            if known is not None and known[1] is pause and known[0].metadata == interrupt.metadata:
                interrupt = known[0]  # (an approval short of N changes the metadata: announced anew)
            thread.interrupts[interrupt.id] = (interrupt, pause)
            out.append((interrupt, pause))
        return out

    def _new_user_messages(self, thread: ThreadState, messages: list[Any]) -> list[Any]:
        known = set(thread.seen_ids) | {m.id for m in thread.agent.state.context}
        return [m for m in messages if getattr(m, "role", None) == "user" and m.id not in known]

    # ------------------------------------------------------------------ runs
    async def run(self, inp: RunAgentInput, principal: str | None = None) -> AsyncIterator[BaseEvent]:
        """The AG-UI events of one run (see the module docstring).

        Args:
            inp: the ``RunAgentInput``.
            principal: who sends it (the HTTP endpoint passes the
                authenticated principal); a thread answers only the
                principal that created it, and the audit records it.

        Yields:
            ``ag_ui.core`` events, ``RUN_STARTED`` first and exactly one
            terminal event (``RUN_FINISHED`` or ``RUN_ERROR``) last.
        """
        # protocolVersion: the AG-UI version this producer speaks (``ag_ui.core``'s,
        # "1.0"); a 1.0 client reads it on RUN_STARTED and warns when it is newer
        yield RunStartedEvent(
            thread_id=inp.thread_id, run_id=inp.run_id, protocol_version=PROTOCOL_VERSION, timestamp=now_ms()
        )
        try:
            thread = await self.registry.get(inp.thread_id, principal, co_approve=bool(inp.resume))
            resume = list(inp.resume or [])
            replay = bool(resume) and self._is_replay(thread, resume)
            if thread.lock.locked() and not replay:
                raise Refusal(
                    "thread_busy", f"Thread {inp.thread_id!r} is running another run; send this one when it ends."
                )
            async with thread.lock:
                thread.listen()
                try:
                    if thread.adopt:  # restored with a parked reply: re-open its pauses first
                        thread.adopt = False
                        thread.session.start_resume()
                        async for _ in self._pump(thread, thread.translator()):
                            pass
                    async for event in self._run_locked(thread, inp, resume, principal):
                        yield event
                finally:
                    thread.queue = None
                    thread.last_used = time.monotonic()
            self.registry.sweep()
        except Refusal as exc:
            yield RunErrorEvent(
                message=str(exc),
                code=exc.code,
                metadata={META_KEY: exc.metadata} if exc.metadata else None,
                timestamp=now_ms(),
            )
        except Exception as exc:  # noqa: BLE001 - a run always ends with a terminal event
            yield RunErrorEvent(message=f"{type(exc).__name__}: {exc}", code="internal", timestamp=now_ms())

    @staticmethod
    def _tool_of(thread: ThreadState, interrupt_id: str) -> str | None:
        held = thread.interrupts.get(interrupt_id)
        return held[1].tool_name if held else None

    def _is_replay(self, thread: ThreadState, resume: list[ResumeEntry]) -> bool:
        return all(e.interrupt_id in thread.ledger for e in resume)

    async def _run_locked(
        self, thread: ThreadState, inp: RunAgentInput, resume: list[ResumeEntry], principal: str | None
    ) -> AsyncIterator[BaseEvent]:
        session = thread.session
        await answers_settled(thread)  # an answer given without a run (a link's) is decided or refused first
        if resume:
            if self._is_replay(thread, resume):
                for e in resume:
                    done = thread.ledger[e.interrupt_id]
                    if done.status != e.status or done.payload != canonical(e.payload):
                        raise Refusal(
                            "conflicting_replay",
                            f"{interrupt_named(self._tool_of(thread, e.interrupt_id))} was already answered in an "
                            "earlier run with another answer; an interrupt is decided once.",
                        )
                for event in self._finish(thread, inp, thread.translator(), note={"replayed": True}):
                    yield event
                return
            answered = [e.interrupt_id for e in resume if e.interrupt_id in thread.ledger]
            if answered:
                raise Refusal(
                    "conflicting_replay",
                    f"This resume mixes interrupts answered earlier ({', '.join(answered)}) with open ones.",
                )
            messages = self._plan(thread, inp, resume)
            thread.check_answerer(principal, [(thread.interrupts[e.interrupt_id][1], m) for e, m in messages])
            # the one front door (nb_hitl.answers): every answer is admitted,
            # verified and audited by the Session, all or nothing, one resume
            where = origin("agui", thread_id=thread.thread_id, run_id=inp.run_id, principal=principal)
            try:
                got = await session.act_all([m for _, m in messages], decided_by=principal, origin=where)
            except BatchRefused as exc:
                tools = {m["tool_call_id"]: thread.interrupts[e.interrupt_id][1].tool_name for e, m in messages}
                raise refusal_of(exc, {m["tool_call_id"]: e for e, m in messages}, tools) from None
            recorded = thread.record_answers(messages, got["results"], inp.run_id, by=principal)
            thread.seen_ids.update(m.id for m in inp.messages)
            if recorded is not None:  # approvals short of N only: the same interrupts, for the next person
                note = {"approvals_recorded": recorded}
                for event in self._finish(thread, inp, thread.translator(), note=note):
                    yield event
                return
            yield MessagesSnapshotEvent(messages=messages_snapshot(thread.agent.state.context), timestamp=now_ms())
        else:
            new = self._new_user_messages(thread, inp.messages)
            thread.catch_up()
            open_now = self._open(thread)
            if open_now:  # AG-UI 1.0: nothing runs, the interrupt outcome is repeated
                held: dict[str, Any] = {"refused_input": held_input(open_now, new)}
                if thread.unseen:  # answered elsewhere since, and the reply asks again: caught up too
                    held["answered_elsewhere"] = thread.take_unseen()
                for event in self._finish(thread, inp, thread.translator(), note=held):
                    yield event
                return
            if not new and thread.unseen:  # answered elsewhere since (a link, a deadline): the client catches up
                note = {"answered_elsewhere": thread.take_unseen()}
                translator = thread.translator()
                if session.current is not None and session.current.live:
                    async for event in self._pump(thread, translator):
                        yield event
                for event in self._finish(thread, inp, translator, note=note):
                    yield event
                return
            if not new:
                raise Refusal("no_input", "The run carries no new user message for the agent.")
            msgs = [
                UserMsg(
                    name=getattr(m, "name", None) or self.user_name,
                    content=blocks_text(m.content, data_label=False),
                    id=m.id,
                )
                for m in new
            ]
            thread.seen_ids.update(m.id for m in inp.messages)
            thread.unseen = []  # a new message: what the owner missed before is no longer caught up on
            try:
                session.start(msgs if len(msgs) > 1 else msgs[0])
            except PendingPauseError as exc:
                raise Refusal("thread_busy", str(exc)) from None
        translator = thread.translator()
        async for event in self._pump(thread, translator):
            yield event
        for event in self._finish(thread, inp, translator):
            yield event

    def _plan(
        self, thread: ThreadState, inp: RunAgentInput, resume: list[ResumeEntry]
    ) -> list[tuple[ResumeEntry, dict[str, Any]]]:
        """The AG-UI checks of a resume (ids, every open interrupt answered
        once, expiry, payloads against ``response_schema``), then each entry's
        page message (:func:`~nb_hitl.agui.mapping.resume_to_message`); the
        answers themselves are checked by the Session's front door.

        Raises:
            Refusal: a rule of the resume is broken (nothing was taken).
        """
        open_now = self._open(thread)
        open_ids = {i.id for i, _ in open_now}
        closed = [
            e.interrupt_id for e in resume if e.interrupt_id not in open_ids and e.interrupt_id in thread.interrupts
        ]
        stale = stale_refusal([(i, thread.interrupts[i][1]) for i in closed], open_ids)
        if stale is not None:
            raise stale
        if closed:
            # announced earlier, closed since without this client: the pause's
            # deadline applied its default (Session deadline), or the reply ended
            pause = thread.interrupts[closed[0]][1]
            recorded = pause.decision or {}
            applied = recorded.get("applied") if recorded.get("action") == "timeout" else None
            answered = recorded.get("action") if pause.status in ("decided", "delivered") else None
            why = applied or pause.reason
            said = (
                f": {why}."
                if why
                else (f". {answered_elsewhere_text(answered)}." if answered else f": it is {pause.status}.")
            )
            raise Refusal(
                "interrupt_expired" if applied or pause.status == "expired" else "interrupt_closed",
                f"{interrupt_named(pause.tool_name)} is no longer open{said}",
            )
        if not open_now:
            raise Refusal(
                "unknown_interrupt",
                "This thread has no open interrupt to resume: "
                + ", ".join(e.interrupt_id[:80] for e in resume)
                + " matches nothing.",
            )
        if self._new_user_messages(thread, inp.messages):
            raise Refusal(
                "input_with_resume",
                "A resume must not carry new user messages: answer the open interrupts first, then send "
                "the message in its own run.",
            )
        try:
            check_resume([i for i, _ in open_now], resume, now=self.clock())
        except ResumeError as exc:
            raise Refusal(exc.code, str(exc), refusal_at(exc.interrupt_ids, exc.field)) from None
        by_id = {i.id: p for i, p in open_now}
        plan = []
        for entry in resume:
            try:
                message = resume_to_message(by_id[entry.interrupt_id], entry, thread_id=thread.thread_id)
            except ResumeError as exc:
                raise Refusal(exc.code, str(exc), refusal_at([entry.interrupt_id], exc.field)) from None
            except DecisionError as exc:  # the field is in the metadata, for programs and the card
                raise Refusal(
                    "invalid_payload",
                    f"{interrupt_named(by_id[entry.interrupt_id].tool_name)}: {exc}",
                    refusal_at([entry.interrupt_id], exc.field),
                ) from None
            plan.append((entry, message))
        return plan

    async def _pump(self, thread: ThreadState, translator: EventTranslator) -> AsyncIterator[BaseEvent]:
        assert thread.queue is not None
        run = thread.session.current
        while True:
            item = await thread.queue.get()
            if item[0] == "event":
                for event in translator.feed(item[1]):
                    yield event
            if thread.settled(run, item):
                return

    def _finish(
        self, thread: ThreadState, inp: RunAgentInput, translator: EventTranslator, *, note: dict | None = None
    ) -> list[BaseEvent]:
        """The run's closing events (:func:`~nb_hitl.agui.run_end.closing_events`); ``note`` goes
        into ``RUN_FINISHED.metadata.nb_hitl``."""
        return closing_events(thread, inp, translator, self._open(thread), note=note)
