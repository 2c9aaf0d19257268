"""nb_hitl.dry_run's pieces: every path of the copy backend stays inside its temporary root, the
summary's count of files is said in words, which Bash calls the bubblewrap sandbox takes
(nb_hitl.dry_run_shell), and the line diff of a reviewed result."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agentscope.tool import Bash, Edit, Write
from agentscope.tool._builtin._backend import LocalBackend

from nb_hitl import dry_run_folder, dry_run_shell
from nb_hitl.dry_run import CopyBackend, DryRunFile, _did, can_dry_run, why_not
from nb_hitl.errors import DecisionError
from nb_hitl.file_change import file_diff, text_diff


def test_every_path_stays_inside_the_copy(tmp_path: Path) -> None:
    root = tmp_path / "copy"
    root.mkdir()
    outside = tmp_path / "outside.txt"
    backend = CopyBackend(str(root))
    assert isinstance(backend, LocalBackend)

    async def scenario() -> None:
        await backend.write_file(f"/../../{outside.name}", b"x")  # ".." cannot climb out of the root
        await backend.write_file(str(outside), b"y")
        assert await backend.read_file(str(outside)) == b"y"
        assert sorted(await backend.list_dir("/", recursive=True)) == sorted([f"/{outside.name}", str(outside)])
        result = await backend.exec_shell(["touch", str(outside)])
        assert result.exit_code == 126

    asyncio.run(scenario())
    assert not outside.exists()
    assert (root / outside.name).read_bytes() == b"x"
    assert (root / str(outside).lstrip("/")).read_bytes() == b"y"


def test_which_calls_can_be_dry_run(tmp_path: Path) -> None:
    path = str(tmp_path / "f.txt")
    assert can_dry_run(Write(), {"file_path": path, "content": ""})
    assert can_dry_run(Edit(), {"file_path": path, "old_string": "a", "new_string": "b"})
    assert not can_dry_run(Write(), {"file_path": "f.txt", "content": ""})
    assert not can_dry_run(Write(backend=CopyBackend(str(tmp_path))), {"file_path": path, "content": ""})
    assert not can_dry_run(None, {"file_path": path})


def test_the_count_in_words() -> None:
    def f(change: str) -> DryRunFile:
        return DryRunFile(path="/p", change=change, diff=file_diff("/p", None, b""))

    assert _did([]) == "no file changed"
    assert _did([f("created")]) == "1 file created"
    assert _did([f("changed"), f("changed"), f("deleted")]) == "2 files changed, 1 deleted"


def test_which_bash_calls_can_be_dry_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ok = {"command": "touch x"}
    assert why_not(Bash(cwd=str(tmp_path)), ok) is None  # bubblewrap runs here (.ci/install-services)
    assert why_not(Bash(cwd=str(tmp_path)), {"command": " "}) == "the call names no command"
    assert why_not(Bash(cwd=str(tmp_path / "nope")), ok) == f"its working directory {tmp_path / 'nope'} does not exist"
    assert "sandbox backend of its own" in str(why_not(Bash(backend=CopyBackend(str(tmp_path))), ok))
    monkeypatch.setattr(dry_run_shell, "BWRAP", "nb-hitl-no-such-bwrap")
    assert why_not(Bash(cwd=str(tmp_path)), ok) == (
        "a shell command is dry-run only in a bubblewrap sandbox, and bubblewrap ('nb-hitl-no-such-bwrap') "
        "is not installed"
    )


def test_a_folder_tool_is_dry_run_only_without_middlewares_and_with_its_folder(tmp_path: Path) -> None:
    from nb_hitl.demo import SandboxDelete

    ok = {"path": "a.txt"}
    assert why_not(SandboxDelete(tmp_path), ok) is None
    assert why_not(SandboxDelete(tmp_path / "nope"), ok) == f"its folder {tmp_path / 'nope'} does not exist"
    wrapped = SandboxDelete(tmp_path)
    wrapped._middlewares = [object()]
    assert why_not(wrapped, ok) == "the tool has middlewares, which could act outside a copy of its folder"
    assert why_not(SandboxDelete(tmp_path).in_folder(str(tmp_path / "nope")), ok) is not None  # rebased: its own folder


def test_a_workspace_too_large_to_copy_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(3):
        (tmp_path / f"f{n}.txt").write_text("x")
    monkeypatch.setattr(dry_run_folder, "MAX_WORKSPACE_FILES", 2)
    with pytest.raises(DecisionError, match="is too large to copy for a dry run"):
        asyncio.run(dry_run_shell.run_in_sandbox(Bash(cwd=str(tmp_path)), {"command": "true"}))


def test_text_diff_of_a_reviewed_result() -> None:
    assert text_diff("a\nb", "a\nb", "x", "y") == ""
    assert text_diff("a\nb", "a\nc\n", "raw", "edited").splitlines() == [
        "--- raw",
        "+++ edited",
        "@@ -1,2 +1,2 @@",
        " a",
        "-b",
        "\\ No newline at end of file",
        "+c",
    ]
