"""Permission rules as data, on the context the agent really uses.

AgentScope's ``PermissionRule`` is the type: :func:`parse_rule` turns a
JSON-like dict into one (or refuses it with the field at fault), and the
functions here add, remove and edit rules, set the mode and the working
directories of the live ``PermissionContext`` of an agent: its engine's
(``agent._engine.context``, see ``nb_hitl._agentscope.permission_context``),
not ``agent.state.permission_context``, which the agent no longer consults
once replaced. Adding goes through ``PermissionEngine.add_rule``, the call
"Always allow" makes. :func:`describe_context` is the JSON view the
explorer page shows.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import pydantic
from agentscope.permission import PermissionBehavior, PermissionContext, PermissionMode, PermissionRule

from .._agentscope import permission_context, permission_context_in_sync, permission_engine, rule_label
from ..errors import DecisionError
from .names import check_rule_text, check_tool_name, is_plain_name

__all__ = [
    "MODES",
    "RULE_BEHAVIORS",
    "rule_label",
    "rule_to_dict",
    "parse_rule",
    "add_rule",
    "remove_rule",
    "edit_rule",
    "set_mode",
    "add_working_directory",
    "remove_working_directory",
    "describe_context",
    "context_fingerprint",
]

MODES: list[str] = [m.value for m in PermissionMode]
"""The five ``PermissionMode`` values, in AgentScope's order:
``default, accept_edits, explore, bypass, dont_ask``."""

RULE_BEHAVIORS: list[str] = ["allow", "deny", "ask"]
"""The behaviors ``PermissionEngine.add_rule`` keeps. It has no branch for
``passthrough``: such a rule would be dropped without a word."""

_RULE_FIELDS = ("tool_name", "rule_content", "behavior", "source")
_BUCKETS = {"allow": "allow_rules", "deny": "deny_rules", "ask": "ask_rules"}
_FIELD_SET = frozenset(_RULE_FIELDS)
_BEHAVIORS = {b: PermissionBehavior(b) for b in RULE_BEHAVIORS}


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


def parse_rule(
    data: Any,
    *,
    default_source: str | None = None,
    field_prefix: str = "",
    known_tools: Iterable[str] | None = None,
) -> PermissionRule:
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
        known_tools: tool names accepted as they are even when they are
            not plain ASCII (see :func:`nb_hitl.permissions.names.check_tool_name`).

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
            drops ``passthrough``); an empty ``source``; a ``tool_name``
            with look-alike, invisible or bidi characters, or a
            ``rule_content`` with invisible or control characters (the code
            point is named, see :mod:`nb_hitl.permissions.names`).
    """
    return _parse_rule(data, default_source, field_prefix, known_tools, check_text=True)


def _parse_rule(
    data: Any,
    default_source: str | None,
    field_prefix: str,
    known_tools: Iterable[str] | None,
    *,
    check_text: bool,
) -> PermissionRule:
    p = field_prefix
    if not isinstance(data, (dict, Mapping)):
        raise DecisionError(
            f"A rule must be a JSON object with {', '.join(_RULE_FIELDS)}; got {type(data).__name__}.",
            field=p.rstrip(".") or None,
        )
    if not _FIELD_SET.issuperset(data):
        unknown = [k for k in data if k not in _RULE_FIELDS]
        raise DecisionError(
            f"Unknown field {unknown[0]!r} in a rule: a PermissionRule has {', '.join(_RULE_FIELDS)}.",
            field=f"{p}{unknown[0]}",
        )
    tool_name: Any = data.get("tool_name")
    plain_name = is_plain_name(tool_name)
    if not plain_name and (not isinstance(tool_name, str) or not tool_name.strip()):
        raise DecisionError(
            "tool_name must be a non-empty string (the tool's name, e.g. 'Bash').", field=f"{p}tool_name"
        )
    if not plain_name:
        if check_text and not tool_name.isascii():  # name the code point of a no-break space and the like
            check_tool_name(tool_name, known_tools, field=f"{p}tool_name")
        if tool_name != tool_name.strip():
            raise DecisionError(
                f"tool_name {tool_name!r} has surrounding spaces: the engine looks rules up by the exact tool name.",
                field=f"{p}tool_name",
            )
        if check_text:
            check_tool_name(tool_name, known_tools, field=f"{p}tool_name")
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
    if check_text and content is not None and not (content.isascii() and content.isprintable()):
        check_rule_text(content, field=f"{p}rule_content")
    behavior = data.get("behavior")
    if behavior not in _BEHAVIORS:
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
        return PermissionRule(tool_name=tool_name, rule_content=content, behavior=_BEHAVIORS[behavior], source=source)
    except pydantic.ValidationError as exc:  # pragma: no cover - the checks above cover PermissionRule's fields
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err.get("loc", ()))
        raise DecisionError(f"{loc}: {err.get('msg')}", field=f"{p}{loc}" if loc else None) from exc


