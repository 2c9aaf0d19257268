"""What a Session does differently when it drives a team (see :mod:`nb_hitl.team`).

A ``TeamPipeline`` or ``GoalPipeline`` streams the pauses of several agents
in one reply, each with its own ``reply_id``. AgentScope routes a resume event
to the agent whose ``reply_id`` it names, so the decisions queued in a run are
handed over one agent's reply at a time: :func:`resume_batch`.
"""

from __future__ import annotations

from ..decisions import Decision
from ._run import ReplyRun

__all__ = ["resume_batch"]


def resume_batch(run: ReplyRun) -> tuple[str, list[Decision]]:
    """The ``reply_id`` the next resume event answers, and the queued decisions for it.

    The reply of the oldest queued decision's pause goes first (its pause's
    ``reply_id``: a member's in a team); for one agent every pause carries
    the run's ``reply_id``, so the whole queue comes back.

    Returns:
        ``(reply_id, decisions)``; ``(run.reply_id, [])`` for an empty queue.
    """
    if not run.queue:
        return run.reply_id, []

    def reply_of(decision: Decision) -> str:
        pause = run.pauses.get(decision.tool_call_id)
        return (pause.reply_id if pause is not None else "") or run.reply_id

    reply_id = reply_of(run.queue[0])
    return reply_id, [d for d in run.queue if reply_of(d) == reply_id]
