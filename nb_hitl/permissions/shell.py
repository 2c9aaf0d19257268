"""A shell command line read as the shell reads it: its simple commands.

AgentScope's ``Bash.match_rule`` compares a rule with the whole command
line as text (``rm:*`` is ``command.startswith("rm ")``), so ``\\trm -rf x``,
``/bin/rm -rf x``, ``sudo rm -rf x`` or ``echo ok; rm -rf x`` slip past a
deny rule, and an allow rule for ``git status:*`` also allows whatever is
chained after it. This module parses the line with tree-sitter-bash (the
grammar AgentScope's own ``BashCommandParser`` uses) into the simple
commands it runs, so that each can be put to AgentScope's permission engine
on its own (:mod:`nb_hitl.permissions.shell_check`).

Pure functions over the parse tree; nothing here decides. What it finds:

* every simple command, wherever it stands: after ``;``, ``&&``, ``||``,
  ``|``, inside ``$(...)``, backticks, ``<(...)``, subshells, groups,
  ``if``/``for``/``while``/``case`` bodies, function bodies, heredoc bodies,
  the code of ``sh -c '...'`` / ``bash -c`` / ``eval`` when it is literal,
  and the code a command hands on that is not written as commands: a
  shell's stdin (heredoc, here-string, a pipe from ``echo``/``printf``/
  ``cat``), ``source <(...)``, ``trap``, ``PROMPT_COMMAND``, options such as
  ``git -c core.pager=`` (:mod:`nb_hitl.permissions.shell_code`);
* for each, the program (quotes and backslashes removed, as the shell
  does), its arguments and redirections as written, and the forms a deny or
  ask rule is checked against (:meth:`SimpleCommand.rule_forms`): the
  command from its program on, the program's base name (``/bin/rm`` ->
  ``rm``), and what a wrapper runs (``sudo``, ``env``, ``nohup``,
  ``command``, ``exec``, ``time``, ``xargs``...: every tail of the words
  after the wrapper, so no option syntax has to be known), and the command
  of ``find -exec``;
* problems, for what cannot be judged: a syntax error, a program name
  computed at run time (``$cmd``, ``$(...)``, a glob or brace pattern), the
  code of ``sh -c`` / ``eval`` (or piped to a shell, ``trap``'s...) that is
  not a literal, nesting too deep, a
  line too long, more than :data:`MAX_COMMANDS` commands, a wrapper with
  more than :data:`MAX_WRAPPED_WORDS` words. A call with a problem asks.
"""

from __future__ import annotations

import functools
import posixpath
from dataclasses import dataclass, field
from typing import Any

import tree_sitter_bash as tsbash
from tree_sitter import Language, Node, Parser

from .shell_code import assignment_code, code_run_by
from .shell_words import MAX_WRAPPED_WORDS, SHELLS, WRAPPERS, literal_value
from .shell_words import node_text as _text
from .shell_words import program_starts as _program_starts

__all__ = [
    "SimpleCommand",
    "ShellParse",
    "parse_command",
    "WRAPPERS",
    "SHELLS",
    "MAX_COMMAND_CHARS",
    "MAX_NESTING",
    "MAX_COMMANDS",
    "MAX_WRAPPED_WORDS",
]

MAX_COMMAND_CHARS = 100_000
"""Longer command lines are not parsed: they ask."""

MAX_COMMANDS = 200
"""More simple commands than this in one line are not judged one by one: the call asks."""

MAX_NESTING = 4
"""How many levels of ``sh -c '...'`` / ``eval '...'`` code are read; deeper asks."""

_EXPANDING = frozenset({"simple_expansion", "expansion", "command_substitution", "process_substitution"})
_PATTERN_CHARS = frozenset("*?[]{}")
_DECLARATIONS = {"declaration_command", "unset_command", "test_command"}

