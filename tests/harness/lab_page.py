"""Playwright helpers for pages of real JupyterLab in Debian's Chromium.

The browser side of :mod:`tests.harness.lab` (which re-exports every name
here): launching Chromium, opening a notebook, running its cells, waiting for
outputs and widgets, themes, screenshots. Each helper uses JupyterLab
*commands* through ``window.jupyterapp`` (the server exposes the app) and
falls back to menus or keys where it is absent.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import urllib.error
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .kernel import REPO_ROOT

if TYPE_CHECKING:  # playwright is only needed by the browser helpers
    from playwright.sync_api import Browser, Locator, Page, Playwright

    from .lab import JupyterLabServer

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


def run_new_cell(page: Page, code: str) -> None:
    """Add a cell with ``code`` at the end of the open notebook and run it. Does not wait
    (a cell may queue behind one that awaits a click)."""
    page.evaluate(
        """(code) => {
            const nb = window.jupyterapp.shell.currentWidget.content;
            nb.activeCellIndex = nb.widgets.length - 1;
            window.jupyterapp.commands.execute('notebook:insert-cell-below');
            nb.activeCell.model.sharedModel.setSource(code);
            window.jupyterapp.commands.execute('notebook:run-cell');
        }""",
        code,
    )


def run_to_open_card(
    page: Page, server: JupyterLabServer, name: str, cells: Sequence[str], kind: str = "confirm"
) -> Locator:
    """Write ``cells`` as the notebook ``name``, open it, Run All, and wait
    (90 s) for an open card of ``kind`` in a live reply; returns the card."""
    write_notebook(server.root / name, list(cells))
    open_notebook(page, server, name)
    run_all_cells(page)
    card = card_locator(page, kind)
    card.wait_for(timeout=90_000)
    page.locator('.jp-OutputArea-output [data-testid="nbh-reply"][data-live="true"]').wait_for(timeout=30_000)
    return card


def wait_execution_done(page: Page, timeout: float = 60.0) -> None:
    """Wait until every code cell of the open notebook's model has an execution count and none runs.

    Raises:
        AssertionError: after ``timeout`` seconds, naming each cell's prompt
            (``[*]`` / ``[ ]``) and the kernel's status.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    try:  # the notebook's model: JupyterLab draws (and updates) only the cells in view
        page.wait_for_function(
            """() => {
                const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                const cells = w && w.content && w.content.model && w.content.model.cells;
                if (!cells) return false;
                let code = 0;
                for (let i = 0; i < cells.length; i++) {
                    const c = cells.get(i);
                    if (c.type !== "code") continue;
                    code += 1;
                    if (c.executionCount === null || c.executionState === "running") return false;
                }
                return code > 0;
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


def card_locator(scope: Page | Locator, kind: str, status: str = "open", *, outputs: bool = True) -> Locator:
    """Cards of one pause ``kind`` (``"confirm"``, ``"ask_user"``, ...) in ``status``; inside cell outputs unless ``outputs=False``."""
    prefix = ".jp-OutputArea-output " if outputs else ""
    return scope.locator(f'{prefix}[data-testid="nbh-card"][data-kind="{kind}"][data-status="{status}"]')


def dry_run(card: Locator, timeout_ms: int = 60_000) -> Locator:
    """Press the card's Dry run and wait for its result; the result's locator, its run checked a success."""
    card.locator('[data-testid="nbh-dry-run"]').click(timeout=timeout_ms)
    result = card.locator('[data-testid="nbh-dry-run-result"]')
    result.wait_for(timeout=timeout_ms)
    assert result.get_attribute("data-state") == "success", result.inner_text()
    return result


def diff_lines(scope: Locator, testid: str = "nbh-file-diff") -> list[list[str]]:
    """The first drawn diff under ``scope`` as ``[kind, text]`` per line (``kind``: add / del / ctx / hunk ...)."""
    diff = scope.locator(f'[data-testid="{testid}"]').first
    lines: list[list[str]] = diff.locator("span").evaluate_all("(ss) => ss.map((s) => [s.dataset.kind, s.textContent])")
    return lines


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
