"""A dry run of AgentScope's ``Bash``: the real tool, in a bubblewrap sandbox on a throw-away copy.

A shell command can touch any file, so a temporary copy of one file (what
``Write`` and ``Edit`` get, :mod:`nb_hitl.dry_run`) does not stand in for it:
a ``Bash`` confirmation offers "Dry run" only where Debian's ``bubblewrap``
(``bwrap``) runs. The call then runs with a new ``Bash`` whose backend is
AgentScope's own :class:`agentscope.workspace.BubblewrapBackend`, over a copy
of the tool's workspace (its ``cwd``, else the kernel's working directory):

- the copy is mounted read-write at the workspace's real path (so relative
  and absolute paths into the workspace both land in the copy) and at
  ``/workspace`` (``$HOME``); a fresh empty directory is ``/tmp``;
- the rest of the machine is absent, or read-only (``/usr``, ``/bin``,
  ``/lib``, a few files of ``/etc``); the network is cut; the process gets
  its own user, PID, IPC and UTS namespaces (``--unshare-all``).

What the command did to the copy is reported as diffs (files created,
changed, deleted), with its output and end state; the copy is removed after.
Where ``bwrap`` is missing or cannot make its namespaces (a container
without user namespaces), there is no button, and the reason is AgentScope's
probe's own error (:func:`bwrap_problem`).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import tempfile
from typing import Any

from agentscope.tool import Bash
from agentscope.tool._builtin._backend import LocalBackend
from agentscope.workspace import BubblewrapBackend
from agentscope.workspace._bubblewrap._constants import BWRAP_SMOKE_PROBE_ARGV

from .dry_run import DryRunFile, changes, run_tool
from .errors import DecisionError

log = logging.getLogger("nb_hitl.dry_run")

__all__ = ["BWRAP", "MAX_WORKSPACE_BYTES", "MAX_WORKSPACE_FILES", "bwrap_problem", "shell_why_not", "run_in_sandbox"]

BWRAP = "bwrap"
"""The bubblewrap program (looked up on ``PATH``)."""

MAX_WORKSPACE_BYTES = 64 * 1024 * 1024
"""A workspace larger than this (all its files) is not copied: the dry run is refused."""

MAX_WORKSPACE_FILES = 20_000
"""A workspace with more files than this is not copied: the dry run is refused."""


@functools.cache
def _probe(program: str) -> tuple[str | None, str]:
    """``(problem, version)`` of ``program``: AgentScope's smoke probe run once per program."""
    found = shutil.which(program)
    if found is None:
        return f"bubblewrap ({program!r}) is not installed", ""
    try:
        version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=5).stdout.strip()
        probe = subprocess.run(
            [found, *BWRAP_SMOKE_PROBE_ARGV[1:]], capture_output=True, text=True, timeout=10, start_new_session=True
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not be started ({exc})", ""
    if probe.returncode != 0:
        why = probe.stderr.strip() or f"exit code {probe.returncode}"
        return f"bubblewrap cannot make its sandbox here: {why}", version
    return None, version


def bwrap_problem() -> str | None:
    """Why bubblewrap cannot sandbox a dry run here (its probe's error), or ``None`` when it can."""
    return _probe(BWRAP)[0]


def workspace_of(tool: Any) -> str:
    """The directory a ``Bash`` call runs in: the tool's ``cwd``, else the kernel's working directory."""
    return os.path.realpath(tool._cwd or os.getcwd())


def shell_why_not(tool: Any, tool_input: dict[str, Any] | None) -> str | None:
    """Why a ``Bash`` call cannot be dry-run, or ``None`` when it can."""
    if type(tool._backend) is not LocalBackend:
        return "the tool works through a sandbox backend of its own, which a copy does not stand in for"
    if getattr(tool, "_middlewares", None):
        return "the tool has middlewares, which could act outside the sandbox"
    command = (tool_input or {}).get("command")
    if not isinstance(command, str) or not command.strip():
        return "the call names no command"
    problem = bwrap_problem()
    if problem is not None:
        return f"a shell command is dry-run only in a bubblewrap sandbox, and {problem}"
    if not os.path.isdir(workspace_of(tool)):
        return f"its working directory {workspace_of(tool)} does not exist"
    return None


def _copy_workspace(real: str, copy: str) -> dict[str, bytes]:
    """Copy the directory ``real`` into ``copy`` (files with their times, directories, symbolic
    links as links); returns every regular file's bytes by its real path.

    Raises:
        DecisionError: the workspace is over :data:`MAX_WORKSPACE_BYTES` or
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


def _files_in(copy: str, real: str) -> dict[str, bytes]:
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


async def run_in_sandbox(tool: Any, tool_input: dict[str, Any]) -> tuple[str, str, list[DryRunFile], str]:
    """Run a new ``Bash`` with ``tool_input`` in a bubblewrap sandbox on a fresh copy of its workspace.

    Returns:
        ``(state, output text, files, sandbox)``: the tool's end state and
        output, what it did to the copy's files (by their real paths), and
        the sandbox in words (``"a bubblewrap sandbox (bubblewrap 0.8.0)"``).
        The copy is removed before it returns.

    Raises:
        DecisionError: bubblewrap cannot run here, or the workspace cannot be copied.
    """
    problem, version = _probe(BWRAP)
    if problem is not None:
        raise DecisionError(f"This call cannot be dry-run: {problem}.", field="action")
    real = workspace_of(tool)
    with tempfile.TemporaryDirectory(prefix="nb_hitl-dry-run-") as root:
        copy, scratch = os.path.join(root, "workspace"), os.path.join(root, "tmp")
        before = _copy_workspace(real, copy)
        backend = _CopyAtRealPath(real, host_workdir=copy, host_tmpdir=scratch, workdir=real, share_net=False)
        twin = Bash(
            dangerous_files=list(tool.dangerous_files),
            dangerous_directories=list(tool.dangerous_directories),
            cwd=real,
            backend=backend,
        )
        state, output = await run_tool(twin, dict(tool_input))
        files = changes(dict(before), _files_in(copy, real))
    return state, output, files, f"a bubblewrap sandbox ({version or 'bwrap'})"


class _CopyAtRealPath(BubblewrapBackend):
    """AgentScope's ``BubblewrapBackend`` that also mounts its workspace copy at the real workspace's path.

    Args:
        real: the real workspace's path (where the copy is mounted too).
        **kwargs: ``BubblewrapBackend``'s.
    """

    def __init__(self, real: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._real = real

    def _bwrap_argv(self, command: list[str], *, cwd: str | None) -> list[str]:
        argv = super()._bwrap_argv(command, cwd=cwd)
        at = argv.index("--clearenv")  # after every mount AgentScope makes, before the command
        return [*argv[:at], "--bind", self._host_workdir, self._real, *argv[at:]]
