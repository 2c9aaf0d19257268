"""Serve an AgentScope agent over AG-UI (HTTP POST + SSE), pauses as interrupts.

:class:`AguiServer` is an ASGI app (Starlette). ``POST <path>`` takes a
``RunAgentInput`` (``ag_ui.core``) and answers with a ``text/event-stream``
of AG-UI events written by ``ag_ui.encoder.EventEncoder``. Each
``threadId`` is one conversation with its own agent, built by the factory
you pass, driven by its own headless :class:`~nb_hitl.session.Session`:
pause handling, validation, the permission re-check of edited input and the
exactly-once resume are the Session's, shared with the notebook widgets.

A run's events
==============
``RUN_STARTED``; on a resume, a ``MESSAGES_SNAPSHOT`` of the history (the
resumed tool calls were started in the earlier run); the agent's stream
(``TEXT_MESSAGE_*``, ``TOOL_CALL_*``, ``TOOL_CALL_RESULT``, ``REASONING_*``,
see :mod:`nb_hitl.agui.events`); then ``MESSAGES_SNAPSHOT`` and
``STATE_SNAPSHOT`` (AG-UI: the state a client needs comes *before* the
interrupt outcome) and one terminal event:

* the reply parked on open pauses: ``RUN_FINISHED`` with ``outcome =
  {type: "interrupt", interrupts: [...]}`` (:func:`~nb_hitl.agui.mapping.pause_to_interrupt`);
* the reply completed: ``RUN_FINISHED`` with ``outcome = {type: "success"}``
  and ``result`` = the final text;
* the reply was interrupted: ``RUN_FINISHED`` with ``{type: "cancelled"}``;
* the agent failed, or the input is refused: ``RUN_ERROR`` with a ``code``.

The rules enforced (AG-UI "Interrupts", contract rules)
=======================================================
* Every open interrupt must be answered in one resume (``missing_interrupt``);
  entries must name open interrupts (``unknown_interrupt``), each once
  (``duplicate_interrupt``). On any refusal nothing is resumed: every entry
  is turned into a page message and checked (:func:`nb_hitl.decisions.decide`,
  the permission re-check, the tool's external-result check) before the
  first one reaches the Session.
* New input on a thread with open interrupts is refused
  (``interrupts_pending``; ``RUN_ERROR.metadata.nb_hitl.open_interrupts``
  repeats them so a client that lost the stream can answer), and so is a
  resume that also carries new user messages (``input_with_resume``).
* A ``resolved`` entry past its interrupt's ``expires_at`` is refused
  (``interrupt_expired``); a ``cancelled`` one is accepted, so a thread
  whose interrupt expired is never stuck. An interrupt closed since it was
  announced (the Session's ``deadline`` applied its default, the reply
  ended) is refused as ``interrupt_expired`` / ``interrupt_closed``.
* Replaying the same resume (same ids, statuses and payloads) is harmless:
  nothing is decided twice, and the run reports the thread's current
  outcome (``RUN_FINISHED.metadata.nb_hitl.replayed = true``). The same ids
  with other answers are refused (``conflicting_replay``).
* One run at a time per thread (``thread_busy``).

The factory
===========
``agent_factory(thread_id) -> Agent`` (sync or async) builds a thread's
agent, once, on the thread's first run. Nothing needs to be wired into the
agent: the server listens to the thread's Session (below).

How a run is streamed
=====================
The server subscribes to the thread's Session with
:meth:`~nb_hitl.session.Session.on_event` (every item of
``agent.reply_stream`` the Session consumes, AgentScope events and the final
``Msg``, in order, before the Session acts on it) and
:meth:`~nb_hitl.session.Session.on_change` (``"pause"``, ``"decision"``,
``"end"``). Both listeners are called synchronously by the Session's
driving task; they only append to the thread's queue (``put_nowait`` on the
server's loop, ``call_soon_threadsafe`` from any other thread or loop), so
the agent is never slowed by a client and the order is the Session's. The
run's generator reads that queue and translates the events
(:class:`~nb_hitl.agui.events.EventTranslator`) until the run settles: the
reply ended (``"end"``), or its stream is over (AgentScope's final ``Msg``,
the last item of every ``reply_stream`` that returns) and every tool call
the agent parked has an open pause. Only then are the snapshots and the
terminal event built from the Session's state, so they always follow the
streamed events.
"""

