"""Tell a person that a pause waits for them: an optional hook, called once.

``Session(agent, notify=Notify(hook, to="bob"))`` (or, for a served agent,
``AguiServer(..., session_kwargs={"notify": Notify(...)})``) calls ``hook``
once for each person in ``to`` when a pause opens that they may answer:

* ``hook`` is an ``http(s)`` URL, which gets the payload as a JSON ``POST``
  (httpx; a status of 400 or more is a failure), or a Python callable
  ``hook(payload)`` (a coroutine function is awaited on the session's loop, a
  plain function runs in a worker thread);
* the session calls it from one place, :meth:`Notices.opened`, where a pause
  becomes open: when the pause is added (a reply that parks, a restored or
  adopted reply, an MCP server's question) and when an M-of-N call goes back
  to ``open`` with an input nobody was told of yet (someone modified it: the
  count and any link start again). "Once" is kept per ``tool_call`` id and
  input in the agent's state (``middle_context["nb_hitl.notified"]``, written
  to the checkpoint with the pause), so a page reload, a ``resume()`` or a
  restore from the checkpoint does not send it again; a kernel that dies
  after the send and before the pause's checkpoint is written may send it
  again after a restore;
* over AG-UI each person's payload carries a one-time approval link for them
  (:mod:`nb_hitl.agui.links`, for confirmations), and the thread id; a local
  session sends no link;
* a hook never holds up the pause or the kernel: it runs as a task on the
  session's loop, bounded by ``timeout`` seconds (a plain function that
  overruns keeps its worker thread, but nobody waits for it). Whatever
  happens is kept in :attr:`Notify.deliveries`; a failure (an exception, an
  HTTP error, a timeout) is also logged as a warning on the ``nb_hitl.notify``
  logger and written as a note in the reply's transcript, saying whom it did
  not reach and why (the hook's URL is shown as its scheme and host only).

The payload (version 1, JSON)::

    {"v": 1, "event": "pause_opened",
     "to": "bob",                         # who may answer (the link answers as this person)
     "session_id", "thread_id",           # the Session (checkpoint name); the AG-UI thread or null
     "reply_id", "tool_call_id", "tool_name", "kind", "agent", "policy",
     "input_summary",                     # the input as the card shows it, at most 500 characters
     "approvals": {"needed": 2, "by": ["alice"]},   # approvals so far (M-of-N)
     "link",                              # the person's one-time approval link, or null
     "opened_at", "expires_at"}           # ISO 8601 UTC; expires_at null when the pause has no end
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .answers.approvals import APPROVING, input_hash, person_key
from .kinds import kind_spec
from .labels import pause_label
from .pauses import Pause

if TYPE_CHECKING:
    from .session._core import SessionCore
    from .session._run import ReplyRun

__all__ = [
    "Notify",
    "Notices",
    "Delivery",
    "payload_for",
    "deliver",
    "failure_line",
    "NOTIFIED_KEY",
    "PAYLOAD_VERSION",
    "SUMMARY_CHARS",
]

log = logging.getLogger("nb_hitl.notify")

NOTIFIED_KEY = "nb_hitl.notified"
"""Key in ``AgentState.middle_context``: ``{tool_call_id: input SHA-256}``,
the pauses whose notifications were sent (for that input)."""

PAYLOAD_VERSION = 1
"""The version of the payload (``"v"``)."""

SUMMARY_CHARS = 500
"""The most characters of the call's input a payload carries."""

KEEP = 256
"""Notified calls kept in the agent's state before those no longer parked are dropped."""


@dataclass(frozen=True)
class Delivery:
    """What became of one notification.

    Attributes:
        to: the person it was for.
        tool_call_id: the pause's call.
        ok: the hook took it (a callable returned, the URL answered below 400).
        detail: ``"HTTP 204"``, ``"called"``, or why it failed.
        at: when it ended (``time.time()`` seconds).
        link: whether the payload carried an approval link.
    """

    to: str
    tool_call_id: str
    ok: bool
    detail: str
    at: float
    link: bool


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


