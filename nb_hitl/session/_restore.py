"""Rebuilding an agent from its checkpoint: the one restore every road uses.

A checkpoint (:class:`~nb_hitl.store.CheckpointStore`) holds the agent's
``AgentState`` (a team's: every member's, plus a ``GoalPipeline``'s own
counters) as it was at a pause, before or after a tool call, or right after
a decision was handed to the agent. :meth:`Session.restore
<nb_hitl.session.Session.restore>` and the AG-UI server's threads
(:class:`~nb_hitl.agui.threads.ThreadRegistry`) both rebuild through
:func:`settle`, so they agree on what is still open:

* a parked call whose approval had been handed to the agent
  (``DELIVERED_CONTEXT_KEY``, :func:`~nb_hitl.session._closing.close_delivered_tool_calls`)
  is closed as interrupted: the tool may have run, asking again could run it twice;
* a call whose handed-over decision runs nothing (a denial, an AskUser
  answer, an external result) stays open and is asked again, its card saying why;
* a call a crash left running (``allowed``, :func:`~nb_hitl.session._closing.close_dangling_tool_calls`)
  is closed as may have run;
* a call AgentScope had not checked yet (``pending``: a later call of the
  same turn) stays open: resuming continues the reply and AgentScope checks
  it, asking a person if its permission says so
  (:func:`~nb_hitl.session._closing.unchecked_calls`), a team member's too
  (:func:`~nb_hitl.session._team.continue_stream`); a ``GoalPipeline``'s,
  which cannot be continued from outside, is closed as not run;
* every other parked call (``asking``, ``submitted``) stays open and is asked again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentscope.state import AgentState

from ..team import Team, states_from_checkpoint
from ._closing import close_dangling_tool_calls, close_delivered_tool_calls

__all__ = ["states", "settle", "reopen"]


def states(record: Mapping[str, Any]) -> AgentState | dict[str, AgentState]:
    """What a factory rebuilds the agent from: the ``AgentState`` of a single
    agent's checkpoint, or ``{agent name: AgentState}`` of a team's.

    Args:
        record: a checkpoint, as :meth:`~nb_hitl.store.CheckpointStore.load` returns it.

    Raises:
        pydantic.ValidationError: a state is not an ``AgentState``.
    """
    return states_from_checkpoint(record["state"])


def settle(agent: Any, record: Mapping[str, Any]) -> list[str]:
    """Make a freshly rebuilt agent (or pipeline) safe to drive: the
    pipeline's own counters are put back, then in every member the calls that
    may already have run are closed (see the module docstring).

    Args:
        agent: the ``Agent`` or pipeline the factory built from :func:`states`.
        record: the checkpoint it was built from.

    Returns:
        the ids of the tool calls closed (they are not offered again).
    """
    team = Team.of(agent)
    team.load_pipeline_extras(record["state"])
    closed: list[str] = []
    for member in team.agents.values():
        closed += close_delivered_tool_calls(member)
        closed += close_dangling_tool_calls(member, keep_unchecked=team.can_continue(member))
    return closed


def reopen(record: Mapping[str, Any], factory: Callable[[Any], Any]) -> Any:
    """``factory(states(record))``, settled (:func:`settle`).

    Args:
        record: a checkpoint (:meth:`~nb_hitl.store.CheckpointStore.load`).
        factory: ``(state) -> Agent`` (a team's: ``({name: state}) -> pipeline``),
            passing ``state=`` to each ``Agent`` constructor.

    Returns:
        the agent (or pipeline), ready for a :class:`~nb_hitl.session.Session`.
    """
    agent = factory(states(record))
    settle(agent, record)
    return agent
