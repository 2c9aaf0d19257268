"""Approvals by several people on the console's road: the ledger is the shared place.

A console given policies (``ServiceClient(..., policies=[Policy("payments",
tools=["write_note"], approvals=2)])``) marks each parked confirmation a
policy matches (:func:`describe`: by the call's tool name and input,
:meth:`~nb_hitl.policy.Policy.match_call`; the service's own tools are not at
hand) and counts its answers with the rules of
:mod:`nb_hitl.answers.approvals` (:func:`~nb_hitl.answers.approvals.count`,
:func:`~nb_hitl.answers.approvals.apply`), as a local session and an AG-UI
server do.

The approvals so far live in the console's record, the
:class:`~nb_hitl.service.ledger.AnswerLedger`'s file: every console (kernel,
process, machine with the same file) that records there counts with the
others. :func:`count_answer` reads the file and appends its line under one
exclusive lock (:meth:`~nb_hitl.service.ledger.AnswerLedger.append_checked`:
the ledger's index first reads the lines appended since it last read, so a
count costs the call's lines, not the file's length), so two people
approving at once are counted one after the other and no line is lost:

* an approval short of the count: a line of phase ``approval`` holding the
  approvals after it (``approvals_held``: ``{"approvals", "edited_input"}``);
  nothing is sent and the call waits for the next person;
* the answer that decides (the last approval, a denial): a line of phase
  ``counted`` naming every approval; then the usual ``sending`` and outcome
  lines of the one answer sent. While that answer is on its way (at most
  :data:`CLAIM_SECONDS`) another console is told who decided; an outcome
  that never reached the tool (``not_applied``...) leaves the approvals
  before it standing; one that did (or may have) starts the count again.

:func:`shared` reads the state of one call from the lines; a console shows it
on its card at every refresh (:func:`put`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentscope.message import ToolCallBlock
from agentscope.tool import AskUser

from ..answers import approvals, front
from ..answers.approvals import needs_more
from ..answers.lifecycle import transition
from ..answers.record import decision_fields
from ..decisions import Decision
from ..errors import AlreadyDecidedError, NbHitlError
from ..kinds import kind_spec
from ..pauses import Pause, build_pause
from ..policy import Policy
from .ledger import NOT_APPLIED, AnswerLedger
from .required import covering

__all__ = [
    "CLAIM_SECONDS",
    "Shared",
    "console_policies",
    "describe",
    "parked_pause",
    "shown_pause",
    "tool_for",
    "shared",
    "put",
    "precount",
    "recorded",
    "count_answer",
    "count_admitted",
]

CLAIM_SECONDS = 120.0
"""How long a deciding count (phase ``counted``) without an outcome line holds
the call: past it the console that counted is taken to be gone (the service
itself answers a call once; a late answer is told ``answered_elsewhere``)."""


def console_policies(policies: Iterable[Policy]) -> tuple[Policy, ...]:
    """The policies a console can apply: those matching by tool name, ``when``
    or ``predicate``.

    Raises:
        TypeError: an item is not a :class:`~nb_hitl.policy.Policy`.
        ValueError: a policy has ``patterns`` or ``mcp_hints``: they need the
            service's tool, which the console does not have.
    """
    out = tuple(policies)
    for policy in out:
        if not isinstance(policy, Policy):
            raise TypeError(f"A console takes Policy objects, got {type(policy).__name__}")
        if policy.patterns or policy.mcp_hints:
            raise ValueError(
                f"Policy {policy.name!r}: the console sees a service's call by its tool name and input only; "
                "patterns and mcp_hints need the tool itself. Use tools, when or predicate."
            )
    return out


def describe(pause: Pause, policies: Sequence[Policy]) -> None:
    """Mark a parked confirmation the first matching policy covers: its
    ``policy`` (the card's chip), the approvals it needs and whether they must
    come from distinct people; the sentence says why. Other pauses are left."""
    if not policies or not kind_spec(pause.kind).confirms:
        return
    matched = covering(policies, pause.tool_name, pause.input if isinstance(pause.input, dict) else {})
    if matched is not None:
        policy, why = matched
        needed = policy.approvals_for(pause.tool_name)
        pause.policy = policy.name
        pause.approvals_needed = needed
        pause.approvals_distinct = policy.distinct
        who = "different people" if policy.distinct else "people"
        said = f"The console's policy {policy.name!r} asks for {needed} approvals by {who} ({why})."
        pause.permission_message = " ".join(x for x in (pause.permission_message, said, policy.message) if x)


def tool_for(name: str) -> Any:
    """AgentScope's tool of that name where the console has it (``AskUser``:
    its schemas make the AskUser card and check its answers), else ``None``."""
    return AskUser() if name == "AskUser" else None


def parked_pause(reply_id: str, block: dict[str, Any], policies: Sequence[Policy]) -> Pause:
    """The pause of a parked tool-call block (``/messages`` JSON), as the
    console's card shows it: :func:`~nb_hitl.pauses.build_pause` with
    AgentScope's tool where the console has it, then :func:`describe`."""
    pause = build_pause(reply_id, ToolCallBlock.model_validate(block), tool_for(str(block.get("name"))))
    describe(pause, policies)
    return pause


