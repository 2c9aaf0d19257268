"""Benchmark: saved notebook size and comm traffic per reply, next to plain-text and Output baselines.

In real JupyterLab + Debian Chromium (widget ``saveState`` on, as ``./run``
sets it), three notebooks of ``--turns`` cells are run and saved:

* ``nb_hitl``: one ``Session`` over a real ``agentscope.agent.Agent`` on the
  scripted offline model; each cell ``await session.run(...)`` (one
  ``ReplyWidget`` per reply). Every ``--confirm-every``-th turn calls a
  function tool, so AgentScope's permission engine asks for confirmation and
  the benchmark clicks Approve in the page.
* ``text``: the same turns printed as plain text (prompt, tool call, result,
  answer): what a reply costs with no widget at all.
* ``Output``: the same text appended to one ``ipywidgets.Output`` per turn
  (a widget baseline whose saved state carries no page code).

For each it prints the saved ``.ipynb`` size (total and per reply), the bytes
of page code saved in it (every widget state's ``_esm`` and ``_css``, and the
shared page-code model's ``code`` and ``css``) with the number of whole
bundles among them, and
the bytes of ``comm_open``/``comm_msg`` websocket frames kernel -> page per
reply (the sizes of the frames the browser received while the cells ran).

Run from the repository root::

    .venv/bin/python -m benchmarks.notebook_size [--turns 20] [--confirm-every 3]

Bound: it ends within 900 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._lab import (
    STEP_TOOL_SOURCE,
    lab_page,
    open_notebook,
    output_locator,
    run_all_cells,
    save_notebook,
    wait_execution_done,
    write_notebook,
)

OUT = ".jp-OutputArea-output"
OPEN_APPROVE = f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="open"] [data-testid="nbh-approve"]:not([disabled])'

# formatted with turns= and every=, after STEP_TOOL_SOURCE
NBHITL_SETUP = """
TURNS, EVERY = {turns}, {every}
script = []
for i in range(TURNS):
    if i % EVERY == 0:
        script += [Turn(f"Running step {{i}}.", [tool_call("step", i=i)]), Turn(f"Step {{i}} is done.")]
    else:
        script.append(Turn(f"Answer {{i}}: nothing to run for this one."))
agent = Agent(
    name="bench",
    system_prompt="Run the steps one by one.",
    model=ScriptedChatModel(script),
    toolkit=Toolkit(tools=[FunctionTool(step)]),
    react_config=ReActConfig(max_iters=10),
)
session = Session(agent)
"""

TEXT_SETUP = """
TURNS, EVERY = {turns}, {every}
def turn_text(i):
    if i % EVERY == 0:
        return (f"> turn {{i}}\\nbench: Running step {{i}}.\\ncall step(i={{i}}) -> approved\\n"
                f"step {{i}} done\\nbench: Step {{i}} is done.")
    return f"> turn {{i}}\\nbench: Answer {{i}}: nothing to run for this one."
"""

OUTPUT_SETUP = (
    TEXT_SETUP
    + """
import ipywidgets
from IPython.display import display
def show(i):
    out = ipywidgets.Output()
    display(out)
    out.append_stdout(turn_text(i))
