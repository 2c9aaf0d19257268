"""M-of-N approvals: a confirmation that needs more than one person.

A :class:`~nb_hitl.policy.Policy` with ``approvals=N`` (``N > 1``) sets
``pause.approvals_needed``; every answer to such a pause still comes through
the one front door (:mod:`nb_hitl.answers.front`) and the Desk's checks, and
then :func:`count` says what it amounts to:

* an approval that is not the last: recorded on the pause
  (``pause.approvals``) and audited, and the pause goes back to ``open``
  (``deciding -> open``) for the next person; nothing reaches the agent;
* the last approval: the call's decision (the approved input runs once);
* a denial: a veto, whatever was approved before; the model reads who denied
  the call and why;
* a modify: the new input is what everyone approves now; it counts as the
  modifier's approval of the new input and the count starts again from it
  (the last approval then carries the edited call);
* a second approval by the same person (``decided_by``, compared by
  :func:`person_key`: ``Alice`` and ``alice `` are one person) while
  ``pause.approvals_distinct``: refused (:class:`~nb_hitl.errors.DecisionError`).

The session's deadline covers the whole (the pause keeps its ``deadline``
while it waits for the next approval). :func:`count` is pure: the Desk
audits first and applies the :class:`Count` after (:func:`apply`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from ..decisions import decide
from ..errors import DecisionError
from ..kinds._base import Decision
from ..pauses import Pause

__all__ = [
    "Count",
    "count",
    "apply",
    "audit_fields",
    "needs_more",
    "saved",
    "restore",
    "input_hash",
    "carried",
    "person_key",
]

APPROVING = frozenset({"approve", "modify"})
"""Actions that count as an approval (a modify approves its new input)."""


@dataclass(frozen=True)
class Count:
    """What one answer to a pause amounts to.

    Attributes:
        final: the decision the agent gets, or ``None`` while more approvals
            are needed.
        approvals: the pause's approvals after this answer
            (``[{"by", "at", "origin", "action"}]``).
        edit: the modify decision everyone now approves (its edited call),
            or ``None`` for the call as the model sent it.
        needed: the approvals the call needs.
    """

    final: Decision | None
    approvals: list[dict[str, Any]]
    edit: Decision | None
    needed: int


def input_hash(pause: Pause) -> str:
    """The SHA-256 (hex) of the input a person approves now: the card's
    ``input_text`` (the edited input once someone modified the call). An
    approval link is bound to it; a notification is sent once per call and hash."""
    return hashlib.sha256(pause.to_view()["input_text"].encode("utf-8")).hexdigest()


def person_key(by: str) -> str:
    """The form in which two names are compared to tell whether they are the same
    person: surrounding whitespace stripped, case folded (``" Alice"`` and ``"alice"``
    are one person). Only comparisons use it; the name is kept as given for the
    card and the audit."""
    return str(by).strip().casefold()


def needs_more(pause: Pause) -> bool:
    """Whether ``pause`` needs more than one approval (only a policy's
    confirmation sets ``approvals_needed``, see
    :func:`~nb_hitl.policy.describe_policy_pause`)."""
    return pause.approvals_needed > 1


def _names(approvals: list[dict[str, Any]]) -> str:
    return ", ".join(str(a["by"]) for a in approvals)


def count(pause: Pause, decision: Decision, by: str, origin: dict[str, Any], *, now: float | None = None) -> Count:
    """What ``decision`` by ``by`` amounts to on ``pause`` (see the module docstring).

    Args:
        pause: the pause (``deciding``), with its ``approvals`` so far.
        decision: the checked answer.
        by: who answered (the audit's ``decided_by``).
        origin: where the answer came from (the audit's ``origin``).
        now: the time of the answer (``time.time()`` seconds).

    Returns:
        a :class:`Count`.

    Raises:
        DecisionError: ``by`` already approved this input and approvals must
            come from distinct people.
    """
    needed = pause.approvals_needed
    edit = pause.approved_edit
    if not needs_more(pause):
        return Count(decision, list(pause.approvals), None, needed)
    entry = {"by": by, "at": time.time() if now is None else now, "origin": origin, "action": decision.action}
    if decision.action not in APPROVING:
        if decision.action == "deny" and decision.cause == "person":
            said = f", saying: {decision.reason}" if decision.reason else "."
            before = f" (approved before by {_names(pause.approvals)})" if pause.approvals else ""
            note = f"{by} denied your call to {pause.tool_name}, which needed {needed} approvals{before}{said}"
            decision = dataclasses.replace(decision, note=note, note_replaces=True)
        return Count(decision, [*pause.approvals, entry], edit, needed)
    if decision.action == "modify":  # everyone approves the same input: the count starts again
        approvals = [entry]
        edit = decision
    else:
        if pause.approvals_distinct and any(person_key(a["by"]) == person_key(by) for a in pause.approvals):
            raise DecisionError(
                f"{by} already approved this call; it needs {needed} approvals from distinct people "
                f"({len(pause.approvals)} of {needed} so far: {_names(pause.approvals)}).",
                field="action",
            )
        approvals = [*pause.approvals, entry]
    if len(approvals) < needed:
        return Count(None, approvals, edit, needed)
    final = edit if edit is not None and decision.action == "approve" else decision
    return Count(final, approvals, edit, needed)


def apply(pause: Pause, got: Count) -> None:
    """Put a :class:`Count` on the pause (after its audit line was written)."""
    pause.approvals = got.approvals
    pause.approved_edit = got.edit


def audit_fields(pause: Pause, got: Count) -> dict[str, Any]:
    """What an audit line says of the approvals (nothing for a one-person call):
    ``approval: {"count", "needed"}`` and, on the final decision, every
    ``approvals`` entry."""
    if not needs_more(pause):
        return {}
    approving = [a for a in got.approvals if a["action"] in APPROVING]
    out: dict[str, Any] = {"approval": {"count": len(approving), "needed": got.needed}}
    if got.final is not None:
        out["approvals"] = got.approvals
    return out


def carried(pause: Pause, by: str, *, now: float | None = None) -> list[dict[str, Any]]:
    """The approvals a deciding approval of ``pause`` carries to the far side:
    ``[{"decided_by", "at"}]``, those counted on the pause (:func:`apply`
    put them there), or ``by`` alone (at ``now``) for a call without a count."""
    got = [a for a in pause.approvals if a.get("action") in APPROVING] if needs_more(pause) else []
    if not got:
        return [{"decided_by": by, "at": time.time() if now is None else now}]
    return [{"decided_by": str(a["by"]), "at": a["at"]} for a in got]


def saved(pause: Pause) -> dict[str, Any]:
    """The approvals of ``pause`` as JSON for the agent's state
    (:data:`~nb_hitl._agentscope.APPROVALS_KEY`)."""
    edited = pause.approved_input
    return {"approvals": [dict(a) for a in pause.approvals], "edited_input": edited}


def restore(pause: Pause, saved: Any) -> None:
    """Put saved approvals (``{tool_call_id: record}``, the agent state's
    :data:`~nb_hitl._agentscope.APPROVALS_KEY`) back on a rebuilt pause (after a restart); an
    edit is decided again through the kind (:func:`~nb_hitl.decisions.decide`).
    A record that does not fit (or an edit the tool now refuses) restores
    nothing: the count starts again, never the other way round."""
    record = saved.get(pause.tool_call_id) if isinstance(saved, dict) else None
    if not needs_more(pause) or not isinstance(record, dict):
        return
    approvals = record.get("approvals")
    if not isinstance(approvals, list) or not all(
        isinstance(a, dict) and isinstance(a.get("by"), str) and isinstance(a.get("at"), int | float) for a in approvals
    ):
        return
    edit = None
    if isinstance(record.get("edited_input"), dict):
        message = {"action": "modify", "tool_call_id": pause.tool_call_id, "input": json.dumps(record["edited_input"])}
        try:
            edit = decide(pause, message)
        except DecisionError:
            return
    pause.approvals = [dict(a) for a in approvals]
    pause.approved_edit = edit