def shown_pause(
    ledger: AnswerLedger, session_id: str, reply_id: str, block: dict[str, Any], policies: Sequence[Policy]
) -> Pause:
    """The pause of a parked tool-call block as a console's card shows it
    (:func:`parked_pause`) with, for a call that needs several approvals, the
    approvals so far as the ledger indexed them (:func:`shared`, :func:`put`;
    catch the ledger up first). The inbox's rows and the notifications use it."""
    pause = parked_pause(reply_id, block, policies)
    if needs_more(pause):
        put(pause, shared(ledger, session_id, pause.tool_call_id, now=time.time()))
    return pause


@dataclass
class Shared:
    """The approvals of one call as the ledger's lines say.

    Attributes:
        approvals: ``[{"by", "at", "origin", "action"}]`` so far.
        edited_input: the edited input they approve (a Modify), or ``None``.
        claim: the ``counted`` line of an answer on its way (who decided), or ``None``.
    """

    approvals: list[dict[str, Any]] = field(default_factory=list)
    edited_input: Any = None
    claim: dict[str, Any] | None = None


def shared(ledger: AnswerLedger, session_id: str, tool_call_id: str, *, now: float) -> Shared:
    """Fold the ledger's records of one call (:meth:`~nb_hitl.service.ledger.AnswerLedger.call_records`,
    as indexed: catch the ledger up first to see other consoles' lines) into its state
    (see the module docstring). Costs the call's lines, not the ledger's length.

    Args:
        ledger: the console's ledger.
        session_id, tool_call_id: the service session and the call.
        now: the time (``time.time()`` seconds) a claim's age is judged at.
    """
    state = Shared()
    for rec in ledger.call_records(session_id, tool_call_id):
        phase = rec.get("phase")
        if phase == "approval":
            held = rec.get("approvals_held")
            held = held if isinstance(held, dict) else {}
            state = Shared(list(held.get("approvals") or []), held.get("edited_input"))
        elif phase == "counted":
            state.claim = rec
        elif state.claim is not None and phase in NOT_APPLIED:
            state.claim = None  # that answer never reached the tool: the approvals before it stand
        elif state.claim is not None and phase in ("applied", "unknown"):
            state = Shared()  # it reached the tool (or may have): a call asking again is counted afresh
    if state.claim is not None and now - float(state.claim.get("ts") or 0) > CLAIM_SECONDS:
        state.claim = None
    return state


def put(pause: Pause, state: Shared) -> None:
    """Show ``state`` on ``pause`` (its ``approvals`` and the edit they are for;
    an edit the tool now refuses restarts the count,
    :func:`~nb_hitl.answers.approvals.restore`)."""
    pause.approvals, pause.approved_edit = [], None
    if state.approvals:
        held = {"approvals": state.approvals, "edited_input": state.edited_input}
        approvals.restore(pause, {pause.tool_call_id: held})


def _claimed(claim: dict[str, Any]) -> str:
    what = "denied it" if claim.get("decision") == "deny" else "gave the last approval needed"
    return (
        f"Already decided: {claim.get('decided_by')} {what} at {claim.get('time')}; "
        "that answer is being sent to the service."
    )


def _check(
    ledger: AnswerLedger,
    pause: Pause,
    decision: Decision,
    by: str,
    where: dict[str, Any],
) -> approvals.Count:
    """The call's state as indexed put on ``pause``, then what ``decision`` amounts to."""
    state = shared(ledger, str(where.get("service_session_id")), pause.tool_call_id, now=time.time())
    if state.claim is not None:
        raise AlreadyDecidedError(_claimed(state.claim))
    put(pause, state)
    return approvals.count(pause, decision, by, where)


