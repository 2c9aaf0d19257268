"""The code a simple command hands to a shell (or another program) to run.

A command line runs more than its simple commands: ``sh -c CODE`` and
``eval CODE`` run their argument; a shell with no script (``sh``, ``bash
-s``) runs what it reads on stdin (a heredoc, a here-string, what is piped
to it); ``source``/``.`` of ``/dev/stdin`` or of ``<(...)`` runs that
input; ``trap CODE SIG`` runs ``CODE`` later; ``PROMPT_COMMAND`` is code an
interactive shell runs, ``BASH_ENV``/``ENV`` name a script a shell runs;
and some programs run an option's value through a shell
(:data:`CODE_OPTIONS`: ``git -c core.pager=...``, ``tar
--checkpoint-action=exec=...``, ``su -c``, ``rsync -e``).

:func:`code_run_by` finds that code for one command:
``[(code or None, via)]``. ``code`` is the literal text when the line gives
it (a heredoc with a quoted delimiter or no expansions, a quoted string,
``echo``/``printf``/``cat <<EOF`` output with fixed text), ``None`` when it
is only known when the line runs (``curl ... | sh``, ``bash < file``,
``trap "$X" INT``). :func:`nb_hitl.permissions.shell.parse_command` reads
literal code as a command line of its own (``via`` says where it came
from); ``None`` is a problem, so the call asks (bypass-immune).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tree_sitter import Node

from .shell_words import SHELLS, WRAPPERS, literal_value, node_text, program_starts

if TYPE_CHECKING:
    from .shell import SimpleCommand

__all__ = ["CodeOption", "CODE_OPTIONS", "CODE_VARIABLES", "STDIN_FILES", "code_run_by", "assignment_code"]

Found = list[tuple[str | None, str]]
"""``[(code or None when not literal, via)]``."""

STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "-"})
"""Script names that make a shell or ``source`` read its stdin."""

CODE_VARIABLES = {"PROMPT_COMMAND": "code", "BASH_ENV": "script", "ENV": "script", "PS0": "prompt",
                  "PS1": "prompt", "PS2": "prompt", "PS3": "prompt", "PS4": "prompt"}  # fmt: skip
"""Variables a shell runs: ``code`` is read as a command line; a ``script``'s
file or a ``prompt``'s expansions are not known before it runs (the call asks)."""


@dataclass(frozen=True)
class CodeOption:
    """An option of ``program`` whose value (or part of it) is run as shell code.

    Attributes:
        program: the program's base name.
        option: the option word; ``--name`` also matches ``--name=VALUE``.
        pattern: a case-insensitive ``fnmatch`` pattern the value must match.
        after: the code is the value after the first ``after`` (``""``: all of it).
    """

    program: str
    option: str
    pattern: str = "*"
    after: str = ""


CODE_OPTIONS: tuple[CodeOption, ...] = (
    *(CodeOption("git", "-c", f"{key}=*", "=") for key in (
        "core.pager", "core.editor", "core.sshcommand", "core.askpass", "core.fsmonitor", "sequence.editor",
        "pager.*", "diff.external", "diff.*.command", "diff.*.textconv", "merge.*.driver", "filter.*.clean",
        "filter.*.smudge", "filter.*.process", "gpg.program", "gpg.*.program", "credential.helper", "uploadpack.packobjectshook")),
    CodeOption("git", "-c", "alias.*=!*", "=!"),
    CodeOption("tar", "--checkpoint-action", "exec=*", "exec="),
    *(CodeOption("tar", o) for o in ("--to-command", "--use-compress-program", "-I", "--rsh-command",
                                     "--info-script", "-F", "--new-volume-script")),
    CodeOption("su", "-c"), CodeOption("su", "--command"), CodeOption("runuser", "-c"),
    CodeOption("rsync", "-e"), CodeOption("rsync", "--rsh"),
    CodeOption("ssh", "-o", "proxycommand=*", "="), CodeOption("ssh", "-o", "localcommand=*", "="),
)  # fmt: skip
"""Options whose value a program runs through a shell; their code is read like ``sh -c``'s."""

_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "r": "\r", "a": "", "b": "", "f": "", "v": "", "e": ""}


def _echoed(text: str) -> str:
    """``echo``/``printf`` text with backslash escapes read (a newline may separate commands)."""
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), text)


