"""What a file-editing call would do to its file, as a unified diff.

A confirmation of AgentScope's built-in ``Write`` or ``Edit`` (or of any tool
that says what it would change, the ``planned_change`` protocol below) shows
the diff of the file as it is now against the file as the call would leave
it (stdlib ``difflib``, unified format with line numbers and 3 lines of
folded context). A new file shows as all added, a deleted one as all removed
(and the note says the call deletes it); a binary or huge file (over
:data:`MAX_FILE_BYTES`) says so instead of drawing; a diff over
:data:`MAX_DIFF_CHARS` is cut at a line and says so. Every character of the
diff can be seen (invisible characters are escaped,
:func:`~nb_hitl.kinds._reading.visible_text`).

The ``planned_change`` protocol: a tool may have a method
``planned_change(tool_input: dict) -> PlannedChange | (path, before, after) | None``
(sync or async) that reads, and never writes, the one file a call with
``tool_input`` would change: ``path`` the file's path as the card should show
it (absolute), ``before`` its bytes now (``None``: no such file), ``after``
the bytes the call would leave (``None``: the tool would refuse the call and
write nothing), or a :class:`PlannedChange` with ``deletes=True`` for a call
that deletes the file, or with ``refused`` saying why the tool would refuse
it. ``None``: the call changes no file (the card shows no
diff, and the approval is bound to the input alone). A tool that also works
inside one folder can be dry-run in a copy of it (:mod:`nb_hitl.dry_run_folder`).

A tool may also declare that it reads before it writes: a string attribute
``read_before_write``, the words it refuses with when asked to change an
existing file the agent has not read as it is now (AgentScope's own ``Edit``
and ``Write`` have this check built in, :func:`read_before_write`).

The diff carries ``sha256_before``, the hash of the bytes it was computed on:
an approval is bound to it (:mod:`nb_hitl.session._promise`), and a call
whose file changed since is not run. It is asked again with the diff against
the file as it is now, unless the tool reads before it writes and the file
exists (or the call would now write nothing): that tool would refuse the call
on a fresh card too, so the model is told to read the file again instead.

:func:`input_diff` is the diff of a call's input and a person's edit of it
(pretty-printed JSON), for Modify; :func:`text_diff` that of a reviewed
result and its edit.
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import json
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

from ._agentscope import enum_value
from .kinds._reading import visible_text

if TYPE_CHECKING:
    from .pauses import Pause

log = logging.getLogger("nb_hitl.file_change")

__all__ = [
    "describe_change",
    "describe_edit",
    "describe_file_pause",
    "FileChangeView",
    "MAX_FILE_BYTES",
    "MAX_DIFF_CHARS",
    "PlannedChange",
    "file_diff",
    "input_diff",
    "planned_change",
    "read_before_write",
    "text_diff",
    "sha256_of",
]

MAX_FILE_BYTES = 2_000_000
"""A file (before or after) larger than this is not diffed: the card says so."""

MAX_DIFF_CHARS = 100_000
"""A diff longer than this is cut at a line, and says how much was left out."""

CONTEXT_LINES = 3
"""Unchanged lines shown around each change (``git diff``'s default)."""


class FileChangeView(TypedDict):
    """What a call would do to a file, as the card shows it.

    ``diff`` is unified-diff text ("" when not drawn); ``sha256_before`` the
    hex SHA-256 of the file's bytes the diff was computed on (``None``: the
    file does not exist); ``note`` what the person should know besides the
    diff (binary, too large, cut, line endings, the call would fail), or ``None``.
    """

    path: str
    diff: str
    sha256_before: str | None
    note: str | None


class PlannedChange(NamedTuple):
    """What a call would do to one file (the ``planned_change`` protocol, see the module's header).

    Attributes:
        path: the file's path, as the card shows it (absolute).
        before: the file's bytes now; ``None`` when there is no such file.
        after: the bytes the call would leave; ``None`` when the file would
            not exist after (``deletes``), or when the tool would refuse the
            call and write nothing.
        deletes: the call deletes the file (``after`` is then ``None``).
        refused: why the tool would refuse the call, in the tool's words (a
            sentence the card shows; ``after`` is then ``None``), when it knows.
    """

    path: str
    before: bytes | None
    after: bytes | None
    deletes: bool = False
    refused: str | None = None


def sha256_of(data: bytes | None) -> str | None:
    """The hex SHA-256 of ``data``, ``None`` for ``None`` (no file)."""
    return None if data is None else hashlib.sha256(data).hexdigest()


def _lines(text: str) -> list[str]:
    """``text`` split after each ``\\n`` only (``str.splitlines`` also splits at form feeds and U+2028)."""
    pieces = text.split("\n")
    lines = [p + "\n" for p in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def _side(prefix: str, path: str) -> str:
    """A diff header's file: git's ``a/``/``b/`` before a relative path; an absolute path as it is
    (``diff -u`` style: ``--- /tmp/x/README.md``, never ``a//tmp/x/README.md``)."""
    return path if path.startswith("/") else f"{prefix}/{path}"


def _newline_style(text: str) -> str | None:
    crlf = text.count("\r\n")
    cr = text.count("\r") - crlf
    lf = text.count("\n") - crlf
    styles = [name for name, n in (("CRLF", crlf), ("LF", lf), ("CR", cr)) if n]
    if not styles:
        return None
    return styles[0] if len(styles) == 1 else "mixed"


def _normalize(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _unified(before: list[str], after: list[str], fromfile: str, tofile: str) -> Iterable[str]:
    for line in difflib.unified_diff(before, after, fromfile=fromfile, tofile=tofile, n=CONTEXT_LINES):
        if line.endswith("\n"):
            yield line
        else:  # git's marker, so a missing last newline can be seen
            yield line + "\n"
            yield "\\ No newline at end of file\n"


def _cut(lines: Iterable[str]) -> tuple[str, str | None]:
    out: list[str] = []
    size = 0
    total = 0
    for line in lines:
        total += 1
        shown = visible_text(line[:-1]) + "\n" if line.endswith("\n") else visible_text(line)
        if size + len(shown) > MAX_DIFF_CHARS and out:
            continue
        out.append(shown)
        size += len(shown)
    if total > len(out):
        return "".join(out), f"The diff is cut: {len(out)} of its {total} lines are shown."
    return "".join(out), None


def file_diff(path: str, before: bytes | None, after: bytes | None) -> FileChangeView:
    """The unified diff of ``path`` from ``before`` (``None``: no file) to ``after`` (``None``: the
    file is deleted, every line removed, ``+++ /dev/null`` as ``git diff`` shows a deletion).

    Line endings are compared apart: the diff is of the text with ``\\n``
    lines, and a change of line-ending style is said in ``note``.

    Returns:
        a :class:`FileChangeView`; ``diff`` is "" (and ``note`` says why)
        for a binary file (not UTF-8, or a NUL byte), a file over
        :data:`MAX_FILE_BYTES`, or no change.
    """
    sha = sha256_of(before)
    size = max(len(before or b""), len(after or b""))
    if size > MAX_FILE_BYTES:
        note = f"Not drawn: the file is too large to show a diff ({size} bytes; the limit is {MAX_FILE_BYTES})."
        return FileChangeView(path=path, diff="", sha256_before=sha, note=note)
    try:
        old = (before or b"").decode("utf-8")
        new = (after or b"").decode("utf-8")
        if "\x00" in old or "\x00" in new:
            raise ValueError("NUL byte")
    except ValueError:
        size_after = "none" if after is None else len(after)
        note = f"Not drawn: binary content (not UTF-8 text); {len(before or b'')} bytes now, {size_after} after."
        return FileChangeView(path=path, diff="", sha256_before=sha, note=note)
    notes = []
    was, will = _newline_style(old), _newline_style(new)
    if before is not None and after is not None and was and will and was != will:
        notes.append(f"Line endings change from {was} to {will} (not marked line by line below).")
    fromfile = "/dev/null" if before is None else _side("a", path)
    tofile = "/dev/null" if after is None else _side("b", path)
    lines = _unified(_lines(_normalize(old)), _lines(_normalize(new)), fromfile, tofile)
    diff, cut = _cut(lines)
    if cut:
        notes.append(cut)
    if not diff and before is not None and after is not None:
        notes.append("The file's text would not change." if before != after else "The file would not change.")
    return FileChangeView(path=path, diff=diff, sha256_before=sha, note=" ".join(notes) or None)


def input_diff(sent: Any, edited: Any, fromfile: str = "model's input") -> str:
    """The unified diff of a call's input and a person's edit of it, as pretty-printed JSON.

    Args:
        sent: the input compared with (the model's, or an edit approved so far).
        edited: the person's edit.
        fromfile: the ``---`` header naming ``sent``.

    Returns:
        unified-diff text ("" when equal), invisible characters escaped,
        cut past :data:`MAX_DIFF_CHARS`.
    """
    a = _lines(json.dumps(sent, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
    b = _lines(json.dumps(edited, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
    diff, cut = _cut(_unified(a, b, fromfile, "edited input"))
    return f"{diff}{cut}\n" if cut else diff


def text_diff(before: str, after: str, fromfile: str, tofile: str) -> str:
    """The unified diff of two texts (a tool's result and a person's edit of it), line by line.

    Returns:
        unified-diff text ("" when equal), headed ``--- fromfile`` / ``+++ tofile``,
        invisible characters escaped, cut past :data:`MAX_DIFF_CHARS`.
    """
    diff, cut = _cut(_unified(_lines(before), _lines(after), fromfile, tofile))
    return f"{diff}{cut}\n" if cut else diff


def read_before_write(tool: Any) -> str | None:
    """What ``tool`` says when it refuses to change an existing file that changed since the agent
    last read it, or ``None`` for a tool without such a check.

    AgentScope 2.0.11's ``Edit`` and ``Write`` check it themselves in their
    ``call``: an existing file must have an entry in the agent's read cache
    (``AgentState.tool_context.get_cache(path, mtime)``, which ``Read``,
    ``Write`` and ``Edit`` fill) whose modification time is the file's now;
    when another write changed the file, the entry is stale and the tool
    refuses ("Error: To edit a file, you must first read it using the Read
    tool.", "... You must read the file first before writing to it.").
    ``Write`` of a file that does not exist needs no read. Another tool
    declares the same check with a ``read_before_write`` string attribute
    (its own words for the refusal).

    Returns:
        the tool's words for the refusal (what the model should do), or ``None``.
    """
    from agentscope.tool import Edit, Write

    declared = getattr(tool, "read_before_write", None)
    if isinstance(declared, str) and declared:
        return declared
    if isinstance(tool, Edit):
        return "To edit a file, you must first read it using the Read tool."
    if isinstance(tool, Write):
        return "You must read the file first before writing to it."
    return None


async def _read(backend: Any, path: str) -> bytes | None:
    if not await backend.file_exists(path):
        return None
    return bytes(await backend.read_file(path))


async def planned_change(tool: Any, tool_input: dict[str, Any]) -> PlannedChange | None:
    """What a call of ``tool`` with ``tool_input`` would do to a file (see the module's header).

    AgentScope's ``Write`` writes ``content`` (UTF-8); its ``Edit`` replaces
    ``old_string`` by ``new_string`` (once, or every time with
    ``replace_all``) in the text with ``\\n`` line endings and writes it back
    (both read through the tool's own backend). ``after`` is ``None`` when
    the call would write nothing (a relative path, ``old_string`` missing or
    not unique): the tool itself refuses it. Another tool may implement
    ``planned_change(tool_input)`` (the protocol in the module's header; a
    plain ``(path, before, after)`` tuple is read as a :class:`PlannedChange`).

    Returns:
        ``None`` for a tool that does not change files (or an input without
        a path).

    Raises:
        OSError and whatever the backend or the tool's own method raise.
    """
    from agentscope.tool import Edit, Write

    own = getattr(tool, "planned_change", None)
    if own is not None:
        planned = own(tool_input)
        if inspect.isawaitable(planned):
            planned = await planned
        if planned is None:
            return None
        change = PlannedChange(*planned)
        return change._replace(path=str(change.path), after=None if change.deletes else change.after)
    if not isinstance(tool, (Write, Edit)):
        return None
    path = tool_input.get("file_path")
    if not isinstance(path, str) or not path:
        return None
    backend = tool._backend  # the tool's own file access (local, Docker, E2B)
    if not backend.isabs(path):
        return PlannedChange(path, None, None)
    before = await _read(backend, path)
    if isinstance(tool, Write):
        return PlannedChange(path, before, str(tool_input.get("content", "")).encode("utf-8"))
    if before is None:
        return PlannedChange(path, None, None)
    text = _normalize(before.decode("utf-8", errors="replace"))
    old, new = str(tool_input.get("old_string", "")), str(tool_input.get("new_string", ""))
    count = text.count(old) if old else 0
    if count == 0 or old == new or (count > 1 and not tool_input.get("replace_all")):
        return PlannedChange(path, before, None)
    after = text.replace(old, new) if tool_input.get("replace_all") else text.replace(old, new, 1)
    return PlannedChange(path, before, after.encode("utf-8"))


def _deletion(path: str, before: bytes | None) -> FileChangeView:
    """The view of a call that deletes ``path``: the whole file removed, and a note that says so."""
    if before is None:
        note = f"The call deletes {path}, which does not exist now: the tool would fail, and nothing would change."
        return FileChangeView(path=path, diff="", sha256_before=None, note=note)
    view = file_diff(path, before, None)
    said = (
        f"The call deletes {path}: every line of the file is removed." if view["diff"] else f"The call deletes {path}."
    )
    if not before:
        said = f"The call deletes {path} (an empty file)."
    view["note"] = " ".join(filter(None, [said, view["note"]]))
    return view


async def describe_change(tool: Any, tool_input: dict[str, Any]) -> FileChangeView | None:
    """The :class:`FileChangeView` of a call (:func:`planned_change` then :func:`file_diff`), or
    ``None`` for a tool that does not change files."""
    planned = await planned_change(tool, tool_input)
    if planned is None:
        return None
    path, before, after = planned.path, planned.before, planned.after
    if planned.deletes:
        return _deletion(path, before)
    if after is None:
        why = (
            planned.refused.rstrip(".")
            if planned.refused
            else "for Write and Edit: a relative path, a missing file, or old_string not found exactly once"
        )
        note = f"The tool would refuse this call as it stands ({why}), so no file would change."
        return FileChangeView(path=path, diff="", sha256_before=sha256_of(before), note=note)
    return file_diff(path, before, after)


def _shows_files(tool: Any, pause: Pause) -> bool:
    """Only the permission engine's confirmations (state ``asking``) of a known tool show a file's diff."""
    return enum_value(pause.tool_call.state) == "asking" and tool is not None


async def describe_file_pause(tool: Any, pause: Pause) -> None:
    """Set ``pause.file_change`` for a confirmation of a file-editing call (:func:`describe_change`
    of the input Approve runs), and ``pause.dry_run`` (:func:`nb_hitl.dry_run.can_dry_run`).

    A file that cannot be read leaves no diff (logged): the card must still
    be drawn, and an approval then binds to nothing it did not show.
    """
    if not _shows_files(tool, pause) or pause.input is None:
        return
    from .dry_run import can_dry_run  # imported here: nb_hitl.dry_run draws its diffs with this module

    pause.dry_run = can_dry_run(tool, pause.input)
    pause.file_change = await describe_edit(tool, pause, pause.input)


async def describe_edit(tool: Any, pause: Pause, tool_input: dict[str, Any]) -> FileChangeView | None:
    """The :class:`FileChangeView` of ``pause``'s call run with ``tool_input`` (the card's input,
    or a Modify's edit being previewed, :mod:`nb_hitl.edit_preview`), or ``None``: a tool that
    changes no file, a pause that is not the permission engine's confirmation, no ``tool`` (a
    remote card), or a file that cannot be read (logged: a diff never stops a card or a preview)."""
    if not _shows_files(tool, pause):
        return None
    try:
        return await describe_change(tool, tool_input)
    except Exception:  # a diff must never stop a card from being drawn
        log.warning("no diff for %s", pause.tool_call_id, exc_info=True)
        return None
