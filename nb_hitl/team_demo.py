"""The teams notebook's team: a leader that hands file clean-up to a worker.

Both are real AgentScope ``Agent`` s on :class:`~nb_hitl.models.ScriptedChatModel`
in an AgentScope ``TeamPipeline``, offline:

1. the leader ``lead`` calls ``TeamAssign`` (the pipeline's tool) to give the
   clean-up to ``worker``;
2. the worker lists the sandbox, asks which file to delete (``AskUser``) and
   calls ``delete_file``, which needs confirmation: both pauses come out of
   the pipeline with the worker's ``reply_id``;
3. the worker's final message becomes the ``TeamAssign`` result, and the
   leader reports it.

Both scripts decide from what their model was sent since the last user
message, as a real model would, so an agent rebuilt from a checkpoint picks
up where it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscope.agent import Agent
from agentscope.message import TextBlock, ToolResultState
from agentscope.pipeline import TeamMember, TeamPipeline
from agentscope.state import AgentState
from agentscope.tool import AskUser, FunctionTool, ToolChunk, Toolkit

from .demo import demo_script, make_sandbox
from .models import ScriptedChatModel, Turn, result_text, tool_call, tool_results

__all__ = ["LEADER", "WORKER", "TASK", "worker_tools", "leader_script", "team_demo"]

LEADER = "lead"
WORKER = "worker"
TASK = "Tidy up the sandbox folder: ask the user which file to delete, then delete it."


def worker_tools(sandbox: Path, runs: list[str]) -> list[Any]:
    """The worker's tools over ``sandbox``: ``list_files`` (read-only),
    ``delete_file`` (asks; every run is appended to ``runs``) and AgentScope's
    ``AskUser``."""

    def list_files() -> ToolChunk:
        """List the files in the sandbox folder with their sizes."""
        lines = [f"{p.name}\t{p.stat().st_size} bytes" for p in sorted(sandbox.iterdir()) if p.is_file()]
        return ToolChunk(content=[TextBlock(text="\n".join(lines) or "(empty)")], state=ToolResultState.SUCCESS)

    def delete_file(path: str) -> ToolChunk:
        """Delete one file from the sandbox folder.

        Args:
            path (str): the file's name inside the sandbox, e.g. "notes.txt".
        """
        runs.append(path)
        target = (sandbox / path).resolve()
        if target.parent != sandbox or not target.is_file():
            return ToolChunk(
                content=[TextBlock(text=f"Could not delete {path}: no such file")], state=ToolResultState.ERROR
            )
        target.unlink()
        return ToolChunk(content=[TextBlock(text=f"Deleted {path}.")], state=ToolResultState.SUCCESS)

    return [FunctionTool(list_files, is_read_only=True), FunctionTool(delete_file), AskUser()]


def leader_script(member: str = WORKER, task: str = TASK) -> list[Any]:
    """The leader's turns: assign ``task`` to ``member``, then report the result."""

    def step(messages: list[Any]) -> Turn:
        last_user = max((i for i, m in enumerate(messages) if getattr(m, "role", None) == "user"), default=-1)
        since = messages[last_user + 1 :]
        results = tool_results(since, "TeamAssign")
        if not results:
            return Turn(f"I'll hand the clean-up to {member}.", [tool_call("TeamAssign", member=member, prompt=task)])
        state = getattr(results[-1].state, "value", results[-1].state)
        return Turn(f"{member} reported back ({state}): {result_text(results[-1])}")

    return [step] * 200


def team_demo(
    sandbox: str | Path | None = None,
    *,
    chunk_delay: float = 0.02,
    states: dict[str, AgentState] | None = None,
) -> TeamPipeline:
    """The teams notebook's ``TeamPipeline``: leader ``lead``, member ``worker``.

    Args:
        sandbox: the folder to tidy (created and filled when omitted).
        chunk_delay: seconds between streamed words of both models.
        states: ``{agent name: AgentState}`` to start from (a restored
            checkpoint, see ``Session.restore``).

    Returns:
        the pipeline; ``pipeline.sandbox`` is the folder, ``pipeline.runs``
        the paths ``delete_file`` ran on, ``pipeline.leader.model`` and
        ``pipeline.members["worker"].agent.model`` the scripted models
        (``.calls`` is what each was sent).
    """
    states = states or {}
    folder = make_sandbox(sandbox) if sandbox is None or not Path(sandbox).exists() else Path(sandbox).resolve()
    runs: list[str] = []
    worker = Agent(
        name=WORKER,
        system_prompt="You tidy up a folder. Ask before deleting anything.",
        model=ScriptedChatModel(demo_script(folder), chunk_delay=chunk_delay),
        toolkit=Toolkit(tools=worker_tools(folder, runs)),
        state=states.get(WORKER),
    )
    leader = Agent(
        name=LEADER,
        system_prompt="You lead a small team. Assign work to the right member and report what it did.",
        model=ScriptedChatModel(leader_script(), chunk_delay=chunk_delay),
        toolkit=Toolkit(),
        state=states.get(LEADER),
    )
    pipeline = TeamPipeline(leader, [TeamMember(agent=worker, description="Tidies up files in the sandbox folder.")])
    pipeline.sandbox = folder  # type: ignore[attr-defined]
    pipeline.runs = runs  # type: ignore[attr-defined]
    return pipeline
