"""The wheel as a user gets it: built from the tree, installed in a fresh venv without Node, run headless.

The widgets' JavaScript is built by hatch-jupyter-builder from ``js/`` into
``nb_hitl/static/`` (``./run setup``); the wheel must carry it, so that
``pip install nb_hitl`` needs no Node. The test builds the wheel with
``pip wheel . --no-deps`` with only the venv's ``bin`` on ``PATH`` (no
``node``/``npm``), checks its contents and metadata (JupyterLab, AG-UI and
the fakes only as extras), installs it into a new venv and runs the
quickstart's code there headless: ``demo_agent()``, a ``Session``, the
pauses answered with ``session.act``.

To stay fast and offline the new venv sees the project venv's
site-packages for the *dependencies* (a ``.pth`` line, whose own ``.pth``
files are not run, so the editable ``nb_hitl`` is not visible) and the
project's pip (``pip --python``) installs the wheel there with ``--no-index``. ``NB_HITL_WHEEL_FULL_INSTALL=1``
resolves and downloads every dependency instead (a few minutes).
"""

from __future__ import annotations

import email
import json
import os
import shutil
import subprocess
import sysconfig
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest

from tests.harness.kernel import REPO_ROOT, VENV_PYTHON

pytestmark = pytest.mark.timeout(600)

#: nb_hitl's Jupyter server extension enabled the standard way (shared-data of the wheel)
SERVER_CONFIG_D = "jupyter_server_config.d/nb_hitl.json"
SERVER_CONFIG = "etc/jupyter/" + SERVER_CONFIG_D

STATIC = ("reply.js", "permissions.js", "audit.js", "inbox.js", "loader.js", "theme.css")