class Notify:
    """A hook told when a pause opens that one of ``to`` may answer.

    Args:
        hook: an ``http://`` or ``https://`` URL to ``POST`` the payload to
            (JSON), or a callable ``hook(payload: dict)`` (sync or async).
        to: the person, or people, to tell (names as the audit's
            ``decided_by``: an AG-UI link answers as that name); one call
            per person and pause.
        when: ``(pause) -> bool``, which pauses to tell of (default: every
            pause a person answers).
        timeout: seconds a call may take (the POST, or the callable) before
            it counts as failed.
        headers: extra HTTP headers for the POST (e.g. a chat service's
            token); never put in a message.

    Attributes:
        deliveries: every :class:`Delivery`, in the order they ended.

    Raises:
        TypeError: ``hook`` is neither a URL string nor callable.
        ValueError: the URL is not ``http(s)`` with a host; ``to`` names no
            one; ``timeout`` is not positive.
    """

    def __init__(
        self,
        hook: str | Callable[[dict[str, Any]], Any],
        *,
        to: str | Iterable[str],
        when: Callable[[Pause], bool] | None = None,
        timeout: float = 5.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        if isinstance(hook, str):
            parts = urlsplit(hook)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"A notification URL is http(s) with a host, got {parts.scheme or 'no'} scheme.")
        elif not callable(hook):
            raise TypeError("hook must be a URL (str) or a callable taking the payload")
        names = [to] if isinstance(to, str) else list(to)
        if not names or not all(isinstance(n, str) and n.strip() for n in names):
            raise ValueError("to names the people to tell (non-empty strings).")
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.hook = hook
        self.to = tuple(dict.fromkeys(n.strip() for n in names))
        self.when = when
        self.timeout = float(timeout)
        self.headers = dict(headers or {})
        self.deliveries: list[Delivery] = []

    @property
    def target(self) -> str:
        """The hook as messages name it: ``POST <scheme>://<host>`` (no path,
        query or credentials), or the callable's name."""
        if isinstance(self.hook, str):
            parts = urlsplit(self.hook)
            port = f":{parts.port}" if parts.port else ""
            return f"POST {parts.scheme}://{parts.hostname}{port}"
        return getattr(self.hook, "__qualname__", None) or type(self.hook).__name__

    def wants(self, pause: Pause) -> bool:
        """Whether ``pause`` is one to tell of (``when``; a raising ``when`` is logged, and tells)."""
        if self.when is None:
            return True
        try:
            return bool(self.when(pause))
        except Exception:
            log.warning("the notification's when= raised for %s; notifying", pause.tool_call_id, exc_info=True)
            return True

    def waiting_for(self, pause: Pause) -> list[str]:
        """The people of :attr:`to` who did not approve ``pause``'s input yet."""
        approved = {person_key(str(a.get("by"))) for a in pause.approvals if a.get("action") in APPROVING}
        return [person for person in self.to if person_key(person) not in approved]

    async def send(self, payload: dict[str, Any]) -> str:
        """Call the hook once with ``payload``, within :attr:`timeout`.

        Returns:
            ``"HTTP <status>"`` or ``"called"``.

        Raises:
            TimeoutError: it took longer than :attr:`timeout`.
            RuntimeError: the URL answered with a status of 400 or more.
            Exception: whatever the callable or httpx raised.
        """
        return await asyncio.wait_for(self._call(payload), self.timeout)

    async def _call(self, payload: dict[str, Any]) -> str:
        if isinstance(self.hook, str):
            import httpx

            async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=False) as client:
                response = await client.post(self.hook, json=payload, headers=self.headers)
            if response.status_code >= 400:
                raise RuntimeError(f"HTTP {response.status_code} from {self.target}")
            return f"HTTP {response.status_code}"
        hook = self.hook
        if inspect.iscoroutinefunction(hook):
            await hook(payload)
        else:
            got = await asyncio.to_thread(hook, payload)
            if inspect.isawaitable(got):
                await got
        return "called"


