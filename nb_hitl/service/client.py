"""``ServiceClient``: the notebook as the HITL console of AgentScope's service.

::

    from nb_hitl.service import ServiceClient
    svc = ServiceClient("http://127.0.0.1:8000", user_id="ana")
    inbox = svc.inbox()        # every parked session across agents, live
    # with a scaled-out service on Redis: pushed updates over one connection
    svc = ServiceClient(urls, user_id="ana", bus="redis://127.0.0.1:6379/0")

The client ties the pieces together: :class:`~nb_hitl.service.inbox.InboxState`
keeps the rows (pushed by the service's own events through
:class:`~nb_hitl.service.events.BusWatch` when ``bus`` is given, else one
batched listing every ``poll_interval`` s), the
:class:`~nb_hitl.widgets.inbox.InboxWidget` shows the rows, opening a row
makes a :class:`~nb_hitl.service.console.SessionConsole` whose
``ReplyWidget`` appears under the list, and every answer is recorded in an
:class:`~nb_hitl.service.ledger.AnswerLedger` (nb_hitl's audit log).
Everything runs on the kernel's event loop; nothing blocks it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from ..errors import DecisionError, NbHitlError
from ..kinds import kind_spec
from ..notify import Notify
from ..policy import Policy
from .approving import console_policies, shown_pause
from .console import SessionConsole, console_name
from .events import BusWatch
from .http import ServiceHTTP
from .inbox import InboxEntry, InboxState, show_approvals
from .ledger import AnswerLedger
from .notices import ConsoleNotices
from .outcome import Outcome, is_not_taken

__all__ = ["ServiceClient"]

log = logging.getLogger(__name__)


class ServiceClient:
    """The console of one user on one AgentScope service.

    Args:
        base_url: the service, e.g. ``"http://127.0.0.1:8000"``, or a list of
            workers of one scaled-out service (they share state; a worker
            that cannot be reached is skipped).
        user_id: the service user (``X-User-ID``).
        headers: extra HTTP headers (e.g. ``Authorization``).
        auth: an ``httpx.Auth`` or a ``(httpx.Request) -> httpx.Request`` hook.
        audit_path: the ledger file (default
            ``./nb_hitl_service_audit.jsonl``, or ``$NB_HITL_SERVICE_AUDIT``).
        poll_interval: seconds between inbox polls.
        stranded_after: seconds ``running`` before a session is shown stranded.
        outcome_timeout: seconds to wait for the service's verdict on an answer.
        transport: an ``httpx.AsyncBaseTransport`` (tests).
        service_id: the name answers are recorded under in the ledger
            (default: the first base URL); give one service's workers the same.
        bus: the service's Redis message bus (``redis://host:port/db``, the
            URL its ``RedisMessageBus`` uses): the inbox then follows every
            session's events over one connection instead of polling.
        resync_interval: with ``bus``, seconds between full listings (a
            safety net: Redis Pub/Sub drops what is published while the
            connection is down; it also finds sessions stranded mid-turn).
        parallel_answers: most sessions "Approve selected" answers at once.
        policies: :class:`~nb_hitl.policy.Policy` objects applied to the
            parked confirmations of every session opened (see
            :class:`~nb_hitl.service.console.SessionConsole`): with
            ``approvals=N`` a call runs once, after N approvals given on any
            console recording in the same ``audit_path``.
        decided_by: the person answering from this console (recorded and
            counted; default: ``user_id``).
        notify: a :class:`~nb_hitl.notify.Notify` told when the console
            first sees a parked call (the inbox, or a session opened), once
            per call and input for every console sharing the ledger
            (:mod:`nb_hitl.service.notices`).

    Attributes:
        http: the :class:`~nb_hitl.service.http.ServiceHTTP`.
        state: the :class:`~nb_hitl.service.inbox.InboxState`.
        ledger: the :class:`~nb_hitl.service.ledger.AnswerLedger`.
        consoles: ``{session_id: SessionConsole}`` opened so far.
        console_id: this console's name in the answers it sends (another
            console reading them says where they came from).
        notice: what the inbox says above its rows about the service itself
            (its workers not taking answers), or ``""``.
        closed: :meth:`aclose` was called: the inbox follows nothing and answers nothing.
    """

    def __init__(
        self,
        base_url: str | list[str],
        user_id: str,
        *,
        headers: dict[str, str] | None = None,
        auth: httpx.Auth | Any = None,
        audit_path: str | os.PathLike[str] | None = None,
        poll_interval: float = 1.0,
        stranded_after: float = 60.0,
        outcome_timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
        service_id: str | None = None,
        bus: str | None = None,
        resync_interval: float = 30.0,
        parallel_answers: int = 8,
        policies: Sequence[Policy] = (),
        decided_by: str | None = None,
        notify: Notify | None = None,
    ) -> None:
        self.http = ServiceHTTP(base_url, user_id, headers=headers, auth=auth, transport=transport)
        path = audit_path or os.environ.get("NB_HITL_SERVICE_AUDIT") or Path.cwd() / "nb_hitl_service_audit.jsonl"
        self.ledger = AnswerLedger(path, service_id or self.http.base_urls[0], user_id)
        self.state = InboxState(self.http, stranded_after=stranded_after)
        self.state.flagger = self._flag_entry
        self.poll_interval = poll_interval
        self.stranded_after = stranded_after
        self.outcome_timeout = outcome_timeout
        self.consoles: dict[str, SessionConsole] = {}
        self.console_id = console_name()
        self.notice = ""
        self.closed = False
        self.view: Any = None
        self._widget: Any = None
        self.bus = bus
        self.resync_interval = resync_interval
        self.parallel_answers = parallel_answers
        self.policies = console_policies(policies)
        self.decided_by = decided_by
        self.notices = ConsoleNotices(notify, self.ledger) if notify is not None else None
        self.watch: BusWatch | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._push_pending = False
        self._relist: asyncio.Task[None] | None = None
        self.state.on_change(lambda _s: self._push_soon())

    @property
    def user_id(self) -> str:
        """The service user."""
        return self.http.user_id

    # -- the inbox ------------------------------------------------------------
    def inbox(self) -> Any:
        """The inbox widget (an ``InboxView``: list + opened session), polling live.

        Call from a notebook cell (needs the kernel's running loop).
        """
        view = self.make_view()
        self.start()
        return view

    def make_view(self) -> Any:
        """The ``InboxView`` (made once, holding the rows known now), without
        following the service: :meth:`inbox` starts that too."""
        if self.view is None:
            from ..widgets.inbox import InboxView, InboxWidget

            self._widget = InboxWidget(
                handler=self._on_page,
                rows=self.state.views(),
                service=self.http.base_url,
                user_id=self.user_id,
                live=self.live,
            )
            self._widget.before_sync = self._push
            self.view = InboxView(self._widget)
            self._push()
        return self.view

    @property
    def live(self) -> str:
        """How the inbox learns of changes, in one sentence (shown above the rows)."""
        if self.closed:
            return "Closed: this inbox no longer follows the service; the rows are as last read."
        if self.bus:
            return "Pushed: the service's own events, all sessions over one connection to its bus."
        return (
            f"Listed every {self.poll_interval:g} s (one batched listing): without its Redis bus the "
            "service offers no event stream of all sessions."
        )

    def start(self) -> list[asyncio.Task[Any]]:
        """Start following the service on the running loop (idempotent); the tasks.

        With ``bus``: a :class:`~nb_hitl.service.events.BusWatch` (one
        connection), the inbox's event follower and a full listing every
        ``resync_interval`` s; without: a listing every ``poll_interval`` s.
        """
        if self._tasks and not all(t.done() for t in self._tasks):
            return self._tasks
        loop = asyncio.get_event_loop()
        if self.bus:
            self.watch = BusWatch(
                self.bus, self.state.on_event, on_connect=self._resync, on_error=lambda _e: self._push_soon()
            )
            self._tasks = [
                loop.create_task(self.watch.run()),
                loop.create_task(self.state.follow()),
                loop.create_task(self._resync_every()),
            ]
        else:
            self._tasks = [loop.create_task(self.state.run(self.poll_interval))]
        if self.policies:  # a row's approvals change with the ledger only
            self._tasks.append(loop.create_task(self.ledger.watch(self._rows_counted, self.count_rows)))
        return self._tasks

    def _resync(self) -> None:
        self._push_soon()  # the bus is back: its error leaves the page
        self._tasks.append(asyncio.get_event_loop().create_task(self.state.poll()))
        self._tasks = [t for t in self._tasks if not t.done()]

    async def _resync_every(self) -> None:
        while True:
            await asyncio.sleep(self.resync_interval)
            await self.state.poll()

    async def refresh(self) -> list[dict[str, Any]]:
        """Poll once now; the rows (``InboxEntry.to_view()``)."""
        await self.state.poll()
        self._push()
        return self.state.views()

    def entries(self) -> list[dict[str, Any]]:
        """The rows as last polled."""
        return self.state.views()

    def _flag_entry(self, entry: InboxEntry) -> None:
        if self.notices is not None or self.policies:
            self.ledger.catch_up()
            pauses = [
                shown_pause(self.ledger, entry.session_id, str(entry.reply_id), b, self.policies) for b in entry.calls
            ]
            if self.notices is not None:
                self.notices.parked(entry, pauses)
            show_approvals(entry, pauses[0] if pauses else None)
        for call in entry.calls:
            first = self.ledger.approved(entry.session_id, str(call.get("id")))
            if first is not None and entry.status == "awaiting_permission":
                entry.flags[str(call.get("id"))] = f"{call.get('name')} was approved here at {first.get('time')}"

    def count_rows(self) -> bool:
        """Show on each row the approvals so far of its call that needs several,
        as every console recording in the ledger gave them (an approval short of
        the count sends nothing the service would show); True when a row changed.
        Costs the ledger lines appended since the last look and each counted row's lines."""
        rows = [e for e in self.state.entries.values() if e.approvals_needed > 1 and e.calls]
        if not rows:
            return False
        self.ledger.catch_up()
        changed = False
        for entry in rows:
            pause = shown_pause(self.ledger, entry.session_id, str(entry.reply_id), entry.calls[0], self.policies)
            changed = show_approvals(entry, pause) or changed
        if changed:
            self._push_soon()
        return changed

    def _rows_counted(self) -> bool:
        """Some row's call needs several approvals (the ledger is watched then)."""
        return any(e.approvals_needed > 1 for e in self.state.entries.values())

    def _push_soon(self) -> None:
        """Push at most every 0.1 s: a burst of events becomes one update of the page."""
        if self._push_pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._push()
            return
        self._push_pending = True

        def later() -> None:
            self._push_pending = False
            self._push()

        loop.call_later(0.1, later)

    def _push(self) -> None:
        w = self._widget
        if w is None:
            return
        watch_error = self.watch.error if self.watch is not None and not self.watch.connected else ""
        try:
            with w.hold_sync():
                # the rows travel as what changed (one op per row added,
                # changed or gone), never the whole list again
                if w.show_rows(self.state.views()):
                    w.updated = time.time()
                w.error = "" if self.closed else self.state.error or watch_error or self.notice
                w.live, w.closed = self.live, self.closed
        except Exception:  # a closed comm never stops the inbox
            log.debug("could not update the inbox widget", exc_info=True)

    def _on_page(self, message: dict[str, Any]) -> Any:
        action = message.get("action")
        if self.closed:
            raise DecisionError("This inbox is closed: it answers nothing. Make a new console to follow the service.")
        if action == "refresh":
            return self._page_refresh()
        if action == "open":
            sid = message.get("session_id")
            if not isinstance(sid, str) or not sid:
                raise DecisionError("Which session? The message names no session_id.", field="session_id")
            return self._page_open(sid, message.get("agent_id"))
        if action == "say":
            return self._page_say(message.get("session_id"), message.get("text"))
        if action == "approve_selected":
            return self._page_approve(message.get("items"))
        raise DecisionError(f"The inbox does not know the action {str(action)[:40]!r}.", field="action")

    async def _page_refresh(self) -> dict[str, Any]:
        await self.refresh()
        return {"entries": len(self.state.entries)}

    async def _page_open(self, session_id: str, agent_id: Any) -> dict[str, Any]:
        console = await self.open(session_id, agent_id if isinstance(agent_id, str) else None)
        return {"opened": console.session_id, "pauses": len(console.pauses)}

    async def _page_say(self, session_id: Any, text: Any) -> dict[str, Any]:
        if not isinstance(session_id, str) or not session_id:
            raise DecisionError("Open a session first: the message names no session_id.", field="session_id")
        if not isinstance(text, str) or not text.strip():
            raise DecisionError("Write a message first: it is empty.", field="text")
        console = self.consoles.get(session_id) or await self.open(session_id)
        started = await console.say(text)
        return {"sent": session_id, "started": started == "started"}

    async def _page_approve(self, items: Any) -> dict[str, Any]:
        if not isinstance(items, list) or not items:
            raise DecisionError("Select at least one session to approve.", field="items")
        rows = [i for i in items if isinstance(i, dict) and isinstance(i.get("session_id"), str)]
        if len(rows) != len(items):
            raise DecisionError("Each selected item must name a session_id.", field="items")
        return {"results": await self.approve_selected(rows)}

    async def approve_selected(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """ "Approve selected": approve every open confirmation of each session,
        one request per session (:meth:`SessionConsole.act
        <nb_hitl.service.console.SessionConsole.act>`, or ``act_all`` for a
        session with several calls: the one pipeline of answers), at most
        ``parallel_answers`` sessions at once.

        Args:
            rows: ``[{"session_id", "agent_id"?}]`` (inbox rows).

        Returns:
            one result per row, in order: ``{"session_id", "ok", "code",
            "text"}``; ``code`` is ``delivered`` or why not (the front
            door's refusal, the outcome's status, ``nothing_to_approve``);
            the same result is shown on the row (the widget's ``outcomes``).
            Never raises for one session's failure.
        """
        limit = asyncio.Semaphore(max(1, self.parallel_answers))

        async def one(row: dict[str, Any]) -> dict[str, Any]:
            sid = str(row["session_id"])
            aid = row.get("agent_id") if isinstance(row.get("agent_id"), str) else None
            async with limit:
                try:
                    console = await self.open(sid, aid, show=False)
                    confirms = [p for p in console.pauses.values() if p.status == "open" and kind_spec(p.kind).confirms]
                    if not confirms:
                        waits = "a question (open it to answer)" if console.pauses else "nothing"
                        return {
                            "ok": False,
                            "code": "nothing_to_approve",
                            "text": f"Not approved: it waits for {waits}.",
                        }
                    asks = [{"action": "approve", "tool_call_id": p.tool_call_id} for p in confirms]
                    got = await (console.act(asks[0]) if len(asks) == 1 else console.act_all(asks))
                    ok = got.get("status") in ("delivered", "approval_recorded")
                    return {"ok": ok, "code": got.get("status"), "text": str(got.get("outcome", ""))[:300]}
                except NbHitlError as exc:
                    return {"ok": False, "code": exc.code, "text": str(exc)[:300]}

        results = await asyncio.gather(*(one(r) for r in rows), return_exceptions=True)
        out = [
            {"session_id": str(r["session_id"]), **res}
            if isinstance(res, dict)
            # one session's failure never stops the others
            else {"session_id": str(r["session_id"]), "ok": False, "code": "error", "text": f"{res!r}"[:300]}
            for r, res in zip(rows, results, strict=True)
        ]
        self.count_rows()  # an approval short of the count changes its row only
        if self._widget is not None:
            with contextlib.suppress(Exception):
                self._widget.outcomes = {**self._widget.outcomes, **{o["session_id"]: o for o in out}}
        return out

    # -- sessions --------------------------------------------------------------
    async def open(self, session_id: str, agent_id: str | None = None, *, show: bool = True) -> SessionConsole:
        """Open a session: its console (transcript + cards), shown under the
        inbox list (unless ``show`` is False: "Approve selected" opens without showing).

        Raises:
            DecisionError: the session is unknown (not in the inbox and no ``agent_id``).
            ServiceError: the service refused.
        """
        console = self.consoles.get(session_id)
        if console is None:
            entry = self.state.entries.get(session_id)
            agent_id = agent_id or (entry.agent_id if entry else self.state.sessions.get(session_id))
            if agent_id is None:
                raise DecisionError(
                    f"Session {session_id[:80]!r} is not in the inbox; give its agent_id.", field="session_id"
                )
            name = entry.agent_name if entry else self.state.agents.get(agent_id, "")
            console = SessionConsole(
                self.http,
                self.ledger,
                agent_id,
                session_id,
                agent_name=name,
                session_name=entry.session_name if entry else "",
                outcome_timeout=self.outcome_timeout,
                on_answered=self._answered,
                stranded_after=self.stranded_after,
                console_id=self.console_id,
                policies=self.policies,
                decided_by=self.decided_by,
            )
            self.consoles[session_id] = console
        await console.refresh()
        if self.notices is not None:  # a session opened before the inbox saw it park
            for pause in console.pauses.values():
                self.notices.opened(pause, session_id=session_id, agent_id=console.agent_id, agent=console.agent_name)
        if show and self.view is not None:
            self.view.show(console.make_widget())
            self._widget.opened = session_id
        if show:
            with contextlib.suppress(RuntimeError):
                console.follow()
        return console

    def _answered(self, session_id: str, outcome: Outcome) -> None:
        if is_not_taken(outcome):
            # the rows look healthy (the service still answers): say so above them
            self.notice = f"The service cannot apply answers now. {outcome.detail}"
        elif outcome.status in ("applied", "answered_elsewhere"):
            self.notice = ""  # a worker took an answer: the service applies answers again
        if outcome.applied:
            self.state.forget(session_id)
        self._push_soon()
        if not self.bus:  # with the bus the service's events carry the change; else list once more, soon
            self._poll_soon()

    def _poll_soon(self) -> None:
        """One listing soon; answers in a burst ("Approve selected") share it."""
        if self._relist is not None and not self._relist.done():
            return

        async def relist() -> None:
            await asyncio.sleep(0.2)
            await self.state.poll()

        with contextlib.suppress(RuntimeError):
            self._relist = asyncio.get_running_loop().create_task(relist())

    async def aclose(self) -> None:
        """Stop polling and following, close the connections, and tell the widgets:
        the inbox says it is closed (``InboxWidget.closed``, its ``live`` line) and
        each opened session's widget is no longer live (:meth:`SessionConsole.end`)."""
        self.closed = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for console in self.consoles.values():
            console.end()
        self._push()
        await self.http.aclose()
