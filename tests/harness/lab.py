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

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .kernel import REPO_ROOT, VENV_PYTHON, kernel_env

if TYPE_CHECKING:  # playwright is only needed by the browser helpers
    from playwright.sync_api import Browser, Locator, Page, Playwright

__all__ = [
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

#: Where screenshots go (``<repo>/test-artifacts``, git-ignored).
ARTIFACTS: Path = REPO_ROOT / "test-artifacts"
#: Debian's Chromium; Playwright cannot download browsers here.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]

WIDGET_MANAGER_PLUGIN = "@jupyter-widgets/jupyterlab-manager:plugin"
#: Its user setting ``fetchNews: "false"`` stops the "notified about news?" toast.
NOTIFICATION_PLUGIN = "@jupyterlab/apputils-extension:notification"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_notebook(path: str | os.PathLike[str], cells: Sequence[str | tuple[str, str]]) -> Path:
    """Write an nbformat-4 notebook with the venv's ``python3`` kernelspec.

    Args:
        path: file to write (parents are created).
        cells: each a code string, or ``("markdown", text)`` / ``("code", text)``.

    Returns:
        The path written.
    """
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for cell in cells:
        kind, src = ("code", cell) if isinstance(cell, str) else cell
        nb.cells.append(nbformat.v4.new_markdown_cell(src) if kind == "markdown" else nbformat.v4.new_code_cell(src))
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(p))
    return p


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
        workspaces dirs (created here), then ``env``."""
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


def launch_chromium(playwright: Playwright, *, headless: bool = True, args: Sequence[str] = ()) -> Browser:
    """Launch Debian's ``/usr/bin/chromium`` (Playwright cannot download browsers here).

    Raises:
        RuntimeError: ``/usr/bin/chromium`` is missing (install the Debian
            ``chromium`` package; tests must not skip).
    """
    if not Path(CHROMIUM).exists():
        raise RuntimeError(
            f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium). "
            "Browser tests need it and never skip."
        )
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=headless, args=[*CHROMIUM_ARGS, *args])


@contextlib.contextmanager
def page_for_test(browser: Browser, request: Any) -> Iterator[Page]:
    """A fresh page for one test (:func:`new_page`); on a failed test its screenshot goes to
    ``test-artifacts/<test>-failure.png``, then the page's context is closed.

    ``request`` is the test's ``pytest.FixtureRequest``; the outcome is read from the
    ``nbh_rep_call`` attribute the top-level conftest's report hook sets.
    """
    p = new_page(browser)
    try:
        yield p
    finally:
        rep = getattr(request.node, "nbh_rep_call", None)
        if rep is not None and rep.failed:
            try:
                screenshot(p, f"{request.node.name}-failure")
            except Exception:
                pass
        p.context.close()


def new_page(browser: Browser, *, width: int = 1300, height: int = 900) -> Page:
    """A page in a fresh context, with ``page.nbh_errors`` collecting console errors and page errors."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.nbh_errors = errors  # type: ignore[attr-defined]
    page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    return page


def _has_app(page: Page) -> bool:
    return bool(page.evaluate("() => !!(window.jupyterapp && window.jupyterapp.commands)"))


def run_command(page: Page, command: str, args: dict[str, Any] | None = None) -> Any:
    """Execute a JupyterLab command (``window.jupyterapp.commands.execute``) and return its JSON-able result."""
    return page.evaluate(
        """async ([id, args]) => {
            const app = window.jupyterapp;
            if (!app) throw new Error("window.jupyterapp missing (expose_app_in_browser off?)");
            if (!app.commands.hasCommand(id)) throw new Error("no such command: " + id);
            const r = await app.commands.execute(id, args || {});
            try { return JSON.parse(JSON.stringify(r ?? null)); } catch { return null; }
        }""",
        [command, args or {}],
    )


