"""Benchmark side of the browser harness: ``tests/harness/lab.py`` without pytest, plus in-page timing.

Importable both as ``benchmarks._lab`` (``python -m benchmarks.x`` from the
repo root) and from a script in this folder (``python benchmarks/x.py``):
it puts the repo root on ``sys.path`` itself.

Timing is measured **in the page** (``performance.now()`` in a capturing
``click`` listener, and in a ``MutationObserver`` callback when the watched
element's text changes), so Python/Playwright round trips are not counted.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.harness import lab as _harness_lab  # noqa: E402
from tests.harness.lab import *  # noqa: E402,F403
from tests.harness.lab import (  # noqa: E402
    JupyterLabServer,
    launch_chromium,
    new_page,
)

__all__ = [
    "REPO_ROOT",
    "lab_page",
    "measure_click_to_dom",
    "summarize",
    "format_summary",
    "RUN_CELL_JS",
    "CELL_OUTPUT_JS",
    "run_cell",
    "cell_json",
    *_harness_lab.__all__,
]

#: run cell ``i`` of the open notebook (argument: its index)
RUN_CELL_JS = """(i) => { const w = window.jupyterapp.shell.currentWidget; w.content.activeCellIndex = i;
  window.jupyterapp.commands.execute('notebook:run-cell'); }"""

#: the text of cell ``i``'s output holding ``marker``, or false (argument: ``[i, marker]``);
#: polled in that cell only: a locator over every output would keep the browser busy
CELL_OUTPUT_JS = """
([i, marker]) => {
  const cell = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')[i];
  const out = cell && [...cell.querySelectorAll('.jp-OutputArea-output')].find((e) => e.textContent.includes(marker));
  return out ? out.textContent : false;
}
"""


def run_cell(page: Any, index: int) -> None:
    """Run cell ``index`` of the open notebook."""
    page.evaluate(RUN_CELL_JS, index)


def cell_json(page: Any, index: int, marker: str, timeout_ms: float = 600_000) -> Any:
    """The JSON printed after ``marker`` in cell ``index``'s output, once it is
    there (polled 5 times a second)."""
    done = page.wait_for_function(CELL_OUTPUT_JS, arg=[index, marker], polling=200, timeout=timeout_ms)
    text = str(done.json_value())
    return json.loads(text[text.index(marker) + len(marker) :].strip().splitlines()[0])


_ARM_JS = """
async ([clickSel, changedSel, changedWhen, resetJs]) => {
  if (resetJs) { await (0, eval)(resetJs); }
  const el = document.querySelector(changedSel);
  if (!el) throw new Error("no element matches " + changedSel);
  const oldText = el.textContent;
  const changed = changedWhen ? (0, eval)("(" + changedWhen + ")") : ((e, old) => e.textContent !== old);
  const st = { t0: null, t1: null, text: null };
  window.__nbhBench = st;
  if (!window.__nbhBenchClick) {
    window.__nbhBenchClick = (ev) => {
      const b = window.__nbhBench;
      if (b && b.t0 === null && ev.target instanceof Element && ev.target.closest(b.clickSel)) b.t0 = performance.now();
    };
    window.addEventListener("click", window.__nbhBenchClick, true);  // capture: before the widget's handler
  }
  st.clickSel = clickSel;
  const root = el.closest(".jp-OutputArea") || document.body;
  const obs = new MutationObserver(() => {
    const now = performance.now();
    const cur = document.querySelector(changedSel);
    if (st.t0 !== null && cur && changed(cur, oldText)) {
      st.t1 = now; st.text = cur.textContent; obs.disconnect();
    }
  });
  obs.observe(root, { subtree: true, childList: true, characterData: true, attributes: true });
  st.disconnect = () => obs.disconnect();
  return oldText;
}
"""


def measure_click_to_dom(
    page: Any,
    click_selector: str,
    changed_selector: str,
    n: int = 30,
    reset_js: str | None = None,
    *,
    changed_when: str | None = None,
    before_each: Callable[[int], None] | None = None,
    warmup: int = 2,
    timeout: float = 30.0,
) -> list[float]:
    """Milliseconds from a Playwright click to the DOM change it causes, measured in the page.

    For each of ``warmup + n`` rounds: evaluate ``reset_js`` (JS expression,
    awaited if it is a promise), remember the text of ``changed_selector``,
    ``page.click(click_selector)``, and wait until a ``MutationObserver``
    sees the change. t0 = ``performance.now()`` in a capturing ``click``
    listener on ``window`` (runs before the widget's own handler); t1 =
    ``performance.now()`` in the observer callback once
    ``changed_when(el, oldText)`` holds (JS function source; default: the
    text content differs). The first ``warmup`` rounds are dropped.

    Args:
        page: a Playwright ``Page`` showing the widget.
        click_selector: what to click (``page.click``; it waits for enabled).
        changed_selector: the element whose change ends the measurement
            (must exist before the click).
        n: measured rounds.
        reset_js: JS run in the page before each round (e.g. re-arm a widget).
        changed_when: JS ``(el, oldText) => boolean``.
        before_each: Python hook ``(round_index) -> None`` run before each round.
        warmup: unmeasured leading rounds.
        timeout: seconds to wait for each change.

    Returns:
        ``n`` durations in ms (floats, in order).

    Raises:
        playwright ``TimeoutError`` if a change never comes.
    """
    samples: list[float] = []
    for i in range(warmup + n):
        if before_each is not None:
            before_each(i)
        page.evaluate(_ARM_JS, [click_selector, changed_selector, changed_when, reset_js])
        page.click(click_selector, timeout=timeout * 1000)
        page.wait_for_function(
            "() => window.__nbhBench && window.__nbhBench.t1 !== null", timeout=timeout * 1000, polling="raf"
        )
        t0, t1 = page.evaluate("() => [window.__nbhBench.t0, window.__nbhBench.t1]")
        if i >= warmup:
            samples.append(float(t1 - t0))
    return samples


def summarize(samples: list[float]) -> dict[str, float]:
    """``{"n", "median", "p90", "min", "max", "mean"}`` in ms (p90: nearest-rank)."""
    s = sorted(samples)
    p90 = s[max(0, int(round(0.9 * len(s) + 0.5)) - 1)] if s else float("nan")
    return {
        "n": float(len(s)),
        "median": statistics.median(s),
        "p90": p90,
        "min": s[0],
        "max": s[-1],
        "mean": statistics.fmean(s),
    }


def format_summary(name: str, samples: list[float]) -> str:
    """One line: ``name: median X ms, p90 Y ms (n=N, min .., max ..)``."""
    st = summarize(samples)
    return (
        f"{name}: median {st['median']:.1f} ms, p90 {st['p90']:.1f} ms "
        f"(n={int(st['n'])}, min {st['min']:.1f}, max {st['max']:.1f})"
    )


@contextlib.contextmanager
def lab_page(
    root: str | Path | None = None,
    *,
    headless: bool = True,
    **server_kwargs: Any,
) -> Iterator[tuple[JupyterLabServer, Any]]:
    """Start JupyterLab (root: a temp dir unless given) and Chromium; yield ``(lab, page)``.

    Everything is stopped on exit. ``page.nbh_errors`` collects console/page errors.
    """
    from playwright.sync_api import sync_playwright

    with contextlib.ExitStack() as stack:
        if root is None:
            root = stack.enter_context(tempfile.TemporaryDirectory(prefix="nbh-bench-"))
        lab = stack.enter_context(JupyterLabServer(root, **server_kwargs))
        pw = stack.enter_context(sync_playwright())
        browser = launch_chromium(pw, headless=headless)
        stack.callback(browser.close)
        yield lab, new_page(browser)


#: notebook source shared by the benchmarks whose agent runs ``step`` calls:
#: the imports they use and the ``step`` tool (a plain string: not formatted)
STEP_TOOL_SOURCE = """
from agentscope.agent import Agent, ReActConfig
from agentscope.message import TextBlock, ToolResultState
from agentscope.tool import FunctionTool, ToolChunk, Toolkit
from nb_hitl import Session
from nb_hitl.models import ScriptedChatModel, Turn, tool_call

def step(i: int) -> ToolChunk:
    \"\"\"Run one step of the job.

    Args:
        i (int): the step number.
    \"\"\"
    return ToolChunk(content=[TextBlock(text=f"step {i} done")], state=ToolResultState.SUCCESS)
"""
