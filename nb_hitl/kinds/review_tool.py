"""Review a tool's result before the model sees it: :func:`reviewed`.

AgentScope 2.0.11 has no hook that parks a reply *after* a tool ran, so a
:class:`ReviewedTool` is the wrapped tool to the model and the permission
engine, and an *external* tool to AgentScope: the reply parks once the call
is allowed, and :meth:`ReviewedTool.prepare_pause` runs the wrapped tool
once (``Toolkit.call_tool``), stores its raw result in the agent's state
(``middle_context["nb_hitl.review"]``), checkpoints, and makes the pause a
``review`` (:mod:`nb_hitl.kinds.review`). Exactly once, also across a
restart. Design notes and limits: ``docs/design.md``, "Pause kinds".
"""

from __future__ import annotations

import asyncio
import inspect
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentscope.message import TextBlock, ToolCallBlock, ToolResultBlock, ToolResultState
from agentscope.permission import PermissionContext, PermissionDecision, PermissionRule
from agentscope.tool import FunctionTool, ToolBase, Toolkit, ToolResponse

from .._agentscope import REVIEW_CONTEXT_KEY, awaiting_tool_calls, blocks_text, enum_value
from ._base import PauseHost

if TYPE_CHECKING:
    from ..pauses import Pause

__all__ = ["ReviewedTool", "reviewed", "REVIEW_CONTEXT_KEY"]

_UNKNOWN_OUTCOME = (
    "The kernel stopped while {name} was running, before its result was saved. "
    "It may or may not have taken effect, and it is not run again. "
    "Reject to tell the agent the result is unavailable."
)


async def _maybe_await(value: Any) -> Any:
    """Third-party tools may still define ``match_rule`` / ``generate_suggestions``
    with a sync ``def`` (AgentScope's engine accepts both)."""
    return await value if inspect.isawaitable(value) else value


_PRUNING: weakref.WeakSet[Any] = weakref.WeakSet()


def _prune(host: PauseHost, keep: str | None = None) -> bool:
    """Drop stored raw results of calls that no longer wait (the reviewed
    result reached the agent, or the reply was interrupted). Returns True
    when something was removed."""
    agent = host.agent
    store = agent.state.middle_context.get(REVIEW_CONTEXT_KEY)
    if not isinstance(store, dict) or not store:
        return False
    awaiting = {tc.id for tc in awaiting_tool_calls(agent)}
    stale = [k for k in store if k not in awaiting and k != keep]
    for k in stale:
        del store[k]
    return bool(stale)


def _ensure_pruning(host: PauseHost) -> None:
    if host in _PRUNING:
        return
    _PRUNING.add(host)
    ref = weakref.ref(host)

    def on_change(kind: str, run: Any) -> None:
        s = ref()
        if s is None or kind != "end":
            return
        if _prune(s):
            s.checkpoint()

    host.on_change(on_change)