def wait_kernel_idle(server: JupyterLabServer, timeout: float = 60.0, path: str | None = None) -> dict[str, Any]:
    """Poll ``/api/kernels`` until a kernel exists, has a client connected, and is ``idle``.

    (The status bar says Idle before the kernel exists, so the page is not a
    reliable source.) ``path``: only the kernel of the session for this
    notebook. Returns the kernel model; raises ``TimeoutError``.
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            if path is not None:
                ids = {s["kernel"]["id"] for s in server.sessions() if s.get("path") == path and s.get("kernel")}
                kernels = [k for k in server.kernels() if k["id"] in ids]
            else:
                kernels = server.kernels()
            last = kernels
            for k in kernels:
                if k.get("execution_state") == "idle" and k.get("connections", 0) >= 1:
                    return k
        except (OSError, urllib.error.URLError) as exc:
            last = exc
        time.sleep(0.1)
    raise TimeoutError(f"no idle connected kernel after {timeout}s (path={path!r}); last: {last!r}")


def open_notebook(
    page: Page,
    server: JupyterLabServer,
    relpath: str,
    *,
    wait_kernel: bool = True,
    timeout: float = 60.0,
) -> None:
    """Open ``/lab/tree/<relpath>?reset`` (``reset``: ignore the saved workspace) and wait for it.

    Waits for the notebook panel with its cells, for the notebook to be the
    current widget, and (``wait_kernel``) for its kernel to be connected and
    idle (:func:`wait_kernel_idle`).
    """
    page.goto(f"{server.base_url}/lab/tree/{quote(relpath)}?reset&token={server.token}")
    page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(state="visible", timeout=timeout * 1000)
    wait_no_splash(page, timeout)
    page.wait_for_function(
        """(path) => {
            const app = window.jupyterapp;
            if (!app) return true;  // no exposed app: the visible cell is all we can check
            const w = app.shell.currentWidget;
            return !!(w && w.context && w.context.path === path && w.context.isReady && w.sessionContext
                      && w.sessionContext.session && w.sessionContext.session.kernel);
        }""",
        arg=relpath,
        timeout=timeout * 1000,
    )
    if wait_kernel:
        wait_kernel_idle(server, timeout=timeout, path=relpath)
        # the page learns "idle" over its websocket a moment after the server
        page.wait_for_function(
            """() => {
                const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                if (!w || !w.sessionContext) return true;
                const k = w.sessionContext.session && w.sessionContext.session.kernel;
                return !!k && k.connectionStatus === "connected" && k.status === "idle";
            }""",
            timeout=timeout * 1000,
        )


def _focus_notebook(page: Page) -> None:
    page.locator(".jp-NotebookPanel .jp-Notebook").first.click(position={"x": 5, "y": 5})


def run_all_cells(page: Page) -> None:
    """Run > Run All Cells (the ``notebook:run-all-cells`` command; menu as fallback). Does not wait.

    Wait on the outputs you expect, or :func:`wait_execution_done`.
    """
    if _has_app(page):
        # not awaited: the command's promise settles only when every cell has
        # finished, and a cell may be awaiting a click in this very page
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        return
    _focus_notebook(page)
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


def run_to_open_card(
    page: Page, server: JupyterLabServer, name: str, cells: Sequence[str], kind: str = "confirm"
) -> Locator:
    """Write ``cells`` as the notebook ``name``, open it, Run All, and wait
    (90 s) for an open card of ``kind`` in a live reply; returns the card."""
    write_notebook(server.root / name, list(cells))
    open_notebook(page, server, name)
    run_all_cells(page)
    card = page.locator(f'.jp-OutputArea-output [data-testid="nbh-card"][data-kind="{kind}"][data-status="open"]')
    card.wait_for(timeout=90_000)
    page.locator('.jp-OutputArea-output [data-testid="nbh-reply"][data-live="true"]').wait_for(timeout=30_000)
    return card


def wait_execution_done(page: Page, timeout: float = 60.0) -> None:
    """Wait until every code cell has an execution count and none shows ``[*]``.

    Raises:
        AssertionError: after ``timeout`` seconds, naming each cell's prompt
            (``[*]`` / ``[ ]``) and the kernel's status.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    try:
        page.wait_for_function(
            """() => {
                const prompts = [...document.querySelectorAll(
                    ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt")];
                return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent || ""));
            }""",
            timeout=timeout * 1000,
        )
    except PlaywrightTimeoutError:
        state = page.evaluate(
            """() => {
                const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
                const prompts = [...document.querySelectorAll(
                    ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt")];
                return {kernel: k ? k.status : null, prompts: prompts.map(p => p.textContent)};
            }"""
        )
        raise AssertionError(f"cells still running after {timeout} s: {state}") from None


def _accept_dialog(page: Page, timeout: float = 10.0) -> None:
    page.locator(".jp-Dialog .jp-mod-accept").click(timeout=timeout * 1000)


