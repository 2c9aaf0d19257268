"""Why a permission rule matches a call, in words.

The verdict always comes from AgentScope (``PermissionEngine._rule_matches``
and the tool's own ``match_rule``); this module only *describes* the
semantics it reads in ``agentscope/tool/_builtin``: Bash ``x:*`` prefix
rules (the chained rest of a command is not looked at), ``*`` wildcards,
substring rules when there is no ``*``; Read/Write/Edit/Glob/Grep globs
matched with ``fnmatch`` (``*`` crosses ``/``, paths compared as written,
so a relative pattern matches an absolute path only through a leading
wildcard); whole-tool rules; function and MCP
tools matching only whole-tool rules.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from agentscope.permission import PermissionContext, PermissionRule
from agentscope.tool import ToolBase

from ..errors import DecisionError
from .bounded import BoundedEngine, PathologicalRuleError
from .rules import _as_rule, parse_rule, rule_label
from .shell_check import rule_covers
from .tools import default_tool, tool_kind

__all__ = ["explain_match", "validate_rule_edit"]


def _run_sync(coro: Any) -> Any:
    """Run a coroutine that never suspends (the builtin ``match_rule``
    methods await nothing that waits) to its result, without an event loop.
    Returns ``None`` if it would wait."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    return None


def _has_unescaped_star(pattern: str) -> bool:
    # Mirrors the reading rule of Bash.match_rule's has_wildcards (used for wording only).
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
        elif pattern[i] == "*":
            return True
        else:
            i += 1
    return False


_CHAIN = re.compile(r"&&|\|\||;|\||\n|`|\$\(")


def _explain_bash(content: str, tool_input: Mapping[str, Any], matched: bool | None) -> str:
    command = str(tool_input.get("command", ""))
    verdict = {True: "matches", False: "does not match", None: "may or may not match"}[matched]
    if content.endswith(":*"):
        prefix = content[:-2].strip()
        text = (
            f"Bash rule `{content}` ends with `:*`, so it is a prefix rule (Bash.match_rule): it matches a command "
            f"equal to `{prefix}` or starting with `{prefix} ` (the prefix then a space)."
        )
        if matched:
            rest = command[len(prefix) :].strip()
            text += (
                f" The command is `{prefix}`, so the rule {verdict}."
                if command == prefix
                else f" The command starts with `{prefix} `, so the rule {verdict}."
            )
            if _CHAIN.search(rest):
                text += (
                    f" The prefix rule only looks at the start of the whole command line: everything after it, "
                    f"including the chained part `{rest}`, is covered too."
                )
        else:
            text += f" The command `{command}` {verdict}"
            if command.startswith(prefix):
                text += f": it starts with `{prefix}` but not with `{prefix} ` (a space is required, so `{command.split(' ')[0]}` is another command)."
            elif prefix and prefix in command:
                text += f": `{prefix}` appears at position {command.index(prefix)}, but a prefix rule only looks at the start of the command."
            else:
                text += f": it does not start with `{prefix}`."
        return text
    if _has_unescaped_star(content):
        text = (
            f"Bash rule `{content}` contains `*`, so it is a wildcard rule (Bash.match_rule): each `*` matches any "
            "characters (spaces, `/`, `&&`, `|` included) and the whole command must match (re.fullmatch)."
        )
        if content.endswith(" *"):
            text += f" A trailing ` *` also lets the bare `{content[:-2].strip()}` match."
        text += f" The command `{command}` {verdict}."
        if matched and _CHAIN.search(command):
            text += " Note that a `*` also swallows chained commands."
        return text
    literal = content.replace("\\\\", "\x00").replace("\\*", "*").replace("\x00", "\\")
    text = (
        f"Bash rule `{content}` has no `*`, so it is a substring rule (Bash.match_rule: `pattern in command`): "
        f"it matches wherever `{literal}` occurs in the command, not only at its start."
    )
    if matched:
        pos = command.find(literal)
        if pos > 0:
            text += (
                f" `{literal}` occurs at position {pos} of `{command}`, after `{command[:pos].strip()}`, "
                f"so this command is covered too: the rule {verdict}."
            )
        else:
            text += f" The command `{command}` contains it: the rule {verdict}."
        if content != literal:
            text += " (`\\*` in the rule stands for a literal `*`.)"
    else:
        text += f" `{literal}` does not occur in `{command}`: the rule {verdict}."
    return text


def _shell_sentence(rule: PermissionRule, tool: ToolBase | None, tool_input: Mapping[str, Any]) -> str:
    """What the rule covers read command by command (nb_hitl's shell rules), as a sentence."""
    try:
        covered = _run_sync(rule_covers(tool, rule, tool_input)) if tool is not None else None
    except PathologicalRuleError as exc:
        return f" Read command by command (nb_hitl's shell rules): {exc}"
    if covered is None:
        return ""
    where = "on any of its forms (from its program on, the program's base name, behind a wrapper)"
    if rule.behavior.value == "allow":
        where = "on its own"
    if not covered:
        return (
            f" Read command by command (nb_hitl's shell rules, on by default in a Session), matched {where}, "
            "it covers none of the commands of this call."
        )
    listed = ", ".join(f"`{c}`" for c in covered)
    return (
        f" Read command by command (nb_hitl's shell rules, on by default in a Session), matched {where}, "
        f"it covers {listed}."
    )


