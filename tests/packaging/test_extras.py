"""Optional pieces say which extra to install when their packages are missing.

One fresh interpreter tries each case: the package is made unimportable
(``sys.modules[name] = None``, which is what Python does for a package that
is not installed), the nb_hitl module that needs it is imported, and the
message is recorded. (``starlette`` cannot be blocked this way: AgentScope
itself imports it, through ``mcp``.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.harness.kernel import REPO_ROOT, kernel_env

CASES = [
    ("ag_ui", "nb_hitl.agui"),
    ("httpx_sse", "nb_hitl.agui"),
    ("sse_starlette", "nb_hitl.agui"),
    ("uvicorn", "nb_hitl.agui"),
    ("uvicorn", "nb_hitl.fakes.openai"),
]
LIBRARY_WITHOUT = ["jupyterlab", "ag_ui", "httpx_sse", "ollama"]

PROBE = textwrap.dedent(
    """
    import importlib, json, sys
    cases, library_without = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    import nb_hitl  # AgentScope and the library first, with everything present
    out = {}

    def forget():
        for name in [m for m in sys.modules if m.startswith(("nb_hitl.agui", "nb_hitl.fakes"))]:
            del sys.modules[name]

    for missing, module in cases:
        saved = sys.modules.pop(missing, None)
        forget()
        sys.modules[missing] = None
        try:
            importlib.import_module(module)
            out[f"{missing}->{module}"] = "imported"
        except ImportError as exc:
            out[f"{missing}->{module}"] = f"{type(exc).__name__}: {exc}"
        finally:
            del sys.modules[missing]
            if saved is not None:
                sys.modules[missing] = saved
    forget()
    for name in library_without:
        sys.modules[name] = None
    for name in ["nb_hitl.demo", "nb_hitl.model_config", "nb_hitl.session", "nb_hitl.widgets"]:
        importlib.import_module(name)
    out["library"] = "ok"
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def probe() -> dict[str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(CASES), json.dumps(LIBRARY_WITHOUT)],
        capture_output=True,
        text=True,
        env=kernel_env(),
        cwd=REPO_ROOT,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("missing", "module"), CASES)
def test_optional_module_names_its_extra(probe: dict[str, str], missing: str, module: str) -> None:
    extra = "agui" if module == "nb_hitl.agui" else "fakes"
    message = probe[f"{missing}->{module}"]
    assert message.startswith(
        f'ImportError: {module.rsplit(".", 1)[0] if extra == "fakes" else module} needs the "{extra}" extra'
    ), message
    assert f"({missing} is not installed)" in message and f'pip install "nb_hitl[{extra}]"' in message


def test_the_library_imports_without_the_optional_packages(probe: dict[str, str]) -> None:
    assert probe["library"] == "ok"
