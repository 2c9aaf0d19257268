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

The copy is made, and read back, by :mod:`nb_hitl.dry_run_folder` (at most
its ``MAX_WORKSPACE_FILES`` files and ``MAX_WORKSPACE_BYTES`` bytes). What
the command did to the copy is reported as diffs (files created,
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
from .dry_run_folder import copy_folder, files_in
from .errors import DecisionError

log = logging.getLogger("nb_hitl.dry_run")

__all__ = ["BWRAP", "bwrap_problem", "shell_why_not", "run_in_sandbox"]

BWRAP = "bwrap"
"""The bubblewrap program (looked up on ``PATH``)."""


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
        before = copy_folder(real, copy)
        backend = _CopyAtRealPath(real, host_workdir=copy, host_tmpdir=scratch, workdir=real, share_net=False)
        twin = Bash(
            dangerous_files=list(tool.dangerous_files),
            dangerous_directories=list(tool.dangerous_directories),
            cwd=real,
            backend=backend,
        )
        state, output = await run_tool(twin, dict(tool_input))
        files = changes(dict(before), files_in(copy, real))
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
