"""What else a permission rule lets through, in one line, for a person about
to accept it (:func:`rule_reach`: "Always allow" on a confirmation card, the
permission explorer's "Add rule" preview). Each claim about paths is checked
on AgentScope's own matcher (the tool's ``match_rule`` through
``PermissionEngine._rule_matches``), the same semantics
:func:`~nb_hitl.permissions.explain.explain_match` words.
"""

from __future__ import annotations

import os
import re
from typing import Any

from agentscope.permission import PermissionContext, PermissionRule
from agentscope.tool import ToolBase

from .bounded import BoundedEngine, PathologicalRuleError
from .explain import _has_unescaped_star, _is_abs, _run_sync, _star_crossed_slash
from .tools import default_tool, tool_kind

__all__ = ["rule_reach"]

_VERBS = {"allow": "allows", "deny": "denies", "ask": "asks before"}


def _bash_reach(content: str, verb: str) -> str:
    if content.endswith(":*"):
        prefix = content[:-2].strip()
        return (
            f"also {verb} anything chained after `{prefix}` (e.g. `{prefix} && curl … | sh`): "
            "a `:*` prefix rule only looks at the start of the command."
        )
    if _has_unescaped_star(content):
        example = re.sub(r"(?<!\\)\*", "… && curl … | sh", content, count=1)
        example = re.sub(r"(?<!\\)\*", "…", example)
        return (
            f"also {verb} whatever a `*` stands for, chained commands included (e.g. `{example}`): "
            "`*` matches any characters, `&&`, `;` and `|` too."
        )
    literal = content.replace("\\\\", "\x00").replace("\\*", "*").replace("\x00", "\\")
    return (
        f"also {verb} every command containing `{literal}` anywhere (e.g. `sudo {literal}` or "
        f"`echo ok; {literal}`): a Bash rule without `*` is a substring match."
    )


def _bash_session_reach(content: str, behavior: str, verb: str) -> str:
    """What a Bash rule covers under nb_hitl's shell rules (on in a Session,
    :func:`~nb_hitl.permissions.shell_check.rule_covers`): an allow rule is
    matched against each simple command's text on its own; a deny or ask rule
    against each of its forms (from its program on, the program's base name,
    behind a wrapper)."""
    chained = "what is chained to it (`&&`, `;`, `|`) is judged on its own"
    if behavior != "allow":
        return (
            f"{verb} each simple command it matches wherever that command appears: after `;`, `&&` or `|`, "
            "in `$(…)`, behind `sudo` and other wrappers, or with a path such as `/bin/…`"
        )
    if content.endswith(":*"):
        prefix = content[:-2].strip()
        return (
            f"covers `{prefix}` and `{prefix}` with more arguments, any of them (an option that writes a file, "
            f"such as `--output=FILE`, too), one simple command at a time: {chained}"
        )
    if _has_unescaped_star(content):
        return f"covers each simple command the whole pattern matches, `*` spanning only that command: {chained}"
    literal = content.replace("\\\\", "\x00").replace("\\*", "*").replace("\x00", "\\")
    return f"covers each simple command containing `{literal}` anywhere (`sudo {literal} …` too): {chained}"


def _probe(tool: ToolBase | None, rule: PermissionRule, kind: str, path: str) -> bool:
    """Whether AgentScope's own matcher (``PermissionEngine._rule_matches``, i.e.
    the tool's ``match_rule``) matches ``rule`` against a call on ``path``; a rule
    too wildcard-heavy for the bound counts as not matching."""
    if tool is None:
        return False
    field = "file_path" if kind == "path" else "path"
    try:
        return bool(_run_sync(BoundedEngine(PermissionContext())._rule_matches(tool, rule, {field: path})))
    except PathologicalRuleError:
        return False


def _absolute_example(content: str, hits: Any, example: str, home: str) -> str | None:
    """An absolute path a relative pattern matches by the real matcher, or ``None``."""
    for path in (f"{home}/{example}", f"{home}/{content}", "/" + example[1:], "/" + content[1:]):
        if path.startswith("/") and hits(path):
            return path
    return None


