"""nb_hitl.dry_run's pieces: every path of the copy backend stays inside its temporary root, and the
summary's count of files is said in words."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentscope.tool import Edit, Write
from agentscope.tool._builtin._backend import LocalBackend

from nb_hitl.dry_run import CopyBackend, DryRunFile, _did, can_dry_run
from nb_hitl.file_change import file_diff


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
