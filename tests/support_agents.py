"""Agents shared by the in-process tests.

Every agent is a real ``agentscope.agent.Agent`` on
:class:`~nb_hitl.models.ScriptedChatModel` with a real ``Toolkit``:
:func:`scripted_agent` takes any tools, :func:`sandbox_agent` the demo's
sandbox tools (``list_files``, ``delete_file`` that asks, ``AskUser``) over a
folder made by :func:`nb_hitl.demo.make_sandbox`. :func:`files` lists what a
sandbox folder still holds; :class:`Lookup` is an external tool.

Import it as ``tests.support_agents`` (``pythonpath = ["."]`` in pyproject.toml).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentscope.agent import Agent
from agentscope.message import TextBlock, ToolResultState
from agentscope.middleware import MiddlewareBase
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.state import AgentState
from agentscope.tool import AskUser, FunctionTool, ToolBase, ToolChunk, Toolkit

from nb_hitl.demo import sandbox_tools
from nb_hitl.models import ScriptedChatModel

__all__ = ["Lookup", "deletion_cell", "files", "sandbox_agent", "scripted_agent"]


def scripted_agent(
    script: Sequence[Any],
    tools: Sequence[Any] = (),
    *,
    name: str = "agent",
    system_prompt: str = "tidy",
    recorder: MiddlewareBase | None = None,
    state: AgentState | None = None,
    on_exhausted: str = "raise",
) -> Agent:
    """An ``Agent`` named ``name`` that plays ``script`` and has ``tools``.

    Args:
        script: the turns of :class:`~nb_hitl.models.ScriptedChatModel`
            (``Turn`` objects or functions of the messages the model sees).
        tools: the toolkit's tools (AgentScope ``ToolBase`` / ``FunctionTool``).
        name: the agent's name (pauses and audit lines carry it).
        system_prompt: the agent's system prompt.
        recorder: a middleware to register (e.g. ``tests.support.InputRecorder``).
        state: an ``AgentState`` to start from (a restored reply).
        on_exhausted: what the model does when the script runs out
            (``"raise"``: the test fails loudly; see ``ScriptedChatModel``).
    """
    return Agent(
        name=name,
        system_prompt=system_prompt,
        model=ScriptedChatModel(script, on_exhausted=on_exhausted),
        toolkit=Toolkit(tools=list(tools)),
        middlewares=[recorder] if recorder is not None else None,
        state=state,
    )


def sandbox_agent(
    folder: Path,
    script: Sequence[Any],
    *,
    name: str = "deleter",
    recorder: MiddlewareBase | None = None,
    state: AgentState | None = None,
) -> Agent:
    """:func:`scripted_agent` with :func:`nb_hitl.demo.sandbox_tools` over ``folder``."""
    return scripted_agent(script, sandbox_tools(folder), name=name, recorder=recorder, state=state)


def files(folder: Path) -> list[str]:
    """The names of what ``folder`` holds, sorted."""
    return sorted(p.name for p in folder.iterdir())


class Lookup(ToolBase):
    """An external tool (AgentScope's ``is_external_tool=True``): whoever drives the
    agent runs it, so a ``lookup`` call parks the reply as an ``external`` pause.
    Its permission check always allows (no confirmation first)."""

    name = "lookup"
    description = "Look a word up in the user's own dictionary."
    input_schema = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}
    is_concurrency_safe = True
    is_read_only = True
    is_external_tool = True

    async def check_permissions(self, tool_input: dict[str, Any], context: Any) -> PermissionDecision:
        return PermissionDecision(behavior=PermissionBehavior.ALLOW, message="lookup is always allowed")


def deletion_cell(name: str, paths: Sequence[str] = ("old_log.txt",)) -> str:
    """A notebook cell (source text) that makes ``box`` (a demo sandbox), ``agent`` (named
    ``name``, asking to delete each of ``paths`` in turn, then saying "All done.") and
    ``session = Session(agent)``: the set-up of the kernel and browser tests of one pause."""
    turns = "".join(f'        Turn("Deleting {p}.", [tool_call("delete_file", path={p!r})]),\n' for p in paths)
    return (
        "from agentscope.agent import Agent\n"
        "from agentscope.tool import Toolkit\n"
        "from nb_hitl import Session\n"
        "from nb_hitl.demo import make_sandbox, sandbox_tools\n"
        "from nb_hitl.models import ScriptedChatModel, Turn, tool_call\n"
        "box = make_sandbox()\n"
        "agent = Agent(\n"
        f"    name={name!r}, system_prompt='x',\n"
        "    model=ScriptedChatModel([\n"
        f"{turns}"
        '        Turn("All done."),\n'
        "    ], on_exhausted='raise'),\n"
        "    toolkit=Toolkit(tools=sandbox_tools(box)),\n"
        ")\n"
        "session = Session(agent)\n"
    )


def counter_tools(counter: Path) -> list[Any]:
    """``peek`` (read-only), ``bump`` (asks; adds to the counter file) and AgentScope's ``AskUser``."""

    def peek() -> ToolChunk:
        """Read the counter."""
        return ToolChunk(content=[TextBlock(text=counter.read_text())], state=ToolResultState.SUCCESS)

    def bump(step: int) -> ToolChunk:
        """Add to the counter.

        Args:
            step (int): how much to add.
        """
        value = int(counter.read_text()) + step
        counter.write_text(str(value))
        return ToolChunk(content=[TextBlock(text=f"The counter is now {value}.")], state=ToolResultState.SUCCESS)

    return [FunctionTool(peek, is_read_only=True), FunctionTool(bump), AskUser()]
