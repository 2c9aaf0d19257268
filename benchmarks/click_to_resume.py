"""Benchmark: click on Approve -> the agent's next event in the page, next to a plain ipywidgets baseline.

In real JupyterLab + Debian Chromium, a real ``agentscope.agent.Agent`` on the
scripted offline model asks for confirmation ``warmup + n`` times in a row
(one ``step`` tool call per model turn; ``step`` is a function tool, so the
permission engine asks every time). For each pause the benchmark clicks
Approve and measures, **in the page** (``performance.now()`` in a capturing
``click`` listener, then in a ``MutationObserver``; see ``benchmarks/_lab.py``),
the time until the agent's next event is in the DOM: the tool result entry of
the approved call (``[data-testid="nbh-tool-result"]``, drawn when AgentScope's
``ToolResultStartEvent`` for the resumed call reaches the widget). That path
is: page ``model.send`` -> comm -> ``Session`` exactly-once check and decision
-> audit/queue -> the driving task resumes ``agent.reply_stream`` with a
``UserConfirmResultEvent`` -> the tool runs -> trait sync -> the widget redraws.

Two ways of running the reply are measured (``--pattern``):

* ``await``: the cell awaits ``session.run(...)`` (the quickstart's way; the
  kernel is busy in that cell while the clicks arrive);
* ``background``: the cell returns the task of ``session.start(...)`` (the
  kernel is idle between clicks).

The baseline, measured in the same run with the same browser and server, is
``benchmarks/click_baseline.py``: an ``ipywidgets.Button`` whose ``on_click``
sets a ``Label`` (click -> Label text changed in the DOM).

Run from the repository root::

    .venv/bin/python -m benchmarks.click_to_resume [--n 30] [--pattern both]

Bound: it ends within 900 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: benchmarks/click_to_resume.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._lab import (
    STEP_TOOL_SOURCE,
    JupyterLabServer,
    format_summary,
    lab_page,
    measure_click_to_dom,
    open_notebook,
    summarize,
    write_notebook,
)
from benchmarks.click_baseline import measure_ipywidgets_button

OUT = ".jp-OutputArea-output"
OPEN_APPROVE = f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="open"] [data-testid="nbh-approve"]:not([disabled])'
REPLY = f'{OUT} [data-testid="nbh-reply"]'
RESULTS = f'{OUT} [data-testid="nbh-tool-result"]'


def agent_cell(steps: int, pattern: str) -> str:
    """The notebook cell: an agent that asks to run ``step`` ``steps`` times, then answers."""
    run = (
        'reply = await session.run("Run every step.")\nprint("FINAL:", reply.get_text_content())'
        if pattern == "await"
        else 'task = session.start("Run every step.")'
    )
    return (
        STEP_TOOL_SOURCE
        + textwrap.dedent(
            f"""
        STEPS = {steps}
        agent = Agent(
            name="bench",
            system_prompt="Run the steps one by one.",
            model=ScriptedChatModel(
                [Turn(f"Step {{i}}.", [tool_call("step", i=i)]) for i in range(STEPS)] + [Turn("All steps done.")]
            ),
            toolkit=Toolkit(tools=[FunctionTool(step)]),
            react_config=ReActConfig(max_iters=STEPS + 10),
        )
        session = Session(agent)
        """
        )
        + run
    )


def measure_approve_to_resume(page: Any, lab: JupyterLabServer, n: int, pattern: str, warmup: int = 2) -> list[float]:
    """``n`` samples (ms): click Approve -> the approved call's tool result in the DOM.

    Writes ``click_to_resume_<pattern>.ipynb`` into ``lab.root``, runs it and
    answers every pause with Approve. Raises AssertionError if a click did
    not lead to exactly one decision (one resume per click).
    """
    name = f"click_to_resume_{pattern}.ipynb"
    write_notebook(lab.root / name, [agent_cell(warmup + n, pattern)])
    open_notebook(page, lab, name)
    # not harness.run_all_cells: it awaits the command, which settles only when the cell ends
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    page.locator(f'{REPLY}[data-live="true"]').wait_for(timeout=60_000)

    def before_each(_i: int) -> None:
        page.locator(OPEN_APPROVE).wait_for(timeout=60_000)

    samples = measure_click_to_dom(
        page,
        OPEN_APPROVE,
        REPLY,
        n,
        reset_js=f"window.__nbhResults = document.querySelectorAll({RESULTS!r}).length",
        changed_when=f"(el) => document.querySelectorAll({RESULTS!r}).length > window.__nbhResults",
        before_each=before_each,
        warmup=warmup,
    )
    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert final.inner_text() == "All steps done.", final.inner_text()
    decided = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="delivered"]').count()
    assert decided == warmup + n, f"{decided} delivered pauses for {warmup + n} clicks"
    results = page.locator(RESULTS).count()
    assert results == warmup + n, f"{results} tool results for {warmup + n} clicks"
    return samples


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Start JupyterLab + Chromium, measure the baseline and nb_hitl, print both and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30, help="measured clicks per series (>= 30 for the report)")
    parser.add_argument("--pattern", choices=["await", "background", "both"], default="both")
    parser.add_argument("--headed", action="store_true")
    args = parser.parse_args(argv)
    patterns = ["await", "background"] if args.pattern == "both" else [args.pattern]

    results: dict[str, list[float]] = {}
    with lab_page(headless=not args.headed) as (lab, page):
        results["baseline"] = measure_ipywidgets_button(page, lab, args.n)
        lab.shutdown_kernels()
        for pattern in patterns:
            results[pattern] = measure_approve_to_resume(page, lab, args.n, pattern)
            lab.shutdown_kernels()
        errors = [e for e in page.nbh_errors if "pageerror" in e]
        if errors:
            print("page errors:", *errors, sep="\n  ")

    base = summarize(results["baseline"])
    print(format_summary("ipywidgets Button -> Label (baseline)", results["baseline"]))
    labels = {
        "await": "nb_hitl Approve -> agent's next event (cell awaits session.run)",
        "background": "nb_hitl Approve -> agent's next event (background session.start)",
    }
    summary = {"baseline": base}
    for pattern in patterns:
        st = summarize(results[pattern])
        summary[pattern] = st
        print(format_summary(labels[pattern], results[pattern]))
        print(
            f"  ratio vs baseline ({pattern}): median x{st['median'] / base['median']:.2f}, "
            f"p90 x{st['p90'] / base['p90']:.2f}"
        )
    return summary


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(main, 900, "click_to_resume")  # seconds, on a loaded 2-core machine
