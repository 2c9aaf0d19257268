"""A dry run of a file-editing call: the real tool, in a throw-away temporary copy.

A confirmation of AgentScope's built-in ``Write`` or ``Edit`` (on its
``LocalBackend``) offers a "Dry run" button: the page sends ``{"action":
"dry_run", "tool_call_id", "reply_id"}``. The call runs with a new instance
of the same tool class and the same input the Approve button would run, but
its file access goes through :class:`CopyBackend`: every path is mapped into
a fresh temporary directory, into which the files the call touches were
copied first (their bytes and modification times; and a parent path that
is a file, so a write under it fails as it would). The real workspace is only
read, never written. AgentScope's "read before edit" check runs as it would:
the tool gets a copy of the agent's state whose read cache is its own (the
copied file keeps its modification time, so a file the agent read is still
"read"), and whatever the tool writes into that cache is dropped with it.

A dry run is not an answer: the pause stays open, nothing is audited, no
status changes and the agent is not resumed. It answers with what the tool
did in the copy (:class:`DryRunView`): the files created, changed or deleted
as unified diffs (:func:`nb_hitl.file_change.file_diff`), the tool's output
text and its end state.

AgentScope's ``Bash`` is dry-run in a bubblewrap sandbox on a copy of its
working directory, where bubblewrap runs (:mod:`nb_hitl.dry_run_shell`). A
tool that works inside one folder and can give a copy of itself rebased on
another (the :class:`~nb_hitl.dry_run_folder.FolderTool` protocol: ``folder``
and ``in_folder(folder)``) is dry-run on a copy of that folder
(:mod:`nb_hitl.dry_run_folder`). Other tools (and ``Write``/``Edit`` on
another backend, a relative path, or a tool with middlewares of its own,
which could act outside the copy) cannot be dry-run: their card's view says
so (``dry_run`` is ``False``), the page draws no button, and a ``dry_run``
action is refused with the reason (:func:`why_not`).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, TypedDict

from agentscope.tool import Bash, Edit, ToolChunk, ToolResponse, Write
from agentscope.tool._builtin._backend import DirEntry, ExecResult, LocalBackend

from ._agentscope import enum_value
from .errors import DecisionError
from .file_change import FileChangeView, file_diff
from .labels import pause_label

if TYPE_CHECKING:
    from .pauses import Pause

log = logging.getLogger("nb_hitl.dry_run")

__all__ = [
    "DryRunFile",
    "DryRunView",
    "MAX_COPY_BYTES",
    "SANDBOX",
    "CopyBackend",
    "can_dry_run",
    "why_not",
    "dry_run",
    "dry_run_input",
    "tool_kwargs",
]

SANDBOX = "a temporary copy"
"""Where a dry run runs, as the card says it ("Dry run in a temporary copy")."""

MAX_COPY_BYTES = 64 * 1024 * 1024
"""A file the call touches that is larger than this is not copied: the dry run is refused."""


class DryRunFile(TypedDict):
    """One file the dry run created, changed or deleted in the copy.

    ``path`` is the real path (as the call names it); ``change`` is
    ``"created"``, ``"changed"`` or ``"deleted"``; ``diff`` the file's
    :class:`~nb_hitl.file_change.FileChangeView` (a deleted file shows every
    line removed, and its ``note`` says it was deleted).
    """

    path: str
    change: str
    diff: FileChangeView


class DryRunView(TypedDict):
    """What a dry run did, as the page shows it (every string is text).

    ``sandbox`` names where it ran (:data:`SANDBOX`); ``summary`` one sentence
    saying so; ``state`` the tool's end state (AgentScope's
    ``ToolResultState`` value: ``"success"``, ``"error"``...); ``output`` the
    tool's output text; ``files`` what it did to files, in path order;
    ``folder`` the real folder that was copied (a folder tool's folder, a
    ``Bash`` call's working directory), ``""`` when only the files the call
    names were copied (``Write``, ``Edit``): the page names a file in the copy
    by its path inside ``folder``, else by its real path as "a copy of" it.
    """

    tool_call_id: str
    tool_name: str
    sandbox: str
    folder: str
    summary: str
    state: str
    output: str
    files: list[DryRunFile]


class CopyBackend(LocalBackend):
    """AgentScope's ``LocalBackend`` with every path mapped into ``root``.

    An absolute path ``/a/b`` is ``<root>/a/b`` (``..`` is resolved first, so
    no path leaves ``root``); the path helpers (``isabs``, ``dirname``...) are
    the local ones. It runs no command: ``exec_shell`` answers exit code 126.

    Args:
        root: the temporary directory that stands for ``/``.
    """

    def __init__(self, root: str) -> None:
        super().__init__()
        self.root = root

    def _m(self, path: str) -> str:
        return _inside(self.root, path)

    async def exec_shell(
        self, command: list[str], *, cwd: str | None = None, timeout: float | None = None
    ) -> ExecResult:
        """Runs nothing: a dry run runs no command (exit code 126)."""
        return ExecResult(exit_code=126, stdout=b"", stderr=b"a dry run runs no command")

    async def read_file(self, path: str) -> bytes:
        """The bytes of ``path`` in the copy."""
        return bytes(await super().read_file(self._m(path)))

    async def write_file(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` in the copy (parent directories created)."""
        await super().write_file(self._m(path), data)

    async def write_stream(self, path: str, stream: AsyncIterator[bytes]) -> None:
        """Write ``stream`` to ``path`` in the copy."""
        await super().write_stream(self._m(path), stream)

    async def read_stream(self, path: str, chunk_size: int = 1024 * 1024) -> AsyncIterator[bytes]:
        """The bytes of ``path`` in the copy, ``chunk_size`` at a time."""
        async for chunk in super().read_stream(self._m(path), chunk_size):
            yield chunk

    async def file_exists(self, path: str) -> bool:
        """Whether ``path`` exists in the copy."""
        return bool(await super().file_exists(self._m(path)))

    async def is_dir(self, path: str) -> bool:
        """Whether ``path`` is a directory in the copy."""
        return bool(await super().is_dir(self._m(path)))

    async def list_dir(self, path: str, *, recursive: bool = False) -> list[str]:
        """``path``'s entries in the copy (recursive: the files' paths as the tool names them)."""
        found = await super().list_dir(self._m(path), recursive=recursive)
        if not recursive:
            return list(found)
        return [os.path.join(os.sep, os.path.relpath(f, self.root)) for f in found]

    async def scandir(self, path: str) -> list[DirEntry]:
        """``path``'s entries in the copy, with their metadata."""
        return list(await super().scandir(self._m(path)))

    async def stat(self, path: str) -> DirEntry | None:
        """``path``'s type, size and mtime in the copy, or ``None``."""
        return await super().stat(self._m(path))

    async def stat_mtime(self, path: str) -> float | None:
        """``path``'s modification time in the copy, or ``None``."""
        return await super().stat_mtime(self._m(path))

    async def delete_path(self, path: str) -> None:
        """Delete ``path`` in the copy."""
        await super().delete_path(self._m(path))


def _inside(root: str, path: str) -> str:
    """``path`` mapped into ``root`` (an absolute, normalized path)."""
    norm = os.path.normpath(os.path.join(os.sep, path))
    return os.path.join(root, os.path.relpath(norm, os.sep))


def dry_run_input(pause: Pause) -> dict[str, Any] | None:
    """The input Approve would run: an edit awaiting more approvals, else AgentScope's reading."""
    edited = pause.approved_input
    return edited if isinstance(edited, dict) else pause.input


def why_not(tool: Any, tool_input: dict[str, Any] | None) -> str | None:
    """Why a call of ``tool`` with ``tool_input`` cannot be dry-run, or ``None`` when it can."""
    if tool is not None and type(tool) is Bash:
        from .dry_run_shell import shell_why_not  # imported here: it builds on this module

        return shell_why_not(tool, tool_input)
    from .dry_run_folder import FolderTool, folder_why_not  # imported here: it builds on this module

    if isinstance(tool, FolderTool):
        return folder_why_not(tool)
    if tool is None or type(tool) not in (Write, Edit):
        return (
            "only AgentScope's Write, Edit and Bash, and tools that declare the one folder they work in "
            "(nb_hitl.dry_run_folder.FolderTool), can be dry-run"
        )
    if type(tool._backend) is not LocalBackend:
        return "the tool works through a sandbox backend of its own, which a temporary copy does not stand in for"
    if getattr(tool, "_middlewares", None):
        return "the tool has middlewares, which could act outside a temporary copy"
    path = (tool_input or {}).get("file_path")
    if not isinstance(path, str) or not path or not os.path.isabs(path):
        return "the call names no absolute file_path"
    return None


def can_dry_run(tool: Any, tool_input: dict[str, Any] | None) -> bool:
    """Whether a call of ``tool`` with ``tool_input`` can be dry-run (see the module's header)."""
    return why_not(tool, tool_input) is None


def _copy_path(root: str, path: str) -> dict[str, bytes | None]:
    """Copy what the call on ``path`` meets into ``root``: the file (or directory) itself, and
    the nearest parent that exists and is not a directory (a write under it fails in the copy as
    it would for real). Returns their bytes by real path (``None``: no file).

    Raises:
        DecisionError: as :func:`_copy_in`.
    """
    real = os.path.normpath(path)
    met = {real: _copy_in(root, real)}
    parent = os.path.dirname(real)
    while parent and parent != os.path.dirname(parent) and not os.path.isdir(parent):
        if os.path.lexists(parent):
            met[parent] = _copy_in(root, parent)
            break
        parent = os.path.dirname(parent)
    return met


def _copy_in(root: str, real: str) -> bytes | None:
    """Copy the real ``real`` into ``root`` (bytes and times); its bytes, ``None`` when it is no file.

    Raises:
        DecisionError: the file is larger than :data:`MAX_COPY_BYTES`, or cannot be copied.
    """
    inside = _inside(root, real)
    if os.path.isdir(real):
        os.makedirs(inside, exist_ok=True)
        return None
    if not os.path.isfile(real):
        return None
    size = os.path.getsize(real)
    if size > MAX_COPY_BYTES:
        raise DecisionError(
            f"{real} is too large to copy for a dry run ({size} bytes; the limit is {MAX_COPY_BYTES}).", field="action"
        )
    try:
        os.makedirs(os.path.dirname(inside), exist_ok=True)
        shutil.copy2(real, inside)  # keeps the modification time: the agent's read cache still matches
        with open(inside, "rb") as f:
            return f.read()
    except OSError as exc:
        raise DecisionError(f"{real} could not be copied for a dry run ({exc}).", field="action") from exc


def _files_after(root: str) -> dict[str, bytes]:
    """Every file in the copy, by its real path."""
    found: dict[str, bytes] = {}
    for top, _dirs, names in os.walk(root):
        for name in names:
            inside = os.path.join(top, name)
            with open(inside, "rb") as f:
                found[os.path.join(os.sep, os.path.relpath(inside, root))] = f.read()
    return found


def changes(before: dict[str, bytes | None], after: dict[str, bytes]) -> list[DryRunFile]:
    """What happened between ``before`` and ``after`` (file bytes by path; ``None``: no file), in path order."""
    files: list[DryRunFile] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if new is None:
            if old is None:
                continue
            diff = file_diff(path, old, None)
            diff["note"] = " ".join(filter(None, ["The dry run deleted this file.", diff["note"]]))
            files.append(DryRunFile(path=path, change="deleted", diff=diff))
        elif old is None:
            files.append(DryRunFile(path=path, change="created", diff=file_diff(path, None, new)))
        elif old != new:
            files.append(DryRunFile(path=path, change="changed", diff=file_diff(path, old, new)))
    return files


def _did(files: list[DryRunFile]) -> str:
    """What ``files`` amount to, in words: "1 file created", "2 files changed, 1 deleted", "no file changed"."""
    counts = [
        (n, change) for change in ("created", "changed", "deleted") if (n := sum(f["change"] == change for f in files))
    ]
    if not counts:
        return "no file changed"
    (n, first), rest = counts[0], counts[1:]
    return ", ".join([f"{n} file{'' if n == 1 else 's'} {first}", *(f"{m} {change}" for m, change in rest)])


async def run_in_copy(tool: Any, tool_input: dict[str, Any], state: Any) -> tuple[str, str, list[DryRunFile]]:
    """Run a new ``type(tool)`` with ``tool_input`` in a fresh temporary copy; returns
    ``(state, output text, files)``. The copy is removed before it returns.

    ``state`` is the agent's state: the tool gets a copy whose read cache is
    its own (the real one is not touched), or ``None`` when the tool takes none.

    Raises:
        DecisionError: a file the call touches is too large to copy, or cannot be copied.
    """
    with tempfile.TemporaryDirectory(prefix="nb_hitl-dry-run-") as root:
        before = _copy_path(root, tool_input["file_path"])
        twin = type(tool)(
            dangerous_files=list(tool.dangerous_files),
            dangerous_directories=list(tool.dangerous_directories),
            backend=CopyBackend(root),
        )
        state, output = await run_tool(twin, tool_kwargs(twin, tool_input, state))
        return state, output, changes(before, _files_after(root))


def tool_kwargs(tool: Any, tool_input: dict[str, Any], state: Any) -> dict[str, Any]:
    """The arguments a dry run calls ``tool`` with: ``tool_input``, and for a tool that takes the
    agent's state (``is_state_injected``), a copy of ``state`` whose read cache is its own."""
    kwargs = dict(tool_input)
    if getattr(tool, "is_state_injected", False) and state is not None:
        kwargs["_agent_state"] = state.model_copy(update={"tool_context": state.tool_context.model_copy(deep=True)})
    return kwargs


async def run_tool(twin: Any, kwargs: dict[str, Any]) -> tuple[str, str]:
    """Call the tool ``twin`` with ``kwargs`` as the toolkit would; its ``(end state, output text)``.

    A tool that raises ends with state ``"error"`` and the exception as its
    output (as the toolkit would turn it into an error result).
    """
    response = ToolResponse()
    try:
        result = await twin(**kwargs)
        if isinstance(result, ToolChunk):
            response.append_chunk(result)
        else:
            async for chunk in result:
                response.append_chunk(chunk)
    except Exception as exc:  # the toolkit turns it into an error result: so does the dry run
        log.info("the dry run of %s raised", type(twin).__name__, exc_info=True)
        return "error", f"The tool raised {type(exc).__name__}: {exc}"
    return str(enum_value(response.state)), "".join(getattr(b, "text", "") for b in response.content)


async def dry_run(agent: Any, pause: Pause) -> DryRunView:
    """Dry-run the call of ``pause`` (an open confirmation) with ``agent``'s tool, in a temporary copy.

    Returns:
        a :class:`DryRunView`.

    Raises:
        DecisionError: the call cannot be dry-run (``field`` ``"action"``),
            or a file it touches is too large to copy or cannot be copied.
    """
    from .dry_run_folder import FolderTool, run_in_folder_copy  # imported here: it builds on this module

    tool = await agent.toolkit.get_tool(pause.tool_name)
    tool_input = dry_run_input(pause)
    # pause.dry_run: set on the permission engine's confirmations only (nb_hitl.file_change.describe_file_pause)
    reason = why_not(tool, tool_input) or (
        None if pause.dry_run else "its card offers no dry run (only the permission engine's confirmations do)"
    )
    if reason is not None or tool_input is None:
        raise DecisionError(f"{pause_label(pause)} cannot be dry-run: {reason}.", field="action")
    if type(tool) is Bash:
        from .dry_run_shell import run_in_sandbox, workspace_of

        state, output, files, sandbox = await run_in_sandbox(tool, tool_input)
        where = f"{sandbox} on a throw-away copy of its working directory (network cut, nothing else writable)"
        folder = workspace_of(tool)
    elif isinstance(tool, FolderTool):
        from .dry_run_folder import folder_of

        state, output, files = await run_in_folder_copy(tool, tool_input, agent.state)
        sandbox = SANDBOX
        where = f"{SANDBOX} of its folder"
        folder = folder_of(tool)
    else:
        state, output, files = await run_in_copy(tool, tool_input, agent.state)
        sandbox = where = SANDBOX
        folder = ""
    summary = (
        f"Dry run in {where}: {pause.tool_name} ran with the input Approve would run and ended "
        f"with state {state}; {_did(files)}. The real files were not touched; the call still waits for your answer."
    )
    return DryRunView(
        tool_call_id=pause.tool_call_id,
        tool_name=pause.tool_name,
        sandbox=sandbox,
        folder=folder,
        summary=summary,
        state=state,
        output=output,
        files=files,
    )