def precount(
    ledger: AnswerLedger, pause: Pause, decision: Decision, by: str, *, session_id: str, agent_id: str
) -> None:
    """What :func:`count_answer` would refuse, without writing (the items of a
    batch are checked before any is counted); the call's state is put on ``pause``.

    Raises:
        DecisionError, AlreadyDecidedError: as :func:`count_answer`.
    """
    ledger.catch_up()
    _check(ledger, pause, decision, by, ledger.origin(session_id, agent_id))


def recorded(pause: Pause) -> dict[str, Any]:
    """The answer to an approval short of the count, as a local session's:
    ``{"status": "approval_recorded", "approvals", "approvals_needed", "outcome"}``."""
    view = pause.to_view()
    got = [a for a in pause.approvals if a.get("action") in approvals.APPROVING]
    left = pause.approvals_needed - len(got)
    return {
        "status": "approval_recorded",
        "approvals": view["approvals"],
        "approvals_needed": view["approvals_needed"],
        "outcome": (
            f"{len(got)} of {pause.approvals_needed} approvals recorded ({', '.join(str(a['by']) for a in got)}); "
            f"nothing was sent: the call waits for {left} more."
        ),
    }


def count_answer(
    ledger: AnswerLedger,
    pause: Pause,
    decision: Decision,
    by: str,
    *,
    session_id: str,
    agent_id: str,
    agent: str,
) -> approvals.Count:
    """Count one checked answer to a call that needs several approvals, with
    every console recording in ``ledger``'s file (read and written under one
    lock), and put the count on ``pause``.

    Args:
        ledger: the console's record (the shared place).
        pause: the pause (``deciding``).
        decision: the answer, checked by the front door.
        by: who answered (``decided_by``).
        session_id, agent_id, agent: the service session, its agent and its name.

    Returns:
        the :class:`~nb_hitl.answers.approvals.Count` (``final`` is ``None``
        while more approvals are needed; its line was written).

    Raises:
        DecisionError: ``by`` already approved this input (distinct people).
        AlreadyDecidedError: another console's deciding answer is on its way.
        OSError: the ledger cannot be written (nothing was counted).
    """
    got: list[approvals.Count] = []
    where = ledger.origin(session_id, agent_id)

    def build() -> dict[str, Any]:
        count = _check(ledger, pause, decision, by, where)
        got.append(count)
        approvals.apply(pause, count)
        return ledger.line(
            pause,
            decision_fields(count.final or decision),
            service_session_id=session_id,
            agent_id=agent_id,
            agent=agent,
            event_id=None,
            phase="approval" if count.final is None else "counted",
            decided_by=by,
            **approvals.audit_fields(pause, count),
            **({"approvals_held": approvals.saved(pause)} if count.final is None else {}),
        )

    before = (pause.approvals, pause.approved_edit)
    try:
        ledger.append_checked(build)
    except BaseException:
        pause.approvals, pause.approved_edit = before  # nothing was counted
        raise
    return got[0]


def count_admitted(
    ledger: AnswerLedger,
    by: str,
    admitted: list[tuple[int, Pause, Decision]],
    results: list[dict[str, Any]] | None = None,
    *,
    session_id: str,
    agent_id: str,
    agent: str,
) -> list[Decision | None]:
    """Count the admitted answers (``(index, pause, decision)``, pauses
    ``deciding``) to calls that need several approvals (:func:`count_answer`);
    the items of a batch (``results``: its per-item results) are all checked
    (:func:`precount`) before any is counted.

    Returns:
        per item, the decision to send: the item's own, the count's final
        one, or ``None`` for an approval short of the count (its pause is
        ``open`` again).

    Raises:
        BatchRefused: a batch's item was refused (nothing counted).
        DecisionError, AlreadyDecidedError, OSError: as :func:`count_answer`
            (the caller hands the pauses back).
    """
    counting = [(n, p, d) for n, p, d in admitted if approvals.needs_more(p)]
    for n, pause, decision in counting if results is not None else ():
        try:
            precount(ledger, pause, decision, by, session_id=session_id, agent_id=agent_id)
        except NbHitlError as exc:
            assert results is not None
            results[n] = front.item_result(results[n], exc)
            raise front.BatchRefused(f"Nothing was sent: {pause.tool_call_id:.80}: {exc}", results) from None
    finals: dict[int, Decision | None] = {}
    for n, pause, decision in counting:
        got = count_answer(ledger, pause, decision, by, session_id=session_id, agent_id=agent_id, agent=agent)
        finals[n] = got.final
        if got.final is None:
            transition(pause, "open")
    return [finals[n] if n in finals else d for n, _, d in admitted]