class ReviewedTool(ToolBase):
    """A tool whose result a person reviews before the model reads it.

    Build it with :func:`reviewed`. To the model and the permission engine
    it is the wrapped tool; to AgentScope it is an external tool, so the
    reply parks after the call is allowed and nb_hitl runs the wrapped tool
    itself (see ``docs/design.md``, "Pause kinds").

    Args:
        inner: the tool to run (any ``ToolBase``, not itself external).

    Attributes:
        inner: the wrapped tool.
        runs: how many times this instance ran the wrapped tool (in this
            process).

    Raises:
        TypeError: ``inner`` is not a ``ToolBase`` or is already external.
    """

    is_external_tool = True
    metadata_schema = None

    def __init__(self, inner: ToolBase) -> None:
        if not isinstance(inner, ToolBase):
            raise TypeError(f"reviewed() needs an agentscope ToolBase, got {type(inner).__name__}")
        if inner.is_external_tool:
            raise TypeError(f"{inner.name} is already an external tool; there is nothing for nb_hitl to run.")
        super().__init__()
        self.inner = inner
        self.name = inner.name
        self.description = inner.description
        self.input_schema = inner.input_schema
        self.is_concurrency_safe = inner.is_concurrency_safe
        self.is_read_only = inner.is_read_only
        self.is_mcp = inner.is_mcp
        self.mcp_name = inner.mcp_name
        self.dangerous_files = inner.dangerous_files
        self.dangerous_directories = inner.dangerous_directories
        self.runs = 0
        self._toolkit = Toolkit(tools=[inner])
        self._running: dict[str, asyncio.Future[dict[str, Any]]] = {}

    # -- permission behaviour: exactly the wrapped tool's ------------------
    async def check_permissions(self, tool_input: dict[str, Any], context: PermissionContext) -> PermissionDecision:
        """The wrapped tool's own ``check_permissions``."""
        return await self.inner.check_permissions(tool_input, context)

    async def check_read_only(self, tool_input: dict[str, Any]) -> bool:
        """The wrapped tool's own ``check_read_only``."""
        return await self.inner.check_read_only(tool_input)

    async def match_rule(self, rule_content: str | None, tool_input: dict[str, Any]) -> bool:
        """The wrapped tool's own ``match_rule`` (rules for it match the same calls)."""
        return bool(await _maybe_await(self.inner.match_rule(rule_content, tool_input)))

    async def generate_suggestions(self, tool_input: dict[str, Any]) -> list[PermissionRule]:
        """The wrapped tool's own suggestions."""
        return list(await _maybe_await(self.inner.generate_suggestions(tool_input)))

    # -- the review ----------------------------------------------------------
    async def _run_inner(self, tool_call: ToolCallBlock, agent: Any) -> ToolResultBlock:
        """Run the wrapped tool once with AgentScope's ``Toolkit.call_tool``."""
        self.runs += 1
        call = tool_call.model_copy(deep=True)
        response: ToolResponse | None = None
        try:
            async for chunk in self._toolkit.call_tool(call, agent.state):
                if isinstance(chunk, ToolResponse):
                    response = chunk
        except Exception as exc:  # noqa: BLE001 - DeveloperOrientedException and the like
            return ToolResultBlock(
                id=tool_call.id,
                name=tool_call.name,
                output=[TextBlock(text=f"{type(exc).__name__}: {exc}")],
                state=ToolResultState.ERROR,
            )
        if response is None:
            return ToolResultBlock(
                id=tool_call.id, name=tool_call.name, output="The tool returned nothing.", state=ToolResultState.ERROR
            )
        return ToolResultBlock(
            id=tool_call.id,
            name=tool_call.name,
            output=list(response.content),
            state=response.state,
            metadata=dict(response.metadata or {}),
        )

    @staticmethod
    def _dump(result: ToolResultBlock) -> dict[str, Any]:
        try:
            return result.model_dump(mode="json")
        except Exception:  # noqa: BLE001 - metadata that JSON cannot hold
            result.metadata = {}
            return result.model_dump(mode="json")

    async def _result_for(self, pause: Pause, host: PauseHost) -> dict[str, Any] | None:
        """The stored raw result of this call, running the tool if it never ran."""
        agent = host.agent
        context = agent.state.middle_context
        store = context.get(REVIEW_CONTEXT_KEY)
        if not isinstance(store, dict):
            store = context[REVIEW_CONTEXT_KEY] = {}
        call_id = pause.tool_call_id
        entry = store.get(call_id)
        if isinstance(entry, dict) and entry.get("status") == "done":
            return entry.get("result")
        if isinstance(entry, dict) and entry.get("status") == "running":
            fut = self._running.get(call_id)
            if fut is None:
                return None  # started by a process that stopped: outcome unknown
            return await asyncio.shield(fut)
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._running[call_id] = fut
        store[call_id] = {"status": "running", "tool": self.name, "started_at": time.time(), "result": None}
        host.checkpoint()  # a crash from here on must not lead to a second run
        try:
            result = await self._run_inner(pause.tool_call, agent)
            dumped = self._dump(result)
            store[call_id] = {**store[call_id], "status": "done", "result": dumped}
            host.checkpoint()
            fut.set_result(dumped)
        except BaseException as exc:
            # the entry stays "running": the outcome is unknown, never re-run
            if not fut.done():
                if isinstance(exc, asyncio.CancelledError):
                    fut.cancel()
                else:
                    fut.set_exception(exc)
                    fut.exception()  # mark retrieved
            raise
        finally:
            self._running.pop(call_id, None)
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            # Toolkit.call_tool turns a cancellation into an INTERRUPTED
            # result and swallows it; the reply was being interrupted.
            raise asyncio.CancelledError()
        return dumped

    async def prepare_pause(self, pause: Pause, host: PauseHost) -> None:
        """Turn the parked call's pause into a review (called by the Session).

        Runs the wrapped tool if this call never ran (see ``docs/design.md``,
        "Pause kinds"), then sets ``pause.kind = "review"``,
        ``review_output`` (the result as text), ``review_state``,
        ``review_result`` (the raw ``ToolResultBlock`` JSON) or
        ``review_error`` when the outcome is unknown after a restart.

        Args:
            pause: the :class:`~nb_hitl.pauses.Pause` being built.
            host: the driver (nb_hitl's ``Session``): its agent's state holds
                the stored result; ``host.checkpoint()`` is written before and
                after the tool runs.
        """
        _ensure_pruning(host)
        _prune(host, keep=pause.tool_call_id)
        result = await self._result_for(pause, host)
        # the person sees the pause from now on: a deadline counts from here,
        # not from before the tool ran
        pause.created_at = time.time()
        pause.kind = "review"
        pause.title = f"Review the result of {self.name}"
        if result is None:
            pause.review_error = _UNKNOWN_OUTCOME.format(name=self.name)
            pause.review_result = None
            pause.review_output = None
            pause.review_state = None
            return
        pause.review_result = result
        pause.review_output = blocks_text(result.get("output"))
        pause.review_state = enum_value(result.get("state"))
        pause.message = (
            f"{self.name} ran. Its result is held back from the model until you accept, edit or reject it."
            if pause.review_state == ToolResultState.SUCCESS.value
            else f"{self.name} ran and ended with state {pause.review_state!r}. "
            "Its result is held back from the model until you accept, edit or reject it."
        )


def reviewed(tool: ToolBase | Callable[..., Any], **function_tool_kwargs: Any) -> ReviewedTool:
    """Mark a tool for review: a person sees its result before the model does.

    Args:
        tool: an AgentScope ``ToolBase`` (``FunctionTool``, ``Bash``, an MCP
            tool...), or a plain function, wrapped in
            ``agentscope.tool.FunctionTool(tool, **function_tool_kwargs)``.
        **function_tool_kwargs: passed to ``FunctionTool`` for a function.

    Returns:
        a :class:`ReviewedTool` to register in the agent's ``Toolkit`` in
        place of the tool.

    Raises:
        TypeError: the tool is already an external tool.

    Example::

        toolkit = Toolkit(tools=[reviewed(FunctionTool(query_customers))])
    """
    if not isinstance(tool, ToolBase):
        tool = FunctionTool(tool, **function_tool_kwargs)
    return ReviewedTool(tool)
