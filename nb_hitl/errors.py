"""The errors nb_hitl raises, each one a refusal that a person can read.

Every error here carries a sentence written for the person looking at the
widget; widgets show ``str(error)`` next to the control at fault
(``field``) and the kernel keeps running.
"""

from __future__ import annotations

__all__ = [
    "NbHitlError",
    "DecisionError",
    "AlreadyDecidedError",
    "PauseNotLiveError",
    "PendingPauseError",
]


class NbHitlError(Exception):
    """Base class of nb_hitl's refusals.

    Attributes:
        field: the name of the input at fault (``"input"``, ``"answers[0]"``,
            ...), or ``None`` when the whole action is refused.
        code: a short machine-readable reason (``"invalid"``,
            ``"already_decided"``, ``"expired"``, ...), sent to the page.
    """

    code = "error"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class DecisionError(NbHitlError, ValueError):
    """A page message cannot become an AgentScope object: bad JSON, input that
    breaks the tool's JSON Schema, a changed tool name, an edit a deny rule
    forbids, an AskUser answer naming an option the question does not have.
    The pause stays live and nothing reaches the agent."""

    code = "invalid"


class AlreadyDecidedError(NbHitlError):
    """The tool call already has its decision; exactly one reaches the agent."""

    code = "already_decided"


class PauseNotLiveError(NbHitlError):
    """The pause can no longer be answered: its reply was interrupted,
    finished or superseded, its deadline passed, or the kernel restarted."""

    code = "expired"


class PendingPauseError(NbHitlError, RuntimeError):
    """A new message was sent to an agent whose reply is parked on open
    pauses. AgentScope itself raises a bare ``ValueError`` ("Agent is waiting
    for N tool calls ..."); this error names the open tool calls instead.
    Answer them, or pass ``interrupt_pending=True`` to interrupt the parked
    reply first."""

    code = "pending"
