"""notebooks/permission_explorer.ipynb runs headless, top to bottom, in a real kernel.

The notebook is executed with nbclient on the venv's ``python3`` kernel, with
the notebook's folder as the working directory and the repository on
``PYTHONPATH`` (``tests.harness.kernel.kernel_env``). Any cell error fails
the test; the key teaching outputs are checked.
"""

from __future__ import annotations

import pytest

from tests.harness import REPO_ROOT
from tests.support import run_notebook, widget_views

NOTEBOOK = REPO_ROOT / "notebooks" / "permission_explorer.ipynb"

pytestmark = pytest.mark.kernel


def stream_text(nb) -> str:
    """Each cell's printed text, its stream outputs joined as they were
    written: a busy kernel flushes one printed line in several outputs."""
    cells = [c for c in nb.cells if c.cell_type == "code"]
    return "\n".join(
        "".join(o.get("text", "") for o in c.get("outputs", []) if o.get("output_type") == "stream") for c in cells
    )


def test_permission_explorer_notebook_runs_headless():
    nb, _ = run_notebook(NOTEBOOK, timeout=180)  # raises CellExecutionError on the first failing cell
    text = stream_text(nb)
    assert "ERROR" not in text
    # the explorer widget was displayed
    views = widget_views(nb)
    assert views
    # the five modes side by side, straight from the engine
    assert (
        "Bash {'command': 'rm -rf /'}                 ask!          ask!          deny          allow         deny"
        in text
    )
    assert "live mode of the agent is still: default" in text
    # the traps, each with the engine's decision and the reason
    assert "substring rule" in text and "after `sudo`" in text
    assert "prefix rule" in text and "a space is required" in text
    assert "crosses `/`" in text
    assert "The pattern is relative and the path absolute" in text
    assert "only a whole-tool rule (one that names no pattern) matches" in text
    # safety asks are bypass-immune even with an allow-all Bash rule
    assert "'rm -rf /'           -> ask, bypass_immune=True" in text
    # "Always allow" from a confirmation shows up in the explorer and applies
    assert "('allow delete_file', 'suggested')" in text
    assert "asked again? False" in text
    # a malformed rules file is refused with line and field
    assert "refused: line 2, rule 1, field 'behavior'" in text
    # before "Always allow": what else a rule lets through, a narrowed rule checked, a look-alike name refused
    assert "Bash(git status:*): in a Session covers `git status` and `git status` with more arguments" in text
    assert "Bash(docker run): in a Session covers each simple command containing `docker run` anywhere" in text
    assert "Edit(~/**): allows every file in the home folder" in text
    assert "narrowed rule accepted: Bash git push origin:*" in text
    assert "refused [rule_content]: `allow Bash(git push upstream:*)` no longer matches the call" in text
    assert "refused [tool_name]:" in text and "U+0435 CYRILLIC SMALL LETTER IE" in text
    assert "Did you mean the tool 'delete_file'?" in text
