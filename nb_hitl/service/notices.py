"""The console tells people that a service session waits for them: :class:`~nb_hitl.notify.Notify` on the console.

``ServiceClient(..., notify=Notify(hook, to=["alice", "bob"]))`` calls the
hook (:func:`~nb_hitl.notify.deliver`, the payload of
:func:`~nb_hitl.notify.payload_for`: ``session_id`` is the service's
session id, ``thread_id`` and ``link`` are ``null``) when the console first
sees a parked call a person answers: a session that newly parks in the inbox,
or a session opened. Each person who has not approved the call's input yet is
told, once per call and input for every console sharing the ledger: the
first console to see it writes a line (``event: "notified"``, the people
and the input's SHA-256) under the ledger's lock
(:meth:`~nb_hitl.service.ledger.AnswerLedger.append_checked`); the others find it and
send nothing. The sends run as tasks on the running loop, bounded by the
hook's timeout; what became of each is in ``Notify.deliveries`` and the log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ..answers.approvals import input_hash
from ..answers.record import RECORD_VERSION, pause_fields
from ..notify import Notify, deliver, payload_for
from ..pauses import Pause
from .inbox import InboxEntry
from .ledger import NOTIFIED, AnswerLedger

__all__ = ["ConsoleNotices"]


class _ToldBefore(Exception):
    """Another console recorded this notification already (nothing is written)."""


class ConsoleNotices:
    """A console's notifications (see the module docstring).

    Args:
        notify: the hook and the people.
        ledger: the console's ledger (the once-for-all record).

    Attributes:
        tasks: the sends under way.
    """

    def __init__(self, notify: Notify, ledger: AnswerLedger) -> None:
        self.notify = notify
        self.ledger = ledger
        self.seen: set[tuple[str, str, str]] = set()
        self.tasks: set[asyncio.Task[Any]] = set()

    def parked(self, entry: InboxEntry, pauses: Sequence[Pause]) -> None:
        """A session the inbox found newly parked: :meth:`opened` for each of
        its calls' pauses, as its console's card shows them (policy, approvals
        so far: :func:`~nb_hitl.service.approving.shown_pause`)."""
        for pause in pauses:
            self.opened(pause, session_id=entry.session_id, agent_id=entry.agent_id, agent=entry.agent_name)

    def opened(self, pause: Pause, *, session_id: str, agent_id: str, agent: str) -> None:
        """``pause`` (open, its policy and approvals so far on it) waits in the
        service's session ``session_id``: tell each person once. Needs a running loop."""
        if pause.status != "open" or not self.notify.wants(pause):
            return
        loop = asyncio.get_running_loop()
        digest = input_hash(pause)
        if (session_id, pause.tool_call_id, digest) in self.seen:
            return
        self.seen.add((session_id, pause.tool_call_id, digest))
        people = self.notify.waiting_for(pause)
        if not people or not self._first(pause, people, digest, session_id, agent_id, agent):
            return
        for person in people:
            task = loop.create_task(
                deliver(self.notify, pause, person, payload_for(pause, person, session_id=session_id, agent=agent))
            )
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    def _first(self, pause: Pause, people: list[str], digest: str, session_id: str, agent_id: str, agent: str) -> bool:
        def build() -> dict[str, Any]:
            if self.ledger.notified(session_id, pause.tool_call_id, digest):
                raise _ToldBefore
            return {
                "v": RECORD_VERSION,
                "event": NOTIFIED,
                "agent": agent,
                **pause_fields(pause),
                "to": people,
                "input_sha256": digest,
                "origin": self.ledger.origin(session_id, agent_id),
            }

        try:
            self.ledger.append_checked(build)
        except _ToldBefore:
            return False
        return True

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for the sends under way (tests, notebooks)."""
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=timeout)