def _words(node: Node) -> list[Node]:
    """A ``command`` node's program and argument nodes, in the order of ``SimpleCommand.values``."""
    if node.type != "command":
        return []
    named = [c for c in node.children if c.is_named and c.type != "variable_assignment"]
    names = [i for i, c in enumerate(named) if c.type == "command_name"]
    return [c for c in named[names[0] :] if not c.type.endswith("_redirect")] if names else []


def _heredoc(node: Node) -> str | None:
    """A heredoc's body as the shell reads it, ``None`` when it expands something."""
    start = next((node_text(c) for c in node.children if c.type == "heredoc_start"), "")
    body = next((c for c in node.children if c.type == "heredoc_body"), None)
    if body is None:
        return ""
    if not any(q in start for q in "'\"\\") and any(c.is_named and c.type != "heredoc_content" for c in body.children):
        return None
    return node_text(body)


def _stdin(node: Node) -> tuple[str | None, str] | None:
    """``(text or None, how)`` a command reads on stdin from the line itself,
    ``None`` when the line gives it none (it reads the tool's stdin)."""
    element = node.parent if node.parent is not None and node.parent.type == "redirected_statement" else node
    redirects = [c for c in node.children if c.type.endswith("_redirect")]
    if element is not node:
        redirects += [c for c in element.children if c.type.endswith("_redirect")]
    found: tuple[str | None, str] | None = None
    for r in redirects:  # the last one wins, as in the shell
        if r.type == "heredoc_redirect":
            found = (_heredoc(r), "heredoc")
        elif r.type == "herestring_redirect":
            word = next((c for c in r.children if c.is_named), None)
            found = (literal_value(word) if word is not None else None, "here-string")
        elif r.type == "file_redirect" and any(node_text(c) == "<" for c in r.children if not c.is_named):
            target = [literal_value(c) for c in r.children if c.is_named and c.type != "file_descriptor"]
            found = ("" if target == ["/dev/null"] else None, "< file")
    if found is not None:
        return found
    parent = element.parent
    if parent is None or parent.type != "pipeline":
        return None
    prev = element.prev_named_sibling
    if prev is None and parent.parent is not None and parent.parent.type == "heredoc_redirect":
        prev = parent.parent.parent.child_by_field_name("body") if parent.parent.parent is not None else None
    return (_output(prev) if prev is not None else None), "pipe"


def _output(node: Node) -> str | None:
    """What a command prints when it is fixed text: ``echo``/``printf`` of
    literal words, ``cat`` of a literal heredoc or here-string; else ``None``."""
    if node.type == "redirected_statement":
        node = node.child_by_field_name("body") or node
    if node.type != "command":
        return None
    values = [literal_value(w) for w in _words(node)]
    if not values or any(v is None for v in values):
        return None
    program, args = posixpath.basename(values[0] or ""), [v or "" for v in values[1:]]
    if program == "echo":
        while args and args[0] in ("-n", "-e", "-E", "-ne", "-en"):
            args = args[1:]
        return _echoed(" ".join(args))
    if program == "printf" and len(args) == 1 and "%" not in args[0].replace("%%", ""):
        return _echoed(args[0].replace("%%", "%"))
    if program == "cat" and not args:
        given = _stdin(node)
        return given[0] if given is not None else None
    return None


def _shell_reads(rest: list[str | None]) -> int:
    """Where a shell's script argument is in ``rest`` (its words after the
    program, no ``-c``), ``-1`` when it reads its program from stdin (no
    script, or ``-s``)."""
    i, stdin = 0, False
    while i < len(rest):
        w = rest[i]
        if w is None or w in ("-", "--") or not w.startswith(("-", "+")) or len(w) < 2:
            if w in ("-", "--"):
                i += 1
            break
        if w.startswith("--"):
            i += 2 if w in ("--rcfile", "--init-file") else 1
            continue
        stdin = stdin or "s" in w[1:]
        i += 2 if w[-1] in "oO" else 1
    return -1 if stdin or i >= len(rest) else i