from __future__ import annotations

import asyncio
import inspect
import ipaddress
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    MessagesSnapshotEvent,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
)
from ag_ui.encoder import EventEncoder
from agentscope.message import Msg, UserMsg
from agentscope.permission import PermissionEngine
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..decisions import check_external_result, decide, recheck_permission
from ..errors import DecisionError, NbHitlError, PendingPauseError
from ..pauses import Pause
from ..session import ReplyRun, Session
from .events import EventTranslator, messages_snapshot, now_ms
from .mapping import META_KEY, ResumeError, check_resume, pause_to_interrupt, resume_to_message

__all__ = ["AguiServer", "ServerHandle", "serve_in_background", "AgentFactory"]

AgentFactory = Callable[[str], Any]
"""``(thread_id) -> Agent`` (or an awaitable of one)."""

_MAX_BODY = 4 * 1024 * 1024


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


@dataclass
class _Answered:
    status: str
    payload: str
    run_id: str


@dataclass
class _Thread:
    thread_id: str
    agent: Any
    session: Session
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    queue: asyncio.Queue | None = None
    loop: asyncio.AbstractEventLoop | None = None
    streaming: bool = False
    """A ``reply_stream`` the Session consumes is between its first item and
    its final ``Msg`` (set by the event listener, on the driving task)."""
    interrupts: dict[str, tuple[Interrupt, Pause]] = field(default_factory=dict)
    ledger: dict[str, _Answered] = field(default_factory=dict)
    seen_ids: set[str] = field(default_factory=set)

    def listen(self) -> None:
        """Open the queue of a run (on the loop that reads it)."""
        self.loop = asyncio.get_running_loop()
        self.queue = asyncio.Queue()

    def put(self, item: tuple[str, Any]) -> None:
        """Queue an item for the run listening now, if any. Called
        synchronously by the Session's driving task (the server's loop);
        from another thread or loop it goes through ``call_soon_threadsafe``."""
        queue, loop = self.queue, self.loop
        if queue is None or loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            queue.put_nowait(item)
            return
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody listens any more
            pass

    def on_event(self, event: Any, run: ReplyRun) -> None:
        """The Session's event listener: one item of ``agent.reply_stream``."""
        self.streaming = not isinstance(event, Msg)
        self.put(("event", event))

    def on_change(self, kind: str, run: ReplyRun) -> None:
        """The Session's change listener: ``"pause"``, ``"decision"``, ``"end"``."""
        if kind == "end":
            self.streaming = False
        self.put(("notify", (kind, run)))


