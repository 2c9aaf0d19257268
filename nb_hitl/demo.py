"""The quickstart's agent: a real AgentScope ``Agent`` tidying a sandbox folder.

It runs offline on :class:`~nb_hitl.models.ScriptedChatModel`:

1. lists the files (``list_files``, read-only, allowed without asking);
2. asks which file to delete with AgentScope's built-in ``AskUser`` (an
   external tool: the reply parks with ``RequireExternalExecutionEvent``);
3. calls ``delete_file`` on the chosen file (a function tool: the permission
   engine asks, the reply parks with ``RequireUserConfirmEvent``); its card
   shows the deletion as a diff and offers a dry run in a copy of the folder
   (:class:`SandboxDelete`);
4. reports what really happened, read from the tool results the model was
   sent (deleted, denied, or the edited path).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from agentscope.agent import Agent
from agentscope.message import TextBlock, ToolResultState
from agentscope.state import AgentState
from agentscope.tool import AskUser, FunctionTool, ToolChunk, Toolkit

from ._agentscope import enum_value
from .file_change import PlannedChange
from .models import ScriptedChatModel, Turn, result_shown, result_text, tool_call, tool_results

__all__ = ["SandboxDelete", "make_sandbox", "sandbox_tools", "demo_script", "demo_agent"]

_FILES = {
    "notes.txt": "Meeting notes, 3 March\n- ship the notebook widget\n- ask Ana about the AG-UI server\n",
    "old_log.txt": "2026-01-01 00:00:01 started\n2026-01-01 00:00:02 stopped\n" * 3,
    "draft.md": "# Draft\n\nA first paragraph nobody has read yet.\n",
}


def make_sandbox(folder: str | Path | None = None) -> Path:
    """Create (or refill) a sandbox folder with three small text files.

    Args:
        folder: where; a new temporary folder when omitted.

    Returns:
        the folder's absolute path.
    """
    path = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="nb_hitl_sandbox_"))
    path.mkdir(parents=True, exist_ok=True)
    for name, text in _FILES.items():
        (path / name).write_text(text, encoding="utf-8")
    return path.resolve()


def _inside(sandbox: Path, name: str) -> Path:
    target = (sandbox / name).resolve()
    if sandbox != target.parent and sandbox not in target.parents:
        raise ValueError(f"{name!r} is outside the sandbox")
    return target


def _delete_file_in(sandbox: Path) -> Any:
    def delete_file(path: str) -> ToolChunk:
        """Delete one file from the sandbox folder.

        Args:
            path (str): the file's name inside the sandbox, e.g. "notes.txt".
        """
        try:
            target = _inside(sandbox, path)
            target.unlink()
        except (OSError, ValueError) as exc:
            return ToolChunk(content=[TextBlock(text=f"Could not delete {path}: {exc}")], state=ToolResultState.ERROR)
        return ToolChunk(content=[TextBlock(text=f"Deleted {path}.")], state=ToolResultState.SUCCESS)

    return delete_file


class SandboxDelete(FunctionTool):
    """``delete_file(path)``: AgentScope's ``FunctionTool`` deleting one file of one folder.

    It says what it would change and can run in a throw-away copy:

    - ``planned_change(tool_input)`` (:mod:`nb_hitl.file_change`): the file's
      bytes now and ``deletes=True``, so the card shows every line removed
      and an approval is bound to the file's hash (a file that changed or
      vanished before the call runs is asked about again);
    - ``folder`` and ``in_folder(folder)`` (:class:`nb_hitl.dry_run_folder.FolderTool`):
      the card's "Dry run" deletes the file in a copy of the folder.

    Args:
        folder: the sandbox folder (resolved to an absolute path).
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).resolve()
        super().__init__(_delete_file_in(self.folder))

    def in_folder(self, folder: str) -> SandboxDelete:
        """The same tool, deleting in ``folder`` instead."""
        return SandboxDelete(folder)

    def planned_change(self, tool_input: dict[str, Any]) -> PlannedChange | None:
        """The deletion a call would make: ``PlannedChange(path, bytes now, None, deletes=True)``;
        ``before`` is ``None`` when there is no such file (the tool would fail). For a path outside
        the folder, the tool's refusal (``refused``, the words it fails with; no file changes).

        Raises:
            OSError: the file exists but cannot be read.
        """
        name = tool_input.get("path")
        if not isinstance(name, str) or not name:
            return None
        try:
            target = _inside(self.folder, name)
        except ValueError as exc:
            return PlannedChange(str((self.folder / name).resolve()), None, None, refused=f"delete_file fails: {exc}")
        before = target.read_bytes() if target.is_file() else None
        return PlannedChange(str(target), before, None, deletes=True)


def sandbox_tools(sandbox: Path) -> list[Any]:
    """The demo's tools over ``sandbox``: ``list_files`` (read-only, no
    confirmation), ``delete_file`` (asks; :class:`SandboxDelete`) and AgentScope's ``AskUser``."""

    def list_files() -> ToolChunk:
        """List the files in the sandbox folder with their sizes."""
        lines = [f"{p.name}\t{p.stat().st_size} bytes" for p in sorted(sandbox.iterdir()) if p.is_file()]
        return ToolChunk(content=[TextBlock(text="\n".join(lines) or "(empty)")], state=ToolResultState.SUCCESS)

    return [FunctionTool(list_files, is_read_only=True), SandboxDelete(sandbox), AskUser()]


