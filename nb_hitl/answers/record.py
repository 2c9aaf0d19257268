"""The one audit record of an answer, whichever road it took.

Every line the local :class:`~nb_hitl.session.Session` (and so the AG-UI
server, which drives one) and the service console append to an
:class:`~nb_hitl.store.AuditLog` is built here, so a log mixing roads reads
the same way. A record (version :data:`RECORD_VERSION`)::

    {"v": 2,
     "time", "ts", "who",                 # added by AuditLog.append
     "event",                             # checked (a permission check) | answered (an answer) | notified
                                          # (people told a pause waits); absent: older lines
     "session_id", "agent",               # the nb_hitl Session (its checkpoint name) and its agent
     "reply_id", "tool_call_id", "tool_name", "kind", "original_input", "policy",
     "opened_at",                         # when the pause opened (time.time()); "ts" is when it was answered
     "decision",                          # allow | deny | ask (checked); approve | deny | modify | answer | ...
                                          # | timeout | cancelled (answered); nb_hitl's own lines about a
                                          # call (NOT_ANSWERS): discarded | expired | id_reused | input_changed
                                          # | file_changed, with "reason" saying what happened
     "decided_how",                       # rule | mode | policy | shell_rules | read_only | tool_check
                                          # (checked, nb_hitl.audit.checked.decided_how) | person | deadline
     "rule", "mode", "message",           # checked: the rule that decided, the permission mode, what the engine said
     "decided_by",                        # who answered (OS user, AG-UI principal, console user, "deadline")
     "origin": {"road": "kernel" | "agui" | "service",
                "thread_id", "run_id",            # AG-UI
                "service_url", "service_session_id", "agent_id"},   # AgentScope's service
     "edited_input", "confirmed", "accepted_rules", "answers", "output", "content", "reason",
     "file_shown",                        # an approval of a file-editing call: the file whose change the
                                          # person was shown for the input that runs (absent: none shown)
     "told",                              # what the model read, when the road knows it
     "approval": {"count", "needed"},     # a call that needs several approvals (M-of-N), and on its
     "approvals": [{"by", "at", "origin", "action"}],   # final decision, every approval
     "prev", "hmac"}                      # the chain (nb_hitl.audit.chain), added by AuditLog.append

Version 1 lines (written before the version field existed) have no ``v``
and no ``origin``: :func:`road_of` reads them as the kernel's.
"""

from __future__ import annotations

from typing import Any

from ..decisions import Decision
from ..pauses import Pause

__all__ = [
    "RECORD_VERSION",
    "ROADS",
    "EVENTS",
    "NOT_ANSWERS",
    "origin",
    "pause_fields",
    "decision_fields",
    "road_of",
    "event_of",
]

RECORD_VERSION = 2
"""The version of the audit record written today (``"v"``)."""

ROADS = ("kernel", "agui", "service")
"""Where an answer comes from: a click or ``act`` in this kernel, an AG-UI
resume at the served agent, the console of AgentScope's service."""


def origin(road: str, **ids: Any) -> dict[str, Any]:
    """The ``origin`` of a record: ``{"road": road, **ids}`` without ``None`` ids.

    Raises:
        ValueError: ``road`` is not one of :data:`ROADS`.
    """
    if road not in ROADS:
        raise ValueError(f"road must be one of {ROADS}, got {road!r}")
    return {"road": road, **{k: v for k, v in ids.items() if v is not None}}


EVENTS = ("checked", "answered", "notified")
"""What a record is about: a permission check (every tool call), an answer
(a person, a deadline, or nb_hitl closing a pause: ``discarded``...), the
people told that a pause waits (the service console's notifications, sent
once for every console sharing the ledger)."""


NOT_ANSWERS = frozenset({"discarded", "expired", "id_reused", "input_changed", "file_changed"})
"""The ``decision`` of an ``answered`` line nb_hitl writes about a call that is nobody's answer: a
decision the reply never applied, a pause closed with no answer (the reply interrupted; an MCP
server's request that could not be answered), an id the model reused, an
approved call not run because its input or its file changed after the approval
(``nb_hitl.session._not_run``)."""


def event_of(record: dict[str, Any]) -> str:
    """The ``event`` of a record; ``"answered"`` for lines written before
    permission checks were recorded (every line was about an answer then)."""
    got = record.get("event")
    return str(got) if got in EVENTS else "answered"


KERNEL = origin("kernel")
"""The origin of a click or ``session.act`` in this kernel."""


def pause_fields(pause: Pause) -> dict[str, Any]:
    """What a record says of the pause: ids, tool, kind, the input the model
    sent (as shown), the policy that asked and, in a team, the agent that asked."""
    return {
        "reply_id": pause.reply_id,
        "tool_call_id": pause.tool_call_id,
        "tool_name": pause.tool_name,
        "kind": pause.kind,
        "original_input": pause.input if pause.input is not None else pause.tool_call.input,
        "policy": pause.policy,
        "opened_at": pause.created_at,
        **({"agent": pause.agent} if pause.agent else {}),
    }


def decision_fields(decision: Decision) -> dict[str, Any]:
    """What a record says of the answer: the action (or, for a default nobody
    chose, its cause: ``timeout``, ``cancelled``), the edit, the rules, the
    answers or result, and a person's reason."""
    summary = decision.summary()
    return {
        "decision": decision.action if decision.cause == "person" else decision.cause,
        "decided_how": "deadline" if decision.cause == "timeout" else "person",
        "edited_input": decision.edited_input,
        "confirmed": summary.get("confirmed"),
        "accepted_rules": summary.get("accepted_rules", []),
        "answers": summary.get("answers"),
        "output": summary.get("output"),
        **({"content": summary["content"]} if "content" in summary else {}),
        **({"reason": decision.reason} if decision.reason else {}),
        **({"file_shown": decision.file_shown} if decision.file_shown is not None else {}),
    }


def road_of(record: dict[str, Any]) -> str:
    """The road a record's answer came by (``"kernel"`` for version 1 lines)."""
    got = record.get("origin")
    return str(got.get("road")) if isinstance(got, dict) and got.get("road") in ROADS else "kernel"
