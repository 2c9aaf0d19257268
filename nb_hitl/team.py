"""The agents behind one Session: one ``Agent``, or a pipeline's leader and members.

AgentScope 2.0.11 runs teams in one process: ``TeamPipeline(leader, members)``
gives the leader an external ``TeamAssign`` tool and runs the member itself;
``GoalPipeline(executor, verifier)`` alternates two agents. Either streams the
members' pauses out of ``reply_stream`` unchanged, with the member's
``reply_id``, and routes the answer by ``reply_id`` (``pipeline/_team_pipeline.py``).

:class:`Team` gives the session one view over all of them: which agent owns a
``reply_id`` or a parked tool call (for the card, the audit log, the toolkit
and permission engine that re-check an edit), which calls wait for a person
(never the leader's own ``TeamAssign``: that is the pipeline's plumbing), the
stream with the leader's final ``Msg`` at its end, which restored replies can
be continued, and one checkpoint JSON for every agent. The ``TeamAssign`` call
as a transcript step is :mod:`nb_hitl.team_steps`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from agentscope.agent import Agent
from agentscope.event import ReplyEndEvent, ReplyStartEvent, UserInterruptEvent
from agentscope.message import AssistantMsg, Msg, ToolCallBlock
from agentscope.pipeline import GoalPipeline, TeamPipeline
from agentscope.state import AgentState
from agentscope.types import ReplyFinishedReason

__all__ = [
    "ASSIGN_TOOL",
    "CHECKPOINT_FORMAT",
    "Team",
    "TeamShape",
    "states_from_checkpoint",
]

#: The name of the tool ``TeamPipeline`` gives its leader (``_TeamAssign.name``).
ASSIGN_TOOL = "TeamAssign"

#: The key that marks a checkpoint ``state`` holding several agents.
CHECKPOINT_FORMAT = "nb_hitl.team/1"

TeamShape = Literal["agent", "team", "goal"]


@dataclass
class Team:
    """Every agent a Session drives, and which of them owns what.

    Build it with :meth:`of`. For a plain ``Agent`` the team is that agent
    alone, and every method answers as the single-agent session always did.

    Attributes:
        target: what ``reply_stream`` is called on (the agent or the pipeline).
        shape: ``"agent"``, ``"team"`` (``TeamPipeline``) or ``"goal"``
            (``GoalPipeline``).
        leader: the agent whose reply is the Session's reply: the
            ``TeamPipeline``'s leader, the ``GoalPipeline``'s executor, or
            the agent itself.
        members: the other agents by name (the team members, or the verifier).
        reply_owners: ``reply_id -> agent name`` seen in ``ReplyStartEvent``s.
        assignments: ``TeamAssign`` calls seen, by tool call id:
            ``{"input": JSON text, "output": the member's reply text}``.
    """

    target: Any
    shape: TeamShape
    leader: Agent
    members: dict[str, Agent] = field(default_factory=dict)
    reply_owners: dict[str, str] = field(default_factory=dict)
    assignments: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, target: Any) -> Team:
        """The team behind ``target``.

        Args:
            target: an ``agentscope.agent.Agent``, a ``TeamPipeline`` or a
                ``GoalPipeline``.

        Raises:
            TypeError: ``target`` is none of these.
        """
        if isinstance(target, TeamPipeline):
            members = {name: m.agent for name, m in target.members.items()}
            return cls(target=target, shape="team", leader=target.leader, members=members)
        if isinstance(target, GoalPipeline):
            return cls(
                target=target, shape="goal", leader=target.executor, members={target.verifier.name: target.verifier}
            )
        if isinstance(target, Agent) or (hasattr(target, "reply_stream") and hasattr(target, "state")):
            return cls(target=target, shape="agent", leader=target)
        raise TypeError(
            f"Session needs an agentscope.agent.Agent, a TeamPipeline or a GoalPipeline, got {type(target).__name__}"
        )

    # -------------------------------------------------------------- agents
    @property
    def is_pipeline(self) -> bool:
        """True for a ``TeamPipeline`` or ``GoalPipeline``."""
        return self.shape != "agent"

    @property
    def agents(self) -> dict[str, Agent]:
        """Every agent by name, the leader first."""
        return {self.leader.name: self.leader, **self.members}

    def agent(self, name: str | None) -> Agent:
        """The agent called ``name``; the leader for ``None`` or ``""``.

        Raises:
            KeyError: no agent of the team has that name.
        """
        if not name:
            return self.leader
        return self.agents[name]

    def owner(self, reply_id: str | None) -> Agent:
        """The agent whose reply ``reply_id`` is.

        Read from the agents' states first (``AgentState.reply_id`` is the
        current or parked reply, also after a restore), then from the
        ``ReplyStartEvent``s seen; the leader when nothing matches (AgentScope
        checks no incoming ``reply_id`` either).
        """
        if reply_id:
            for agent in self.agents.values():
                if agent.state.reply_id == reply_id:
                    return agent
            name = self.reply_owners.get(reply_id)
            if name in self.agents:
                return self.agents[name]
        return self.leader

    def owner_name(self, event: Any) -> str:
        """The name of the agent an AgentScope event comes from (by its ``reply_id``)."""
        if isinstance(event, ReplyStartEvent):
            self.reply_owners[event.reply_id] = event.name
            return event.name
        reply_id = getattr(event, "reply_id", None)
        if reply_id in self.reply_owners:
            return self.reply_owners[reply_id]
        return self.owner(reply_id).name

    def is_leader_event(self, event: Any) -> bool:
        """True when ``event`` belongs to the leader's reply."""
        return self.owner_name(event) == self.leader.name

    def ends_reply(self, event: Any) -> bool:
        """True for the ``ReplyEndEvent`` that ends the Session's reply.

        One agent: its ``ReplyEndEvent``. A ``TeamPipeline``: the leader's,
        never a member's (the leader goes on with the member's result). A
        ``GoalPipeline`` runs its executor and verifier in rounds, each round
        a reply of its own: only an ``interrupted`` or ``error`` end stops it;
        otherwise the reply ends when the stream ends with no agent parked.
        """
        if not isinstance(event, ReplyEndEvent):
            return False
        if self.shape == "goal":
            return str(getattr(event.finished_reason, "value", event.finished_reason)) in ("interrupted", "error")
        return self.is_leader_event(event)

    # ------------------------------------------------------- parked calls
    @staticmethod
    def is_plumbing(tool_call: ToolCallBlock | None = None, *, name: str | None = None) -> bool:
        """True for the pipeline's own ``TeamAssign`` call, which the pipeline
        answers itself by running the member: never a card."""
        return (name if name is not None else getattr(tool_call, "name", None)) == ASSIGN_TOOL

    def parked_calls(self) -> list[tuple[Agent, ToolCallBlock]]:
        """Every call that waits for a person, with the agent that asks.

        Read from each agent's state (``AgentState.get_awaiting_tool_calls``);
        the leader's own ``TeamAssign`` calls are left out (they wait for a
        member, not for a person). Leader first, then the members in order.
        """
        out: list[tuple[Agent, ToolCallBlock]] = []
        for agent in self.agents.values():
            for tool_call in agent.state.get_awaiting_tool_calls(agent.name):
                if self.shape == "team" and agent is self.leader and self.is_plumbing(tool_call):
                    continue
                out.append((agent, tool_call))
        return out

    def is_parked(self) -> bool:
        """True while any agent of the team is parked (the leader on a
        ``TeamAssign`` counts: its reply has not ended)."""
        return any(a.state.has_awaiting_tool_calls(a.name) for a in self.agents.values())

    def assignments_to(self, member: Agent) -> list[ToolCallBlock]:
        """The leader's ``TeamAssign`` calls to ``member`` that wait for it, in
        call order: the first is the one the member is running (AgentScope's
        ``TeamPipeline._assigning_calls``, which reads them the way the leader
        validated them). Empty outside a ``TeamPipeline`` and for the leader."""
        if self.shape != "team" or member is self.leader or member.name not in self.target.members:
            return []
        return list(self.target._assigning_calls(self.target.members[member.name]))

    def can_continue(self, agent: Agent) -> bool:
        """Whether a reply of ``agent`` that AgentScope left with calls it has
        not checked yet (``pending``, nothing parked) can be continued with
        ``reply_stream(None)``, so AgentScope checks them.

        One agent, and a ``TeamPipeline``'s leader: yes (the pipeline passes
        ``None`` to the leader). A ``TeamPipeline`` member: while the leader
        waits on an assignment to it (its result goes back to the leader as
        the pipeline's own would). A ``GoalPipeline``'s agents: no (the
        pipeline routes only events, and its verifier step cannot be entered
        from outside).
        """
        if self.shape == "agent" or (self.shape == "team" and agent is self.leader):
            return True
        return bool(self.assignments_to(agent))

    def owner_of_call(self, tool_call_id: str) -> Agent | None:
        """The agent whose history holds the parked call ``tool_call_id``."""
        for agent, tool_call in self.parked_calls():
            if tool_call.id == tool_call_id:
                return agent
        return None

    def parked_reply_id(self) -> str:
        """The ``reply_id`` the Session's reply is parked on: the leader's
        (a ``GoalPipeline``: the parked agent's, the pipeline has no leader
        reply of its own)."""
        if self.shape == "goal":
            for agent in self.agents.values():
                if agent.state.has_awaiting_tool_calls(agent.name):
                    return agent.state.reply_id
        return self.leader.state.reply_id

    def interrupt_event(self) -> UserInterruptEvent:
        """The ``UserInterruptEvent`` that stops the whole reply.

        A ``TeamPipeline`` routes an interrupt to every parked member and
        then the leader (every reply ends ``interrupted``); a
        ``GoalPipeline`` sends it to the parked agent, named by ``reply_id``.
        """
        return UserInterruptEvent(reply_id=self.parked_reply_id())

    # -------------------------------------------------------------- stream
    async def stream(self, inputs: Any) -> AsyncIterator[Any]:
        """``reply_stream(inputs)`` of the target, ending with the leader's final ``Msg``.

        An ``Agent`` is asked for its final message (``yield_final_msg``). A
        ``TeamPipeline`` accepts no ``yield_final_msg`` and yields only
        events: once the leader's ``ReplyEndEvent`` has passed, the final
        ``Msg`` is read from the leader's state (see :meth:`final_msg`) and
        yielded last. A ``GoalPipeline`` yields every executor ``Msg``
        (parked ones too): only the executor's last finished one is kept and
        yielded once the stream ends with no agent parked.
        """
        if not self.is_pipeline:
            async for item in self.target.reply_stream(inputs, yield_final_msg=True):
                yield item
            return
        ended: ReplyEndEvent | None = None
        last: Msg | None = None
        async for item in self.target.reply_stream(inputs):
            if isinstance(item, Msg):
                if item.name == self.leader.name and item.finished_reason is not None:
                    last = item
                continue
            if isinstance(item, ReplyStartEvent):
                self.reply_owners[item.reply_id] = item.name
            if self.ends_reply(item):
                ended = item
            yield item
        if self.shape == "team" and ended is not None:
            final = self.final_msg(ended)
            if final is not None:
                yield final
        elif self.shape == "goal" and last is not None and (ended is not None or not self.is_parked()):
            yield last

    def final_msg(self, end: ReplyEndEvent | None = None) -> Msg | None:
        """A copy of the last message the leader wrote, with ``finished_reason``
        from ``end`` (``completed`` without one) — AgentScope keeps the whole
        reply as one ``Msg`` in ``AgentState.context``; ``None`` when the
        leader wrote none. An interrupted ``end`` gives what AgentScope's
        ``Agent`` gives for an interrupted reply: a message of the leader's
        ``react_config.interruption_message`` (the reply's earlier text is not
        its answer)."""
        if end is not None and end.finished_reason == ReplyFinishedReason.INTERRUPTED:
            return AssistantMsg(
                id=self.leader.state.reply_id,
                name=self.leader.name,
                content=self.leader.react_config.interruption_message,
                finished_reason=ReplyFinishedReason.INTERRUPTED,
            )
        for msg in reversed(self.leader.state.context):
            if msg.role == "assistant" and msg.name == self.leader.name:
                final = msg.model_copy(deep=True)
                if end is not None:
                    final.finished_reason = end.finished_reason
                elif final.finished_reason is None:
                    final.finished_reason = ReplyFinishedReason.COMPLETED
                return final
        return None

    # --------------------------------------------------------- checkpoints
    def state_json(self) -> str:
        """One JSON for every agent's ``AgentState``.

        A single agent gives its ``AgentState.model_dump_json()`` unchanged
        (older checkpoints stay readable); a pipeline gives
        ``{"format": CHECKPOINT_FORMAT, "shape", "leader", "agents": {name: state}}``
        plus ``"goal"`` (a ``GoalPipeline``'s goal and round counters, kept
        on the pipeline object, not in any state).
        """
        if not self.is_pipeline:
            return str(self.leader.state.model_dump_json())
        record: dict[str, Any] = {
            "format": CHECKPOINT_FORMAT,
            "shape": self.shape,
            "leader": self.leader.name,
            "agents": {name: json.loads(a.state.model_dump_json()) for name, a in self.agents.items()},
        }
        if self.shape == "goal":
            pipe = self.target
            record["goal"] = {
                "goal": [b.model_dump(mode="json") for b in pipe._goal] if pipe._goal is not None else None,
                "iters": pipe._iters,
                "executor_retries": pipe._executor_retries,
                "verifier_retries": pipe._verifier_retries,
            }
        return json.dumps(record)

    def load_pipeline_extras(self, state: dict[str, Any]) -> None:
        """Put back what a ``GoalPipeline`` keeps outside the agents' states
        (see :meth:`state_json`); nothing for other shapes."""
        extras = state.get("goal") if isinstance(state, dict) else None
        if self.shape != "goal" or not isinstance(extras, dict):
            return
        from agentscope.message import DataBlock, TextBlock

        pipe = self.target
        goal = extras.get("goal")
        if goal is not None:
            pipe._goal = [
                DataBlock.model_validate(b) if b.get("type") == "data" else TextBlock.model_validate(b) for b in goal
            ]
        pipe._iters = int(extras.get("iters") or 0)
        pipe._executor_retries = int(extras.get("executor_retries") or 0)
        pipe._verifier_retries = int(extras.get("verifier_retries") or 0)


def states_from_checkpoint(state: dict[str, Any]) -> AgentState | dict[str, AgentState]:
    """The ``AgentState``(s) in a checkpoint's ``state``.

    Args:
        state: ``record["state"]`` of :meth:`nb_hitl.store.CheckpointStore.load`.

    Returns:
        one ``AgentState`` for a single agent's checkpoint, or
        ``{agent name: AgentState}`` for a team's (see :meth:`Team.state_json`).

    Raises:
        pydantic.ValidationError: a state is not an ``AgentState``.
    """
    if isinstance(state, dict) and state.get("format") == CHECKPOINT_FORMAT:
        return {name: AgentState.model_validate_json(json.dumps(s)) for name, s in state["agents"].items()}
    return AgentState.model_validate_json(json.dumps(state))
