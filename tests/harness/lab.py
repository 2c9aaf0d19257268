"""Real JupyterLab + Debian Chromium (Playwright, sync API) for browser tests and benchmarks.

:class:`JupyterLabServer` runs the venv's ``jupyter lab`` on 127.0.0.1 with a
free port, a random token and throw-away ``JUPYTER_CONFIG_DIR`` /
``JUPYTER_DATA_DIR`` / ``JUPYTER_RUNTIME_DIR`` / ``IPYTHONDIR``. The venv's
``share/jupyter`` stays on the data path (it is ``sys.prefix``'s, which
jupyter_core always adds), so the ``@jupyter-widgets/jupyterlab-manager`` and
``anywidget`` lab extensions load. The server exposes the app in the page
(``--LabApp.expose_app_in_browser=True`` -> ``window.jupyterapp``) so the
helpers run JupyterLab *commands* (``notebook:run-all-cells`` ...) instead of
clicking menus; each helper falls back to menus/keys if it is absent.

Widget state saving (``saveState``) is switched on by writing the user
settings file ``<JUPYTER_CONFIG_DIR>/lab/user-settings/@jupyter-widgets/
jupyterlab-manager/plugin.jupyterlab-settings`` (the ``LabApp.user_settings_dir``
default); :meth:`JupyterLabServer.lab_setting` reads back what the server
serves.

Recipe and pitfalls: docs/design.md.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .kernel import REPO_ROOT, VENV_PYTHON, kernel_env
from .lab_page import (  # the page helpers, re-exported: tests import them from here
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    card_locator,
    diff_lines,
    dry_run,
    launch_chromium,
    new_page,
    notebook_outputs,
    open_notebook,
    output_locator,
    page_for_test,
    restart_kernel,
    run_all_cells,
    run_command,
    run_new_cell,
    run_to_open_card,
    save_notebook,
    screenshot,
    set_theme,
    wait_execution_done,
    wait_kernel_idle,
    wait_no_splash,
    wait_widgets_rendered,
    write_notebook,
)

__all__ = [
    "card_locator",
    "diff_lines",
    "dry_run",
    "REPO_ROOT",
    "notebook_outputs",
    "page_for_test",
    "run_to_open_card",
    "ARTIFACTS",
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "JupyterLabServer",
    "ServerProcess",
    "free_port",
    "launch_chromium",
    "new_page",
    "open_notebook",
    "output_locator",
    "restart_kernel",
    "run_all_cells",
    "run_new_cell",
    "run_command",
    "save_notebook",
    "screenshot",
    "set_theme",
    "wait_execution_done",
    "wait_kernel_idle",
    "wait_no_splash",
    "wait_widgets_rendered",
    "write_notebook",
]

WIDGET_MANAGER_PLUGIN = "@jupyter-widgets/jupyterlab-manager:plugin"
#: Its user setting ``fetchNews: "false"`` stops the "notified about news?" toast.
NOTIFICATION_PLUGIN = "@jupyterlab/apputils-extension:notification"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """A server subprocess writing to ``log_path``: launched in its own session,
    waited on until it answers, its log's tail in every error.

    Subclasses set ``log_path`` and ``startup_timeout`` and define :meth:`stop`
    (which must close ``_log_file``); :class:`JupyterLabServer` and the front-end
    servers of the tests share it.
    """

    log_path: Path
    startup_timeout: float
    proc: subprocess.Popen[bytes] | None = None
    _log_file: Any = None

    def launch(
        self, cmd: Sequence[str], *, cwd: Path, env: dict[str, str], label: str, ready: Callable[[], bool]
    ) -> None:
        """Start ``cmd`` (output to ``log_path``) and poll ``ready`` every 0.2 s.

        Args:
            cmd: the command line.
            cwd: its working directory.
            env: its whole environment.
            label: the server's name in error messages (``"jupyter lab"``).
            ready: True once the server answers; ``OSError`` / ``URLError`` count as not yet.

        Raises:
            RuntimeError: the process exited, or did not answer in ``startup_timeout``
                seconds (the server is stopped; the message has the tail of its log).
        """
        self._log_file = open(self.log_path, "wb")  # closed by stop()
        self.proc = proc = subprocess.Popen(
            list(cmd),
            cwd=str(cwd),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if proc.poll() is not None:
                tail = self.log_tail()
                self.stop()
                raise RuntimeError(f"{label} exited with {proc.returncode}:\n{tail}")
            try:
                if ready():
                    return
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                tail = self.log_tail()
                self.stop()
                raise RuntimeError(f"{label} did not answer in {self.startup_timeout}s:\n{tail}")
            time.sleep(0.2)

    def log_tail(self, chars: int = 6000) -> str:
        """The end of the server's combined stdout/stderr."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server and close ``_log_file``."""
        raise NotImplementedError


