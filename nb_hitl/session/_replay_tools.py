"""The tools of a replay: AgentScope ``ToolBase`` tools that give back what a call returned then.

A replayed agent has a real ``Toolkit`` whose tools are :class:`RecordedTool`:
each answers a call with the ``ToolResultBlock`` that call (the same
``tool_call_id``) returned when the session was recorded, and never runs the
real tool. A call with no recorded result (after a fork the model may call
something new) gets an error result saying so. :class:`ReplayMiddleware`, an
AgentScope middleware, tells the tool which call it serves (``on_acting``)
and asks the permission check recorded for that call again
(``on_check_permission``): a call that asked then asks now, a call that was
allowed runs (from the record) without asking.

An approval the guard refused then (:mod:`nb_hitl.session._promise`: its
input or its file changed after it) is refused again as it was: a call asked
again under a fresh id is asked again (:func:`~nb_hitl.session._promise.ask_again`,
the guard's own, with the recorded cause, file and input), and a call refused
and not asked again returns its recorded result with the guard's marks
(:data:`~nb_hitl.session._promise.NOT_RUN_KEY`), so the card and the
transcript say "not run" with the reason the live session gave.

A reviewed tool (:func:`nb_hitl.reviewed`) is replayed as a
:class:`ReplayedReview`: its review card shows again with the result the model
read then, and the wrapped tool does not run.

With ``live`` on (a fork with ``live=True``, from the fork's pause on), the
tools given to the replay run for real and their own permission checks decide.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from agentscope.message import DataBlock, TextBlock, ToolCallBlock, ToolCallState, ToolResultBlock, ToolResultState
from agentscope.middleware import MiddlewareBase
from agentscope.permission import PermissionBehavior, PermissionContext, PermissionDecision
from agentscope.tool import ToolBase, ToolChunk

from .._agentscope import enum_value
from ..kinds._base import PauseHost
from ..kinds._reading import same_by_value, visible_json
from ..kinds.review_tool import ReviewedTool
from ..pauses import Pause
from ._promise import NOT_RUN_KEY, REFUSED_KEY, Changed, ask_again
from ._recording import Recording, parsed_input

__all__ = [
    "Book",
    "RecordedTool",
    "ReplayedReview",
    "ReplayMiddleware",
    "NO_RESULT",
    "NOT_RUN",
    "OTHER_INPUT",
    "REPLAYED_REVIEW",
]

_CALL: ContextVar[str | None] = ContextVar("nb_hitl_replayed_call", default=None)
_INPUT: ContextVar[dict[str, Any] | None] = ContextVar("nb_hitl_replayed_input", default=None)

NO_RESULT = (
    "No recorded result for this call to {tool}: in a replay tools do not run, "
    "and this call was not made when the session was recorded, so nothing ran."
)
"""The result of a call the record has no result for (recorded mode)."""

OTHER_INPUT = (
    "No recorded result for this call to {tool} with this input: in a replay tools do not run, and "
    "the record holds only what {tool}({recorded}) returned; {tool}({asked}) was not run when the session "
    "was recorded, so nothing ran."
)
"""The result of a recorded call that now runs with another input (a fork's Modify; recorded mode)."""

NOT_RUN = (
    "No recorded result for this call to {tool}: when the session was recorded it did not run "
    "({state}), and in a replay tools do not run, so nothing ran."
)
"""The result of a recorded call that did not run then (denied, interrupted) and now would (recorded mode)."""

REPLAYED_REVIEW = (
    "Replayed from the record: nothing ran. The result shown is the one the model read then, after the "
    "review (a result that was edited or rejected shows as the model read it: the raw result was not recorded)."
)
"""The message of a replayed review card (recorded mode)."""

_BEHAVIORS = {"allow": PermissionBehavior.ALLOW, "ask": PermissionBehavior.ASK, "deny": PermissionBehavior.DENY}


@dataclass
class Book:
    """What the tools of one replay read.

    Attributes:
        recording: the recorded session.
        live: tools run for real (a fork with ``live=True``, from its pause on).
    """

    recording: Recording
    live: bool = False


class RecordedTool(ToolBase):
    """A tool of a replayed agent: returns the result each call returned then.

    Args:
        name: the tool's name, as the model calls it.
        book: the replay's :class:`Book`.
        like: the real tool (its description, input schema and read-only flag
            are copied; it runs only when ``book.live`` is on); ``None`` when
            only the record is known.
        external: the tool is run by whoever drives the agent (its call parks
            as an ``external`` pause and the person gives the result).
    """

    is_concurrency_safe = False
    is_read_only = False

    def __init__(self, name: str, book: Book, *, like: ToolBase | None = None, external: bool = False) -> None:
        super().__init__()
        self.name = name
        self.book = book
        self.like = like
        self.description = str(getattr(like, "description", "") or f"{name} (replayed from a record)")
        self.input_schema = dict(getattr(like, "input_schema", None) or {"type": "object", "properties": {}})
        self.is_read_only = bool(getattr(like, "is_read_only", False))
        self.is_concurrency_safe = bool(getattr(like, "is_concurrency_safe", False))
        self.is_external_tool = external

    async def call(self, **kwargs: Any) -> ToolChunk | AsyncGenerator[ToolChunk, None]:
        """The recorded result of the call being served; the real tool's when ``book.live``.

        Returns:
            a ``ToolChunk`` with the recorded output and state, or an
            ``error`` chunk saying the record has no result for this call.
        """
        if self.book.live and self.like is not None:
            return await self.like(**kwargs)
        call_id = _CALL.get()
        block = self.book.recording.results.get(call_id) if call_id else None
        if block is None:
            text = NO_RESULT.format(tool=self.name)
            return ToolChunk(content=[TextBlock(text=text)], state=ToolResultState.ERROR)
        refused = self.book.recording.not_run(str(call_id))
        ran, asked = self.book.recording.ran.get(str(call_id)), _INPUT.get()
        if refused is not None and (ran is None or asked is None or same_by_value(ran, asked)):
            # the guard refused this approval then and did not ask again: so it is now (a what-if's edit runs)
            meta = {REFUSED_KEY: refused.get("decision"), NOT_RUN_KEY: str(refused.get("reason") or "Not run.")}
            return ToolChunk(content=_content(block), state=ToolResultState.DENIED, metadata=meta)
        other = self._not_this_call(str(call_id), block)
        if other is not None:  # the record's result is for another call than this one
            return ToolChunk(content=[TextBlock(text=other)], state=ToolResultState.ERROR)
        state = ToolResultState(block.state)
        return ToolChunk(content=_content(block), state=state, metadata=dict(block.metadata or {}))

    def _not_this_call(self, call_id: str, block: ToolResultBlock) -> str | None:
        """Why the recorded result of ``call_id`` is not the result of the call being served
        (it did not run then; it ran with another input), or ``None`` when it is."""
        state = str(enum_value(block.state))
        if state in (ToolResultState.DENIED.value, ToolResultState.INTERRUPTED.value):
            return NOT_RUN.format(tool=self.name, state=state)
        ran, asked = self.book.recording.ran.get(call_id), _INPUT.get()
        if ran is None or asked is None or same_by_value(ran, asked):
            return None
        return OTHER_INPUT.format(tool=self.name, recorded=visible_json(ran, None), asked=visible_json(asked, None))

    async def check_permissions(self, tool_input: dict[str, Any], context: PermissionContext) -> PermissionDecision:
        """The real tool's check when it was given (a check runs nothing), else allow:
        the record's own decision is applied by :class:`ReplayMiddleware` first."""
        if self.like is not None:
            return await self.like.check_permissions(tool_input, context)
        return PermissionDecision(behavior=PermissionBehavior.ALLOW, message="Replayed from the record.")


def _same_json(text: Any, value: Any) -> bool:
    """Whether ``text`` (JSON, as an audit line shows an input) reads as ``value``."""
    try:
        return isinstance(text, str) and same_by_value(json.loads(text), value)
    except ValueError:
        return False


def _content(block: ToolResultBlock) -> list[TextBlock | DataBlock]:
    """A recorded result's output as a ``ToolChunk``'s content."""
    output = block.output
    if isinstance(output, str):
        return [TextBlock(text=output)]
    return [b.model_copy(deep=True) for b in output if isinstance(b, TextBlock | DataBlock)]


class ReplayedReview(ReviewedTool):
    """A reviewed tool of a replayed agent: the review pause shows again, and nothing runs.

    Where the real :class:`~nb_hitl.kinds.review_tool.ReviewedTool` runs the
    wrapped tool once to show its result for review, this one shows the
    result the call returned then (the one the model read, after the review
    that was recorded); with ``book.live`` on, the wrapped tool runs.

    Args:
        inner: the wrapped tool (the real one when known, else a :class:`RecordedTool`).
        book: the replay's :class:`Book`.
    """

    def __init__(self, inner: ToolBase, book: Book) -> None:
        super().__init__(inner)
        self.book = book

    async def _run_inner(self, tool_call: ToolCallBlock, agent: Any) -> ToolResultBlock:
        """The recorded result of this call (the wrapped tool's own run when ``book.live``)."""
        if self.book.live:
            return await super()._run_inner(tool_call, agent)
        block = self.book.recording.results.get(tool_call.id)
        if block is None:
            text = NO_RESULT.format(tool=tool_call.name)
            return ToolResultBlock(id=tool_call.id, name=tool_call.name, output=text, state=ToolResultState.ERROR)
        return block.model_copy(deep=True)

    async def prepare_pause(self, pause: Pause, host: PauseHost) -> None:
        """The review pause, saying that its result comes from the record (see :data:`REPLAYED_REVIEW`)."""
        await super().prepare_pause(pause, host)
        if not self.book.live and pause.review_error is None:
            pause.message = REPLAYED_REVIEW


class ReplayMiddleware(MiddlewareBase):
    """The AgentScope middleware of a replayed agent (see the module docstring).

    Args:
        book: the replay's :class:`Book`.
    """

    def __init__(self, book: Book) -> None:
        self.book = book

    async def on_check_permission(
        self, agent: Any, input_kwargs: dict, next_handler: Callable[..., Any]
    ) -> PermissionDecision:
        """The decision recorded for this call (``ask`` when it was a
        confirmation); AgentScope's own resolution for a call the person
        approved, and the tool's own check when the record says nothing or
        ``book.live`` is on."""
        call = input_kwargs.get("tool_call")
        # a call the person approved is AgentScope's own (``allowed``: it runs, never asks again)
        if call is None or self.book.live or enum_value(call.state) == ToolCallState.ALLOWED.value:
            return await next_handler(**input_kwargs)
        recorded = self.book.recording.behavior(call.id)
        if recorded is None:
            return await next_handler(**input_kwargs)
        check = self.book.recording.checks.get(call.id, {})
        said = check.get("message") if isinstance(check.get("message"), str) else None
        return PermissionDecision(
            behavior=_BEHAVIORS[recorded],
            message=said or f"As recorded: this call's permission check decided {recorded!r}.",
        )

    async def on_acting(self, agent: Any, input_kwargs: dict, next_handler: Callable[..., Any]) -> AsyncGenerator:
        """Name the call being served to the tool (each call runs in its own task or in turn)."""
        call = input_kwargs.get("tool_call")
        _CALL.set(call.id if call is not None else None)
        _INPUT.set(parsed_input(call.input) if call is not None else None)
        if call is not None and not self.book.live and await self._ask_again(agent, call):
            return  # asked again then: nothing runs, the call waits for a person again
        async for item in next_handler(**input_kwargs):
            yield item

    async def _ask_again(self, agent: Any, call: Any) -> bool:
        """Ask ``call`` again, as the guard did then, when the record says it did
        (:meth:`Recording.asked_again_as <nb_hitl.session._recording.Recording.asked_again_as>`)
        and it was approved as then (a what-if's other edit runs as it is): with the recorded
        cause, file and input it would have run with."""
        again = self.book.recording.asked_again_as(call.id)
        if again is None or not _same_json(again[1].get("approved_input"), parsed_input(call.input)):
            return False
        fresh, line = again
        runs = self.book.recording.ran.get(fresh)
        changed = call.model_copy(deep=True)
        if runs is not None and not same_by_value(runs, parsed_input(call.input)):
            changed.input = json.dumps(runs, ensure_ascii=False)  # a middleware had changed it then
        cause = str(line.get("decision"))
        path = line.get("path") if isinstance(line.get("path"), str) else None
        shown = Changed(
            "", str(line.get("approved_input")), runs, await agent.toolkit.get_tool(call.name), cause=cause, path=path
        )
        return await ask_again(agent, changed, shown)