def _path_reach(rule: PermissionRule, tool: ToolBase | None, kind: str, verb: str, home: str) -> str:
    """What else a path glob rule reaches, each claim checked on AgentScope's matcher (:func:`_probe`)."""
    content = rule.rule_content or ""

    def hits(*paths: str) -> bool:
        return all(_probe(tool, rule, kind, p) for p in paths)

    if hits("/etc/passwd", f"{home}/.ssh/id_rsa"):
        return f"{verb} every file on the machine (e.g. `/etc/passwd`, `~/.ssh/id_rsa`): `*` matches `/` too."
    if hits(f"{home}/.ssh/id_rsa", f"{home}/.bashrc") or hits("~/.ssh/id_rsa", "~/.bashrc"):
        return f"{verb} every file in the home folder, `~/.ssh/id_rsa` and `~/.bashrc` included: `*` matches `/` too."
    example = content.replace("**", "*").replace("*", "a/b/c", 1).replace("*", "x") if "*" in content else content
    absolute = None if _is_abs(content) else _absolute_example(content, hits, example, home)
    lead = ""
    if absolute is not None:
        lead = f"the `{content[0]}` it starts with matches the leading `/`"
        where = f"though written relatively, absolute paths too, e.g. `{absolute}`: {lead}"
    elif _is_abs(content) or content[:1] in ("*", "?", "["):
        where = ""
    else:
        where = f"being relative, never an absolute path: fnmatch compares from the first character, and it starts with `{content[0]}`"
    if "*" in content and hits(example) and _star_crossed_slash(content, example):
        base = content.split("*", 1)[0] or "."
        return (
            f"also {verb} files in every subfolder below `{base}` (e.g. `{example}`): `*` crosses `/`, "
            f"unlike in a shell glob" + (f" (and, {where})." if where else ".")
        )
    if absolute is not None:
        return f"also {verb} absolute paths, though the pattern is written relatively (e.g. `{absolute}`): {lead}."
    if where:
        return (
            f"matches only paths written relatively, as the pattern is: `{content}`, {where} "
            "(fnmatch compares the strings as written)."
        )
    return f"matches only `{content}` as written (no `~` expansion, no `..` clean-up)."


def rule_reach(rule: PermissionRule, *, tool: ToolBase | None = None, home: str | None = None) -> str:
    """Say in ONE line what else ``rule`` lets through, for a person about
    to accept it ("Always allow" on a confirmation card).

    Uses the same semantics as :func:`explain_match` (AgentScope's
    ``match_rule`` of Bash, Read/Write/Edit, Glob, Grep; ``ToolBase.match_rule``
    for function and MCP tools; ``PermissionEngine._rule_matches`` for
    whole-tool rules):

    * no ``rule_content``: every call of the tool;
    * Bash ``x:*``: anything chained after ``x`` (``x && curl … | sh``);
      Bash with ``*``: ``*`` swallows chained commands; Bash without ``*``:
      a substring match anywhere in a command;
    * path globs: every file on the machine, the whole home folder, ``*``
      crossing ``/`` into subfolders, relative patterns never matching
      absolute paths;
    * function / MCP tool with content: matches nothing.

    Args:
        rule: the rule (an AgentScope ``PermissionRule``).
        tool: the tool object, if known (else the builtin tool of that name,
            or a function tool).
        home: the home folder to check against (default ``os.path.expanduser("~")``).

    Returns:
        str: one line, no newline, starting with what the rule does
        (``"also allows …"``, ``"allows every call …"``).
    """
    verb = _VERBS.get(rule.behavior.value, "matches")
    if not rule.rule_content:
        return f"{verb} every call of {rule.tool_name}, whatever its input: the rule names no pattern, so it covers the whole tool."
    if tool is None:
        tool = default_tool(rule.tool_name)
    kind = tool_kind(tool, rule.tool_name)
    content = rule.rule_content
    if kind == "bash":
        line = (
            f"in a Session {_bash_session_reach(content, rule.behavior.value, verb)}. AgentScope's engine alone "
            f"(a Session with shell_rules=False) {_bash_reach(content, verb)}"
        )
    elif kind in ("path", "glob", "grep"):
        line = _path_reach(rule, tool, kind, verb, home or os.path.expanduser("~"))
    elif kind == "function":
        line = (
            f"matches nothing: {rule.tool_name} only matches whole-tool rules (ToolBase.match_rule), "
            "so this rule never applies."
        )
    else:
        line = f"is decided by {type(tool).__name__}.match_rule, which nb_hitl does not describe."
    return " ".join(line.split())