def _star_crossed_slash(pattern: str, path: str) -> bool:
    """Whether fnmatch matched only because a ``*`` spanned a ``/``."""
    if "*" not in pattern:
        return False
    strict = fnmatch.translate(pattern).replace(".*", "[^/]*")
    return re.match(strict, path) is None


def _is_abs(p: str) -> bool:
    return p.startswith("/") or p.startswith("~") or bool(re.match(r"^[A-Za-z]:[\\/]", p))


def _explain_path(
    tool_name: str, content: str, tool_input: Mapping[str, Any], matched: bool | None, fields: tuple[str, ...]
) -> str:
    verdict = {True: "matches", False: "does not match", None: "may or may not match"}[matched]
    field = fields[0]
    path = tool_input.get(field)
    text = (
        f"{tool_name} rule `{content}` is a glob matched with fnmatch against the input `{field}` "
        f"({tool_name}.match_rule): the whole path must match, `*` matches any characters including `/` "
        "(so `*` and `**` both cross folders), and the path is compared as written (no `~` expansion, "
        "no `..` clean-up, no resolution against the working directory)."
    )
    if not path:
        return text + f" This call has no `{field}`, so the rule {verdict}."
    path = str(path)
    text += f" `{path}` {verdict}."
    if matched and _star_crossed_slash(content, path):
        text += (
            f" Here `*` crosses `/`: `{content}` also covers `{path}` in a subfolder, unlike a shell glob where "
            "`*` stops at `/`."
        )
    if _is_abs(content) != _is_abs(path):
        if _is_abs(path) and matched:
            text += (
                f" The pattern is written relatively and the path is absolute, yet it matches: fnmatch compares "
                f"from the first character, and the `{content[0]}` the pattern starts with matches the leading `/`."
            )
        elif _is_abs(path) and matched is False:
            text += (
                f" The pattern is relative and the path absolute: fnmatch compares from the first character, so "
                f"`{content}` does not match the absolute `{path}`. Write the absolute pattern "
                f"(e.g. `{os.path.dirname(path)}/**`) or start it with `*/`."
            )
        elif matched is False:
            text += (
                f" The pattern is absolute and the path relative: fnmatch compares the strings as written, so the "
                f"relative `{path}` is not resolved against the working directory and does not match `{content}`."
            )
    if "~" in content or path.startswith("~"):
        text += " `~` is not expanded by the match: `~/x` and the absolute home path are different strings."
    if "/../" in path or path.startswith("../") or path.endswith("/.."):
        text += f" `{path}` contains `..`, which the match does not resolve: a pattern can match a path that leaves its folder."
    return text


def explain_match(
    rule: PermissionRule | Mapping[str, Any],
    tool_name: str,
    input: Mapping[str, Any],
    *,
    tool: ToolBase | None = None,
    matched: bool | None = None,
) -> str:
    """Say in words why ``rule`` matches (or not) a call of ``tool_name``.

    The verdict is the engine's: ``matched`` when given (``try_call``
    passes the result of ``PermissionEngine._rule_matches``), else
    ``PermissionEngine._rule_matches`` run on ``tool`` (or a default
    ``Bash()/Read()/Write()/Edit()/Glob()/Grep()`` for those names) by a
    :class:`~nb_hitl.permissions.bounded.BoundedEngine`: a rule too
    wildcard-heavy to match against this input in the bound "may or may
    not match", and the text says why. The
    words describe the semantics of the code that decides:

    * no content (``None`` or ``""``): whole-tool rule,
      ``PermissionEngine._rule_matches``;
    * Bash: ``x:*`` prefix, wildcard ``*`` (``re.fullmatch``), substring
      when there is no ``*`` -- ``Bash.match_rule`` in
      ``tool/_builtin/_bash.py``;
    * Read / Write / Edit: ``fnmatch.fnmatch(file_path, pattern)``, ``*``
      crossing ``/``, relative vs absolute -- ``Read.match_rule``
      (``_read.py``), ``Write.match_rule`` (``_write.py``),
      ``Edit.match_rule`` (``_edit.py``); Glob (``path`` then
      ``pattern``) and Grep (``path``) likewise;
    * any other tool (``FunctionTool``, ``MCPTool``): ``ToolBase.match_rule``
      returns ``rule_content is None``, so only whole-tool rules match.

    Args:
        rule: the rule (``PermissionRule`` or dict).
        tool_name: the tool called.
        input: the call's input dict.
        tool: the tool object, if known.
        matched: the engine's verdict, if already computed.

    Returns:
        str: a few sentences.

    Raises:
        DecisionError: if ``rule`` is an invalid dict.
    """
    r = _as_rule(rule, default_source="nb_hitl")
    if tool is None:
        tool = default_tool(tool_name)
    if r.tool_name != tool_name:
        return (
            f"The rule is for {r.tool_name}, not {tool_name}: the engine looks rules up by the exact tool name "
            f"(context.allow_rules.get(tool.name)), so it does not apply to this call."
        )
    too_long = ""
    if matched is None and tool is not None:
        try:
            matched = _run_sync(BoundedEngine(PermissionContext())._rule_matches(tool, r, dict(input)))
        except PathologicalRuleError as exc:
            too_long = f" {exc}"
    if not r.rule_content:
        return (
            f"`{rule_label(r)}` names no pattern, so it covers the whole tool: it matches every call of "
            f"{tool_name}, whatever its input (AgentScope's engine matches a rule without a pattern to every call)."
        )
    kind = tool_kind(tool, tool_name)
    if kind == "bash":
        return _explain_bash(r.rule_content, input, matched) + too_long + _shell_sentence(r, tool, input)
    if kind == "path":
        return _explain_path(tool_name, r.rule_content, input, matched, ("file_path",))
    if kind == "glob":
        text = _explain_path(
            tool_name, r.rule_content, {"path": input.get("path") or input.get("pattern")}, matched, ("path",)
        )
        return text + " (Glob.match_rule tries the search `path` first, then the `pattern` itself.)"
    if kind == "grep":
        text = _explain_path(tool_name, r.rule_content, input, matched, ("path",))
        return text + " (Grep.match_rule uses the current directory when there is no `path`.)"
    if kind == "function":
        return (
            f"{tool_name} matches rules as every plain tool does (AgentScope's ToolBase.match_rule): only a "
            f"whole-tool rule (one that names no pattern) matches. `{rule_label(r)}` names the pattern "
            f"`{r.rule_content}`, so it never matches, whatever the input."
        )
    verdict = {True: "matches", False: "does not match", None: "may or may not match"}[matched]
    return f"{tool_name} has its own match_rule (in {type(tool).__module__}); by it, `{rule_label(r)}` {verdict} this call."


