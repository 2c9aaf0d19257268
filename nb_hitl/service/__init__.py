"""The notebook as the HITL console of AgentScope's own service.

``ServiceClient(url, user_id).inbox()`` lists every parked session of the
user's agents (live, across workers); opening one shows its transcript and
its pauses with nb_hitl's cards; answers go out as AgentScope's own events
and are judged by what the service does next.

Modules: ``http`` (calls), ``inbox`` (rows), ``events`` (every session's
events from the service's Redis bus, one connection), ``outcome`` (verdicts from the
stream), ``ledger`` (answers remembered), ``transcript`` (messages as entries),
``console`` (one session), ``answering`` (its answers), ``approving``
(approvals by several people, counted through the ledger), ``told`` (the
service's middleware telling the model who denied a call and why), ``required``
(the service's own policy: a call short of its approvals is not run),
``client`` (the whole), ``app`` / ``embedded`` (a local service to try it),
``script`` (what the offline model says).
"""

from __future__ import annotations

from .client import ServiceClient
from .console import AlreadyApprovedError, OutcomeError, SessionConsole
from .events import BusWatch
from .http import ServiceError, ServiceHTTP
from .inbox import InboxEntry, InboxState
from .ledger import AnswerLedger
from .outcome import Outcome
from .say import MessageNotTakenError

__all__ = [
    "MessageNotTakenError",
    "ServiceClient",
    "SessionConsole",
    "AlreadyApprovedError",
    "OutcomeError",
    "ServiceHTTP",
    "ServiceError",
    "InboxEntry",
    "InboxState",
    "AnswerLedger",
    "Outcome",
    "BusWatch",
]
