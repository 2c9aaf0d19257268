"""Review a tool's result before the model sees it.

AgentScope 2.0.11 has no hook that parks a reply *after* a tool ran (see
``/work/shared/notes/agentscope-hitl.md``, "No review after a tool ran"): an
``on_acting`` middleware sees the tool's chunks only after the agent has
already streamed them out as ``TOOL_RESULT_TEXT_DELTA`` events. So nb_hitl
builds review on AgentScope's *external execution* mechanics instead:

1. :func:`reviewed` wraps a ``ToolBase`` in a :class:`ReviewedTool`: same
   ``name``, ``description`` and ``input_schema`` (the model sees the same
   tool), ``is_external_tool=True``, and ``check_permissions``,
   ``check_read_only``, ``match_rule`` and ``generate_suggestions``
   delegated to the wrapped tool, so rules, modes and confirmations behave
   exactly as before (a call that asks is confirmed first, as usual).
2. Once the call is allowed, AgentScope parks the reply with
   ``RequireExternalExecutionEvent`` (call state ``submitted``); nothing of
   the result exists yet, so no event and no transcript entry can carry it.
3. nb_hitl's :class:`~nb_hitl.session.Session` builds the pause and calls
   :meth:`ReviewedTool.prepare_pause`, which runs the wrapped tool **once**
   through a private ``agentscope.tool.Toolkit`` (``Toolkit.call_tool``:
   AgentScope's own argument repair, state injection and exception ->
   ERROR-result handling), outside the agent's stream. The raw result is
   stored in ``agent.state.middle_context["nb_hitl.review"][tool_call_id]``
   and a checkpoint is written at once, so a restarted kernel restores the
   pause with that result and never runs the tool again.
4. The person accepts the result, edits it (e.g. redacts a value) or
   rejects it (:mod:`nb_hitl.decisions`: ``accept`` / ``edit`` /
   ``reject``). The decision goes back as AgentScope's own
   ``ExternalExecutionResultEvent``; the agent streams *that* text, saves it
   to its context and the model reads only the reviewed result. The
   history stays consistent: one tool call, one result, as for any
   external tool.

Exactly once, also across a restart: before running, the entry is marked
``running`` and checkpointed; after, the result is stored and checkpointed.
A kernel restored from a checkpoint taken while the tool was running finds
``running`` without a result: the tool may or may not have taken effect, so
it is *not* run again (at most once); the pause says so and can only be
rejected (the model is told the result was withheld).

A rejected result is sent with state ``DENIED``: it is AgentScope's state
for "a person refused" (its own denial path uses it), it does not count as
a tool failure in AgentScope's repeated-tool-error detection (which counts
``ERROR`` only) and, unlike ``SUCCESS``, it does not pass a refusal off as
the tool's output to programs reading ``ToolResultEndEvent.state``. The text
tells the model the tool *did* run and that calling it again will not
reveal the result.

Limits:

* the wrapped tool runs in the kernel when the pause is prepared, outside
  ``reply_stream``: its streaming progress is not shown, the agent's
  ``on_acting`` middlewares do not wrap it, and AgentScope's truncation of
  long tool results (``_split_tool_result_for_compression``) does not apply
  to the reviewed result (external results are stored as sent);
* the review shows the result as text; non-text blocks (images, files) are
  listed by media type. ``accept`` sends the original blocks; ``edit`` sends
  only the edited text and drops the tool's ``metadata`` (it may hold what
  the edit redacted); every reviewed result carries
  ``metadata["nb_hitl.review"]`` (``accepted`` / ``edited`` / ``rejected`` /
  ``not_reviewed``);
* until the review is decided the raw result lives in the agent's state and
  in the checkpoint file; it is removed (and the checkpoint rewritten) when
  the reply ends. After a decision the widget no longer carries it;
* the reply is parked as for any external tool: a driver other than
  nb_hitl's Session sees a plain ``RequireExternalExecutionEvent`` and must
  call :meth:`ReviewedTool.prepare_pause` itself (or it would be asked to run
  the tool).
"""

from __future__ import annotations

import asyncio
import inspect
import time
import weakref
from collections.abc import Callable
from typing import Any

from agentscope.message import DataBlock, TextBlock, ToolCallBlock, ToolResultBlock, ToolResultState
from agentscope.permission import PermissionContext, PermissionDecision, PermissionRule
from agentscope.tool import FunctionTool, ToolBase, Toolkit, ToolResponse

