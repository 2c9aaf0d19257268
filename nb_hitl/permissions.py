"""Explore AgentScope's permission rules on the real ``PermissionEngine``.

Everything that *decides* here is AgentScope 2.0.11's own code:
``agentscope.permission.PermissionEngine.check_permission`` for decisions,
``PermissionEngine._rule_matches`` (which calls the tool's own
``match_rule``) for whether one rule matches one call,
``PermissionEngine.add_rule`` to add rules. Nothing re-implements the
matching to decide; :func:`explain_match` only *describes* the semantics in
words, with the verdict taken from the engine.

The semantics described (read in ``agentscope/permission/_engine.py`` and
``agentscope/tool/_builtin/*.py``):

* Evaluation order (``PermissionEngine._check_default`` and the other
  ``_check_<mode>`` methods): 1. deny rules, 2. ask rules, 3. read-only fast
  path (``ToolBase.check_read_only``), 4. the tool's own
  ``check_permissions`` (a bypass-immune "safety ASK" cannot be silenced by
  allow rules), 5. allow rules, 6. the mode's fallback: ASK (default,
  accept_edits), DENY (explore, dont_ask), ALLOW (bypass). Explore skips 4
  and 5; dont_ask turns every ASK into DENY (``_convert_ask_to_deny``);
  bypass ignores safety ASKs (``_check_bypass``).
* A rule with no content (``None``, and also ``""``:
  ``PermissionEngine._rule_matches`` tests ``not rule.rule_content``) is a
  whole-tool rule: it matches every call of the tool.
* ``Bash.match_rule`` (``tool/_builtin/_bash.py``): ``x:*`` is a prefix rule
  (the command equals ``x`` or starts with ``x `` -- so not ``xy``, and the
  rest of a chained command is not looked at); other unescaped ``*`` are
  wildcards (``re.fullmatch`` of the whole command, ``*`` -> ``.*``, a
  trailing `` *`` also matches the bare word); with no ``*`` the rule is a
  *substring* test (``pattern in command``), so ``docker run`` also
  matches ``sudo docker run ...``.
* ``Read/Write/Edit.match_rule`` (``_read.py``, ``_write.py``,
  ``_edit.py``): ``fnmatch.fnmatch(file_path, rule_content)``: the whole
  path must match, ``*`` matches any characters *including* ``/``, and the
  path is compared as written (no ``~`` expansion, no ``..`` clean-up, no
  resolution against the working directory), so a relative ``src/**`` never
  matches an absolute path.
* ``ToolBase.match_rule`` (``tool/_base.py``), used by ``FunctionTool`` and
  ``MCPTool``: returns ``rule_content is None``: only whole-tool rules match.

The agent trap: ``Agent.__init__`` builds
``self._engine = PermissionEngine(self.state.permission_context)`` once, and
both the agent's permission checks (``Agent._check_permission_impl``) and
the rules accepted with "Always allow" (``Agent._handle_incoming_event``
calls ``self._engine.add_rule``) use *that engine's* context. If
``agent.state`` is replaced after construction, ``agent.state.permission_context``
is another object that the agent no longer consults. This module therefore
always reads and changes ``agent._engine.context``, the context the agent's
next call is checked against, and reports ``state_in_sync: False`` when the
state holds a different one.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import jsonschema
import pydantic
from agentscope.permission import (
    PermissionBehavior,
    PermissionContext,
    PermissionDecision,
    PermissionEngine,
    PermissionMode,
    PermissionRule,
)
from agentscope.tool import Bash, Edit, Glob, Grep, Read, ToolBase, Toolkit, Write

from .decisions import parse_json_object
from .errors import DecisionError

__all__ = [
    "MODES",
    "RULE_BEHAVIORS",
    "RuleFileError",
    "context_of",
    "engine_of",
    "describe_context",
    "parse_rule",
    "rule_to_dict",
    "rule_label",
    "add_rule",
    "remove_rule",
    "edit_rule",
    "set_mode",
    "add_working_directory",
    "remove_working_directory",
    "list_tools",
    "get_tool",
    "try_call",
    "mode_matrix",
    "explain_match",
    "export_rules",
    "import_rules",
    "explore",
]

MODES: list[str] = [m.value for m in PermissionMode]
"""The five ``PermissionMode`` values, in AgentScope's order:
``default, accept_edits, explore, bypass, dont_ask``."""

RULE_BEHAVIORS: list[str] = ["allow", "deny", "ask"]
"""The behaviors ``PermissionEngine.add_rule`` keeps. It has no branch for
``passthrough``: such a rule would be dropped without a word."""

_RULE_FIELDS = ("tool_name", "rule_content", "behavior", "source")
_BUCKETS = {"allow": "allow_rules", "deny": "deny_rules", "ask": "ask_rules"}
_PATH_TOOLS = (Read, Write, Edit)


class RuleFileError(DecisionError):
    """A rules file (see :func:`import_rules`) that cannot be applied.

    Attributes:
        line: 1-based line of the text at fault (``None`` if unknown).
        field: the field at fault, e.g. ``"rules[2].behavior"``.
    """

    def __init__(self, message: str, *, line: int | None, field: str | None) -> None:
        super().__init__(message, field=field)
        self.line = line


# ---------------------------------------------------------------------------
# finding the context the agent really uses
# ---------------------------------------------------------------------------
def engine_of(target: Any) -> PermissionEngine:
    """The ``PermissionEngine`` that decides for ``target``.

    Args:
        target: an ``agentscope.agent.Agent`` (its ``_engine``, built in
            ``Agent.__init__``), a ``PermissionEngine``, or a
            ``PermissionContext`` (wrapped in a new engine over *the same*
            context object, so rules added through it land in that context).

    Returns:
        PermissionEngine: the engine.

    Raises:
        TypeError: for anything else.
    """
    if isinstance(target, PermissionEngine):
        return target
    if isinstance(target, PermissionContext):
        return PermissionEngine(target)
    engine = getattr(target, "_engine", None)
    if isinstance(engine, PermissionEngine):
        return engine
    raise TypeError(
        f"expected an agentscope Agent, a PermissionEngine or a PermissionContext, got {type(target).__name__}"
    )


def context_of(target: Any) -> PermissionContext:
    """The ``PermissionContext`` the next permission check of ``target`` reads.

    For an agent this is ``agent._engine.context`` and not
    ``agent.state.permission_context``: ``Agent.__init__`` builds the engine
    from the state's context once, and a state replaced afterwards is not
    consulted (``Agent._check_permission_impl`` calls
    ``self._engine.check_permission``).

    Raises:
        TypeError: see :func:`engine_of`.
    """
    return engine_of(target).context


def _state_in_sync(target: Any) -> bool | None:
    state = getattr(target, "state", None)
    engine = getattr(target, "_engine", None)
    if state is None or not isinstance(engine, PermissionEngine):
        return None
    return getattr(state, "permission_context", None) is engine.context


# ---------------------------------------------------------------------------
# rules as data
# ---------------------------------------------------------------------------
def rule_label(rule: PermissionRule) -> str:
    """``behavior Tool(rule_content)``, or ``behavior Tool`` for a whole-tool rule.

    Example: ``allow Bash(git:*)``, ``deny Read(/etc/*)``, ``allow my_tool``.
    """
    if rule.rule_content is None:
        return f"{rule.behavior.value} {rule.tool_name}"
    return f"{rule.behavior.value} {rule.tool_name}({rule.rule_content})"


def rule_to_dict(rule: PermissionRule) -> dict[str, Any]:
    """A rule in AgentScope's ``PermissionRule`` JSON shape:
    ``{"tool_name": str, "rule_content": str | None, "behavior": "allow"|"deny"|"ask", "source": str}``."""
    return {
        "tool_name": rule.tool_name,
        "rule_content": rule.rule_content,
        "behavior": rule.behavior.value,
        "source": rule.source,
    }


def _same_rule(a: PermissionRule, b: PermissionRule) -> bool:
    return (
        a.tool_name == b.tool_name
        and a.rule_content == b.rule_content
        and a.behavior == b.behavior
        and a.source == b.source
    )


def _same_effect(a: PermissionRule, b: PermissionRule) -> bool:
    return a.tool_name == b.tool_name and a.rule_content == b.rule_content and a.behavior == b.behavior


def parse_rule(data: Any, *, default_source: str | None = None, field_prefix: str = "") -> PermissionRule:
    """Turn a JSON-like dict into an ``agentscope.permission.PermissionRule``
    the engine can hold, or refuse it with the field at fault.

    Args:
        data: ``{"tool_name": str, "rule_content": str | None,
            "behavior": "allow" | "deny" | "ask", "source": str}``.
            ``rule_content`` is required, as in ``PermissionRule``
            (``null`` = whole-tool rule).
        default_source: fills ``source`` when it is missing (the widget
            uses ``"nb_hitl"``); when ``None`` a missing source is refused.
        field_prefix: prepended to ``field`` in errors (``"rules[2]."``).

    Returns:
        PermissionRule: the validated rule.

    Raises:
        DecisionError: ``field`` names the input at fault. Refused: not an
            object; unknown fields (typos such as ``rule_contnet``); an
            empty or non-string ``tool_name``; a missing ``rule_content``;
            ``rule_content == ""`` (``PermissionEngine._rule_matches``
            treats it as "no content", i.e. it would match *every* call:
            send ``null`` to mean the whole tool); a ``behavior`` other
            than allow / deny / ask (``PermissionEngine.add_rule`` silently
            drops ``passthrough``); an empty ``source``.
    """
    p = field_prefix
    if not isinstance(data, Mapping):
        raise DecisionError(
            f"A rule must be a JSON object with {', '.join(_RULE_FIELDS)}; got {type(data).__name__}.",
            field=p.rstrip(".") or None,
        )
    unknown = [k for k in data if k not in _RULE_FIELDS]
    if unknown:
        raise DecisionError(
            f"Unknown field {unknown[0]!r} in a rule: a PermissionRule has {', '.join(_RULE_FIELDS)}.",
            field=f"{p}{unknown[0]}",
        )
    tool_name = data.get("tool_name")
    if not isinstance(tool_name, str) or not tool_name.strip():
        raise DecisionError(
            "tool_name must be a non-empty string (the tool's name, e.g. 'Bash').", field=f"{p}tool_name"
        )
    if tool_name != tool_name.strip():
        raise DecisionError(
            f"tool_name {tool_name!r} has surrounding spaces: the engine looks rules up by the exact tool name.",
            field=f"{p}tool_name",
        )
    if "rule_content" not in data:
        raise DecisionError(
            "rule_content is required (use null for a rule on the whole tool).", field=f"{p}rule_content"
        )
    content = data["rule_content"]
    if content is not None and not isinstance(content, str):
        raise DecisionError(
            f"rule_content must be a string or null, got {type(content).__name__}.", field=f"{p}rule_content"
        )
    if content == "":
        raise DecisionError(
            "An empty rule_content would match every call of the tool (PermissionEngine._rule_matches "
            "treats '' as no content). Use null to mean the whole tool, or type a pattern.",
            field=f"{p}rule_content",
        )
    behavior = data.get("behavior")
    if behavior not in RULE_BEHAVIORS:
        extra = (
            " PermissionEngine.add_rule keeps only allow, deny and ask rules; a passthrough rule would be dropped."
            if behavior == "passthrough"
            else ""
        )
        raise DecisionError(f"behavior must be one of allow, deny, ask; got {behavior!r}.{extra}", field=f"{p}behavior")
    source = data.get("source", default_source)
    if not isinstance(source, str) or not source.strip():
        raise DecisionError(
            "source must be a non-empty string saying where the rule comes from (e.g. 'userSettings').",
            field=f"{p}source",
        )
    try:
        return PermissionRule(
            tool_name=tool_name, rule_content=content, behavior=PermissionBehavior(behavior), source=source
        )
    except pydantic.ValidationError as exc:  # pragma: no cover - the checks above cover PermissionRule's fields
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err.get("loc", ()))
        raise DecisionError(f"{loc}: {err.get('msg')}", field=f"{p}{loc}" if loc else None) from exc


def _as_rule(rule: PermissionRule | Mapping[str, Any], default_source: str | None = None) -> PermissionRule:
    if isinstance(rule, PermissionRule):
        return rule
    return parse_rule(rule, default_source=default_source)


def _all_rules(ctx: PermissionContext) -> list[PermissionRule]:
    out: list[PermissionRule] = []
    for attr in ("deny_rules", "ask_rules", "allow_rules"):
        for rules in getattr(ctx, attr).values():
            out.extend(rules)
    return out


def _check_known_tool(rule: PermissionRule, known_tools: Iterable[str] | None, field: str = "tool_name") -> None:
    if known_tools is None:
        return
    known = list(known_tools)
    if rule.tool_name not in known:
        raise DecisionError(
            f"No tool named {rule.tool_name!r} in the agent's toolkit (tools: {', '.join(known) or 'none'}). "
            "The engine keys rules by the exact tool name, so this rule would never apply.",
            field=field,
        )


def add_rule(
    target: Any,
    rule: PermissionRule | Mapping[str, Any],
    *,
    known_tools: Iterable[str] | None = None,
    default_source: str = "nb_hitl",
) -> PermissionRule:
    """Add a rule to the context the agent's next call is checked against.

    Goes through ``PermissionEngine.add_rule`` (the same call
    ``Agent._handle_incoming_event`` makes for "Always allow"), on the
    agent's own engine (see :func:`context_of`).

    Args:
        target: agent, engine or context.
        rule: a ``PermissionRule`` or a dict for :func:`parse_rule`.
        known_tools: when given, a rule for a tool not in this list is
            refused (a typo such as ``bash`` would never apply).
        default_source: ``source`` for a dict without one.

    Returns:
        PermissionRule: the rule added.

    Raises:
        DecisionError: invalid rule (see :func:`parse_rule`), unknown tool,
            or an identical rule (same tool, content and behavior) already
            present (``field="rule_content"``).
    """
    new = _as_rule(rule, default_source)
    _check_known_tool(new, known_tools)
    engine = engine_of(target)
    for existing in _all_rules(engine.context):
        if _same_effect(existing, new):
            raise DecisionError(f"The rule {rule_label(new)} is already there.", field="rule_content")
    engine.add_rule(new)
    return new


def _locate(ctx: PermissionContext, rule: PermissionRule) -> tuple[list[PermissionRule], int]:
    bucket: dict[str, list[PermissionRule]] = getattr(ctx, _BUCKETS[rule.behavior.value])
    rules = bucket.get(rule.tool_name, [])
    for i, existing in enumerate(rules):
        if _same_rule(existing, rule):
            return rules, i
    for i, existing in enumerate(rules):  # same effect, other source
        if _same_effect(existing, rule):
            return rules, i
    raise DecisionError(
        f"The rule {rule_label(rule)} is no longer in the agent's context (it may have been removed). "
        "Refresh to see the current rules.",
        field="rule",
    )


def _drop_empty(ctx: PermissionContext) -> None:
    for attr in _BUCKETS.values():
        bucket = getattr(ctx, attr)
        for name in [n for n, rules in bucket.items() if not rules]:
            del bucket[name]


def remove_rule(target: Any, rule: PermissionRule | Mapping[str, Any]) -> PermissionRule:
    """Remove one rule (the first equal one) from the agent's live context.

    Args:
        target: agent, engine or context.
        rule: the rule as shown by :func:`describe_context`.

    Returns:
        PermissionRule: the rule object removed.

    Raises:
        DecisionError: the rule is invalid or no longer present.
    """
    wanted = _as_rule(rule, default_source="nb_hitl")
    ctx = context_of(target)
    rules, i = _locate(ctx, wanted)
    removed = rules.pop(i)
    _drop_empty(ctx)
    return removed


def edit_rule(
    target: Any,
    old: PermissionRule | Mapping[str, Any],
    new: PermissionRule | Mapping[str, Any],
    *,
    known_tools: Iterable[str] | None = None,
) -> PermissionRule:
    """Replace ``old`` by ``new``, all or nothing.

    The new rule is validated first; if it is refused the context is
    untouched. Same tool and behavior: replaced in place (keeps its rank,
    which matters because the engine returns the first matching rule's
    reason). Otherwise ``old`` is removed and ``new`` added through
    ``PermissionEngine.add_rule``.

    Raises:
        DecisionError: invalid ``new`` (fields as in :func:`parse_rule`),
            unknown tool, ``old`` no longer present, or ``new`` duplicating
            another rule.
    """
    old_rule = _as_rule(old, default_source="nb_hitl")
    new_rule = _as_rule(new, default_source=old_rule.source)
    _check_known_tool(new_rule, known_tools)
    engine = engine_of(target)
    ctx = engine.context
    rules, i = _locate(ctx, old_rule)
    for existing in _all_rules(ctx):
        if existing is not rules[i] and _same_effect(existing, new_rule):
            raise DecisionError(f"The rule {rule_label(new_rule)} is already there.", field="rule_content")
    if old_rule.tool_name == new_rule.tool_name and old_rule.behavior == new_rule.behavior:
        rules[i] = new_rule
    else:
        rules.pop(i)
        engine.add_rule(new_rule)
        _drop_empty(ctx)
    return new_rule


def set_mode(target: Any, mode: str | PermissionMode) -> PermissionMode:
    """Set the live ``PermissionContext.mode`` the agent's next call uses.

    Raises:
        DecisionError: ``field="mode"`` for a value not in :data:`MODES`.
    """
    try:
        value = PermissionMode(mode)
    except ValueError:
        raise DecisionError(f"mode must be one of {', '.join(MODES)}; got {mode!r}.", field="mode") from None
    context_of(target).mode = value
    return value


def add_working_directory(target: Any, path: str, source: str = "nb_hitl") -> None:
    """Add an entry to ``PermissionContext.working_directories`` (used by
    ``ToolBase._path_in_allowed_working_path``: in accept_edits and
    dont_ask, Write/Edit and file-system Bash commands are auto-allowed
    inside the process's cwd and these directories).

    Raises:
        DecisionError: ``field="path"`` if the path is not absolute.
    """
    from agentscope.permission import AdditionalWorkingDirectory

    if not isinstance(path, str) or not os.path.isabs(os.path.expanduser(path)):
        raise DecisionError("A working directory must be an absolute path.", field="path")
    context_of(target).working_directories[path] = AdditionalWorkingDirectory(path=path, source=source)


def remove_working_directory(target: Any, path: str) -> None:
    """Remove a working directory entry.

    Raises:
        DecisionError: ``field="path"`` if it is not there.
    """
    ctx = context_of(target)
    if path not in ctx.working_directories:
        raise DecisionError(f"{path!r} is not a working directory of this context.", field="path")
    del ctx.working_directories[path]


def describe_context(target: Any) -> dict[str, Any]:
    """A JSON-able view of the permission context.

    Args:
        target: agent, engine or context (for an agent, the engine's
            context, see :func:`context_of`).

    Returns:
        ``{"mode": str, "modes": [5 str], "cwd": str,
        "working_directories": [{"path", "source"}],
        "rules": [{"tool_name", "rule_content", "behavior", "source", "label", "whole_tool"}],
        "by_tool": {tool_name: [rule, ...]}  (deny, then ask, then allow, each in engine order),
        "counts": {"allow": int, "deny": int, "ask": int},
        "state_in_sync": bool | None, "permission_middlewares": int}``.
        ``state_in_sync`` is ``False`` when ``agent.state.permission_context``
        is not the context the agent's engine reads (the state was replaced
        after construction). ``permission_middlewares`` counts the agent's
        ``on_check_permission`` middlewares, which can change a decision at
        run time before or after the engine.
    """
    ctx = context_of(target)
    rules: list[dict[str, Any]] = []
    by_tool: dict[str, list[dict[str, Any]]] = {}
    counts = {"allow": 0, "deny": 0, "ask": 0}
    for attr in ("deny_rules", "ask_rules", "allow_rules"):
        for tool_name, tool_rules in getattr(ctx, attr).items():
            for r in tool_rules:
                d = {**rule_to_dict(r), "label": rule_label(r), "whole_tool": not r.rule_content}
                rules.append(d)
                by_tool.setdefault(tool_name, []).append(d)
                counts[r.behavior.value] = counts.get(r.behavior.value, 0) + 1
    mws = getattr(target, "_check_permission_middlewares", None)
    return {
        "mode": ctx.mode.value,
        "modes": list(MODES),
        "cwd": os.getcwd(),
        "working_directories": [{"path": w.path, "source": w.source} for w in ctx.working_directories.values()],
        "rules": rules,
        "by_tool": by_tool,
        "counts": counts,
        "state_in_sync": _state_in_sync(target),
        "permission_middlewares": len(mws) if isinstance(mws, list) else 0,
    }


# ---------------------------------------------------------------------------
# tools
# ---------------------------------------------------------------------------
def _tools_of(toolkit: Any) -> dict[str, ToolBase]:
    """Python tools of a ``Toolkit`` (all groups), a list of tools, or a dict."""
    if toolkit is None:
        return {}
    if isinstance(toolkit, Toolkit):
        out: dict[str, ToolBase] = {}
        for group in toolkit.tool_groups:
            for tool in group.tools:
                out[tool.name] = tool
        return out
    if isinstance(toolkit, Mapping):
        return {str(k): v for k, v in toolkit.items()}
    if isinstance(toolkit, ToolBase):
        return {toolkit.name: toolkit}
    return {t.name: t for t in toolkit}


def list_tools(toolkit: Any) -> list[dict[str, Any]]:
    """The tools a person can try, as data.

    Args:
        toolkit: an ``agentscope.tool.Toolkit`` (the Python tools of all its
            groups, from ``Toolkit.tool_groups``; MCP tools are listed by
            the toolkit only after an async round trip and are not shown),
            a list of ``ToolBase``, or ``{name: ToolBase}``.

    Returns:
        ``[{"name": str, "input_schema": dict, "read_only": bool,
        "kind": "bash" | "path" | "glob" | "grep" | "function"}]``.
        ``read_only`` is the static ``ToolBase.is_read_only``; Bash decides
        per call (``Bash.check_read_only``).
    """
    out = []
    for name, tool in _tools_of(toolkit).items():
        out.append(
            {
                "name": name,
                "input_schema": json.loads(json.dumps(tool.input_schema, default=str)),
                "read_only": bool(getattr(tool, "is_read_only", False)),
                "kind": _kind(tool),
            }
        )
    return out


async def get_tool(toolkit: Any, tool_name: str) -> ToolBase:
    """Find a tool by name (``Toolkit.get_tool`` for a ``Toolkit``, which
    also lists MCP tools).

    Raises:
        DecisionError: ``field="tool_name"`` when there is no such tool.
    """
    tool: ToolBase | None
    if isinstance(toolkit, Toolkit):
        tool = await toolkit.get_tool(tool_name)
    else:
        tool = _tools_of(toolkit).get(tool_name)
    if tool is None:
        names = ", ".join(_tools_of(toolkit)) or "none"
        raise DecisionError(f"No tool named {tool_name!r} (tools: {names}).", field="tool_name")
    return tool


def _kind(tool: ToolBase | None, tool_name: str = "") -> str:
    if tool is None:
        return {"Bash": "bash", "Read": "path", "Write": "path", "Edit": "path", "Glob": "glob", "Grep": "grep"}.get(
            tool_name, "function"
        )
    if isinstance(tool, Bash):
        return "bash"
    if isinstance(tool, _PATH_TOOLS):
        return "path"
    if isinstance(tool, Glob):
        return "glob"
    if isinstance(tool, Grep):
        return "grep"
    if type(tool).match_rule is ToolBase.match_rule:
        return "function"
    return "custom"


def parse_input(tool: ToolBase, tool_input: Mapping[str, Any] | str, field: str = "input") -> dict[str, Any]:
    """Parse (JSON text) and validate a tool input against ``tool.input_schema``.

    The agent does the same before its permission check
    (``Agent._execute_tool_call``: ``jsonschema.validate(parsed_input,
    tool.input_schema)``); the agent also *repairs* malformed JSON from a
    model, while a person typing here is told exactly what is wrong.

    Raises:
        DecisionError: ``field`` (default ``"input"``) for bad JSON (with
            line and column), a non-object, or a schema violation (with the
            JSON path).
    """
    if isinstance(tool_input, str):
        value = parse_json_object(tool_input, field=field)
    else:
        value = tool_input
    if not isinstance(value, Mapping):
        raise DecisionError(f"The input of {tool.name} must be a JSON object.", field=field)
    value = dict(value)
    try:
        jsonschema.validate(value, tool.input_schema)
    except jsonschema.ValidationError as exc:
        raise DecisionError(
            f"The input does not match {tool.name}'s input schema: {exc.message} (at {exc.json_path}).", field=field
        ) from None
    return value


# ---------------------------------------------------------------------------
# deciding: only the engine
# ---------------------------------------------------------------------------
def _decision_dict(d: PermissionDecision) -> dict[str, Any]:
    return {
        "behavior": d.behavior.value,
        "message": d.message,
        "decision_reason": d.decision_reason,
        "bypass_immune": bool(d.bypass_immune),
        "suggested_rules": [rule_to_dict(r) for r in (d.suggested_rules or [])],
    }


async def _rule_matches(engine: PermissionEngine, tool: ToolBase, rule: PermissionRule, tool_input: dict) -> bool:
    # The engine's own matcher: empty content -> True, else tool.match_rule.
    return bool(await engine._rule_matches(tool, rule, tool_input))


async def _trace(engine: PermissionEngine, tool: ToolBase, tool_input: dict, decision: PermissionDecision) -> dict:
    """Facts from AgentScope's own helpers, in the engine's evaluation order,
    then a sentence on which step produced the decision. The decision itself
    is the engine's; ``agrees`` says whether these facts account for it."""
    ctx = engine.context
    mode = ctx.mode
    rules_checked = []
    matched: dict[str, list[PermissionRule]] = {"deny": [], "ask": [], "allow": []}
    for behavior in ("deny", "ask", "allow"):
        for rule in getattr(ctx, _BUCKETS[behavior]).get(tool.name, []):
            ok = await _rule_matches(engine, tool, rule, tool_input)
            if ok:
                matched[behavior].append(rule)
            rules_checked.append(
                {
                    "rule": rule_to_dict(rule),
                    "label": rule_label(rule),
                    "matched": ok,
                    "explanation": explain_match(rule, tool.name, tool_input, tool=tool, matched=ok),
                }
            )
    read_only = bool(await tool.check_read_only(tool_input))
    own: PermissionDecision | None = None
    if mode != PermissionMode.EXPLORE and not matched["deny"] and not matched["ask"] and not read_only:
        own = await tool.check_permissions(tool_input, ctx.model_copy(deep=True))
    steps: list[str] = []
    expected: str
    if matched["deny"]:
        expected, step = (
            "deny",
            f"Step 1: the deny rule {rule_label(matched['deny'][0])} matches; deny rules come first in every mode.",
        )
    elif matched["ask"]:
        if mode == PermissionMode.DONT_ASK:
            expected, step = (
                "deny",
                f"Step 2: the ask rule {rule_label(matched['ask'][0])} matches; dont_ask turns the ask into a deny (no user to ask).",
            )
        else:
            expected, step = (
                "ask",
                f"Step 2: the ask rule {rule_label(matched['ask'][0])} matches; ask rules come before allow rules and the read-only fast path.",
            )
    elif read_only:
        expected, step = (
            "allow",
            f"Step 3: {tool.name}.check_read_only says this call is read-only; read-only calls are allowed in every mode before allow rules are consulted.",
        )
    elif mode == PermissionMode.EXPLORE:
        expected, step = (
            "deny",
            "Step 6: explore mode denies every call that is not read-only; it consults neither the tool's own check nor allow rules.",
        )
    else:
        assert own is not None
        own_b = own.behavior.value
        said = own.message or own.decision_reason or ""
        steps.append(
            f"{tool.name}.check_permissions (step 4) says {own_b}"
            + (" (a bypass-immune safety ask)" if own.bypass_immune else "")
            + (f": {said.rstrip('.')}" if said else "")
            + "."
        )
        if own.behavior in (PermissionBehavior.ALLOW, PermissionBehavior.DENY):
            expected, step = (
                own_b,
                f"Step 4: {tool.name}.check_permissions returned {own_b}, which the engine returns as is.",
            )
        elif (
            own.behavior == PermissionBehavior.ASK
            and own.bypass_immune
            and mode in (PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS)
        ):
            expected, step = (
                "ask",
                "Step 4: a bypass-immune safety ask from the tool; allow rules cannot silence it in this mode.",
            )
        elif own.behavior == PermissionBehavior.ASK and own.bypass_immune and mode == PermissionMode.DONT_ASK:
            expected, step = (
                "deny",
                "Step 4: a bypass-immune safety ask from the tool, turned into a deny in dont_ask mode.",
            )
        elif matched["allow"]:
            bypass_note = " (bypass mode ignores the tool's safety ask)" if own.bypass_immune else ""
            expected, step = "allow", f"Step 5: the allow rule {rule_label(matched['allow'][0])} matches{bypass_note}."
        elif mode == PermissionMode.BYPASS:
            expected, step = (
                "allow",
                "Step 6: nothing denied or asked, and bypass mode allows everything else"
                + (" (including the tool's safety ask)." if own.bypass_immune else "."),
            )
        elif mode == PermissionMode.DONT_ASK:
            expected, step = (
                "deny",
                "Step 6: no allow rule matches and dont_ask mode denies what it would otherwise ask.",
            )
        else:
            expected, step = "ask", f"Step 6: no allow rule matches, so {mode.value} mode asks the user."
    steps.append(step)
    return {
        "read_only": read_only,
        "tool_check": None if own is None else _decision_dict(own),
        "rules_checked": rules_checked,
        "steps": steps,
        "why": " ".join(steps),
        "agrees": expected == decision.behavior.value,
    }


def _resolve(target: Any, toolkit: Any) -> tuple[PermissionEngine, Any]:
    if isinstance(target, (PermissionEngine, PermissionContext)):
        return engine_of(target), toolkit
    return engine_of(target), toolkit if toolkit is not None else getattr(target, "toolkit", None)


async def try_call(
    agent_or_context: Any,
    toolkit: Any,
    tool_name: str,
    input: Mapping[str, Any] | str,
    *,
    mode: str | PermissionMode | None = None,
) -> dict[str, Any]:
    """Ask the real engine what it decides for one call; execute nothing.

    Args:
        agent_or_context: an ``Agent`` (its own engine,
            ``agent._engine``), a ``PermissionEngine`` or a
            ``PermissionContext``.
        toolkit: ``Toolkit`` / list / dict of tools; ``None`` with an agent
            means ``agent.toolkit``.
        tool_name: the tool to try.
        input: the tool input (dict or JSON text), validated against the
            tool's ``input_schema`` with ``jsonschema`` first.
        mode: decide in this mode instead of the live one, on a deep copy of
            the context (the agent is untouched).

    Returns:
        ``{"tool_name", "input": dict, "mode": str, "behavior":
        "allow"|"deny"|"ask"|"passthrough", "message": str,
        "decision_reason": str | None, "bypass_immune": bool,
        "suggested_rules": [rule dict], "read_only": bool,
        "tool_check": decision dict | None, "rules_checked": [{"rule",
        "label", "matched", "explanation"}], "steps": [str], "why": str,
        "agrees": bool}``. The decision fields come from
        ``PermissionEngine.check_permission``; ``rules_checked``,
        ``tool_check``, ``read_only`` from ``PermissionEngine._rule_matches``,
        ``ToolBase.check_permissions`` and ``ToolBase.check_read_only``;
        ``steps``/``why`` put them in the engine's order.

    Raises:
        DecisionError: unknown tool (``field="tool_name"``), bad input
            (``field="input"``), bad mode (``field="mode"``).
    """
    engine, toolkit = _resolve(agent_or_context, toolkit)
    tool = await get_tool(toolkit, tool_name)
    tool_input = parse_input(tool, input)
    if mode is not None:
        try:
            mode_value = PermissionMode(mode)
        except ValueError:
            raise DecisionError(f"mode must be one of {', '.join(MODES)}; got {mode!r}.", field="mode") from None
        ctx = engine.context.model_copy(deep=True)
        ctx.mode = mode_value
        engine = PermissionEngine(ctx)
    decision = await engine.check_permission(tool, dict(tool_input))
    trace = await _trace(engine, tool, dict(tool_input), decision)
    return {
        "tool_name": tool.name,
        "input": tool_input,
        "mode": engine.context.mode.value,
        **_decision_dict(decision),
        **trace,
    }


def _call_spec(call: Any, i: int) -> tuple[str, Any]:
    if isinstance(call, Mapping):
        if "tool_name" not in call:
            raise DecisionError("Each call needs a tool_name.", field=f"calls[{i}].tool_name")
        return call["tool_name"], call.get("input", {})
    if isinstance(call, (tuple, list)) and len(call) == 2:
        return call[0], call[1]
    raise DecisionError("A call is {'tool_name': str, 'input': dict | JSON text}.", field=f"calls[{i}]")


async def mode_matrix(calls: Iterable[Any], toolkit: Any, context: Any) -> dict[str, Any]:
    """Each call decided by the real engine in each of the five modes.

    Every cell uses ``PermissionEngine(ctx.model_copy(deep=True))`` with the
    mode changed, so the agent's live context is never touched.

    Args:
        calls: ``[{"tool_name": str, "input": dict | JSON text}]`` or
            ``[(tool_name, input)]``.
        toolkit: ``Toolkit`` / list / dict of tools (``None`` with an agent:
            ``agent.toolkit``).
        context: agent, engine or context whose rules are used.

    Returns:
        ``{"modes": [5 str], "live_mode": str, "rows": [{"tool_name",
        "input": dict, "cells": {mode: {"behavior", "message",
        "decision_reason", "bypass_immune", "suggested_rules"}}}]}``.

    Raises:
        DecisionError: ``field="calls[i].tool_name"`` / ``"calls[i].input"``
            for an unknown tool or an input that breaks the schema; nothing
            is decided then.
    """
    engine, toolkit = _resolve(context, toolkit)
    base = engine.context
    prepared = []
    for i, call in enumerate(calls):
        name, raw = _call_spec(call, i)
        try:
            tool = await get_tool(toolkit, name)
        except DecisionError as exc:
            raise DecisionError(f"Call {i + 1}: {exc}", field=f"calls[{i}].tool_name") from None
        prepared.append((tool, parse_input(tool, raw, field=f"calls[{i}].input")))
    rows = []
    for tool, tool_input in prepared:
        cells = {}
        for mode in PermissionMode:
            ctx = base.model_copy(deep=True)
            ctx.mode = mode
            decision = await PermissionEngine(ctx).check_permission(tool, dict(tool_input))
            cells[mode.value] = _decision_dict(decision)
        rows.append({"tool_name": tool.name, "input": tool_input, "cells": cells})
    return {"modes": list(MODES), "live_mode": base.mode.value, "rows": rows}


# ---------------------------------------------------------------------------
# explaining (words only; the verdict comes from the engine)
# ---------------------------------------------------------------------------
_DEFAULT_TOOLS: dict[str, ToolBase] = {}


def _default_tool(tool_name: str) -> ToolBase | None:
    factory = {"Bash": Bash, "Read": Read, "Write": Write, "Edit": Edit, "Glob": Glob, "Grep": Grep}.get(tool_name)
    if factory is None:
        return None
    if tool_name not in _DEFAULT_TOOLS:
        _DEFAULT_TOOLS[tool_name] = factory()
    return _DEFAULT_TOOLS[tool_name]


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
        if _is_abs(path):
            text += (
                f" The pattern is relative and the path absolute: fnmatch compares from the first character, so a "
                f"relative `{content}` never matches the absolute `{path}`. Write the absolute pattern "
                f"(e.g. `{os.path.dirname(path)}/**`) or start it with `*/`."
            )
        else:
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
    ``Bash()/Read()/Write()/Edit()/Glob()/Grep()`` for those names). The
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
        tool = _default_tool(tool_name)
    if r.tool_name != tool_name:
        return (
            f"The rule is for {r.tool_name}, not {tool_name}: the engine looks rules up by the exact tool name "
            f"(context.allow_rules.get(tool.name)), so it does not apply to this call."
        )
    if matched is None and tool is not None:
        matched = _run_sync(PermissionEngine(PermissionContext())._rule_matches(tool, r, dict(input)))
    if not r.rule_content:
        what = "null" if r.rule_content is None else "an empty string"
        return (
            f"`{rule_label(r)}` has no rule_content ({what}): a whole-tool rule, which matches every call of "
            f"{tool_name} (PermissionEngine._rule_matches returns True when rule_content is empty)."
        )
    kind = _kind(tool, tool_name)
    if kind == "bash":
        return _explain_bash(r.rule_content, input, matched)
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
            f"{tool_name} does not override ToolBase.match_rule, which returns `rule_content is None`: only a "
            f"whole-tool rule (rule_content null) matches. `{rule_label(r)}` has content `{r.rule_content}`, "
            "so it never matches, whatever the input."
        )
    verdict = {True: "matches", False: "does not match", None: "may or may not match"}[matched]
    return f"{tool_name} has its own match_rule (in {type(tool).__module__}); by it, `{rule_label(r)}` {verdict} this call."


# ---------------------------------------------------------------------------
# import / export
# ---------------------------------------------------------------------------
def export_rules(target: Any) -> str:
    """All rules of the context as JSON text: a list of AgentScope
    ``PermissionRule`` objects (``{"tool_name", "rule_content",
    "behavior", "source"}``), one per line, deny then ask then allow.
    :func:`import_rules` reads it back."""
    rules = _all_rules(context_of(target))
    if not rules:
        return "[]\n"
    lines = [json.dumps(rule_to_dict(r), ensure_ascii=False) for r in rules]
    return "[\n  " + ",\n  ".join(lines) + "\n]\n"


_WS = re.compile(r"\s*")


def _element_spans(text: str) -> list[tuple[int, int]]:
    """Start and end offsets of each element of the top-level JSON array in
    ``text`` (already known to parse), found with ``json.JSONDecoder.raw_decode``."""
    decoder = json.JSONDecoder()
    pos = _WS.match(text, 0).end() + 1  # past "["
    spans: list[tuple[int, int]] = []
    while True:
        pos = _WS.match(text, pos).end()
        if text[pos] == "]":
            return spans
        _, end = decoder.raw_decode(text, pos)
        spans.append((pos, end))
        pos = _WS.match(text, end).end()
        if text[pos] == ",":
            pos += 1


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def import_rules(
    text: str,
    into: Any = None,
    *,
    replace: bool = False,
    known_tools: Iterable[str] | None = None,
) -> list[PermissionRule]:
    """Read a rules file (JSON list of ``PermissionRule`` objects, as written
    by :func:`export_rules`), all or nothing.

    Args:
        text: the file's text.
        into: an agent, engine or context to apply the rules to; ``None``
            only parses. Applied only if *every* rule is valid: a malformed
            file changes nothing. Rules already present (same tool, content,
            behavior) are not added twice.
        replace: remove every existing rule first (still all or nothing).
        known_tools: refuse rules for tools not in this list.

    Returns:
        list[PermissionRule]: the rules read (all of them, including those
        already present).

    Raises:
        RuleFileError: with ``line`` (1-based) and ``field``
            (``"rules[i].behavior"`` ...) for bad JSON, a top level that is
            not a list, a rule that :func:`parse_rule` refuses, or an
            unknown tool. The message starts with ``line N``.
    """
    if not isinstance(text, str):
        raise RuleFileError("A rules file must be text.", line=None, field=None)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RuleFileError(
            f"line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg}).", line=exc.lineno, field=None
        ) from None
    if not isinstance(data, list):
        raise RuleFileError(
            "line 1: a rules file is a JSON list of PermissionRule objects "
            '([{"tool_name": ..., "rule_content": ..., "behavior": ..., "source": ...}]).',
            line=1,
            field=None,
        )
    spans = _element_spans(text)
    known = list(known_tools) if known_tools is not None else None
    rules: list[PermissionRule] = []
    for i, item in enumerate(data):
        try:
            rule = parse_rule(item, field_prefix=f"rules[{i}].")
            _check_known_tool(rule, known, field=f"rules[{i}].tool_name")
        except DecisionError as exc:
            field = exc.field or f"rules[{i}]"
            start, end = spans[i]
            line = _line_at(text, start)
            key = field.rsplit(".", 1)[-1]
            if isinstance(item, dict) and key in item:  # the line of the field itself
                m = re.compile(r'"' + re.escape(key) + r'"\s*:').search(text, start, end)
                if m:
                    line = _line_at(text, m.start())
            raise RuleFileError(f"line {line}, rule {i + 1}, field {key!r}: {exc}", line=line, field=field) from None
        rules.append(rule)
    if into is not None:
        engine = engine_of(into)
        ctx = engine.context
        if replace:
            for attr in _BUCKETS.values():
                getattr(ctx, attr).clear()
        present = _all_rules(ctx)
        for rule in rules:
            if any(_same_effect(p, rule) for p in present):
                continue
            engine.add_rule(rule)
            present.append(rule)
    return rules


def explore(agent: Any, **kwargs: Any) -> Any:
    """Show a :class:`nb_hitl.widgets.permissions.PermissionExplorer` for
    ``agent`` (the widget module is imported here, lazily).

    Args:
        agent: an ``agentscope.agent.Agent``.
        **kwargs: the explorer's keyword options (``watch``).

    Returns:
        PermissionExplorer: the widget (display it as a cell's last value).
    """
    from .widgets.permissions import PermissionExplorer

    return PermissionExplorer(agent, **kwargs)
