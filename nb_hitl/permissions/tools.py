"""The tools a person can try in the permission explorer.

Finds an agent's tools (``Toolkit.tool_groups`` / ``Toolkit.get_tool``),
describes them as data for the page, classifies how each one matches
rules (``match_rule`` of Bash, Read/Write/Edit, Glob, Grep, or
``ToolBase.match_rule`` for function and MCP tools), and validates a typed
tool input against the tool's ``input_schema`` as the agent does before
its permission check.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
from agentscope.tool import Bash, Edit, Glob, Grep, Read, ToolBase, Toolkit, Write

from ..decisions import parse_json_object
from ..errors import DecisionError
from ..guard import SchemaRefused, check_schema, field_words, validation_errors

__all__ = ["list_tools", "get_tool", "tools_of", "parse_input", "tool_kind", "default_tool", "nesting_exceeds"]

_PATH_TOOLS = (Read, Write, Edit)

MAX_INPUT_DEPTH = 64
"""Deepest nesting of lists / objects accepted in a typed tool input."""


def nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether lists / dicts in ``value`` nest deeper than ``limit`` levels
    (walked without recursion, so any depth is safe to measure)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def tools_of(toolkit: Any) -> dict[str, ToolBase]:
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
    for name, tool in tools_of(toolkit).items():
        out.append(
            {
                "name": name,
                "input_schema": json.loads(json.dumps(tool.input_schema, default=str)),
                "read_only": bool(getattr(tool, "is_read_only", False)),
                "kind": tool_kind(tool),
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
        tool = tools_of(toolkit).get(tool_name)
    if tool is None:
        names = ", ".join(tools_of(toolkit)) or "none"
        raise DecisionError(f"No tool named {tool_name!r} (tools: {names}).", field="tool_name")
    return tool


def tool_kind(tool: ToolBase | None, tool_name: str = "") -> str:
    """How ``tool`` matches rules: ``"bash"`` (``Bash.match_rule``),
    ``"path"`` (Read / Write / Edit, ``fnmatch`` on ``file_path``), ``"glob"``,
    ``"grep"``, ``"function"`` (``ToolBase.match_rule``: whole-tool rules
    only; function and MCP tools) or ``"custom"`` (its own ``match_rule``).
    With ``tool=None``, guessed from a builtin ``tool_name``, else
    ``"function"``."""
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
            line and column), a non-object, nesting deeper than
            :data:`MAX_INPUT_DEPTH` (which would otherwise end in a
            ``RecursionError`` in the JSON reader or in ``jsonschema``), or a
            schema violation (with the JSON path); checked through
            :mod:`nb_hitl.guard` (the tool's schema may be a peer's, e.g. an
            MCP server's: nothing fetched, patterns in RE2), with
            ``field=None`` when that schema cannot be used safely.
    """
    too_deep = DecisionError(
        f"The input is nested more than {MAX_INPUT_DEPTH} levels deep ([ or {{ inside each other); "
        "no tool input needs that, and it cannot be checked safely.",
        field=field,
    )
    try:
        raw: Any = parse_json_object(tool_input, field=field) if isinstance(tool_input, str) else tool_input
    except RecursionError:
        raise too_deep from None
    if not isinstance(raw, Mapping):
        raise DecisionError(f"The input of {tool.name} must be a JSON object.", field=field)
    if nesting_exceeds(raw, MAX_INPUT_DEPTH):
        raise too_deep
    value = dict(raw)
    try:
        check_schema(tool.input_schema)
    except SchemaRefused as exc:
        raise DecisionError(f"{tool.name}'s input schema cannot be used to check the input: {exc}.") from None
    error = jsonschema.exceptions.best_match(
        iter(validation_errors(tool.input_schema, value, field=field, formats=False))
    )
    if error is not None:
        place = field_words(error.json_path)
        where = f" in {place}" if place else ""
        raise DecisionError(
            f"The input does not match {tool.name}'s input schema{where}: {error.message.rstrip('.')}.", field=field
        )
    return value


_DEFAULT_TOOLS: dict[str, ToolBase] = {}


def default_tool(tool_name: str) -> ToolBase | None:
    """A shared default instance of AgentScope's builtin tool called
    ``tool_name`` (Bash, Read, Write, Edit, Glob, Grep), or ``None``."""
    factory = {"Bash": Bash, "Read": Read, "Write": Write, "Edit": Edit, "Glob": Glob, "Grep": Grep}.get(tool_name)
    if factory is None:
        return None
    if tool_name not in _DEFAULT_TOOLS:
        _DEFAULT_TOOLS[tool_name] = factory()
    return _DEFAULT_TOOLS[tool_name]
