"""What a Session does differently when it drives a team (see :mod:`nb_hitl.team`).

A ``TeamPipeline`` or ``GoalPipeline`` streams the pauses of several agents
in one reply, each with its own ``reply_id``. AgentScope routes a resume event
to the agent whose ``reply_id`` it names, so the decisions queued in a run are
handed over one agent's reply at a time: :func:`resume_batch`.

A restored reply with calls AgentScope has not checked yet (``pending``,
:func:`~nb_hitl.session._closing.unchecked_calls`) is continued by
:func:`continue_stream`: a ``TeamPipeline`` routes only events to a parked
member, so a member left with such calls is continued itself and its final
message goes back to the leader as the pipeline's own assignment result.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agentscope.agent import Agent
from agentscope.event import ExternalExecutionResultEvent
from agentscope.message import DataBlock, Msg, TextBlock, ToolCallBlock, ToolResultBlock
from agentscope.pipeline._team_pipeline import _RESULT_STATES
from agentscope.types import ReplyFinishedReason

from ..decisions import Decision
from ..team import ASSIGN_TOOL, Team
from ._closing import unchecked_calls
from ._run import ReplyRun

__all__ = ["continue_stream", "resume_batch", "unchecked_team_calls"]


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


def unchecked_team_calls(team: Team) -> list[tuple[Agent, ToolCallBlock]]:
    """The calls of restored replies AgentScope has not checked yet, with
    their agent, in every agent whose reply can be continued
    (:meth:`Team.can_continue <nb_hitl.team.Team.can_continue>`), leader first."""
    return [(a, tc) for a in team.agents.values() if team.can_continue(a) for tc in unchecked_calls(a)]


async def continue_stream(team: Team) -> AsyncIterator[Any]:
    """Continue a restored reply whose calls AgentScope has not checked yet
    (``reply_stream(None)``: ``Agent._next_action`` checks each ``pending``
    call with the permission engine, which may ask a person).

    One agent, or a pipeline's leader with such calls: the target's own
    ``reply_stream(None)`` (:meth:`Team.stream <nb_hitl.team.Team.stream>`).
    ``TeamPipeline`` members with such calls (the leader waits on their
    ``TeamAssign``): each member's ``reply_stream(None)`` in turn; a member
    that parks stays parked (the pipeline routes its answer by ``reply_id``);
    a member that finishes has its final message turned into the
    ``TeamAssign`` result as ``TeamPipeline._run_assignments`` does, its
    further assignments are run by the pipeline, and the results go to the
    leader through the pipeline (``ExternalExecutionResultEvent``).

    Yields:
        AgentScope events, and the leader's final ``Msg`` last when the reply ends.
    """
    members = [a for a in team.members.values() if team.can_continue(a) and unchecked_calls(a)]
    if not members or unchecked_calls(team.leader):
        async for item in team.stream(None):
            yield item
        return
    results: list[ToolResultBlock] = []
    for member in members:
        assignment, *rest = team.assignments_to(member)
        async for item in member.reply_stream(None, yield_final_msg=True):
            if not isinstance(item, Msg):
                yield item
            elif item.finished_reason is not None:
                results.append(assignment_result(assignment, item, item.finished_reason))
        if rest and not member.state.has_awaiting_tool_calls(member.name):
            async for item in team.target._run_assignments(rest, results):  # the pipeline runs the rest itself
                yield item
    if results:
        event = ExternalExecutionResultEvent(reply_id=team.leader.state.reply_id, execution_results=results)
        async for item in team.stream(event):
            yield item


def assignment_result(assignment: ToolCallBlock, final: Msg, reason: ReplyFinishedReason) -> ToolResultBlock:
    """The ``TeamAssign`` result of a member's final message, as AgentScope's
    ``TeamPipeline._run_assignments`` builds it: the message's text and data
    blocks, its state from the reply's ``finished_reason`` (``reason``)."""
    return ToolResultBlock(
        id=assignment.id,
        name=ASSIGN_TOOL,
        output=[b for b in final.content if isinstance(b, (TextBlock, DataBlock))]
        or "The member finished without a reply.",
        state=_RESULT_STATES[reason],
    )