"""
)


def notebooks(turns: int, every: int) -> dict[str, list[str]]:
    """The cells of each notebook: a set-up cell, then one cell per turn."""
    return {
        "nb_hitl": [STEP_TOOL_SOURCE + NBHITL_SETUP.format(turns=turns, every=every)]
        + [f'await session.run("Turn {i}, please.")' for i in range(turns)],
        "text": [textwrap.dedent(TEXT_SETUP.format(turns=turns, every=every))]
        + [f"print(turn_text({i}))" for i in range(turns)],
        "Output": [textwrap.dedent(OUTPUT_SETUP.format(turns=turns, every=every))]
        + [f"show({i})" for i in range(turns)],
    }


def page_code_bytes(saved: dict[str, Any]) -> tuple[int, int]:
    """``(bytes, copies)`` of page code in a saved notebook's widget state.

    Counts every model state's ``_esm`` and ``_css`` and the ``code`` / ``css``
    of nb_hitl's shared page-code model; ``copies`` is how many states carry a
    whole bundle (an ``_esm`` or ``code`` over 10 kB; a widget's loader of
    about 2 kB is not a copy).
    """
    state = saved.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    total = copies = 0
    for model in state.get("state", {}).values():
        st = model.get("state", {})
        total += sum(len(str(st.get(k, "")).encode()) for k in ("_esm", "_css", "code", "css"))
        copies += any(len(str(st.get(k, ""))) > 10_000 for k in ("_esm", "code"))
    return total, copies


def run_one(page: Any, lab: Any, name: str, cells: list[str], turns: int, frames: list[int]) -> dict[str, Any]:
    """Run and save one notebook; its figures."""
    path = f"size_{name.lower().replace(' ', '_')}.ipynb"
    write_notebook(lab.root / path, cells)
    open_notebook(page, lab, path)
    frames.clear()
    run_all_cells(page)
    deadline = time.monotonic() + 600
    approved = 0
    while time.monotonic() < deadline:
        approve = page.locator(OPEN_APPROVE)
        if approve.count():
            approve.first.click()
            approved += 1
            page.wait_for_timeout(50)
            continue
        done = page.evaluate(
            """() => { const p = [...document.querySelectorAll(
                 ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt")];
               return p.length > 0 && p.every((e) => /\\[\\d+\\]/.test(e.textContent || "")); }"""
        )
        if done:
            break
        page.wait_for_timeout(100)
    wait_execution_done(page, timeout=60)
    if name == "nb_hitl":
        finals = page.locator(f'{OUT} [data-testid="nbh-final-text"]').count()
        assert finals == turns, f"{finals} finished replies of {turns}"
    else:
        output_locator(page, f"> turn {turns - 1}").first.wait_for(timeout=30_000)
    traffic = sum(frames)
    page.wait_for_timeout(500)
    save_notebook(page)
    file = lab.root / path
    saved = json.loads(file.read_text())
    code, copies = page_code_bytes(saved)
    lab.shutdown_kernels()
    return {
        "size": file.stat().st_size,
        "code": code,
        "copies": copies,
        "traffic": traffic,
        "approved": approved,
    }


def main(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Run the three notebooks, print their figures per reply."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--confirm-every", type=int, default=3)
    args = parser.parse_args(argv)
    results: dict[str, dict[str, Any]] = {}
    with lab_page() as (lab, page):
        frames: list[int] = []

        def on_ws(ws: Any) -> None:
            def received(payload: Any) -> None:
                text = payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
                if '"comm_msg"' in text or '"comm_open"' in text:
                    frames.append(len(payload))

            ws.on("framereceived", received)

        page.on("websocket", on_ws)
        for name, cells in notebooks(args.turns, args.confirm_every).items():
            results[name] = run_one(page, lab, name, cells, args.turns, frames)
        errors = [e for e in page.nbh_errors if "pageerror" in e]
        if errors:
            print("page errors:", *errors, sep="\n  ")
    n = args.turns
    base = results["text"]["size"]
    print(f"{n} turns, a confirmation (clicked Approve) every {args.confirm_every} turns")
    for name, r in results.items():
        print(
            f"{name:>8}: saved .ipynb {r['size'] / 1e3:.1f} kB ({r['size'] / n / 1e3:.2f} kB per reply, "
            f"x{r['size'] / base:.1f} the plain-text notebook), page code saved {r['code'] / 1e3:.1f} kB "
            f"({r['copies']} whole bundle{'' if r['copies'] == 1 else 's'}), "
            f"comm kernel->page {r['traffic'] / n / 1e3:.2f} kB per reply"
            + (f", {r['approved']} approvals clicked" if r["approved"] else "")
        )
    return results


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(main, 900, "notebook_size")  # seconds, on a loaded 2-core machine