def _input_code(node: Node, arg: Node | None, program: str) -> tuple[str | None, str] | None:
    """The code a shell or ``source`` reads from ``arg`` (its script, ``None``: stdin)."""
    if arg is not None and arg.type == "process_substitution":
        inner = [c for c in arg.children if c.is_named]
        return (_output(inner[0]) if len(inner) == 1 else None), f"<(...) to {program}"
    if arg is not None and literal_value(arg) not in STDIN_FILES:
        return None  # a script file: it is not code of this line
    given = _stdin(node)
    if given is None:
        return None
    code, how = given
    return code, {"pipe": f"pipe to {program}", "< file": f"{program} < file"}.get(how, f"{how} to {program}")


def _option_code(program: str, rest: list[str | None]) -> Found:
    """The code of :data:`CODE_OPTIONS` in a program's words."""
    found: Found = []
    for opt in (o for o in CODE_OPTIONS if o.program == program):
        for i, w in enumerate(rest):
            if w is None or not (w == opt.option or w.startswith(opt.option + "=")):
                continue
            value = w[len(opt.option) + 1 :] if w != opt.option else (rest[i + 1] if i + 1 < len(rest) else None)
            via = f"{program} {opt.option}"
            if value is None:
                found.append((None, via))
            elif fnmatch.fnmatch(value.lower(), opt.pattern.lower()):
                key = f" {value.split('=', 1)[0]}" if opt.after else ""
                found.append((value.split(opt.after, 1)[1] if opt.after else value, via + key))
    return found


def code_run_by(node: Node, cmd: SimpleCommand) -> Found:
    """The code ``cmd`` (parsed from ``node``) runs beyond its own words, also
    behind a wrapper (``sudo bash <<EOF``, ``env PROMPT_COMMAND=... bash``):
    see the module docstring. Empty when it runs none."""
    if cmd.program is None:
        return []
    values = list(cmd.values)
    words = [v if v is not None else a for v, a in zip(values, (cmd.program, *cmd.args), strict=False)]
    nodes = _words(node)
    found: Found = []
    for start in program_starts(words):
        base = posixpath.basename(words[start])
        rest = values[start + 1 :]
        if base == "eval":
            found.append((None if any(w is None for w in rest) else " ".join(w for w in rest if w is not None), "eval"))
        elif base == "trap":
            ops = rest[1:] if rest[:1] == ["--"] else rest
            if len(ops) >= 2 and ops[0] not in ("-", "-p", "-l") and not (ops[0] or "").isdigit():
                found.append((ops[0], "trap"))
        elif base in SHELLS or base in ("source", "."):
            dash_c = next(
                (i for i, w in enumerate(rest) if w and w[:1] == "-" and w[:2] != "--" and "c" in w[1:]), None
            )
            if base in SHELLS and dash_c is not None:
                found.append((rest[dash_c + 1] if dash_c + 1 < len(rest) else None, f"{base} -c"))
                continue
            at = (0 if rest else None) if base in ("source", ".") else _shell_reads(rest)
            if base == "busybox" or at is None:
                continue
            arg = nodes[start + 1 + at] if 0 <= at and start + 1 + at < len(nodes) else None
            given = _input_code(node, arg, base) if at < 0 or arg is not None else None
            if given is not None:
                found.append(given)
        found.extend(_option_code(base, rest))
        if start == 0 and base in WRAPPERS:  # `env PROMPT_COMMAND=... bash`
            found.extend(_variable_code(w) for w in rest if w and _is_code_variable(w))
    return found


def _is_code_variable(word: str) -> bool:
    name = word.split("=", 1)[0]
    return "=" in word and (name in CODE_VARIABLES or name.startswith("BASH_FUNC_"))


def _variable_code(word: str | None, name: str | None = None) -> tuple[str | None, str]:
    """``(code or None, via)`` of an assignment ``NAME=value`` (``value`` ``None``: computed)."""
    if name is None and word is not None:
        name, word = word.split("=", 1)
    kind = CODE_VARIABLES.get(name or "")
    return (word if kind == "code" else None), str(name)


def assignment_code(node: Node) -> Found:
    """The code of a ``variable_assignment`` node to one of :data:`CODE_VARIABLES`
    (or an exported function ``BASH_FUNC_*``), wherever it stands."""
    name_node = node.child_by_field_name("name")
    name = node_text(name_node) if name_node is not None else ""
    if name not in CODE_VARIABLES and not name.startswith("BASH_FUNC_"):
        return []
    value = node.child_by_field_name("value")
    return [_variable_code(literal_value(value) if value is not None else "", name)]