def validate_rule_edit(
    tool: ToolBase | str,
    rule_content: str | None,
    *,
    behavior: str = "allow",
    source: str = "nb_hitl",
    known_tools: Iterable[str] | None = None,
    call_input: Mapping[str, Any] | None = None,
) -> PermissionRule:
    """Check a rule a person narrowed or edited from a ``suggested_rules``
    entry before accepting it, and build the ``PermissionRule``.

    Args:
        tool: the tool of the call being confirmed (``ToolBase``), or its name.
        rule_content: the edited pattern; ``None`` for the whole tool.
        behavior: ``"allow"`` (what "Always allow" adds), ``"deny"`` or ``"ask"``.
        source: the rule's ``source``.
        known_tools: the agent's tool names (a name not plain ASCII is
            accepted only when it is exactly one of them or ``tool.name``).
        call_input: the input of the call being confirmed: when given, the
            edited rule must still match it (``PermissionEngine._rule_matches``
            with the tool's own ``match_rule``), or accepting it would not
            even cover this call.

    Returns:
        PermissionRule: the rule to add (e.g. in ``ConfirmResult.rules``).

    Raises:
        DecisionError: ``field="rule_content"`` for an empty or blank
            pattern, surrounding spaces (``"git:* "`` is no longer a prefix
            rule), invisible characters, a pattern on a tool that only
            matches whole-tool rules, a rule that no longer matches
            ``call_input`` or is too wildcard-heavy to match against it in the
            bound (:mod:`nb_hitl.permissions.bounded`); ``field="tool_name"`` for a look-alike or
            invisible character in the name; ``field="behavior"`` for an
            unknown behavior (see :func:`nb_hitl.permissions.parse_rule`).
    """
    name = tool.name if isinstance(tool, ToolBase) else tool
    known = list(known_tools or [])
    if isinstance(tool, ToolBase):
        known.append(tool.name)
    if isinstance(rule_content, str):
        if not rule_content.strip():
            raise DecisionError(
                "The pattern is empty: it would match every call of the tool. Type a pattern, or choose the whole "
                "tool on purpose.",
                field="rule_content",
            )
        if rule_content != rule_content.strip():
            raise DecisionError(
                f"The pattern {rule_content!r} has spaces around it, which change what it matches "
                "(e.g. `git:* ` is no longer a prefix rule). Remove them.",
                field="rule_content",
            )
    rule = parse_rule(
        {"tool_name": name, "rule_content": rule_content, "behavior": behavior, "source": source},
        known_tools=known,
    )
    obj = tool if isinstance(tool, ToolBase) else default_tool(name)
    if rule_content is not None and tool_kind(obj, name) == "function":
        raise DecisionError(
            f"{name} only matches whole-tool rules (ToolBase.match_rule): a rule with a pattern would never apply.",
            field="rule_content",
        )
    if call_input is not None and obj is not None:
        try:
            matched = _run_sync(BoundedEngine(PermissionContext())._rule_matches(obj, rule, dict(call_input)))
        except PathologicalRuleError as exc:
            raise DecisionError(str(exc), field="rule_content") from None
        if matched is False:
            raise DecisionError(
                f"`{rule_label(rule)}` no longer matches the call being confirmed, so accepting it would not "
                "cover this call. Narrow it so that it still includes this call.",
                field="rule_content",
            )
    return rule
