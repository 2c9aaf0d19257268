"""What a carrier reports back once it tried to deliver a checked answer.

A *carrier* is where an admitted answer goes: the local agent (the
Session's queue and resume), an AG-UI resume run, the HTTP call to
AgentScope's service. Whatever the carrier, the person reads one of these
outcomes on the card, and each is true:

* ``applied``: this answer produced the call's result (the tool ran, was
  denied, or the external result entered the history). Never inferred from
  "the call no longer waits".
* ``answered_elsewhere``: another answer (another console, another process,
  a person in another place) settled the call first; ``by`` and ``at`` say
  who and when when the carrier can know.
* ``not_applied``: the carrier could not deliver it, or the far side refused
  it; the call still waits, ``detail`` says why and what to do.
* ``unknown``: no verdict in the time allowed; ``detail`` says what is known
  and what to check. A carrier that cannot tell keeps the call answerable
  only when a second answer cannot run the tool twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Outcome", "OutcomeStatus", "answered_elsewhere_text"]

OutcomeStatus = Literal["applied", "answered_elsewhere", "not_applied", "unknown"]


@dataclass
class Outcome:
    """What became of one answer (or of one batch sent together).

    Attributes:
        status: see the module docstring.
        detail: a sentence for the card (what happened, what to do).
        states: ``{tool_call_id: result state}`` the carrier saw
            (``success``, ``denied``, ``running`` ...).
        seconds: time from sending to the verdict.
        by: who answered, for ``answered_elsewhere`` (when known).
        at: when (ISO-8601 UTC), for ``answered_elsewhere`` (when known).
        told: the calls whose note (who denied and why) the model read, as
            the carrier saw it (the service console's denials).
        not_run: ``{tool_call_id: why}`` of approved calls the far side
            refused to run (the service's own policy).
    """

    status: OutcomeStatus
    detail: str
    states: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    by: str | None = None
    at: str | None = None
    told: set[str] = field(default_factory=set)
    not_run: dict[str, str] = field(default_factory=dict)

    @property
    def applied(self) -> bool:
        """``status == "applied"``."""
        return self.status == "applied"


def answered_elsewhere_text(how: str) -> str:
    """The one sentence a person reads when another answer settled the call:
    ``"Answered elsewhere: <how>"`` (``how``: by whom, when and what became
    of this answer, as far as the road that carried it knows)."""
    return f"Answered elsewhere: {how}"


RESULT_WORDS = {
    "running": "started",
    "success": "ran",
    "error": "failed",
    "denied": "denied",
    "interrupted": "interrupted",
}
"""What a person reads of a call's result state (AgentScope's ``ToolResultState`` values; ``running``:
the result has started, the tool runs)."""


def applied_text(states: dict[str, str]) -> str:
    """What a console says of an answer the service applied, from ``{tool_call_id: result state}``
    (a person reads it: no call ids): ``"Applied by the service: the call ran."``,
    ``"Applied by the service: 2 calls started, 1 denied."``."""
    words = [RESULT_WORDS.get(state, state) for state in states.values()]
    if len(words) == 1:
        passive = "was " if words[0] in ("denied", "interrupted") else ""
        return f"Applied by the service: the call {passive}{words[0]}."
    counts = {word: words.count(word) for word in dict.fromkeys(words)}
    parts = [f"{n} {word}" for word, n in counts.items()]
    first = next(iter(counts.values()))
    parts[0] = parts[0].replace(" ", " call " if first == 1 else " calls ", 1)
    return f"Applied by the service: {', '.join(parts)}."
