"""The words of a shell command line as the shell reads them (tree-sitter-bash nodes).

Shared by :mod:`nb_hitl.permissions.shell` (the simple commands of a line)
and :mod:`nb_hitl.permissions.shell_code` (the code a command runs): the
shell's reading of a word (quotes and backslashes removed), the programs
that run another command (wrappers, shells), and where in a command's words
a program starts.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from tree_sitter import Node

__all__ = ["WRAPPERS", "SHELLS", "MAX_WRAPPED_WORDS", "literal_value", "node_text", "program_starts"]

MAX_WRAPPED_WORDS = 64
"""A wrapper (``sudo``...) followed by more words than this is not judged: the call asks."""

WRAPPERS = frozenset(
    {
        "sudo", "doas", "env", "nohup", "command", "builtin", "exec", "time", "nice", "ionice", "timeout",
        "stdbuf", "xargs", "setsid", "chroot", "flock", "unbuffer", "caffeinate", "chrt", "taskset", "watch",
        "strace", "ltrace", "torsocks", "proxychains", "firejail", "systemd-run", "runuser", "sg", "script",
        "parallel", "run-one", "catchsegv", "valgrind", "nsenter", "unshare", "busybox", "fakeroot", "coproc",
    }
)  # fmt: skip
"""Programs that run another command given in their arguments. A deny or ask
rule is also checked against every tail of the words after them."""

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})
"""Shells whose ``-c`` code, and the program they read on stdin, is read as a command line of its own."""

_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def program_starts(words: list[str]) -> Iterator[int]:
    """Indexes where a program starts in ``words``: 0, every position after a
    wrapper (each tail, as options are not parsed), the command of ``find -exec``."""
    yield 0
    base = posixpath.basename(words[0]) if words else ""
    if base in WRAPPERS:
        yield from range(1, min(len(words), MAX_WRAPPED_WORDS + 1))
    if base == "find":
        for i, w in enumerate(words):
            if w in _FIND_EXEC and i + 1 < len(words):
                yield i + 1


def node_text(node: Node) -> str:
    """The source text of ``node``."""
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def _unescape(raw: str, escapable: str | None = None) -> str:
    """``raw`` with its backslashes read as the shell does: before any
    character (``escapable`` ``None``: an unquoted word) or only before those
    in ``escapable`` (in double quotes); a backslash-newline is a line continuation."""
    out, i = [], 0
    while i < len(raw):
        if raw[i] == "\\" and i + 1 < len(raw) and (escapable is None or raw[i + 1] in escapable):
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
        else:
            out.append(raw[i])
            i += 1
    return "".join(out)


def literal_value(node: Node) -> str | None:
    """The shell's reading of a word node when it is fixed text (quotes and
    backslashes removed), ``None`` when it is computed at run time."""
    kind = node.type
    if kind in ("word", "number"):
        return _unescape(node_text(node))
    if kind == "raw_string":
        return node_text(node)[1:-1]
    if kind == "string":
        parts = []
        for child in node.children:
            if child.type == '"':
                continue
            if child.type != "string_content":
                return None
            parts.append(_unescape(node_text(child), '"\\$`\n'))
        return "".join(parts)
    if kind == "concatenation":
        values = [literal_value(c) for c in node.children]
        return None if any(v is None for v in values) else "".join(v for v in values if v is not None)
    if kind == "command_name":
        return literal_value(node.children[0]) if node.child_count == 1 else None
    return None