_PARSER = Parser(Language(tsbash.language()))


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command of a command line.

    Attributes:
        program: the program as the shell reads it (``"rm"`` for ``"r"m``
            or ``\\rm``), ``None`` for a line that only assigns variables.
        args: the arguments as written.
        redirections: the redirections as written (``"> out"``, ``"2>&1"``),
            including those of an enclosing group or pipeline element.
        assignments: ``NAME=value`` words before the program, as written.
        values: the shell's reading of the program and each argument (quotes
            removed), ``None`` where it is computed at run time.
        via: how it was reached when not at the top level (``"$(...)"``,
            ``"sh -c"``, ``"eval"``...), else ``""``.
        files: the files its redirections (its own and an enclosing
            group's) open, as ``(access, path)``: ``access`` is ``"reads"``,
            ``"writes"`` (truncates or creates) or ``"appends"``; ``path`` as
            written (quotes kept). Duplicated file descriptors (``2>&1``) and
            heredocs open no file.
    """

    program: str | None
    args: tuple[str, ...] = ()
    redirections: tuple[str, ...] = ()
    assignments: tuple[str, ...] = ()
    values: tuple[str | None, ...] = ()
    via: str = ""
    files: tuple[tuple[str, str], ...] = ()

    @property
    def text(self) -> str:
        """The command as the permission engine is asked about it: assignments,
        program, arguments and redirections, one space apart."""
        return " ".join(
            [*self.assignments, *([self.program] if self.program is not None else []), *self.args, *self.redirections]
        )

    def rule_forms(self) -> list[str]:
        """The texts a deny or ask rule is checked against, :attr:`text` first:
        the command from its program on (assignments and redirections left
        out, quotes removed), with the program's base name, each tail of a
        wrapper's words, the command of ``find -exec``. Each form is one
        command: a rule is never matched against what is chained to it."""
        return list(self._forms)

    @functools.cached_property
    def _forms(self) -> tuple[str, ...]:
        """:meth:`rule_forms`, worked out once per command (a parse is cached
        and shared, and every rule of a check asks for its forms)."""
        forms: list[str] = [self.text]
        if self.program is None:
            return tuple(forms)
        words = [v if v is not None else a for v, a in zip(self.values, (self.program, *self.args), strict=False)]
        for start in _program_starts(words):
            tail = words[start:]
            forms.append(" ".join(tail))
            base = posixpath.basename(tail[0])
            if base and base != tail[0]:
                forms.append(" ".join([base, *tail[1:]]))
        return tuple(dict.fromkeys(f for f in forms if f))

    def to_dict(self) -> dict[str, Any]:
        """``{"program", "args", "redirections", "assignments", "text", "via",
        "files"}``, ``files`` as ``[{"access", "path"}]`` (JSON-ready, for the
        confirmation card)."""
        return {
            "program": self.program,
            "args": list(self.args),
            "redirections": list(self.redirections),
            "assignments": list(self.assignments),
            "text": self.text,
            "via": self.via,
            "files": [{"access": access, "path": path} for access, path in self.files],
        }


@dataclass(frozen=True)
class ShellParse:
    """A command line read into its simple commands.

    Attributes:
        source: the command line.
        commands: every simple command, in the order they appear.
        problems: why (part of) the line cannot be judged; empty when it can.
    """

    source: str
    commands: tuple[SimpleCommand, ...] = ()
    problems: tuple[str, ...] = field(default_factory=tuple)

    @property
    def judged(self) -> bool:
        """Whether every part of the line could be read (no problems)."""
        return not self.problems


_ACCESS = {"<": "reads", ">": "writes", ">|": "writes", "&>": "writes", ">>": "appends", "&>>": "appends",
           ">&": "writes", "<&": "reads"}  # fmt: skip
"""What a redirection operator does to the file it names (``>&``/``<&`` only
with a word that is not a descriptor number or ``-``)."""

Redirect = tuple[str, tuple[str, str] | None]
"""A redirection as written, and the ``(access, path)`` of the file it opens (``None``: none)."""


def _last_element(node: Node) -> tuple[int, int, str]:
    """The key (span and type) of the command a ``list`` or ``pipeline`` ends with (nested ones too)."""
    while node.type in ("list", "pipeline"):
        named = [c for c in node.children if c.is_named]
        if not named:
            break
        node = named[-1]
    return node.start_byte, node.end_byte, node.type


def _redirect_file(node: Node) -> tuple[str, str] | None:
    """``(access, path)`` of the file a ``file_redirect`` opens, or ``None``."""
    if node.type != "file_redirect" or node.has_error:
        return None  # what cannot be parsed (``<>``) is a problem of the line, not a file
    operator = next((_text(c) for c in node.children if not c.is_named), "")
    targets = [c for c in node.children if c.is_named and c.type != "file_descriptor"]
    access = _ACCESS.get(operator)
    if access is None or not targets:
        return None
    path = " ".join(_text(t) for t in targets)
    if operator in (">&", "<&") and (path == "-" or path.isdigit()):
        return None  # a duplicated (or closed) descriptor, not a file
    return access, path


def _redirects(nodes: list[Node]) -> tuple[Redirect, ...]:
    out: list[Redirect] = []
    for r in nodes:
        if r.type == "heredoc_redirect":
            body = next((c for c in r.children if c.type == "heredoc_start"), None)
            out.append(("<<" + (_text(body) if body is not None else ""), None))
            out.extend(_redirects([c for c in r.children if c.type.endswith("_redirect")]))  # `<<EOF > f`
        else:
            out.append((" ".join(_text(r).split()), _redirect_file(r)))
    return tuple(out)


def _simple_command(node: Node, redirects: tuple[Redirect, ...], via: str) -> tuple[SimpleCommand, list[str]]:
    """A ``command`` node (or a declaration) as a :class:`SimpleCommand`, and its problems."""
    problems: list[str] = []
    texts = tuple(t for t, _ in redirects)
    files = tuple(f for _, f in redirects if f is not None)
    if node.type in _DECLARATIONS:
        head = _text(node.children[0]) if node.child_count else node.type
        rest = tuple(_text(c) for c in node.children[1:])
        return SimpleCommand(head, rest, texts, (), (head,), via, files), problems
    assignments: list[str] = []
    own_redirects: list[Node] = []
    program: str | None = None
    values: list[str | None] = []
    args: list[str] = []
    for child in node.children:
        if child.type == "variable_assignment":
            assignments.append(_text(child))
        elif child.type.endswith("_redirect"):
            own_redirects.append(child)
        elif child.type == "command_name":
            value = literal_value(child)
            written = _text(child)
            if value is None or any(c in _PATTERN_CHARS for c in value):
                problems.append(f"the program name `{written}` cannot be read before the command runs")
                program = written
            else:
                program = value
            values.append(value)
        elif program is not None and child.is_named:
            args.append(_text(child))
            values.append(literal_value(child))
    own = _redirects(own_redirects)
    cmd = SimpleCommand(
        program,
        tuple(args),
        texts + tuple(t for t, _ in own),
        tuple(assignments),
        tuple(values),
        via,
        files + tuple(f for _, f in own if f is not None),
    )
    return cmd, problems


def _read_code(
    found: list[tuple[str | None, str]], depth: int, commands: list[SimpleCommand], problems: list[str]
) -> None:
    """Add the commands of the code a command runs (:func:`~nb_hitl.permissions.shell_code.code_run_by`),
    read as a command line of its own, or a problem when it is not literal or nested too deep."""
    for text, label in found:
        if text is None:
            problems.append(f"`{label}` runs code that is only known when the command runs")
        elif depth + 1 > MAX_NESTING:
            problems.append(f"`{label}` code is nested more than {MAX_NESTING} levels deep")
        else:
            inner = parse_command(text, _depth=depth + 1, _via=label)
            commands.extend(inner.commands)
            problems.extend(inner.problems)


@functools.lru_cache(maxsize=64)
def parse_command(command: str, *, _depth: int = 0, _via: str = "") -> ShellParse:
    """Read a command line into its simple commands (tree-sitter-bash).

    Args:
        command: the command line (a Bash tool's ``command``).

    Returns:
        a :class:`ShellParse`; ``problems`` says what could not be judged
        (a syntax error, a computed program name, non-literal ``sh -c`` or
        ``eval`` code, nesting deeper than :data:`MAX_NESTING`, more than
        :data:`MAX_COMMAND_CHARS` characters). Never raises for any string.
        The result is immutable and cached (the same line is read once per
        permission check, by every rule that looks at it).
    """
    if not isinstance(command, str):
        return ShellParse(str(command), (), ("the command is not text",))
    if len(command) > MAX_COMMAND_CHARS:
        return ShellParse(command, (), (f"the command is longer than {MAX_COMMAND_CHARS:,} characters",))
    if not command.strip():
        return ShellParse(command, (), ("the command is empty",))
    tree = _PARSER.parse(command.encode("utf-8", "surrogatepass"))
    commands: list[SimpleCommand] = []
    problems: list[str] = []
    stack: list[tuple[Node, tuple[Redirect, ...], str]] = [(tree.root_node, (), _via)]
    last_of: dict[tuple[int, int, str], tuple[Redirect, ...]] = {}  # redirections of a list's last element
    while stack:
        node, redirects, via = stack.pop()
        redirects = redirects + last_of.pop((node.start_byte, node.end_byte, node.type), ())
        if node.type == "ERROR" or node.is_missing:
            snippet = " ".join(_text(node).split())[:60]
            problems.append(f"it cannot be parsed as a shell command (near `{snippet}`)" if snippet else
                            "it cannot be parsed as a shell command (it is incomplete)")  # fmt: skip
            continue
        children = list(node.children)
        if node.type == "redirected_statement":
            reds = _redirects([c for c in children if c.type.endswith("_redirect")])
            for c in reversed(children):
                if c.type.endswith("_redirect"):
                    stack.append((c, (), via))
                elif c.type in ("list", "pipeline"):  # `a && b > f`: the grammar hangs `> f` on the list,
                    last_of[_last_element(c)] = reds  # the shell on its last command
                    stack.append((c, redirects, via))
                else:
                    stack.append((c, redirects + reds, via))
            continue
        if node.type == "command" or node.type in _DECLARATIONS:
            if len(commands) >= MAX_COMMANDS:
                problems.append(f"it has more than {MAX_COMMANDS} commands")
                break
            cmd, own = _simple_command(node, redirects, via)
            if cmd.program is not None and posixpath.basename(cmd.program) in WRAPPERS:
                if len(cmd.args) > MAX_WRAPPED_WORDS:
                    problems.append(
                        f"`{cmd.program}` is followed by more than {MAX_WRAPPED_WORDS} words; "
                        "which of them it runs cannot be checked"
                    )
            commands.append(cmd)
            problems.extend(own)
            _read_code(code_run_by(node, cmd), _depth, commands, problems)
            if len(commands) > MAX_COMMANDS:
                problems.append(f"it has more than {MAX_COMMANDS} commands")
                del commands[MAX_COMMANDS:]
                break
            redirects = ()  # nested commands (in substitutions) have their own
        if node.type == "variable_assignment":
            _read_code(assignment_code(node), _depth, commands, problems)
        if node.type == "command_substitution":
            via = "`...`" if _text(node).startswith("`") else "$(...)"
        elif node.type == "process_substitution":
            via = "<(...)"
        elif node.type == "subshell":
            via = via or "(...)"
        if node.type != "command":
            redirects = redirects if node.type in ("list", "pipeline", "compound_statement", "subshell",
                                                   "negated_command", "program") else ()  # fmt: skip
        stack.extend((c, redirects, via) for c in reversed(children))
    if tree.root_node.has_error and not problems:
        problems.append("it cannot be parsed as a shell command")
    return ShellParse(command, tuple(commands), tuple(dict.fromkeys(problems)))