QUICKSTART = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path

    import nb_hitl
    from nb_hitl import Session
    from nb_hitl.demo import demo_agent

    here = Path(nb_hitl.__file__).resolve().parent
    assert here.parent == Path(sys.argv[1]).resolve(), f"nb_hitl imported from {here}, not the new venv"
    for name in sys.argv[2:]:
        assert (here / "static" / name).stat().st_size > 1000, name

    async def pause(session, kind):
        for _ in range(1000):
            found = [p for p in session.pending if p.kind == kind]
            if found:
                return found[0]
            await asyncio.sleep(0.01)
        raise AssertionError(f"no {kind} pause")

    async def main():
        agent = demo_agent(chunk_delay=0)
        session = Session(agent)
        task = session.start("Please tidy up my sandbox folder.")
        ask = await pause(session, "ask_user")
        question = ask.ask_user.questions[0].question
        await session.act({"action": "answer", "tool_call_id": ask.tool_call_id,
                           "answers": [{"question": question, "selected": ["old_log.txt"]}]})
        confirm = await pause(session, "confirm")
        await session.act({"action": "approve", "tool_call_id": confirm.tool_call_id})
        final = await task
        print(json.dumps({
            "final": final.get_text_content(),
            "files": sorted(p.name for p in agent.sandbox.iterdir()),
            "version": nb_hitl.__version__,
            "jupyterlab_imported": "jupyterlab" in sys.modules,
        }))

    asyncio.run(main())
    """
)


def _no_node_path(*dirs: Path) -> str:
    path = os.pathsep.join(str(d) for d in dirs)
    assert shutil.which("node", path=path) is None and shutil.which("npm", path=path) is None
    return path


def _source_copy(dest: Path) -> Path:
    """The project's sources copied to ``dest`` (``js/node_modules`` linked, caches left out):
    an editable build rewrites ``nb_hitl/static``, which kernels of tests running at the
    same time read."""
    skip = shutil.ignore_patterns(
        ".git", ".venv", "node_modules", "*cache*", ".hypothesis", "test-artifacts", "*_files"
    )
    shutil.copytree(REPO_ROOT, dest, ignore=skip, symlinks=True)
    (dest / "js" / "node_modules").symlink_to(REPO_ROOT / "js" / "node_modules", target_is_directory=True)
    return dest


def _run(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    missing = [n for n in STATIC if not (REPO_ROOT / "nb_hitl" / "static" / n).exists()]
    assert not missing, f"nb_hitl/static lacks {missing}: build the JS first (./run setup)"
    out = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = _no_node_path(VENV_PYTHON.parent)
    _run([str(VENV_PYTHON), "-m", "pip", "wheel", ".", "--no-deps", "-q", "-w", str(out)], env, REPO_ROOT)
    (whl,) = out.glob("nb_hitl-*.whl")
    return whl


def test_wheel_carries_the_built_js_types_and_license(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in STATIC:
        assert f"nb_hitl/static/{name}" in names
    assert "nb_hitl/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.startswith(("tests/", "js/", "notebooks/")) for n in names)


def test_wheel_carries_the_server_extension_and_its_config(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        (config,) = [n for n in names if n.endswith(".data/data/" + SERVER_CONFIG)]
        assert json.loads(zf.read(config)) == json.loads((REPO_ROOT / "jupyter-config" / SERVER_CONFIG_D).read_text())
    assert "nb_hitl_serverext/__init__.py" in names
    assert json.loads((REPO_ROOT / "jupyter-config" / SERVER_CONFIG_D).read_text()) == {
        "ServerApp": {"jpserver_extensions": {"nb_hitl_serverext": True}}
    }


def test_editable_install_places_the_server_config(tmp_path: Path) -> None:
    """``pip install -e .`` (what ./run setup and ./run lab do) puts the config.d
    file under the prefix, where Jupyter reads it: hatchling's editable wheels carry shared-data.
    (An editable build runs the JS build too, so npm stays on PATH.)"""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    prefix = tmp_path / "prefix"
    _run(
        [str(VENV_PYTHON), "-m", "pip", "install", "--no-deps", "-q", "-e", ".", "--prefix", str(prefix)],
        env,
        _source_copy(tmp_path / "src"),
    )
    installed = prefix / SERVER_CONFIG
    assert installed.read_text() == (REPO_ROOT / "jupyter-config" / SERVER_CONFIG_D).read_text()


def test_wheel_metadata_keeps_lab_agui_and_fakes_optional(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        meta_name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_string(zf.read(meta_name).decode())
    import nb_hitl

    assert meta["Version"] == nb_hitl.__version__  # one source: nb_hitl/__init__.py
    assert meta["License-Expression"] == "Apache-2.0"
    requires = [r.replace("'", '"') for r in meta.get_all("Requires-Dist") or []]
    hard = [r for r in requires if "extra ==" not in r]
    for optional in ("jupyterlab", "ag-ui-protocol", "starlette", "uvicorn", "httpx-sse", "ollama"):
        assert not any(r.lower().startswith(optional) for r in hard), (optional, hard)
    extras = set(meta.get_all("Provides-Extra") or [])
    assert {"lab", "agui", "fakes", "ollama", "service", "test"} <= extras
    assert any(r.startswith("jupyterlab") and 'extra == "lab"' in r for r in requires)


def test_quickstart_runs_headless_from_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(target)  # the project's pip installs into it
    py = target / "bin" / "python"
    site = Path(
        _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], {}, tmp_path).stdout.strip()
    )
    env = {"PATH": _no_node_path(target / "bin"), "HOME": str(tmp_path), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for key in ("PIP_FIND_LINKS", "PIP_CERT", "PIP_DEFAULT_TIMEOUT", "SSL_CERT_FILE", "LANG"):
        if key in os.environ:
            env[key] = os.environ[key]
    install = [str(VENV_PYTHON), "-m", "pip", "--python", str(py), "install", "-q", str(wheel)]
    if os.environ.get("NB_HITL_WHEEL_FULL_INSTALL") != "1":
        # the dependencies from the project venv (its .pth files are not processed: no editable nb_hitl)
        (site / "_nb_hitl_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        install.insert(6, "--no-index")
    _run(install, env, tmp_path, timeout=900)
    proc = _run([str(py), "-c", QUICKSTART, str(site), *STATIC], env | {"PYTHONPATH": ""}, tmp_path, timeout=120)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["final"] == "Done. Deleted old_log.txt. The folder now holds: draft.md, notes.txt."
    assert result["files"] == ["draft.md", "notes.txt"]
    assert result["jupyterlab_imported"] is False