class Notices:
    """A session's notifications (``session.notices``): the one place a
    pause's opening is told to the people of a :class:`Notify`.

    Args:
        session: the session (its agent's state keeps what was sent).
        notify: the hook and the people.

    Attributes:
        links: set by the AG-UI server for a thread's session:
            ``(pause, person) -> {"thread_id", "link", "expires_at"}``
            (what the payload says beyond the session's own view).
        tasks: the sends under way.
    """

    def __init__(self, session: SessionCore, notify: Notify) -> None:
        self.s = session
        self.notify = notify
        self.links: Callable[[Pause, str], dict[str, Any]] | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    def opened(self, run: ReplyRun, pause: Pause) -> None:
        """``pause`` is open: tell each person who may answer it, once per
        call and input (see the module docstring). Never raises for a hook;
        the sends run as tasks on the running loop."""
        if pause.status != "open" or not self.notify.wants(pause):
            return
        loop = asyncio.get_running_loop()  # (before anything is marked as told)
        state = self.s.team.agent(pause.agent).state.middle_context
        kept = state.get(NOTIFIED_KEY)
        if not isinstance(kept, dict):
            kept = state[NOTIFIED_KEY] = {}
        digest = input_hash(pause)
        if kept.get(pause.tool_call_id) == digest:
            return  # told already (a redraw, a resume, a restore)
        if len(kept) >= KEEP:  # forget calls that no longer wait
            parked = {tc.id for tc in self.s.parked_tool_calls()}
            for old in [k for k in kept if k not in parked]:
                del kept[old]
        kept[pause.tool_call_id] = digest
        for person in self.notify.waiting_for(pause):
            payload = self.payload(pause, person)
            task = loop.create_task(self._deliver(run, pause, person, payload))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    def payload(self, pause: Pause, person: str) -> dict[str, Any]:
        """The payload telling ``person`` of ``pause`` (see the module docstring)."""
        where: dict[str, Any] = {"thread_id": None, "link": None, "expires_at": pause.deadline}
        if self.links is not None:
            try:
                where.update(self.links(pause, person))
            except Exception as exc:  # noqa: BLE001 - the notification still goes, without a link (logged)
                log.warning("no approval link for %s (%s): %s", person, pause.tool_call_id, exc)
                where["link"] = None
        return payload_for(pause, person, session_id=self.s.session_id, agent=pause.agent or self.s.agent.name, **where)

    async def _deliver(self, run: ReplyRun, pause: Pause, person: str, payload: dict[str, Any]) -> None:
        done = await deliver(self.notify, pause, person, payload)
        if done.ok:
            return
        try:
            run.transcript.note(failure_line(pause, done))
            self.s._stream(run, urgent=True)
        except Exception:  # the page may be gone; the log has it
            log.debug("could not note a failed notification", exc_info=True)

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for the sends under way (tests, notebooks); each is bounded
        by the hook's timeout anyway."""
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=timeout)


def payload_for(
    pause: Pause,
    person: str,
    *,
    session_id: str,
    agent: str,
    thread_id: str | None = None,
    link: str | None = None,
    expires_at: float | None = None,
) -> dict[str, Any]:
    """The payload telling ``person`` of ``pause`` (see the module docstring).

    Args:
        session_id: the Session's name, or the service's session id (the console).
        agent: the agent that asked.
        thread_id, link, expires_at: the AG-UI thread, the person's approval
            link and when the pause ends (``time.time()`` seconds), if any.
    """
    # a card that draws its input otherwise (AskUser's questions) has none: say what it asks
    text = pause.to_view()["input_text"] or kind_spec(pause.kind).interrupt_message(pause)
    summary = text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"
    return {
        "v": PAYLOAD_VERSION,
        "event": "pause_opened",
        "to": person,
        "session_id": session_id,
        "thread_id": thread_id,
        "reply_id": pause.reply_id,
        "tool_call_id": pause.tool_call_id,
        "tool_name": pause.tool_name,
        "kind": pause.kind,
        "agent": agent,
        "policy": pause.policy,
        "input_summary": summary,
        "approvals": {
            "needed": pause.approvals_needed,
            "by": [str(a["by"]) for a in pause.approvals if a.get("action") in APPROVING],
        },
        "link": link,
        "opened_at": _iso(pause.created_at),
        "expires_at": _iso(expires_at),
    }


async def deliver(notify: Notify, pause: Pause, person: str, payload: dict[str, Any]) -> Delivery:
    """Send one payload through ``notify`` (never raises for the hook): the
    :class:`Delivery` is kept in ``notify.deliveries`` and logged (a failure
    as a warning, :func:`failure_line`)."""
    try:
        detail, ok = await notify.send(payload), True
    except Exception as exc:  # noqa: BLE001 - a hook's failure is reported, never raised
        ok = False
        if isinstance(exc, TimeoutError) or type(exc).__name__.endswith("Timeout"):  # ours, or httpx's
            detail = f"{notify.target} did not answer within {notify.timeout:g} s"
        else:
            detail = f"{type(exc).__name__}: {exc}"
    done = Delivery(person, pause.tool_call_id, ok, detail, time.time(), bool(payload["link"]))
    notify.deliveries.append(done)
    if ok:
        log.info("notified %s of %s (%s): %s", person, pause.tool_name, pause.tool_call_id, detail)
    else:
        log.warning("%s", failure_line(pause, done))
    return done


def failure_line(pause: Pause, done: Delivery) -> str:
    """The sentence saying whom a notification did not reach and why."""
    return f"Could not notify {done.to} that {pause_label(pause)} waits: {done.detail}."
