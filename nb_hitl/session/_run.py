"""The run state of one reply.

:class:`ReplyRun` is what a :class:`~nb_hitl.session.Session` knows about one
reply it drives (AgentScope's ``reply_id``, its pauses, the decisions queued
for the agent, its transcript). A pause's ``status`` only changes through
:func:`~nb_hitl.answers.lifecycle.transition` (the one status table every
road an answer takes uses).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from agentscope.message import Msg, ToolCallBlock

from ..answers.lifecycle import TRANSITIONS, PauseTransitionError, can_transition, transition
from ..decisions import Decision
from ..pauses import Pause
from ..widgets._cards import CardFeed
from ._transcript import Transcript

__all__ = [
    "ReplyRun",
    "TERMINAL",
    "TRANSITIONS",
    "PauseTransitionError",
    "transition",
    "can_transition",
    "pending_message",
    "DELIVERED_CONTEXT_KEY",
]

log = logging.getLogger("nb_hitl.session")

DELIVERED_CONTEXT_KEY = "nb_hitl.delivered"
"""Key in ``AgentState.middle_context``: ``{tool_call_id: {"action", "reply_id",
"at", "runs"}}`` (``runs``: the decision may run the tool, an approval), the decisions handed to the agent whose outcome is not in the state
yet. Written (and checkpointed) before the resume event is sent, so a
restore knows which parked calls may already have run."""

TERMINAL = ("finished", "interrupted", "expired", "error")
"""Run statuses after which the reply takes no decision."""


@dataclass
class ReplyRun:
    """One reply of the agent as the session drives it.

    Attributes:
        reply_id: AgentScope's ``reply_id`` (known after ``REPLY_START``, or
            taken from the agent's state for a restored parked reply).
        widget: the inline view, or ``None`` when the session does not display.
        pauses: every pause seen in this reply, by ``tool_call`` id, in order.
        queue: decisions recorded and not yet handed to the agent.
        status: ``running`` | ``paused`` | ``finished`` | ``interrupted`` |
            ``expired`` | ``error``.
        final: the reply's final ``Msg`` once it ended.
        resumes: how many times the agent was resumed (one per event sent).
        transcript: the entries shown above the cards (:class:`Transcript`).
        cards: what the page was sent of the pause cards (:class:`CardFeed`).
        told: by ``tool_call`` id, the result text the model reads when it is
            not what the tool streamed (nb_hitl's note, AgentScope's cut to fit
            the context): what an AG-UI client is told, as the transcript shows.
        upto: how many user messages the agent's memory held when the reply
            ended (its "Replay" plays the record up to there).
        nested: the replayed and forked sessions started from this reply's page.
        push_due: the scheduled push of :meth:`SessionCore._push_soon
            <nb_hitl.session._core.SessionCore._push_soon>` (``None``: none due).
        resuming: decisions were handed to the agent and its resumed stream
            has yielded nothing since.
        answering: page messages whose answer is being worked out
            (:func:`nb_hitl.session._settle.answered`).
        step: what :func:`nb_hitl.session._settle.settled` waits on, resolved
            when the run moves (``None``: nobody waits).
        stop_text: why nb_hitl itself stopped the reply (a pause's deadline,
            ``on_deadline="interrupt"``): the final text instead of AgentScope's
            fallback ``ReActConfig.interruption_message`` ("I notice the
            interruption..."), which speaks of a user's interruption.
    """

    reply_id: str = ""
    prompt: str = ""
    widget: Any = None
    pauses: dict[str, Pause] = field(default_factory=dict)
    queue: list[Decision] = field(default_factory=list)
    interrupt_requested: bool = False
    status: str = "running"
    reason: str = ""
    final: Msg | None = None
    resumes: int = 0
    error: BaseException | None = None
    transcript: Transcript = field(default_factory=Transcript)
    cards: CardFeed = field(default_factory=CardFeed)
    told: dict[str, str] = field(default_factory=dict)
    upto: int = 0
    nested: list[Any] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task | None = None
    push_due: asyncio.Handle | None = None
    resuming: bool = False
    answering: int = 0
    step: asyncio.Future[None] | None = None
    stop_text: str | None = None

    @property
    def live(self) -> bool:
        """True while the reply can still take decisions."""
        return self.status not in TERMINAL

    def open_pauses(self) -> list[Pause]:
        """Pauses still waiting for a decision."""
        return [p for p in self.pauses.values() if p.status == "open"]


def pending_message(agent_name: str, prior: ReplyRun | None, parked: list[ToolCallBlock], who: str = "session") -> str:
    """Why a new message is refused while a reply is not over (C07).

    Names only the pauses really open: a call whose decision is already
    taken (``deciding`` / ``decided`` / ``delivered``) is "being delivered",
    not waiting on the person.

    Args:
        agent_name: the agent's name.
        prior: the session's current run, if any.
        parked: the agent's awaiting tool calls (``AgentState``).
        who: the session's variable in the person's cells (what they type).
    """
    from ..labels import call_label, pause_label  # a call by its tool and input, never its id

    live = prior is not None and prior.live
    shown = prior.pauses if prior is not None and live else {}
    open_now = [p for p in shown.values() if p.status == "open"]
    decided = [p for p in shown.values() if p.status in ("deciding", "decided", "delivered")]
    unshown = [tc for tc in parked if tc.id not in shown]
    retry = ", or call again with interrupt_pending=True to interrupt that reply first"
    taken = ""
    if decided:
        names = ", ".join(pause_label(p) for p in decided)
        taken = f" The decisions already taken for {names} are being delivered to the agent."
    if open_now:
        names = ", ".join(pause_label(p) for p in open_now)
        return (
            f"The agent {agent_name!r} is still waiting on {names}. Answer it on the reply's card (a cell run "
            f'again clears the card it showed: the page\'s banner "Show the card here" brings it back){retry}.{taken}'
        )
    if unshown:
        names = ", ".join(call_label(tc.name, tc.input) for tc in unshown)
        return (
            f"The agent {agent_name!r} is still waiting on {names}. No live widget shows them: "
            f"`await {who}.resume()` shows them again{retry}.{taken}"
        )
    return (
        f"The agent {agent_name!r} has a running reply.{taken} Wait for it "
        f"(`await {who}.current.task`){retry} (a decision not yet delivered is then discarded, "
        "and the audit log and its card say so)."
    )
