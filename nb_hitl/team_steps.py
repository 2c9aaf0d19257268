"""A team's pipeline plumbing as transcript steps, and which agent wrote each entry.

``TeamPipeline`` answers the leader's ``TeamAssign`` calls itself by running
the member: :func:`plumbing_step` shows such a call as two notes ("lead
assigned … to worker", "worker reported back …") instead of a tool call, and
:func:`tag_entry` names on every transcript entry the agent that wrote it
(see :class:`~nb_hitl.team.Team`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ._agentscope import strip_system_reminders

if TYPE_CHECKING:  # the session package imports this module
    from .session._transcript import Transcript
    from .team import Team

__all__ = ["assignment_text", "plumbing_step", "tag_entry"]


def assignment_text(leader: str, tool_input: str | dict[str, Any] | None) -> tuple[str, str, str]:
    """Words for one ``TeamAssign`` call: ``(member, prompt, text)``.

    Args:
        leader: the leader's name.
        tool_input: the call's input (AgentScope keeps it as a JSON string).

    Returns:
        the member's name, the task, and ``"leader assigned “task” to member"``;
        an unparsable input gives ``("", "", "leader assigned a task")``.
    """
    data: Any = tool_input
    if isinstance(tool_input, str):
        try:
            data = json.loads(tool_input or "{}")
        except ValueError:
            data = None
    if not isinstance(data, dict):
        return "", "", f"{leader} assigned a task"
    member = str(data.get("member") or "")
    prompt = str(data.get("prompt") or "")
    text = f"{leader} assigned “{prompt}” to {member}" if member else f"{leader} assigned a task"
    return member, prompt, text


_ENTRY_KEYS = {
    "TextBlockStartEvent": ("block_id", ""),
    "TextBlockDeltaEvent": ("block_id", ""),
    "ToolCallStartEvent": ("tool_call_id", "call:"),
    "ToolCallDeltaEvent": ("tool_call_id", "call:"),
    "ToolResultStartEvent": ("tool_call_id", "result:"),
    "ToolResultTextDeltaEvent": ("tool_call_id", "result:"),
    "ToolResultEndEvent": ("tool_call_id", "result:"),
    # what record_event (session/_transcript_events.py) adds
    "ThinkingBlockStartEvent": ("block_id", "thinking:"),
    "ThinkingBlockDeltaEvent": ("block_id", "thinking:"),
    "HintBlockEvent": ("block_id", "hint:"),
    "DataBlockStartEvent": ("block_id", "data:"),
    "DataBlockDeltaEvent": ("block_id", "data:"),
}


def plumbing_step(team: Team, transcript: Transcript, event: Any) -> bool:
    """Show the pipeline's ``TeamAssign`` as steps, not as a tool call.

    The leader's ``TeamAssign`` call and result events become two notes in
    ``transcript``: ``"lead assigned “task” to worker"`` when the pipeline
    starts the member (the call's ``ToolResultStartEvent``), and
    ``"worker reported back to lead (success): ..."`` when the member's
    reply came back as the result. Entry ids: ``assign:<tool_call_id>`` and
    ``report:<tool_call_id>``; each carries ``agent`` (who wrote it: the
    leader, the member for the report), ``member`` and ``tool_call_id``. Both
    go through :meth:`Transcript.add`, so a streaming page gets them as ops.

    Returns:
        True when ``event`` was a ``TeamAssign`` event (the caller shows
        nothing else for it), False for any other event.
    """
    name = type(event).__name__
    tool_call_id = getattr(event, "tool_call_id", None)
    if tool_call_id is None or name not in _ENTRY_KEYS and name != "ToolCallEndEvent":
        return False
    if name == "ToolCallStartEvent":
        if not team.is_plumbing(name=event.tool_call_name) or not team.is_leader_event(event):
            return False
        team.assignments[tool_call_id] = {"input": "", "output": ""}
        return True
    seen = team.assignments.get(tool_call_id)
    if seen is None:
        return False
    if name == "ToolCallDeltaEvent":
        seen["input"] += event.delta
    elif name == "ToolResultStartEvent":
        member, _prompt, text = assignment_text(team.leader.name, seen["input"] or _call_input(team, tool_call_id))
        seen["member"] = member
        transcript.add(
            "note",
            f"assign:{tool_call_id}",
            text=text,
            agent=team.leader.name,
            member=member,
            tool_call_id=tool_call_id,
        )
    elif name == "ToolResultTextDeltaEvent":
        seen["output"] += event.delta
    elif name == "ToolResultEndEvent":
        member = seen.get("member") or assignment_text(team.leader.name, seen["input"])[0] or "the member"
        state = str(getattr(event.state, "value", event.state))
        report = f"{member} reported back to {team.leader.name} ({state})"
        transcript.add(
            "note",
            f"report:{tool_call_id}",
            text=report + (f": {said}" if (said := strip_system_reminders(seen["output"])) else ""),
            agent=member,
            member=member,
            tool_call_id=tool_call_id,
        )
    return True


def _call_input(team: Team, tool_call_id: str) -> str:
    for tool_call in team.leader.state.get_awaiting_tool_calls(team.leader.name):
        if tool_call.id == tool_call_id:
            return str(tool_call.input)
    return ""


def tag_entry(team: Team, transcript: Transcript, event: Any) -> bool:
    """Name the agent ``event`` came from on the transcript entry it wrote
    (:meth:`Transcript.label <nb_hitl.session._transcript.Transcript.label>`:
    ``entry["agent"]``, streamed to the page as a ``set`` op), so the page can
    say which agent wrote each text, tool call, result, thinking, hint, data
    block and model call step. The first agent named stays.

    Returns:
        whether the entry changed (False for other events, an entry not
        found, or one already named).
    """
    name = type(event).__name__
    if name == "ModelCallStartEvent":  # record_event numbers the steps: this call's is the newest
        return transcript.label(f"step:{transcript.steps}", team.owner_name(event))
    key = _ENTRY_KEYS.get(name)
    if key is None:
        return False
    return transcript.label(key[1] + str(getattr(event, key[0], "")), team.owner_name(event))
