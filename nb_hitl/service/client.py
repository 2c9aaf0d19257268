"""``ServiceClient``: the notebook as the HITL console of AgentScope's service.

::

    from nb_hitl.service import ServiceClient
    svc = ServiceClient("http://127.0.0.1:8000", user_id="ana")
    inbox = svc.inbox()        # every parked session across agents, live

The client ties the pieces together: :class:`~nb_hitl.service.inbox.InboxState`
polls the service (every ``poll_interval`` s), the
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
from pathlib import Path
from typing import Any

import httpx

from ..errors import DecisionError
from .console import SessionConsole, console_name
from .http import ServiceHTTP
from .inbox import InboxEntry, InboxState
from .ledger import AnswerLedger
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

    Attributes:
        http: the :class:`~nb_hitl.service.http.ServiceHTTP`.
        state: the :class:`~nb_hitl.service.inbox.InboxState`.
        ledger: the :class:`~nb_hitl.service.ledger.AnswerLedger`.
        consoles: ``{session_id: SessionConsole}`` opened so far.
        console_id: this console's name in the answers it sends (another
            console reading them says where they came from).
        notice: what the inbox says above its rows about the service itself
            (its workers not taking answers), or ``""``.
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
        self.view: Any = None
        self._widget: Any = None
        self._poller: asyncio.Task[None] | None = None
        self.state.on_change(lambda _s: self._push())

    @property
    def user_id(self) -> str:
        """The service user."""
        return self.http.user_id

    # -- the inbox ------------------------------------------------------------
    def inbox(self) -> Any:
        """The inbox widget (an ``InboxView``: list + opened session), polling live.

        Call from a notebook cell (needs the kernel's running loop).
        """
        if self.view is None:
            from ..widgets.inbox import InboxView, InboxWidget

            self._widget = InboxWidget(handler=self._on_page, service=self.http.base_url, user_id=self.user_id)
            self.view = InboxView(self._widget)
            self._push()
        self.start()
        return self.view

    def start(self) -> asyncio.Task[None]:
        """Start polling on the running loop (idempotent); the task."""
        if self._poller is None or self._poller.done():
            loop = asyncio.get_event_loop()
            self._poller = loop.create_task(self.state.run(self.poll_interval))
        return self._poller

    async def refresh(self) -> list[dict[str, Any]]:
        """Poll once now; the rows (``InboxEntry.to_view()``)."""
        await self.state.poll()
        self._push()
        return self.state.views()

    def entries(self) -> list[dict[str, Any]]:
        """The rows as last polled."""
        return self.state.views()

    def _flag_entry(self, entry: InboxEntry) -> None:
        for call in entry.calls:
            first = self.ledger.approved(entry.session_id, str(call.get("id")))
            if first is not None and entry.status == "awaiting_permission":
                entry.flags[str(call.get("id"))] = f"{call.get('name')} was approved here at {first.get('time')}"

    def _push(self) -> None:
        w = self._widget
        if w is None:
            return
        try:
            with w.hold_sync():
                w.entries = self.state.views()
                w.error = self.state.error or self.notice
                w.updated = time.time()
        except Exception:  # a closed comm never stops the inbox
            log.debug("could not update the inbox widget", exc_info=True)

    def _on_page(self, message: dict[str, Any]) -> Any:
        action = message.get("action")
        if action == "refresh":
            return self._page_refresh()
        if action == "open":
            sid = message.get("session_id")
            if not isinstance(sid, str) or not sid:
                raise DecisionError("Which session? The message names no session_id.", field="session_id")
            return self._page_open(sid, message.get("agent_id"))
        raise DecisionError(f"The inbox does not know the action {str(action)[:40]!r}.", field="action")

    async def _page_refresh(self) -> dict[str, Any]:
        await self.refresh()
        return {"entries": len(self.state.entries)}

    async def _page_open(self, session_id: str, agent_id: Any) -> dict[str, Any]:
        console = await self.open(session_id, agent_id if isinstance(agent_id, str) else None)
        return {"opened": console.session_id, "pauses": len(console.pauses)}

    # -- sessions --------------------------------------------------------------
    async def open(self, session_id: str, agent_id: str | None = None) -> SessionConsole:
        """Open a session: its console (transcript + cards), shown under the inbox list.

        Raises:
            DecisionError: the session is unknown (not in the inbox and no ``agent_id``).
            ServiceError: the service refused.
        """
        console = self.consoles.get(session_id)
        if console is None:
            entry = self.state.entries.get(session_id)
            agent_id = agent_id or (entry.agent_id if entry else None)
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
                outcome_timeout=self.outcome_timeout,
                on_answered=self._answered,
                stranded_after=self.stranded_after,
                console_id=self.console_id,
            )
            self.consoles[session_id] = console
        await console.refresh()
        if self.view is not None:
            self.view.show(console.make_widget())
            self._widget.opened = session_id
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
        self._push()
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(self.state.poll())

    async def aclose(self) -> None:
        """Stop polling and following, close the connections."""
        if self._poller is not None:
            self._poller.cancel()
        for console in self.consoles.values():
            console.close()
        await self.http.aclose()
