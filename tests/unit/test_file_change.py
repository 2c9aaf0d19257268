"""The diff a file edit's card shows (:mod:`nb_hitl.file_change`): pure functions, and AgentScope's
own ``Write`` / ``Edit`` tools read through their backend."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest
from agentscope.tool import Edit, Read, Write

from nb_hitl import file_change
from nb_hitl.file_change import PlannedChange, describe_change, file_diff, input_diff, planned_change


def test_new_file_is_all_added() -> None:
    view = file_diff("/w/a.txt", None, b"x\ny\n")
    assert view == {
        "path": "/w/a.txt",
        "diff": "--- /dev/null\n+++ /w/a.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n",
        "sha256_before": None,
        "note": None,
    }


def test_context_is_folded_between_hunks() -> None:
    before = "".join(f"{i}\n" for i in range(1, 31)).encode()
    after = before.replace(b"\n2\n", b"\ntwo\n").replace(b"\n29\n", b"\ntwenty-nine\n")
    diff = file_diff("p", before, after)["diff"]
    assert diff.count("@@ ") == 2 and "@@ -1,5 +1,5 @@" in diff and "@@ -26,5 +26,5 @@" in diff
    assert " 15\n" not in diff  # the unchanged middle is folded away


def test_empty_existing_file_is_not_a_new_file() -> None:
    view = file_diff("p", b"", b"x\n")
    assert view["diff"].startswith("--- a/p\n") and view["sha256_before"] == hashlib.sha256(b"").hexdigest()


def test_binary_and_huge_files_are_not_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    binary = file_diff("p", b"\xff\xfe\x00", b"x")
    assert binary["diff"] == "" and binary["note"] is not None and "binary" in binary["note"]
    assert binary["sha256_before"] == hashlib.sha256(b"\xff\xfe\x00").hexdigest()
    nul = file_diff("p", None, b"a\x00b")
    assert nul["diff"] == "" and "binary" in str(nul["note"])
    monkeypatch.setattr(file_change, "MAX_FILE_BYTES", 10)
    huge = file_diff("p", b"small\n", b"x" * 11)
    assert huge["diff"] == "" and "too large" in str(huge["note"]) and "11 bytes" in str(huge["note"])


def test_a_long_diff_is_cut_at_a_line_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_change, "MAX_DIFF_CHARS", 50)
    view = file_diff("p", None, "".join(f"line {i}\n" for i in range(100)).encode())
    assert len(view["diff"]) <= 50 and view["diff"].endswith("\n")
    assert (
        view["note"] is not None and view["note"].startswith("The diff is cut:") and "of its 103 lines" in view["note"]
    )


def test_invisible_characters_are_shown_escaped() -> None:
    diff = file_diff("p", None, "a\u202eb\x1bc\n".encode())["diff"]
    assert "+a\\u202eb\\u001bc\n" in diff


def test_only_newlines_split_lines() -> None:
    diff = file_diff("p", None, "a\x0cb\u2028c\n".encode())["diff"]
    assert diff.endswith("@@ -0,0 +1 @@\n+a\\u000cb\\u2028c\n")


def test_no_change_says_so() -> None:
    assert file_diff("p", b"same\n", b"same\n")["note"] == "The file would not change."
    view = file_diff("p", b"a\r\n", b"a\n")
    assert view["diff"] == "" and "CRLF to LF" in str(view["note"]) and "text would not change" in str(view["note"])


def test_input_diff_is_of_pretty_json() -> None:
    diff = input_diff({"path": "a", "n": 1}, {"path": "b", "n": 1})
    assert diff == (
        '--- model\'s input\n+++ edited input\n@@ -1,4 +1,4 @@\n {\n   "n": 1,\n-  "path": "a"\n+  "path": "b"\n }\n'
    )
    assert input_diff({"a": 1}, {"a": 1}) == ""


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_planned_change_of_agentscope_write_and_edit(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    write = {"file_path": str(path), "content": "é\n"}
    assert run(planned_change(Write(), write)) == PlannedChange(str(path), None, "é\n".encode())
    path.write_bytes(b"x\r\ny x\r\n")
    edit = {"file_path": str(path), "old_string": "x", "new_string": "z"}
    was = b"x\r\ny x\r\n"
    assert run(planned_change(Edit(), edit)) == PlannedChange(str(path), was, None)  # twice, not replace_all
    assert run(planned_change(Edit(), {**edit, "replace_all": True})) == PlannedChange(str(path), was, b"z\ny z\n")
    assert run(planned_change(Edit(), {**edit, "old_string": "y "})) == PlannedChange(str(path), was, b"x\nzx\n")
    assert run(planned_change(Read(), {"file_path": str(path)})) is None
    refused = run(describe_change(Edit(), {**edit, "old_string": "missing"}))
    assert refused["diff"] == "" and "would refuse" in refused["note"]
    relative = run(describe_change(Write(), {"file_path": "rel.txt", "content": "a"}))
    assert relative["diff"] == "" and relative["sha256_before"] is None


def test_planned_change_protocol_sync_and_async() -> None:
    class Sync:
        def planned_change(self, tool_input: dict[str, Any]) -> Any:
            return ("/x", b"a\n", b"b\n")

    class Async:
        async def planned_change(self, tool_input: dict[str, Any]) -> Any:
            return None

    assert run(describe_change(Sync(), {}))["diff"].endswith("@@ -1 +1 @@\n-a\n+b\n")
    assert run(describe_change(Async(), {})) is None


@pytest.mark.parametrize(
    ("before", "diff", "note"),
    [
        pytest.param(
            b"a\nb",
            "--- /d/f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n\\ No newline at end of file\n",
            "The call deletes /d/f: every line of the file is removed.",
            id="text",
        ),
        pytest.param(b"", "", "The call deletes /d/f (an empty file).", id="empty"),
        pytest.param(
            b"\x00\x01",
            "",
            "The call deletes /d/f. Not drawn: binary content (not UTF-8 text); 2 bytes now, none after.",
            id="binary",
        ),
        pytest.param(
            None,
            "",
            "The call deletes /d/f, which does not exist now: the tool would fail, and nothing would change.",
            id="missing",
        ),
    ],
)
def test_a_deletion_shows_the_whole_file_removed(before: bytes | None, diff: str, note: str) -> None:
    view = run(describe_change(Deletes(before), {}))
    assert (view["diff"], view["note"]) == (diff, note)
    assert view["sha256_before"] == (None if before is None else file_change.sha256_of(before))


class Deletes:
    """A tool whose every call deletes ``/d/f``, which holds ``before`` (the ``planned_change`` protocol)."""

    def __init__(self, before: bytes | None) -> None:
        self.before = before

    def planned_change(self, tool_input: dict[str, Any]) -> PlannedChange:
        return PlannedChange("/d/f", self.before, b"ignored", deletes=True)


def test_a_huge_deletion_is_not_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_change, "MAX_FILE_BYTES", 4)
    view = run(describe_change(Deletes(b"12345\n"), {}))
    assert view["diff"] == "" and view["note"] == (
        "The call deletes /d/f. Not drawn: the file is too large to show a diff (6 bytes; the limit is 4)."
    )


def test_a_peers_file_change_is_read_as_text() -> None:
    from nb_hitl.kinds.confirm_view import remote_file_change

    assert remote_file_change(None) is None and remote_file_change({"path": 1, "diff": ""}) is None
    assert remote_file_change({"path": "p", "diff": "x" * (file_change.MAX_DIFF_CHARS + 5), "sha256_before": 3}) == {
        "path": "p",
        "diff": "x" * file_change.MAX_DIFF_CHARS,
        "sha256_before": None,
        "note": None,
    }


def test_the_demos_delete_of_a_path_outside_its_folder_says_the_tool_refuses_it(tmp_path: Path) -> None:
    """The card (and Modify's preview of an edit to such a path) says why nothing would change, in
    the tool's own words, instead of showing nothing (the ``refused`` field of the protocol)."""
    from nb_hitl.demo import SandboxDelete, make_sandbox

    tool = SandboxDelete(make_sandbox(tmp_path / "box"))
    view = run(describe_change(tool, {"path": "../../etc/passwd"}))
    assert view["diff"] == "" and view["sha256_before"] is None
    assert view["note"] == (
        "The tool would refuse this call as it stands (delete_file fails: '../../etc/passwd' is outside the "
        "sandbox), so no file would change."
    )
    # the tool really refuses it, with the same reason
    chunk = run(tool.call(path="../../etc/passwd"))
    assert chunk.state.value == "error" and chunk.content[0].text.endswith("'../../etc/passwd' is outside the sandbox")
