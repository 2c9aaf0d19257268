"""Baseline: plain ipywidgets Button -> Label latency in real JupyterLab + Chromium.

ms from a Playwright-dispatched click on an ``ipywidgets.Button`` to the
``Label`` text changing in the DOM (its ``on_click`` sets ``label.value``),
measured in the page (see ``benchmarks/_lab.py``). The kernel is idle
between clicks. nb_hitl's figures (click Approve -> the agent's next event
in the page) are compared with this one, measured in the same run.

Run: ``.venv/bin/python benchmarks/click_baseline.py [--n 30]``
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._lab import (
    JupyterLabServer,
    format_summary,
    lab_page,
    measure_click_to_dom,
    open_notebook,
    run_all_cells,
    summarize,
    write_notebook,
)

BUTTON_CLASS = "nbh-bench-button"
LABEL_CLASS = "nbh-bench-label"
NOTEBOOK = "click_baseline.ipynb"

BASELINE_CELL = textwrap.dedent(
    f"""
    import ipywidgets as W
    clicks = 0
    label = W.Label("clicked 0", _dom_classes=["{LABEL_CLASS}"])
    button = W.Button(description="Click", _dom_classes=["{BUTTON_CLASS}"])
    def on_click(_b):
        global clicks
        clicks += 1
        label.value = f"clicked {{clicks}}"
    button.on_click(on_click)
    W.VBox([button, label])
    """
)


def measure_ipywidgets_button(page: Any, lab: JupyterLabServer, n: int = 30) -> list[float]:
    """Click -> Label DOM change, ``n`` samples in ms (2 warm-up clicks dropped).

    Writes ``click_baseline.ipynb`` into ``lab.root``, opens it, runs it and
    waits for the widgets before measuring.
    """
    write_notebook(lab.root / NOTEBOOK, [BASELINE_CELL])
    open_notebook(page, lab, NOTEBOOK)
    run_all_cells(page)
    page.locator(f".jp-OutputArea-output .{LABEL_CLASS}").wait_for(timeout=60_000)
    return measure_click_to_dom(
        page,
        f".jp-OutputArea-output button.{BUTTON_CLASS}",
        f".jp-OutputArea-output .{LABEL_CLASS}",
        n,
    )


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Start JupyterLab + Chromium, measure, print median/p90; returns the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30, help="measured clicks")
    parser.add_argument("--headed", action="store_true")
    args = parser.parse_args(argv)
    with lab_page(headless=not args.headed) as (lab, page):
        samples = measure_ipywidgets_button(page, lab, args.n)
        if page.nbh_errors:
            print("page errors:", *page.nbh_errors, sep="\n  ")
    print(format_summary("ipywidgets Button -> Label (baseline)", samples))
    return summarize(samples)


if __name__ == "__main__":
    main()