__all__ = ["ReviewedTool", "reviewed", "REVIEW_CONTEXT_KEY", "result_text"]

REVIEW_CONTEXT_KEY = "nb_hitl.review"
"""Key in ``AgentState.middle_context``: ``{tool_call_id: {"status":
"running" | "done", "tool": name, "started_at": float, "result":
ToolResultBlock JSON | None}}``."""

_UNKNOWN_OUTCOME = (
    "The kernel stopped while {name} was running, before its result was saved. "
    "It may or may not have taken effect, and it is not run again. "
    "Reject to tell the agent the result is unavailable."
)


def result_text(output: Any) -> str:
    """A tool result's output as text for the person reviewing it.

    Args:
        output: ``ToolResultBlock.output``: a string or a list of
            ``TextBlock`` / ``DataBlock`` (JSON dicts accepted too).

    Returns:
        the text blocks joined; a data block appears as
        ``[data: <media type> <name>]``.
    """
    if isinstance(output, str):
        return output
    parts: list[str] = []
    for block in output or []:
        if isinstance(block, dict):
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            else:
                source = block.get("source") or {}
                parts.append(f"[data: {source.get('media_type', '?')} {block.get('name') or ''}]".replace(" ]", "]"))
        elif isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, DataBlock):
            media = getattr(block.source, "media_type", "?")
            parts.append(f"[data: {media} {block.name or ''}]".replace(" ]", "]"))
        else:
            parts.append(str(block))
    return "".join(parts)


async def _maybe_await(value: Any) -> Any:
    """Third-party tools may still define ``match_rule`` / ``generate_suggestions``
    with a sync ``def`` (AgentScope's engine accepts both)."""
    return await value if inspect.isawaitable(value) else value


_PRUNING: weakref.WeakSet[Any] = weakref.WeakSet()


def _prune(session: Any, keep: str | None = None) -> bool:
    """Drop stored raw results of calls that no longer wait (the reviewed
    result reached the agent, or the reply was interrupted). Returns True
    when something was removed."""
    agent = session.agent
    store = agent.state.middle_context.get(REVIEW_CONTEXT_KEY)
    if not isinstance(store, dict) or not store:
        return False
    awaiting = {tc.id for tc in agent.state.get_awaiting_tool_calls(agent.name)}
    stale = [k for k in store if k not in awaiting and k != keep]
    for k in stale:
        del store[k]
    return bool(stale)


def _ensure_pruning(session: Any) -> None:
    if session in _PRUNING:
        return
    _PRUNING.add(session)
    ref = weakref.ref(session)

    def on_change(kind: str, run: Any) -> None:
        s = ref()
        if s is None or kind != "end":
            return
        if _prune(s) and getattr(s, "checkpoints", None) is not None:
            s.checkpoint()

    session.on_change(on_change)


class ReviewedTool(ToolBase):
    """A tool whose result a person reviews before the model reads it.

    Build it with :func:`reviewed`. To the model and the permission engine
    it is the wrapped tool; to AgentScope it is an external tool, so the
    reply parks after the call is allowed and nb_hitl runs the wrapped tool
    itself (see the module docstring).

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

    async def _result_for(self, pause: Any, session: Any) -> dict[str, Any] | None:
        """The stored raw result of this call, running the tool if it never ran."""
        agent = session.agent
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
        session.checkpoint()  # a crash from here on must not lead to a second run
        try:
            result = await self._run_inner(pause.tool_call, agent)
            dumped = self._dump(result)
            store[call_id] = {**store[call_id], "status": "done", "result": dumped}
            session.checkpoint()
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

    async def prepare_pause(self, pause: Any, session: Any) -> None:
        """Turn the parked call's pause into a review (called by the Session).

        Runs the wrapped tool if this call never ran (see the module
        docstring), then sets ``pause.kind = "review"``,
        ``review_output`` (the result as text), ``review_state``,
        ``review_result`` (the raw ``ToolResultBlock`` JSON) or
        ``review_error`` when the outcome is unknown after a restart.

        Args:
            pause: the :class:`~nb_hitl.pauses.Pause` being built.
            session: the :class:`~nb_hitl.session.Session` driving the agent
                (its agent's state holds the stored result; its checkpoint
                store, if any, is written).
        """
        _ensure_pruning(session)
        _prune(session, keep=pause.tool_call_id)
        result = await self._result_for(pause, session)
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
        pause.review_output = result_text(result.get("output"))
        state = result.get("state")
        pause.review_state = getattr(state, "value", state)
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