def _as_rule(
    rule: PermissionRule | Mapping[str, Any],
    default_source: str | None = None,
    *,
    known_tools: Iterable[str] | None = None,
    check_text: bool = True,
) -> PermissionRule:
    """``rule`` as a ``PermissionRule``; with ``check_text`` (for a rule about
    to be added) a ``PermissionRule`` object is checked like a dict. Rules to
    find, remove or explain are not: one already in the context must stay
    removable."""
    if isinstance(rule, PermissionRule):
        if check_text:
            check_tool_name(rule.tool_name, known_tools)
            if rule.rule_content:
                check_rule_text(rule.rule_content)
        return rule
    if check_text:
        return parse_rule(rule, default_source=default_source, known_tools=known_tools)
    return _parse_rule(rule, default_source, "", None, check_text=False)


def _all_rules(ctx: PermissionContext) -> list[PermissionRule]:
    out: list[PermissionRule] = []
    for attr in ("deny_rules", "ask_rules", "allow_rules"):
        for rules in getattr(ctx, attr).values():
            out.extend(rules)
    return out


def _check_known_tool(rule: PermissionRule, known_tools: Iterable[str] | None, field: str = "tool_name") -> None:
    if known_tools is None:
        return
    known = known_tools if isinstance(known_tools, (dict, set, frozenset, list, tuple)) else list(known_tools)
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
    agent's own engine (see :func:`nb_hitl._agentscope.permission_context`).

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
    new = _as_rule(rule, default_source, known_tools=known_tools)
    _check_known_tool(new, known_tools)
    engine = permission_engine(target)
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
    wanted = _as_rule(rule, default_source="nb_hitl", check_text=False)
    ctx = permission_context(target)
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
    old_rule = _as_rule(old, default_source="nb_hitl", check_text=False)
    new_rule = _as_rule(new, default_source=old_rule.source, known_tools=known_tools)
    _check_known_tool(new_rule, known_tools)
    engine = permission_engine(target)
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
    permission_context(target).mode = value
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
    permission_context(target).working_directories[path] = AdditionalWorkingDirectory(path=path, source=source)


def remove_working_directory(target: Any, path: str) -> None:
    """Remove a working directory entry.

    Raises:
        DecisionError: ``field="path"`` if it is not a string or not there.
    """
    if not isinstance(path, str):
        raise DecisionError("A working directory is named by its path (text).", field="path")
    ctx = permission_context(target)
    if path not in ctx.working_directories:
        raise DecisionError(f"{path!r} is not a working directory of this context.", field="path")
    del ctx.working_directories[path]


def describe_context(target: Any) -> dict[str, Any]:
    """A JSON-able view of the permission context.

    Args:
        target: agent, engine or context (for an agent, the engine's
            context, see :func:`nb_hitl._agentscope.permission_context`).

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
    ctx = permission_context(target)
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
        "state_in_sync": permission_context_in_sync(target),
        "permission_middlewares": len(mws) if isinstance(mws, list) else 0,
    }


def context_fingerprint(target: Any) -> tuple[Any, ...]:
    """A cheap value that changes whenever :func:`describe_context` would:
    mode, cwd, every rule (tool, content, behavior, source, in engine
    order), working directories, ``state_in_sync`` and the middleware
    count. Used to poll an agent's context several times a second without
    building (and serialising) the full view of thousands of rules."""
    ctx = permission_context(target)
    rules = tuple(
        (name, r.tool_name, r.rule_content, r.behavior, r.source)
        for attr in ("deny_rules", "ask_rules", "allow_rules")
        for name, tool_rules in getattr(ctx, attr).items()
        for r in tool_rules
    )
    mws = getattr(target, "_check_permission_middlewares", None)
    return (
        ctx.mode.value,
        os.getcwd(),
        rules,
        tuple((w.path, w.source) for w in ctx.working_directories.values()),
        permission_context_in_sync(target),
        len(mws) if isinstance(mws, list) else 0,
    )
