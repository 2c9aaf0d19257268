"""``./run lab`` installs what every notebook under ``notebooks/`` imports.

The README's first command opens JupyterLab on ``notebooks/``; a new user then
opens any notebook there and chooses Run All. A notebook whose first cell
imports ``nb_hitl.agui`` (or ``nb_hitl.service``, or matplotlib...) must not
stop at an ``ImportError`` naming an extra that ``./run lab`` left out.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
from pathlib import Path

from tests.harness.kernel import REPO_ROOT

# a module a notebook imports -> the extra of pyproject.toml that installs what it needs
NEEDS = {
    "nb_hitl.agui": "agui",
    "httpx": "agui",
    "nb_hitl.service": "service",
    "nb_hitl.audit": "data",
    "nb_hitl.audit.charts": "charts",
    "matplotlib": "charts",
    "pandas": "data",
    "nb_hitl.fakes": "fakes",
    "nb_hitl.mcp": "mcp",
}


def notebook_imports(path: Path) -> set[str]:
    """The absolute module names the code cells of one notebook import."""
    mods: set[str] = set()
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        src = "\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Import):
                mods.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                mods.add(node.module)
    return mods


def lab_extras() -> set[str]:
    """The extras the ``lab)`` branch of ``run`` installs (its ``setup`` argument)."""
    text = (REPO_ROOT / "run").read_text()
    found = re.search(r"^\s*lab\)\s*\n\s*setup\s+\"?(\$?[\w,]+)\"?", text, re.MULTILINE)
    assert found, "the lab) branch of run no longer calls setup EXTRAS"
    extras = found.group(1)
    if extras.startswith("$"):  # a variable of the script: NAME="a,b,c"
        value = re.search(rf"^{extras[1:]}=\"?([\w,]+)\"?$", text, re.MULTILINE)
        assert value, f"run does not set {extras[1:]}"
        extras = value.group(1)
    return set(extras.split(","))


def test_run_lab_installs_the_extras_every_notebook_imports() -> None:
    declared = set(tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    installed = lab_extras()
    assert installed <= declared, f"./run lab names extras pyproject.toml does not have: {installed - declared}"
    missing: dict[str, set[str]] = {}
    for path in sorted((REPO_ROOT / "notebooks").glob("*.ipynb")):
        for module in notebook_imports(path):
            for prefix, extra in NEEDS.items():
                if (module == prefix or module.startswith(prefix + ".")) and extra not in installed:
                    missing.setdefault(path.name, set()).add(f"{module} needs [{extra}]")
    assert not missing, f"./run lab installs nb_hitl[{','.join(sorted(installed))}], but: {missing}"
