"""Servers for the front-end tests: Jupyter Notebook 7 and marimo, each on a free loopback port.

:class:`NotebookServer` is :class:`~tests.harness.lab.JupyterLabServer` with
``python -m notebook`` (Notebook 7, the ``notebook`` package) instead of
``jupyter lab``: the same throw-away config/data/runtime dirs, token, REST
helpers and user settings (Notebook 7 reads JupyterLab's settings, e.g. the
theme, from ``<config>/lab/user-settings``).

:class:`MarimoServer` runs ``marimo run`` or ``marimo edit`` headless with
``--no-token`` on 127.0.0.1 and a free port, with its own ``HOME`` and
``XDG_CONFIG_HOME`` (so a person's marimo config never leaks in), and the
repository on the kernel's ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import urllib.request
from pathlib import Path

from tests.harness.kernel import VENV_PYTHON, kernel_env
from tests.harness.lab import JupyterLabServer, ServerProcess, free_port

__all__ = ["MarimoServer", "NotebookServer"]


class NotebookServer(JupyterLabServer):
    """``python -m notebook`` (Jupyter Notebook 7) for one test module; see :class:`JupyterLabServer`."""

    app_module = "notebook"
    app_label = "jupyter notebook"

    def app_args(self) -> list[str]:
        """Notebook 7's flags (``JupyterNotebookApp`` traits): settings and
        workspaces in the throw-away config dir, ``window.jupyterapp`` exposed."""
        return [
            f"--JupyterNotebookApp.user_settings_dir={self.user_settings_dir}",
            f"--JupyterNotebookApp.workspaces_dir={self.workspaces_dir}",
            "--JupyterNotebookApp.expose_app_in_browser=True",
        ]


class MarimoServer(ServerProcess):
    """``marimo <mode> <notebook> --headless --no-token`` on 127.0.0.1 and a free port.

    Args:
        notebook: the marimo notebook file (a ``.py``).
        mode: ``"run"`` (app view: a fresh kernel per page) or ``"edit"``.
        startup_timeout: seconds to wait for the page to answer.

    Attributes:
        port, base_url, log_path.
    """

    def __init__(self, notebook: str | os.PathLike[str], *, mode: str = "run", startup_timeout: float = 90.0) -> None:
        self.notebook = Path(notebook).resolve()
        self.mode = mode
        self.startup_timeout = startup_timeout
        self.port = 0
        self._tmp = Path(tempfile.mkdtemp(prefix="nbh-marimo-"))
        self.log_path = self._tmp / "marimo.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MarimoServer:
        """Start marimo and wait until ``/`` answers.

        Raises:
            RuntimeError: the process exited or did not answer in time (with the log's tail).
        """
        home = self._tmp / "home"
        home.mkdir(parents=True, exist_ok=True)
        env = kernel_env({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "MARIMO_SKIP_UPDATE_CHECK": "1"})
        self.port = free_port()
        cmd = [
            str(VENV_PYTHON.parent / "marimo"),
            "-q",
            "--yes",
            self.mode,
            str(self.notebook),
            "--headless",
            "--no-token",
            "--host=127.0.0.1",
            f"--port={self.port}",
        ]
        self.launch(cmd, cwd=self.notebook.parent, env=env, label="marimo", ready=self._answers)
        return self

    def _answers(self) -> bool:
        with urllib.request.urlopen(f"{self.base_url}/", timeout=2) as resp:
            return bool(resp.status == 200)

    def stop(self) -> None:
        """SIGTERM marimo's process group (its kernels too), SIGKILL after 10 s."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait(timeout=10)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        self.proc = None

    def cleanup(self) -> None:
        """:meth:`stop` and remove the temporary home."""
        self.stop()
        shutil.rmtree(self._tmp, ignore_errors=True)
