"""A dry run of a tool that works inside one folder: a copy of the tool, rebased on a throw-away copy of the folder.

The protocol (:class:`FolderTool`): a tool that reads and writes nothing
outside one folder says so with

- ``folder``: that folder's path (``str`` or ``os.PathLike``, absolute);
- ``in_folder(folder: str) -> tool``: a new instance of the same tool that
  does the same, but in ``folder`` instead (same name, same input schema).

Its confirmation then offers "Dry run" (:mod:`nb_hitl.dry_run`): the folder
is copied into a fresh temporary directory (files with their modification
times, directories, symbolic links as links; at most
:data:`MAX_WORKSPACE_FILES` files and :data:`MAX_WORKSPACE_BYTES` bytes),
``in_folder(copy)`` runs with the input Approve would run, and what it did
to the copy is reported by the real paths the files stand for (created,
changed or deleted, as diffs, :func:`nb_hitl.dry_run.changes`). The copy is
removed after; the real folder is only read.

nb_hitl cannot confine a Python function: the dry run is as safe as the
tool's word that it acts only inside ``folder``. A tool with middlewares of
its own is refused (they could act outside the copy). To show its diff on
the card (and bind an approval to the file seen), such a tool also
implements ``planned_change`` (:mod:`nb_hitl.file_change`); the quickstart's
``delete_file`` does both (:class:`nb_hitl.demo.SandboxDelete`).

AgentScope's ``Bash`` is dry-run on a copy of its working directory made by
the same functions (:func:`copy_folder`, :func:`files_in`), in a bubblewrap
sandbox (:mod:`nb_hitl.dry_run_shell`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, Protocol, runtime_checkable

from .dry_run import DryRunFile, changes, run_tool, tool_kwargs
from .errors import DecisionError

__all__ = [
    "FolderTool",
    "MAX_WORKSPACE_BYTES",
    "MAX_WORKSPACE_FILES",
    "copy_folder",
    "files_in",
    "folder_of",
    "folder_why_not",
    "run_in_folder_copy",
]

MAX_WORKSPACE_BYTES = 64 * 1024 * 1024
"""A folder larger than this (all its files) is not copied: the dry run is refused."""

MAX_WORKSPACE_FILES = 20_000
"""A folder with more files than this is not copied: the dry run is refused."""


@runtime_checkable
class FolderTool(Protocol):
    """A tool that works inside one folder and can give a copy of itself rebased on another (see the module)."""

    @property
    def folder(self) -> str | os.PathLike[str]:
        """The one folder the tool reads and writes (absolute)."""
        ...

    def in_folder(self, folder: str) -> Any:
        """A new instance of the tool that does the same in ``folder`` instead."""
        ...


def folder_of(tool: FolderTool) -> str:
    """The real path of ``tool``'s folder (symbolic links resolved)."""
    return os.path.realpath(os.fspath(tool.folder))


def folder_why_not(tool: FolderTool) -> str | None:
    """Why a call of a :class:`FolderTool` cannot be dry-run, or ``None`` when it can."""
    if getattr(tool, "_middlewares", None):
        return "the tool has middlewares, which could act outside a copy of its folder"
    if not os.path.isdir(folder_of(tool)):
        return f"its folder {folder_of(tool)} does not exist"
    return None


def copy_folder(real: str, copy: str) -> dict[str, bytes]:
    """Copy the directory ``real`` into ``copy`` (files with their times, directories, symbolic
    links as links); returns every regular file's bytes by its real path.

    Raises:
        DecisionError: the folder is over :data:`MAX_WORKSPACE_BYTES` or
            :data:`MAX_WORKSPACE_FILES`, or a file cannot be read.
    """
    files: dict[str, bytes] = {}
    size = 0
    for top, dirs, names in os.walk(real):
        rel = os.path.relpath(top, real)
        os.makedirs(os.path.join(copy, rel), exist_ok=True)
        for name in [*names, *(d for d in dirs if os.path.islink(os.path.join(top, d)))]:
            src, dst = os.path.join(top, name), os.path.normpath(os.path.join(copy, rel, name))
            if os.path.islink(src):
                os.symlink(os.readlink(src), dst)
                continue
            if not os.path.isfile(src):
                continue  # a socket or a pipe: not copied
            size += os.path.getsize(src)
            if size > MAX_WORKSPACE_BYTES or len(files) >= MAX_WORKSPACE_FILES:
                raise DecisionError(
                    f"The workspace {real} is too large to copy for a dry run (over {MAX_WORKSPACE_FILES} files "
                    f"or {MAX_WORKSPACE_BYTES} bytes).",
                    field="action",
                )
            try:
                shutil.copy2(src, dst)
                with open(dst, "rb") as f:
                    files[os.path.normpath(src)] = f.read()
            except OSError as exc:
                raise DecisionError(f"{src} could not be copied for a dry run ({exc}).", field="action") from exc
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d))]
    return files


def files_in(copy: str, real: str) -> dict[str, bytes]:
    """Every regular file in ``copy`` (links not followed), by the real path it stands for."""
    found: dict[str, bytes] = {}
    for top, dirs, names in os.walk(copy):
        for name in names:
            inside = os.path.join(top, name)
            if os.path.islink(inside) or not os.path.isfile(inside):
                continue
            with open(inside, "rb") as f:
                found[os.path.normpath(os.path.join(real, os.path.relpath(inside, copy)))] = f.read()
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d))]
    return found


async def run_in_folder_copy(
    tool: FolderTool, tool_input: dict[str, Any], state: Any
) -> tuple[str, str, list[DryRunFile]]:
    """Run ``tool.in_folder(copy)`` with ``tool_input`` on a fresh copy of ``tool.folder``.

    ``state`` is the agent's state, handed (as a copy) to a tool that takes it
    (:func:`nb_hitl.dry_run.tool_kwargs`).

    Returns:
        ``(state, output text, files)``: the tool's end state and output,
        and what it did to the copy's files, by the real paths they stand
        for. The copy is removed before it returns.

    Raises:
        DecisionError: the folder is too large to copy, or a file cannot be copied.
    """
    real = folder_of(tool)
    with tempfile.TemporaryDirectory(prefix="nb_hitl-dry-run-") as root:
        copy = os.path.join(root, os.path.basename(real) or "folder")
        before = copy_folder(real, copy)
        twin = tool.in_folder(copy)
        end, output = await run_tool(twin, tool_kwargs(twin, tool_input, state))
        return end, output, changes(dict(before), files_in(copy, real))