class JupyterLabServer(ServerProcess):
    """A ``jupyter lab`` subprocess for one test session.

    Args:
        root_dir: ``--ServerApp.root_dir`` (notebooks are opened relative to it).
        save_widget_state: write the user setting
            ``@jupyter-widgets/jupyterlab-manager:plugin`` ``saveState: true``
            so saved notebooks carry widget state (default of the setting
            is false: a reopened notebook then shows "model not found").
            The news toast is always switched off
            (``@jupyterlab/apputils-extension:notification`` ``fetchNews: "false"``).
        lab_settings: more user settings, ``{"<plugin id>": {...}}``
            (e.g. ``{"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"}}``).
        extra_args: more ``jupyter lab`` arguments.
        env: extra environment for the server and its kernels (the kernels
            also get ``PYTHONPATH`` = the repo root, see ``kernel_env``).
        startup_timeout: seconds to wait for ``/api/status``.

    Attributes:
        root, port, token, base_url, log_path, config_dir, data_dir, runtime_dir.

    Use as a context manager or call :meth:`start` / :meth:`stop`.
    """

    def __init__(
        self,
        root_dir: str | os.PathLike[str],
        *,
        save_widget_state: bool = True,
        lab_settings: dict[str, dict[str, Any]] | None = None,
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        startup_timeout: float = 90.0,
    ) -> None:
        self.root = Path(root_dir).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.save_widget_state = save_widget_state
        self.lab_settings = dict(lab_settings or {})
        self.extra_args = list(extra_args)
        self.extra_env = dict(env or {})
        self.startup_timeout = startup_timeout
        self.port = 0
        self.token = secrets.token_hex(24)
        self._tmp = Path(tempfile.mkdtemp(prefix="nbh-lab-"))
        self.config_dir = self._tmp / "config"
        self.data_dir = self._tmp / "data"
        self.runtime_dir = self._tmp / "runtime"
        self.ipython_dir = self._tmp / "ipython"
        self.user_settings_dir = self.config_dir / "lab" / "user-settings"
        self.workspaces_dir = self.config_dir / "lab" / "workspaces"
        self.log_path = self._tmp / "jupyter-lab.log"
        self._initial_settings: dict[str, dict[str, Any]] = {}

    # -- lifecycle ---------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "lab", **query: str) -> str:
        """``base_url/path?token=...&<query>`` (path without leading slash)."""
        q = "&".join([f"token={self.token}"] + [f"{k}={quote(str(v))}" for k, v in query.items()])
        return f"{self.base_url}/{path.lstrip('/')}?{q}"

    def write_user_settings(self, plugin_id: str, settings: dict[str, Any]) -> Path:
        """Write ``<user_settings_dir>/<pkg>/<plugin>.jupyterlab-settings`` (read when lab loads)."""
        pkg, _, plugin = plugin_id.partition(":")
        path = self.user_settings_dir / pkg / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(settings, indent=2))
        return path

    def reset_user_settings(self) -> None:
        """Back to the settings written at start (drops e.g. a theme chosen by :func:`set_theme`).

        The server reads these files on each request, so the next page load sees them.
        """
        shutil.rmtree(self.user_settings_dir, ignore_errors=True)
        for plugin_id, values in self._initial_settings.items():
            self.write_user_settings(plugin_id, values)

    #: ``python -m <app_module>`` runs the server; ``app_label`` names it in errors.
    app_module = "jupyterlab"
    app_label = "jupyter lab"

    def app_args(self) -> list[str]:
        """The application's own flags (``LabApp`` traits): no news or update
        checks, ``window.jupyterapp`` exposed, settings and workspaces in the
        throw-away config dir. A subclass running another Jupyter app
        (Notebook 7) returns that app's flags."""
        return [
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.expose_app_in_browser=True",
            f"--LabApp.user_settings_dir={self.user_settings_dir}",
            f"--LabApp.workspaces_dir={self.workspaces_dir}",
        ]

    def initial_user_settings(self) -> dict[str, dict[str, Any]]:
        """The user settings written at start: no news toast, ``saveState`` when
        ``save_widget_state``, then ``lab_settings`` merged per plugin."""
        settings: dict[str, dict[str, Any]] = {NOTIFICATION_PLUGIN: {"fetchNews": "false", "checkForUpdates": False}}
        if self.save_widget_state:
            settings[WIDGET_MANAGER_PLUGIN] = {"saveState": True}
        for plugin_id, values in self.lab_settings.items():
            settings[plugin_id] = {**settings.get(plugin_id, {}), **values}
        return settings

    def server_env(self) -> dict[str, str]:
        """The server's environment: :func:`~tests.harness.kernel.kernel_env` with
        the throw-away ``JUPYTER_CONFIG_DIR`` / ``JUPYTER_DATA_DIR`` /
        ``JUPYTER_RUNTIME_DIR`` / ``IPYTHONDIR`` and JupyterLab's settings and
        workspaces dirs (created here), the tree's ``jupyter-config`` on
        ``JUPYTER_CONFIG_PATH`` (the server loads the tree's extension config,
        as it imports the tree's code), then ``env``."""
        for d in (self.config_dir, self.data_dir, self.runtime_dir, self.ipython_dir, self.workspaces_dir):
            d.mkdir(parents=True, exist_ok=True)
        return kernel_env(
            {
                "JUPYTER_CONFIG_DIR": str(self.config_dir),
                "JUPYTER_DATA_DIR": str(self.data_dir),
                "JUPYTER_RUNTIME_DIR": str(self.runtime_dir),
                "IPYTHONDIR": str(self.ipython_dir),
                "JUPYTERLAB_SETTINGS_DIR": str(self.user_settings_dir),
                "JUPYTERLAB_WORKSPACES_DIR": str(self.workspaces_dir),
                "JUPYTER_CONFIG_PATH": str(REPO_ROOT / "jupyter-config"),
                **self.extra_env,
            }
        )

    def start(self) -> JupyterLabServer:
        """Start ``python -m <app_module>`` and wait until ``/api/status`` answers.

        Raises:
            RuntimeError: the process exited or did not answer in time
                (the message has the tail of its log).
        """
        env = self.server_env()
        self._initial_settings = self.initial_user_settings()
        self.reset_user_settings()
        self.port = free_port()
        cmd = [
            str(VENV_PYTHON),
            "-m",
            self.app_module,
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            "--ServerApp.disable_check_xsrf=True",
            *self.app_args(),
            *self.extra_args,
        ]
        self.launch(cmd, cwd=self.root, env=env, label=self.app_label, ready=self._answers)
        return self

    def _answers(self) -> bool:
        self.api("GET", "api/status", timeout=2)
        return True

    def stop(self) -> None:
        """Shut down kernels and server; SIGKILL whatever is left (kernels run in their own sessions)."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                import psutil

                family = psutil.Process(proc.pid).children(recursive=True)
            except Exception:
                family = []
            try:
                self.api("POST", "api/shutdown", timeout=5)
                proc.wait(timeout=10)
            except Exception:
                pass
            for p in family:
                try:
                    p.kill()
                except Exception:
                    pass
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    proc.kill()
                proc.wait(timeout=10)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        self.proc = None

    def cleanup(self) -> None:
        """:meth:`stop` and remove the temporary config/data/runtime dirs."""
        self.stop()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> JupyterLabServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # -- REST ------------------------------------------------------------------------
    def api(self, method: str, path: str, body: Any = None, timeout: float = 10.0) -> Any:
        """Call the server's REST API (token in the header); returns decoded JSON or ``None``."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"{self.base_url}/{path.lstrip('/')}",
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def kernels(self) -> list[dict[str, Any]]:
        """``GET /api/kernels``: ``[{"id", "name", "execution_state", "connections", ...}]``."""
        return list(self.api("GET", "api/kernels"))

    def sessions(self) -> list[dict[str, Any]]:
        """``GET /api/sessions``: ``[{"id", "path", "kernel": {...}}]``."""
        return list(self.api("GET", "api/sessions"))

    def shutdown_kernels(self) -> None:
        """Delete every running kernel (and its session) so the next test starts clean."""
        for s in self.sessions():
            try:
                self.api("DELETE", f"api/sessions/{s['id']}")
            except Exception:
                pass
        for k in self.kernels():
            try:
                self.api("DELETE", f"api/kernels/{k['id']}")
            except Exception:
                pass

    def lab_setting(self, plugin_id: str = WIDGET_MANAGER_PLUGIN) -> dict[str, Any]:
        """A plugin's effective settings as the server serves them (``GET /lab/api/settings/<id>``).

        Schema defaults (top-level ``properties.*.default``) overlaid with the
        user settings the server read.
        """
        got = self.api("GET", f"lab/api/settings/{plugin_id}")
        props = (got.get("schema") or {}).get("properties") or {}
        defaults = {k: v["default"] for k, v in props.items() if isinstance(v, dict) and "default" in v}
        return {**defaults, **(got.get("settings") or {})}

    def notebook_json(self, relpath: str) -> dict[str, Any]:
        """The notebook file as saved on disk (parsed JSON)."""
        return json.loads((self.root / relpath).read_text())


# -- Playwright helpers --------------------------------------------------------------------