class _Refusal(Exception):
    def __init__(self, code: str, message: str, metadata: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.metadata = metadata


class AguiServer:
    """An AG-UI endpoint serving one AgentScope agent per thread.

    Args:
        agent_factory: ``(thread_id) -> Agent`` (sync or async), called
            once per thread; see the module docstring.
        path: the endpoint's path (``POST``); ``GET <path>/health`` answers
            ``{"status": "ok"}``.
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
        interrupt_ttl: float | None = None,
        clock: Callable[[], float] = time.time,
        session_kwargs: dict[str, Any] | None = None,
        user_name: str = "user",
    ) -> None:
        if not callable(agent_factory):
            raise TypeError("agent_factory must be callable: (thread_id) -> Agent")
        self.agent_factory = agent_factory
        self.path = "/" + path.strip("/") if path.strip("/") else "/"
        self.interrupt_ttl = interrupt_ttl
        self.clock = clock
        self.session_kwargs = {k: v for k, v in (session_kwargs or {}).items() if k != "display"}
        self.user_name = user_name
        self.threads: dict[str, _Thread] = {}
        self._creating: dict[str, asyncio.Lock] = {}
        health = self.path.rstrip("/") + "/health"
        self.app = Starlette(
            routes=[
                Route(self.path, self._endpoint, methods=["POST"]),
                Route(health, self._health, methods=["GET"]),
            ]
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """The ASGI entry point (delegates to the Starlette app)."""
        await self.app(scope, receive, send)

    # ------------------------------------------------------------------ HTTP
    async def _health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "threads": len(self.threads)})

    async def _endpoint(self, request: Request) -> Response:
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > _MAX_BODY:
            return JSONResponse({"error": "The request body is too large."}, status_code=413)
        try:
            body = await request.body()
            if len(body) > _MAX_BODY:
                return JSONResponse({"error": "The request body is too large."}, status_code=413)
            inp = RunAgentInput.model_validate_json(body)
        except ValidationError as exc:
            return JSONResponse(
                {"error": "The body is not an AG-UI RunAgentInput.", "detail": json.loads(exc.json())[:5]},
                status_code=422,
            )
        encoder = EventEncoder(accept=request.headers.get("accept"))

        async def stream() -> AsyncIterator[str]:
            async for event in self.run(inp):
                yield encoder.encode(event)

        return StreamingResponse(
            stream(),
            media_type=encoder.get_content_type(),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    # --------------------------------------------------------------- threads
    async def _thread(self, thread_id: str) -> _Thread:
        thread = self.threads.get(thread_id)
        if thread is not None:
            return thread
        lock = self._creating.setdefault(thread_id, asyncio.Lock())
        async with lock:
            thread = self.threads.get(thread_id)
            if thread is not None:
                return thread
            agent = self.agent_factory(thread_id)
            if inspect.isawaitable(agent):
                agent = await agent
            session = Session(agent, display=False, **self.session_kwargs)
            thread = _Thread(thread_id=thread_id, agent=agent, session=session)
            session.on_event(thread.on_event)
            session.on_change(thread.on_change)
            self.threads[thread_id] = thread
            return thread

    def _open(self, thread: _Thread) -> list[tuple[Interrupt, Pause]]:
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
            if known is not None and known[1] is pause:
                interrupt = known[0]
            thread.interrupts[interrupt.id] = (interrupt, pause)
            out.append((interrupt, pause))
        return out

    def _new_user_messages(self, thread: _Thread, messages: list[Any]) -> list[Any]:
        known = set(thread.seen_ids) | {m.id for m in thread.agent.state.context}
        return [m for m in messages if getattr(m, "role", None) == "user" and m.id not in known]

    # ------------------------------------------------------------------ runs
    async def run(self, inp: RunAgentInput) -> AsyncIterator[BaseEvent]:
        """The AG-UI events of one run (see the module docstring).

        Args:
            inp: the ``RunAgentInput``.

        Yields:
            ``ag_ui.core`` events, ``RUN_STARTED`` first and exactly one
            terminal event (``RUN_FINISHED`` or ``RUN_ERROR``) last.
        """
        yield RunStartedEvent(thread_id=inp.thread_id, run_id=inp.run_id, timestamp=now_ms())
        try:
            thread = await self._thread(inp.thread_id)
            resume = list(inp.resume or [])
            replay = bool(resume) and self._is_replay(thread, resume)
            if thread.lock.locked() and not replay:
                raise _Refusal(
                    "thread_busy", f"Thread {inp.thread_id!r} is running another run; send this one when it ends."
                )
            async with thread.lock:
                thread.listen()
                try:
                    async for event in self._run_locked(thread, inp, resume):
                        yield event
                finally:
                    thread.queue = None
        except _Refusal as exc:
            yield RunErrorEvent(
                message=str(exc),
                code=exc.code,
                metadata={META_KEY: exc.metadata} if exc.metadata else None,
                timestamp=now_ms(),
            )
        except Exception as exc:  # noqa: BLE001 - a run always ends with a terminal event
            yield RunErrorEvent(message=f"{type(exc).__name__}: {exc}", code="internal", timestamp=now_ms())

    def _is_replay(self, thread: _Thread, resume: list[ResumeEntry]) -> bool:
        return all(e.interrupt_id in thread.ledger for e in resume)

    async def _run_locked(
        self, thread: _Thread, inp: RunAgentInput, resume: list[ResumeEntry]
    ) -> AsyncIterator[BaseEvent]:
        session = thread.session
        if resume:
            if self._is_replay(thread, resume):
                for e in resume:
                    done = thread.ledger[e.interrupt_id]
                    if done.status != e.status or done.payload != _canonical(e.payload):
                        raise _Refusal(
                            "conflicting_replay",
                            f"Interrupt {e.interrupt_id} was already answered (run {done.run_id}) with another "
                            "answer; an interrupt is decided once.",
                        )
                async for event in self._finish(thread, inp, EventTranslator(), replayed=True):
                    yield event
                return
            answered = [e.interrupt_id for e in resume if e.interrupt_id in thread.ledger]
            if answered:
                raise _Refusal(
                    "conflicting_replay",
                    f"This resume mixes interrupts answered earlier ({', '.join(answered)}) with open ones.",
                )
            plan = await self._plan(thread, inp, resume)
            thread.seen_ids.update(m.id for m in inp.messages)
            yield MessagesSnapshotEvent(messages=messages_snapshot(thread.agent.state.context), timestamp=now_ms())
            # Every entry was checked above; the Session repeats the checks
            # (a race with an interrupt is still caught) and queues each
            # decision exactly once.
            acts: list[tuple[ResumeEntry, Any]] = []
            failed: list[str] = []
            for entry, _pause, message in plan:
                try:
                    acts.append((entry, session.act(message)))
                except NbHitlError as exc:
                    failed.append(f"{entry.interrupt_id}: {exc}")
            results = await asyncio.gather(*(c for _, c in acts), return_exceptions=True)
            for (entry, _coro), result in zip(acts, results, strict=True):
                if isinstance(result, BaseException):
                    failed.append(f"{entry.interrupt_id}: {result}")
                else:
                    thread.ledger[entry.interrupt_id] = _Answered(entry.status, _canonical(entry.payload), inp.run_id)
            if failed:
                raise _Refusal("resume_failed", "Some answers could not be applied: " + "; ".join(failed))
        else:
            open_now = self._open(thread)
            if open_now:
                raise _Refusal(
                    "interrupts_pending",
                    "This thread waits for answers to its open interrupts ("
                    + ", ".join(i.id for i, _ in open_now)
                    + "); send a resume answering all of them before new input.",
                    {"open_interrupts": [i.model_dump(mode="json", by_alias=True) for i, _ in open_now]},
                )
            new = self._new_user_messages(thread, inp.messages)
            if not new:
                raise _Refusal("no_input", "The run carries no new user message for the agent.")
            msgs = [
                UserMsg(name=getattr(m, "name", None) or self.user_name, content=_user_text(m.content), id=m.id)
                for m in new
            ]
            thread.seen_ids.update(m.id for m in inp.messages)
            try:
                session.start(msgs if len(msgs) > 1 else msgs[0])
            except PendingPauseError as exc:
                raise _Refusal("thread_busy", str(exc)) from None
        translator = EventTranslator()
        async for event in self._pump(thread, translator):
            yield event
        async for event in self._finish(thread, inp, translator):
            yield event

    async def _plan(
        self, thread: _Thread, inp: RunAgentInput, resume: list[ResumeEntry]
    ) -> list[tuple[ResumeEntry, Pause, dict[str, Any]]]:
        """Turn every entry into a checked page message, or refuse them all."""
        open_now = self._open(thread)
        open_ids = {i.id for i, _ in open_now}
        closed = [
            e.interrupt_id for e in resume if e.interrupt_id not in open_ids and e.interrupt_id in thread.interrupts
        ]
        if closed:
            # announced earlier, closed since without this client: the pause's
            # deadline applied its default (Session deadline), or the reply ended
            pause = thread.interrupts[closed[0]][1]
            decision = pause.decision or {}
            applied = decision.get("applied") if decision.get("action") == "timeout" else None
            why = applied or pause.reason or f"it is {pause.status}"
            raise _Refusal(
                "interrupt_expired" if applied or pause.status == "expired" else "interrupt_closed",
                f"Interrupt {closed[0]} is no longer open: {why}.",
            )
        if not open_now:
            raise _Refusal(
                "unknown_interrupt",
                "This thread has no open interrupt to resume: "
                + ", ".join(e.interrupt_id[:80] for e in resume)
                + " matches nothing.",
            )
        if self._new_user_messages(thread, inp.messages):
            raise _Refusal(
                "input_with_resume",
                "A resume must not carry new user messages: answer the open interrupts first, then send "
                "the message in its own run.",
            )
        try:
            check_resume([i for i, _ in open_now], resume, now=self.clock())
        except ResumeError as exc:
            raise _Refusal(exc.code, str(exc)) from None
        by_id = {i.id: p for i, p in open_now}
        engine = PermissionEngine(thread.agent.state.permission_context)
        plan = []
        for entry in resume:
            pause = by_id[entry.interrupt_id]
            try:
                message = resume_to_message(pause, entry, thread_id=thread.thread_id)
                decision = decide(pause, message)
                tool = await thread.agent.toolkit.get_tool(pause.tool_name)
                if decision.edited_input is not None and tool is not None:
                    await recheck_permission(engine, tool, decision.edited_input)
                if decision.tool_result is not None and decision.tool_result.state == "success":
                    await check_external_result(tool, decision.tool_result)
            except ResumeError as exc:
                raise _Refusal(exc.code, str(exc)) from None
            except DecisionError as exc:
                where = f" (at {exc.field})" if exc.field else ""
                raise _Refusal("invalid_payload", f"Interrupt {entry.interrupt_id}{where}: {exc}") from None
            plan.append((entry, pause, message))
        return plan

    def _settled(self, thread: _Thread, run: ReplyRun | None, item: tuple[str, Any]) -> bool:
        """Whether the run has nothing more to stream: its reply ended, or
        no ``reply_stream`` is between its first item and its final ``Msg``
        and every parked tool call has an open pause (a pause is added on
        the driving task right after the event announcing it, or after the
        stream by ``_sync_pauses``; each addition queues a ``"pause"``
        notification, so the last one re-checks this)."""
        kind, value = item
        if run is None:
            return False
        if kind == "notify" and value[0] == "end" and value[1] is run:
            return True
        if thread.streaming or not run.live:
            return False
        awaiting = thread.session.parked_tool_calls()
        if not awaiting:
            return False
        return all(tc.id in run.pauses and run.pauses[tc.id].status == "open" for tc in awaiting)

    async def _pump(self, thread: _Thread, translator: EventTranslator) -> AsyncIterator[BaseEvent]:
        assert thread.queue is not None
        run = thread.session.current
        while True:
            item = await thread.queue.get()
            if item[0] == "event":
                for event in translator.feed(item[1]):
                    yield event
            if self._settled(thread, run, item):
                return

    async def _finish(
        self, thread: _Thread, inp: RunAgentInput, translator: EventTranslator, *, replayed: bool = False
    ) -> AsyncIterator[BaseEvent]:
        for event in translator.close():
            yield event
        run = thread.session.current
        open_now = self._open(thread)
        status = "paused" if open_now else (run.status if run is not None else "idle")
        yield MessagesSnapshotEvent(messages=messages_snapshot(thread.agent.state.context), timestamp=now_ms())
        yield StateSnapshotEvent(
            snapshot={
                META_KEY: {
                    "agent": getattr(thread.agent, "name", ""),
                    "thread_id": thread.thread_id,
                    "reply_id": run.reply_id if run is not None else None,
                    "status": status,
                    "open_interrupts": [i.id for i, _ in open_now],
                }
            },
            timestamp=now_ms(),
        )
        meta = {META_KEY: {"replayed": True}} if replayed else None
        if open_now:
            yield RunFinishedEvent(
                thread_id=inp.thread_id,
                run_id=inp.run_id,
                outcome=RunFinishedInterruptOutcome(interrupts=[i for i, _ in open_now]),
                metadata=meta,
                timestamp=now_ms(),
            )
            return
        if run is None or run.status == "finished":
            final = _final_text(run)
            yield RunFinishedEvent(
                thread_id=inp.thread_id,
                run_id=inp.run_id,
                result=final,
                outcome=RunFinishedSuccessOutcome(),
                metadata=meta,
                timestamp=now_ms(),
            )
            return
        if run.status in ("interrupted", "expired"):
            yield RunFinishedEvent(
                thread_id=inp.thread_id,
                run_id=inp.run_id,
                outcome=RunFinishedCancelledOutcome(),
                metadata=meta,
                timestamp=now_ms(),
            )
            return
        yield RunErrorEvent(
            message=run.reason or f"The reply ended: {run.status}", code="agent_error", timestamp=now_ms()
        )


def _user_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        text = getattr(part, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return "\n".join(parts)


def _final_text(run: ReplyRun | None) -> str | None:
    if run is None or run.final is None:
        return None
    try:
        return run.final.get_text_content() or ""
    except Exception:  # noqa: BLE001
        return None


# ---------------------------------------------------------------------------
# running it
# ---------------------------------------------------------------------------
@dataclass
class ServerHandle:
    """A uvicorn server running in a background thread.

    Attributes:
        url: the AG-UI endpoint, ``http://127.0.0.1:<port><path>``.
        host: the loopback address served.
        port: the port (chosen by the OS when 0 was asked).
    """

    url: str
    host: str
    port: int
    server: Any
    thread: threading.Thread
    sock: socket.socket

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to exit and wait for its thread (idempotent)."""
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(timeout)
        try:
            self.sock.close()
        except OSError:
            pass

    @property
    def running(self) -> bool:
        """True while the server thread serves."""
        return self.thread.is_alive() and bool(self.server.started)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_in_background(
    app: Any,
    port: int = 0,
    *,
    host: str = "127.0.0.1",
    log_level: str = "warning",
    startup_timeout: float = 30.0,
) -> ServerHandle:
    """Serve an ASGI app with uvicorn in a daemon thread (its own event loop;
    the caller's loop, e.g. a notebook kernel's, is never touched).

    Args:
        app: the ASGI app (an :class:`AguiServer`, or any other).
        port: the TCP port; 0 lets the OS choose a free one.
        host: a loopback address (``127.0.0.1``, ``::1``): the endpoint has
            no authentication and drives an agent that may run tools.
        log_level: uvicorn's log level.
        startup_timeout: seconds to wait for uvicorn to start.

    Returns:
        ServerHandle: ``.url`` (with the app's ``path`` when it is an
        :class:`AguiServer`) and ``.stop()``.

    Raises:
        ValueError: ``host`` is not a loopback address.
        RuntimeError: uvicorn did not start in time (its thread died or hung).
    """
    import uvicorn

    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        raise ValueError(f"serve_in_background only serves on loopback, not {host!r}.")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level=log_level, lifespan="off", loop="asyncio", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"nb_hitl-agui-{bound_port}", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive():
            sock.close()
            raise RuntimeError("uvicorn stopped before it started serving; see its log.")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"uvicorn did not start within {startup_timeout} s.")
        time.sleep(0.01)
    path = getattr(app, "path", "/")
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    return ServerHandle(
        url=f"http://{shown}:{bound_port}{path}", host=host, port=bound_port, server=server, thread=thread, sock=sock
    )