def _preview(sandbox: Path, name: str) -> str:
    try:
        return (sandbox / name).read_text(encoding="utf-8")[:400]
    except OSError:
        return ""


def _sentence(text: str) -> str:
    """``text`` ending as a sentence does (a full stop added when it ends without one), so the
    next sentence does not run on: "…outside the sandbox. The folder holds…"."""
    text = text.strip()
    return text if not text or text.endswith((".", "!", "?", "…")) else f"{text}."


def demo_script(sandbox: Path) -> list[Any]:
    """The scripted turns of the demo (see the module docstring)."""

    def ask(messages: list[Any]) -> Turn:
        listing = result_text((tool_results(messages, "list_files") or [None])[-1])
        names = [line.split("\t")[0] for line in listing.splitlines() if "\t" in line][:4]
        if len(names) < 2:
            return Turn("There is not enough here to tidy up. I'll stop.")
        options = [
            {
                "label": n,
                "description": next(
                    (line.split("\t")[1] for line in listing.splitlines() if line.startswith(n + "\t")), ""
                ),
                "preview": _preview(sandbox, n),
            }
            for n in names
        ]
        return Turn(
            f"I found {len(names)} files. Let me ask which one to clean up.",
            [
                tool_call(
                    "AskUser",
                    questions=[
                        {
                            "question": "Which file should I delete?",
                            "header": "Cleanup",
                            "context": listing,
                            "options": options,
                        }
                    ],
                )
            ],
        )

    def delete(messages: list[Any]) -> Turn:
        answer = (tool_results(messages, "AskUser") or [None])[-1]
        answers = (answer.metadata or {}).get("answers", []) if answer is not None else []
        chosen = None
        if answers:
            chosen = (answers[0].get("selected") or [None])[0] or answers[0].get("other")
        if not chosen:
            return Turn("You did not pick a file, so I deleted nothing.")
        return Turn(f"You picked {chosen}. Deleting it now.", [tool_call("delete_file", path=chosen)])

    def report(messages: list[Any]) -> Turn:
        result = (tool_results(messages, "delete_file") or [None])[-1]
        if result is None:
            return Turn("Nothing was deleted.")
        state = enum_value(result.state)
        remaining = ", ".join(sorted(p.name for p in sandbox.iterdir() if p.is_file())) or "nothing"
        if state == "denied":
            return Turn(
                f"Understood: you denied the deletion, so I left every file in place. The folder holds: {remaining}."
            )
        said = _sentence(result_shown(result))
        if state == "success":
            return Turn(f"Done. {said} The folder now holds: {remaining}.")
        return Turn(f"The deletion did not happen ({state}): {said} The folder holds: {remaining}.")

    first = Turn("Let me look at the sandbox first.", [tool_call("list_files")])

    def step(messages: list[Any]) -> Turn:
        # decide from what the model was sent since the user's last message,
        # as a real model would: a restored agent (new model, old history)
        # picks up where it was, and a new request starts over
        last_user = max((i for i, m in enumerate(messages) if getattr(m, "role", None) == "user"), default=-1)
        messages = messages[last_user + 1 :]
        if not tool_results(messages, "list_files"):
            return first
        if not tool_results(messages, "AskUser"):
            return ask(messages)
        if not tool_results(messages, "delete_file"):
            return delete(messages)
        return report(messages)

    return [step] * 200  # a few turns per request: enough for many re-runs of a cell


def demo_agent(
    sandbox: str | Path | None = None,
    *,
    stream: bool = True,
    chunk_delay: float = 0.02,
    state: AgentState | None = None,
    name: str = "tidy",
) -> Agent:
    """The quickstart's agent: a real ``agentscope.agent.Agent`` on the
    scripted offline model (or the real model ``NB_HITL_MODEL`` names, see
    :func:`nb_hitl.model_config.model_from_env`), with the sandbox tools.

    Args:
        sandbox: the folder to tidy (created and filled when omitted).
        stream: let the model stream its text.
        chunk_delay: seconds between streamed words (visible streaming).
        state: an ``AgentState`` to start from (a restored checkpoint).
        name: the agent's name.

    Returns:
        the agent; ``agent.sandbox`` is the folder's ``Path``.

    Raises:
        ModelConfigError: ``NB_HITL_MODEL`` is set but a key variable or
            package it needs is missing.
    """
    folder = make_sandbox(sandbox) if sandbox is None or not Path(sandbox).exists() else Path(sandbox).resolve()
    # the model: the offline script unless NB_HITL_MODEL names a real one (see nb_hitl.model_config)
    from .model_config import model_from_env

    model = model_from_env(
        lambda: ScriptedChatModel(demo_script(folder), stream=stream, chunk_delay=chunk_delay), stream=stream
    )
    agent = Agent(
        name=name,
        system_prompt=(
            "You tidy up the user's sandbox folder with your tools. First call list_files. Then ask the user "
            "which one file to delete with the AskUser tool: one question, the file names as options, their "
            "sizes as descriptions. Delete only the file the user picked, with delete_file (the user confirms "
            "it). Finally say in one or two sentences what really happened: deleted, denied, or not possible."
        ),
        model=model,
        toolkit=Toolkit(tools=sandbox_tools(folder)),
        state=state,
    )
    agent.sandbox = folder  # type: ignore[attr-defined]
    return agent
