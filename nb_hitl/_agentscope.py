"""The one place that knows AgentScope 2.0.11's internals.

Everything nb_hitl reads from an agent beyond its public API lives here, so
that an AgentScope upgrade is checked in one file:

* the live permission engine and context of an agent (``Agent._engine``,
  built once in ``Agent.__init__``; not ``agent.state.permission_context``);
* enum values (``ToolCallState``, ``PermissionBehavior``...) as plain strings;
* the text of messages and of blocks (``TextBlock``, ``DataBlock``, dicts);
* the tool calls a parked reply waits on (``AgentState.get_awaiting_tool_calls``);
* the keys nb_hitl writes into ``AgentState.middle_context``;
* how AgentScope reads a tool call's input (``_json_loads_with_repair``) and
  where an ``on_acting`` middleware sits in the chain;
* which tool call is running in the current task (:data:`RUNNING_CALL`);
* an MCP tool's annotations (``MCPTool._tool``: AgentScope keeps only
  ``read_only_hint``), :func:`mcp_tool_hints`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from agentscope.message import DataBlock, Msg, TextBlock, ToolCallBlock, ToolCallState
from agentscope.middleware import MiddlewareBase
from agentscope.permission import PermissionContext, PermissionDecision, PermissionEngine

__all__ = [
    "PermissionCheck",
    "chain_decision",
    "RUNNING_CALL",
    "MCP_HINTS",
    "mcp_tool_hints",
    "POLICY_CONTEXT_KEY",
    "POLICY_DETAIL_KEY",
    "APPROVALS_KEY",
    "REVIEW_CONTEXT_KEY",
    "SHELL_CONTEXT_KEY",
    "enum_value",
    "permission_engine",
    "permission_context",
    "permission_context_in_sync",
    "blocks_text",
    "msg_text",
    "awaiting_tool_calls",
    "is_parked",
    "rule_label",
    "APPROVAL_CONTEXT_KEY",
    "NOTES_CONTEXT_KEY",
    "agentscope_tool_input",
    "strip_system_reminders",
    "install_innermost_acting",
    "install_reasoning",
    "install_outermost_model_call",
    "find_tool_result",
    "context_cut_result",
]

RUNNING_CALL: ContextVar[tuple[Any, ToolCallBlock] | None] = ContextVar("nb_hitl_running_call", default=None)
"""``(agent, tool_call)`` while ``Toolkit.call_tool`` runs that call in this
task (and in the tasks it starts, which copy the context): set by the
Session's innermost ``on_acting`` middleware, read by code a tool calls back
into (an MCP server's elicitation, :mod:`nb_hitl.mcp`)."""

MCP_HINTS = {
    "readOnlyHint": "read_only_hint",
    "destructiveHint": "destructive_hint",
    "idempotentHint": "idempotent_hint",
    "openWorldHint": "open_world_hint",
}
"""MCP's tool annotation hints (``ToolAnnotations``), wire name -> SDK attribute."""


def mcp_tool_hints(tool: Any) -> dict[str, bool] | None:
    """The hints an MCP server declared for ``tool`` (AgentScope's ``MCPTool``),
    by MCP's names (``destructiveHint``...), only those it set; ``None`` for a
    tool that is not an MCP tool. Hints, not guarantees: trust them only from
    trusted servers."""
    if not getattr(tool, "is_mcp", False):
        return None
    annotations = getattr(getattr(tool, "_tool", None), "annotations", None)
    out: dict[str, bool] = {}
    for wire, attr in MCP_HINTS.items():
        value = getattr(annotations, attr, None)
        if isinstance(value, bool):
            out[wire] = value
    return out


POLICY_CONTEXT_KEY = "nb_hitl.policy"
"""Key in ``AgentState.middle_context``: ``{tool_call_id: policy name}``,
written by nb_hitl's permission policies so a pause can say which policy
forced its ask (and the mapping survives a checkpoint)."""

POLICY_DETAIL_KEY = "nb_hitl.policy_detail"
"""Key in ``AgentState.middle_context``: ``{tool_call_id: {"message",
"reason"}}``: what the policy said when it forced the ask."""

APPROVALS_KEY = "nb_hitl.approvals"
"""Key in ``AgentState.middle_context``: ``{tool_call_id: {"approvals",
"edited_input"}}``: the approvals so far of a call that needs several
(saved with checkpoints, so a restart keeps them)."""

SHELL_CONTEXT_KEY = "nb_hitl.shell"
"""Key in ``AgentState.middle_context``: ``{tool_call_id: {"commands",
"problems", "message", "reason", "bypass_immune", "changed"}}``: what the
shell rules (:mod:`nb_hitl.shell_policy`) found in a call that asks."""

REVIEW_CONTEXT_KEY = "nb_hitl.review"
"""Key in ``AgentState.middle_context``: ``{tool_call_id: {"status":
"running" | "done", "tool": name, "started_at": float, "result":
ToolResultBlock JSON | None}}``."""


def enum_value(value: Any) -> Any:
    """``value.value`` for an enum member (``ToolCallState.ASKING`` -> ``"asking"``), else ``value``.

    AgentScope's pydantic models keep enums as members or, after a JSON
    round trip, as plain strings; comparing ``enum_value(x) == "asking"``
    works for both.
    """
    return getattr(value, "value", value)


def permission_engine(target: Any) -> PermissionEngine:
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


def permission_context(target: Any) -> PermissionContext:
    """The ``PermissionContext`` the next permission check of ``target`` reads.

    For an agent this is ``agent._engine.context`` and not
    ``agent.state.permission_context``: ``Agent.__init__`` builds the engine
    from the state's context once, and a state replaced afterwards is not
    consulted (``Agent._check_permission_impl`` calls
    ``self._engine.check_permission``).

    Raises:
        TypeError: see :func:`permission_engine`.
    """
    return permission_engine(target).context


def permission_context_in_sync(target: Any) -> bool | None:
    """Whether ``target.state.permission_context`` is the engine's context.

    Returns:
        ``None`` when ``target`` is not an agent with both; ``False`` when
        the state was replaced after construction (its rules are then not
        the ones the engine applies).
    """
    state = getattr(target, "state", None)
    engine = getattr(target, "_engine", None)
    if state is None or not isinstance(engine, PermissionEngine):
        return None
    return getattr(state, "permission_context", None) is engine.context


def blocks_text(content: Any, *, data_label: bool = True) -> str:
    """The text of a message's or a tool result's content.

    Args:
        content: a string, or a list of ``TextBlock`` / ``DataBlock`` / other
            blocks (their JSON dicts accepted too), as in ``Msg.content`` and
            ``ToolResultBlock.output``.
        data_label: show a data block as ``[data: <media type> <name>]``
            (otherwise data blocks are skipped).

    Returns:
        the text blocks joined with no separator.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, dict):
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind == "data" and data_label:
                source = block.get("source") or {}
                parts.append(_data_label(source.get("media_type", "?"), block.get("name")))
        elif isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, DataBlock):
            if data_label:
                parts.append(_data_label(getattr(block.source, "media_type", "?"), block.name))
        else:
            text = getattr(block, "text", None)
            if isinstance(text, str) and getattr(block, "type", None) == "text":
                parts.append(text)
    return "".join(parts)


def _data_label(media_type: Any, name: Any) -> str:
    return f"[data: {media_type} {name or ''}]".replace(" ]", "]")


def msg_text(msg: Msg | None) -> str:
    """The text of a ``Msg`` (``Msg.get_text_content``), ``""`` for ``None``."""
    if msg is None:
        return ""
    try:
        return msg.get_text_content() or ""
    except (AttributeError, TypeError, ValueError):
        return blocks_text(getattr(msg, "content", None))


def awaiting_tool_calls(agent: Any) -> list[ToolCallBlock]:
    """The live tool calls a parked reply of ``agent`` waits on.

    Read from the agent's state (``AgentState.get_awaiting_tool_calls``):
    after a partial answer AgentScope re-sends no event for the calls left
    open, so the state, not memory of events, is the truth. The blocks are
    the agent's own: copy before changing them.
    """
    return list(agent.state.get_awaiting_tool_calls(agent.name))


def is_parked(agent: Any) -> bool:
    """Whether ``agent`` has a reply parked on calls (``AgentState.has_awaiting_tool_calls``)."""
    return bool(agent.state.has_awaiting_tool_calls(agent.name))


def rule_label(rule: Any) -> str:
    """``behavior tool(rule_content)``, the way AgentScope's TUI lists a ``PermissionRule``.

    Example: ``allow Bash(git push:*)``; a whole-tool rule (no ``rule_content``)
    has no brackets: ``allow delete_file`` (``delete_file(*)`` would read as a
    rule whose content is ``*``, which is another rule).
    """
    if rule.rule_content is None:
        return f"{enum_value(rule.behavior)} {rule.tool_name}"
    return f"{enum_value(rule.behavior)} {rule.tool_name}({rule.rule_content})"


# -- what runs: AgentScope's own reading of a tool call's input -------------
APPROVAL_CONTEXT_KEY = "nb_hitl.approved"
"""Key in ``AgentState.middle_context``: ``{tool_call_id: {"input": canonical
JSON of the approved input, "tool": name}}``, written when a confirmation is
delivered and read (then removed) by the approval guard right before the
tool runs."""

NOTES_CONTEXT_KEY = "nb_hitl.notes"
"""Key in ``AgentState.middle_context``: ``{tool_call_id: {"text": note,
"replace": bool}}``: what the model must read about a call once AgentScope
saved its result: instead of the result's text (``replace``: a deadline or a
cancelled pause is not "denied by user") or as a ``HintBlock`` before the
next model call (a person edited the call, a denial's reason)."""


def agentscope_tool_input(raw: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    """The input AgentScope 2.0.11 passes to a tool for the model's argument text ``raw``.

    Both ``Agent._execute_tool_call`` (before the permission check) and
    ``Toolkit.call_tool`` (right before the tool runs) read
    ``ToolCallBlock.input`` with
    ``agentscope._utils._common._json_loads_with_repair(input, tool.input_schema)``:
    ``json.loads``, then ``json_repair.repair_json(..., stream_stable=True,
    schema=schema, return_objects=True)``, which repairs truncated or
    malformed JSON, keeps the *last* of several top-level objects and
    coerces values to the schema's types (``"5"`` -> ``5``).

    Args:
        raw: the call's ``input`` text.
        schema: the tool's ``input_schema`` (or ``None``).

    Returns:
        the dict the tool would receive.

    Raises:
        ValueError: AgentScope cannot read it (the first paragraph of its
            ``ToolJSONDecodeError`` message, without ``Error:`` or the
            ``<system-reminder>`` wrapper: what is wrong, not the advice to
            the model on how to retry).
    """
    from agentscope._utils._common import _json_loads_with_repair
    from agentscope.exception import AgentOrientedException

    try:
        value = _json_loads_with_repair(raw, schema)
    except (AgentOrientedException, ValueError, TypeError, RecursionError) as exc:  # ToolJSONDecodeError
        text = strip_system_reminders(str(getattr(exc, "message", None) or exc))
        # its first paragraph says what is wrong; the rest tells the model how to retry
        said = text.split("\n\n", 1)[0].strip().removeprefix("Error:").strip()
        raise ValueError(said or text) from None
    if not isinstance(value, dict):  # pragma: no cover - AgentScope guarantees a dict
        raise ValueError(f"AgentScope read the input as {type(value).__name__}, not an object")
    return value


def strip_system_reminders(text: str) -> str:
    """``text`` without AgentScope's ``<system-reminder>`` / ``</system-reminder>`` tags (their content kept)."""
    return text.replace("<system-reminder>", "").replace("</system-reminder>", "").strip()


def install_innermost_acting(agent: Any, middleware: Any) -> None:
    """Make ``middleware`` the innermost ``on_acting`` middleware of ``agent``.

    AgentScope 2.0.11 filters an agent's middlewares by hook once, in
    ``Agent.__init__`` (``self._acting_middlewares``), and ``Agent._acting``
    chains them in list order: the last one wraps ``_acting_impl``
    (``Toolkit.call_tool``) directly, after every other middleware could
    rewrite ``tool_call``. Idempotent: a middleware of the same class is
    replaced, so it stays last.

    Raises:
        TypeError: ``agent`` has no ``_acting_middlewares`` list (not an AgentScope 2.0.x ``Agent``).
    """
    chain = getattr(agent, "_acting_middlewares", None)
    if not isinstance(chain, list):
        raise TypeError(f"expected an agentscope Agent with on_acting middlewares, got {type(agent).__name__}")
    chain[:] = [mw for mw in chain if type(mw) is not type(middleware)]
    chain.append(middleware)


def install_reasoning(agent: Any, middleware: Any) -> None:
    """Add ``middleware`` to ``agent``'s ``on_reasoning`` chain (``Agent._reasoning_middlewares``,
    filtered once in ``Agent.__init__``); idempotent, as :func:`install_innermost_acting`."""
    chain = getattr(agent, "_reasoning_middlewares", None)
    if not isinstance(chain, list):
        raise TypeError(f"expected an agentscope Agent with on_reasoning middlewares, got {type(agent).__name__}")
    chain[:] = [mw for mw in chain if type(mw) is not type(middleware)]
    chain.append(middleware)


def install_outermost_model_call(agent: Any, middleware: Any) -> None:
    """Make ``middleware`` the outermost ``on_model_call`` middleware of ``agent``
    (``Agent._model_call_middlewares``, filtered once in ``Agent.__init__``; the
    first one wraps the others, so it sees the answer as the agent will read it);
    idempotent, as :func:`install_innermost_acting`."""
    chain = getattr(agent, "_model_call_middlewares", None)
    if not isinstance(chain, list):
        raise TypeError(f"expected an agentscope Agent with on_model_call middlewares, got {type(agent).__name__}")
    chain[:] = [middleware, *(mw for mw in chain if type(mw) is not type(middleware))]


def find_tool_result(agent: Any, tool_call_id: str) -> Any:
    """The ``ToolResultBlock`` of call ``tool_call_id`` in the agent's history (newest first), or ``None``."""
    for msg in reversed(agent.state.context):
        if isinstance(msg.content, str):
            continue
        for block in msg.content:
            if getattr(block, "type", None) == "tool_result" and block.id == tool_call_id:
                return block
    return None


#: what AgentScope 2.0.11 writes after the part of a tool result it keeps
CONTEXT_CUT_MARK = "<<<TRUNCATED>>>"


def context_cut_result(agent: Any, tool_call_id: str) -> str | None:
    """The result of ``tool_call_id`` as the model reads it, when AgentScope
    cut it to fit the model's context; ``None`` when it was kept whole.

    AgentScope 2.0.11 (``Agent._split_tool_result_for_compression``) keeps a
    result longer than ``context_config.tool_result_limit`` tokens only in
    part, followed by ``"<<<TRUNCATED>>>"`` and a ``<system-reminder>`` saying
    the rest was omitted (and where it was offloaded, if an offloader is
    set). It saves that before ``ToolResultEndEvent``; the transcript then
    shows what the model reads, not the tool's whole output.

    Returns:
        the saved result's text, ``<system-reminder>`` tags removed; ``None``
        if the result is not saved or not cut.
    """
    block = find_tool_result(agent, tool_call_id)
    if block is None:
        return None
    text = blocks_text(block.output)
    return strip_system_reminders(text) if CONTEXT_CUT_MARK in text else None


@dataclass(frozen=True)
class PermissionCheck:
    """One call an ``on_check_permission`` middleware may judge further
    (see :func:`chain_decision`): AgentScope's ``tool_call`` block, the
    ``tool`` object and its parsed ``tool_input``."""

    tool_call: ToolCallBlock
    tool: Any
    tool_input: dict[str, Any]


async def chain_decision(
    input_kwargs: dict[str, Any], next_handler: Callable[..., Any]
) -> tuple[PermissionDecision, PermissionCheck | None]:
    """The start of every nb_hitl ``on_check_permission`` middleware.

    Runs the rest of AgentScope's permission chain (``next_handler``) and
    returns its decision with the call to judge further, or ``None`` when
    there is nothing to judge: no ``tool_call`` / ``tool`` in the hook's
    arguments, or a call the person already approved (its state is
    ``allowed``: AgentScope's ``_check_permission_impl`` answers ALLOW for
    it before it runs; asking again would loop forever, and the answer was
    recorded when it was given).
    """
    decision: PermissionDecision = await next_handler(**input_kwargs)
    tool_call = input_kwargs.get("tool_call")
    tool = input_kwargs.get("tool")
    if tool_call is None or tool is None:
        return decision, None
    if enum_value(tool_call.state) == ToolCallState.ALLOWED.value:
        return decision, None
    return decision, PermissionCheck(tool_call, tool, input_kwargs.get("tool_input") or {})


class PermissionStep(MiddlewareBase, ABC):
    """An nb_hitl ``on_check_permission`` middleware: AgentScope's chain
    runs first (:func:`chain_decision`), then :meth:`judge` sees each call
    there is something to judge about and returns the decision the agent
    consumes. Subclasses: the audit's record of each check, the shell
    rules, the policies."""

    async def on_check_permission(
        self,
        agent: Any,
        input_kwargs: dict,
        next_handler: Callable[..., Any],
    ) -> PermissionDecision:
        """AgentScope's hook (``MiddlewareBase.on_check_permission``)."""
        decision, check = await chain_decision(input_kwargs, next_handler)
        if check is None:
            return decision
        return await self.judge(agent, check, decision)

    @abstractmethod
    async def judge(self, agent: Any, check: PermissionCheck, decision: PermissionDecision) -> PermissionDecision:
        """The decision for ``check``, given the chain's ``decision``."""


def permission_chain(agent: Any, hint: str = "") -> list[Any]:
    """``agent``'s ``on_check_permission`` middlewares, the list itself.

    AgentScope 2.0.11 filters middlewares by hook once, in ``Agent.__init__``,
    into ``Agent._check_permission_middlewares`` and reads that list on every
    check (the first wraps the rest; the last wraps the engine), so an
    edit of the list takes effect at the next check.

    Raises:
        TypeError: ``agent`` is not an AgentScope 2.0.x ``Agent`` (``hint``,
            when given, is added to the message).
    """
    chain = getattr(agent, "_check_permission_middlewares", None)
    if not isinstance(chain, list):
        message = f"expected an agentscope 2.0.x Agent with permission middlewares, got {type(agent).__name__}"
        raise TypeError(f"{message}; {hint}" if hint else message)
    return chain


def context_map(agent: Any, key: str) -> dict[str, Any]:
    """The dict kept at ``agent.state.middle_context[key]`` (AgentScope's
    per-agent state that checkpoints carry), made when absent or not a dict."""
    found = agent.state.middle_context.get(key)
    if not isinstance(found, dict):
        found = agent.state.middle_context[key] = {}
    return found