def restart_kernel(page: Page, server: JupyterLabServer | None = None, timeout: float = 60.0) -> None:
    """Kernel > Restart Kernel..., accept the dialog, wait for the new kernel to be idle.

    The restart counts as done when the kernel's ``id`` stays the same but
    the page saw it go through ``restarting`` and back to ``idle``.
    """
    page.evaluate(
        """() => {
            const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
            const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
            window.__nbhRestarted = false;
            if (k) k.statusChanged.connect((_, s) => { if (s === "restarting" || s === "autorestarting") window.__nbhRestarted = true; });
        }"""
    )
    if _has_app(page):
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:restart-kernel'); }")
    else:
        _focus_notebook(page)
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Kernel$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Restart Kernel")).first.click()
    _accept_dialog(page)
    page.wait_for_function(
        """() => {
            if (!window.jupyterapp) return true;
            const w = window.jupyterapp.shell.currentWidget;
            const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
            return window.__nbhRestarted && !!k && k.status === "idle" && k.connectionStatus === "connected";
        }""",
        timeout=timeout * 1000,
    )
    if server is not None:
        wait_kernel_idle(server, timeout=timeout)


def save_notebook(page: Page, timeout: float = 30.0) -> None:
    """File > Save (``docmanager:save``; Ctrl+S fallback) and wait until the model is clean on disk."""
    if _has_app(page):
        run_command(page, "docmanager:save")
        page.wait_for_function(
            "() => { const w = window.jupyterapp.shell.currentWidget; return !!w && !w.context.model.dirty; }",
            timeout=timeout * 1000,
        )
    else:
        _focus_notebook(page)
        page.keyboard.press("Control+s")
        page.locator(".jp-mod-dirty").first.wait_for(state="detached", timeout=timeout * 1000)


def output_locator(page: Page, text: str | re.Pattern[str], *, exact: bool = False) -> Locator:
    """Elements with ``text`` inside cell *outputs* only (plain text selectors also match cell sources)."""
    return page.locator(".jp-OutputArea-output").get_by_text(text, exact=exact)


def notebook_outputs(page: Page) -> list[dict[str, Any]]:
    """Every output of the open notebook, from its model (nbformat dicts): JupyterLab draws only the cells in view."""
    return page.evaluate(
        """() => {
            const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
            const all = [];
            for (let i = 0; i < cells.length; i++) all.push(...(cells.get(i).toJSON().outputs || []));
            return all;
        }"""
    )


def wait_widgets_rendered(page: Page, count: int = 1, timeout: float = 60.0) -> None:
    """Wait until at least ``count`` widget views are in outputs (no "Loading widget..." / model-not-found)."""
    page.wait_for_function(
        """(n) => document.querySelectorAll(".jp-OutputArea-output .jupyter-widgets, .jp-OutputArea-output .lm-Widget.jupyter-widgets").length >= n""",
        arg=count,
        timeout=timeout * 1000,
    )


def set_theme(page: Page, theme: str = "JupyterLab Dark", timeout: float = 30.0) -> None:
    """Switch the JupyterLab theme (``apputils:change-theme``) and wait until its CSS is applied.

    The choice is saved as a user setting of the server (later pages get it
    too); the ``page`` fixture calls ``lab.reset_user_settings()`` after each test.

    Applied = ``body[data-jp-theme-name]`` is ``theme`` and the computed
    ``--jp-layout-color0`` changed (no-op if the theme is already current).
    """
    before = page.evaluate(
        "() => [document.body.dataset.jpThemeName, getComputedStyle(document.body).getPropertyValue('--jp-layout-color0')]"
    )
    if before[0] == theme:
        return
    if _has_app(page):
        page.evaluate("(t) => { window.jupyterapp.commands.execute('apputils:change-theme', {theme: t}); }", theme)
    else:
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Settings$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).hover()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(theme)}$")).click()
    page.wait_for_function(
        """([t, old]) => document.body.dataset.jpThemeName === t
            && getComputedStyle(document.body).getPropertyValue('--jp-layout-color0') !== old""",
        arg=[theme, before[1]],
        timeout=timeout * 1000,
    )
    wait_no_splash(page, timeout)


def wait_no_splash(page: Page, timeout: float = 30.0) -> None:
    """Wait until JupyterLab's splash overlay (``#jupyterlab-splash``, shown while loading or theming) is gone."""
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=timeout * 1000)


def screenshot(page: Page, name: str, *, full_page: bool = False) -> Path:
    """Save ``test-artifacts/<name>.png`` (repo root) and return its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    path = ARTIFACTS / (safe if safe.endswith(".png") else f"{safe}.png")
    page.screenshot(path=str(path), full_page=full_page)
    return path
