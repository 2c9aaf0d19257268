"""One id, one call: a tool call that reuses an id gets a fresh one before AgentScope sees it.

AgentScope 2.0.11 pairs a tool result with its call by id. When a model sends
a new tool call with the id of an earlier call of the same context, the new
call is lost: within one reply (a reply is one assistant message)
``Agent._next_action`` counts it as finished because a result with that id is
already there, so it is never checked, shown or run, and the next model call
reads it with no result of its own, next to the earlier call's result. In a
non-streamed answer that holds one id twice, AgentScope's state updates
(``Agent._update_tool_call_state``) reach only the first block, so the
second is asked under the first's id and never runs. Across replies the
history holds two calls and two results with one id, which a provider that
pairs results by id cannot tell apart.

:class:`CallIdGuard` (an ``on_model_call`` middleware the Session installs
outermost, :func:`nb_hitl._agentscope.install_outermost_model_call`) gives
such a call a fresh id in the model's answer, before AgentScope turns it
into events, history and permission checks: the call is then checked, asked
or refused and run like any other, and its result is its own.
:data:`RENAMED_CONTEXT_KEY` remembers the id the model sent, so the card
and the audit log say so (:func:`reused_id_message`) and the model reads it
in a ``HintBlock`` once the call has its result (:func:`flush_rename_hints`).

A streamed answer that sends one id twice in the same answer is merged
into one call by AgentScope's stream accumulator (``ChatModelBase``) before
any middleware sees the whole answer; its card shows the merged arguments
as ambiguous and refuses Approve (:mod:`nb_hitl.kinds._reading`).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, cast

from agentscope.message import HintBlock, ToolCallBlock
from agentscope.middleware import MiddlewareBase
from agentscope.model import ChatResponse

from .._agentscope import find_tool_result
from ..labels import call_label

__all__ = [
    "CallIdGuard",
    "RENAMED_CONTEXT_KEY",
    "context_call_ids",
    "fresh_id",
    "fresh_call_ids",
    "renamed_calls",
    "reused_id_message",
    "flush_rename_hints",
]

RENAMED_CONTEXT_KEY = "nb_hitl.renamed"
"""Key in ``AgentState.middle_context``: ``{new tool_call id: {"sent": the id
the model sent, "tool": name, "audited": bool}}``: the calls :class:`CallIdGuard`
gave a fresh id and that have no result yet (kept in checkpoints)."""


def renamed_calls(agent: Any) -> dict[str, Any]:
    """The agent's :data:`RENAMED_CONTEXT_KEY` entries (created empty when missing)."""
    ctx = agent.state.middle_context
    entries = ctx.get(RENAMED_CONTEXT_KEY)
    if not isinstance(entries, dict):
        entries = ctx[RENAMED_CONTEXT_KEY] = {}
    return entries


def context_call_ids(agent: Any) -> set[str]:
    """Every tool call and tool result id in the agent's history (``AgentState.context``)."""
    ids: set[str] = set()
    for msg in agent.state.context:
        if isinstance(msg.content, str):
            continue
        for block in msg.content:
            if getattr(block, "type", None) in ("tool_call", "tool_result"):
                ids.add(block.id)
    return ids


def fresh_id(old: str, taken: set[str]) -> str:
    """``<old>_r<n>`` with the smallest ``n`` from 2 not in ``taken``."""
    n = 2
    while f"{old}_r{n}" in taken:
        n += 1
    return f"{old}_r{n}"


def fresh_call_ids(
    response: ChatResponse,
    used: set[str],
    renames: dict[str, str],
    given: dict[str, str],
    *,
    whole: bool,
    sent_ids: set[str] | None = None,
) -> ChatResponse:
    """``response`` with a fresh id for each tool call whose id is already taken.

    Args:
        response: one answer of the model, or one chunk of a streamed answer.
        used: the ids of the agent's history (:func:`context_call_ids`);
            the fresh ids are added to it.
        renames: ``{sent id: fresh id}`` of this answer so far (a streamed
            answer repeats a call's id in every chunk); updated in place.
        given: ``{fresh id: sent id}`` of every id given so far; updated in place.
        whole: ``response`` holds a whole answer (non-streamed, or the last
            chunk of a streamed one): a second call with the id of an
            earlier call of the same answer is a new call too. A streamed
            chunk's calls are parts of calls, so only ``used`` counts.
        sent_ids: the ids the model sent in this answer's earlier chunks;
            updated in place. A fresh id is never one the model sent in this
            answer (nor in ``used``), so a call the model named ``X_r2`` keeps
            its id when another call reusing ``X`` is renamed.

    Returns:
        ``response`` itself when nothing is renamed, else a copy with the
        renamed ``ToolCallBlock`` copies.
    """
    content = list(response.content)
    here = {block.id for block in content if isinstance(block, ToolCallBlock)}
    avoid = used | here | (sent_ids or set())  # the model's own ids of this answer stay its own
    seen: set[str] = set()
    changed = False
    for i, block in enumerate(content):
        if not isinstance(block, ToolCallBlock):
            continue
        sent = block.id
        new: str | None = None
        if whole and sent in seen:  # a second call with this id in one answer
            new = fresh_id(sent, avoid)
        elif sent in renames:  # a later chunk of a renamed call, or the whole streamed answer
            new = renames[sent]
        elif sent in used:
            new = renames[sent] = fresh_id(sent, avoid)
        seen.add(sent)
        if new is not None:
            avoid.add(new)
            used.add(new)
            given[new] = sent
            content[i] = block.model_copy(update={"id": new})
            changed = True
    if sent_ids is not None:
        sent_ids |= here
    return dataclasses.replace(response, content=content) if changed else response


def reused_id_message(agent: Any, sent: str) -> str:
    """What the card and the audit log say about a call that got a fresh id: the earlier call
    whose id ``sent`` the model reused, named by tool and input (:func:`~nb_hitl.labels.call_label`),
    never by id. ``agent``: the agent whose context holds the earlier call."""
    earlier = next(
        (
            call_label(block.name, block.input)
            for msg in agent.state.context
            if not isinstance(msg.content, str)
            for block in msg.content
            if isinstance(block, ToolCallBlock) and block.id == sent
        ),
        None,
    )
    return (
        "The model reused the id of an earlier tool call"
        + (f" ({earlier})" if earlier else "")
        + "; nb_hitl gave this call its own id, so its answer cannot be taken for the earlier one's. "
        "It is checked and run on its own, and its result is its own."
    )


def _hint(sent: str, new: str, tool: str) -> str:
    return (
        f"<system-reminder>Your tool call to {tool} sent with the id {sent} reused the id of an earlier tool "
        f"call, so it was given the id {new}. The result with the id {new} is this call's own result; "
        f"the earlier result with the id {sent} belongs to the earlier call. Use a new id for each tool "
        "call.</system-reminder>"
    )


def flush_rename_hints(agent: Any) -> list[str]:
    """Add a ``HintBlock`` for each renamed call that has its result (and forget the call).

    Returns:
        the texts added.
    """
    added = []
    entries = renamed_calls(agent)
    for new, entry in list(entries.items()):
        if not isinstance(entry, dict) or find_tool_result(agent, new) is None:
            continue
        entries.pop(new)  # answered: no card will show it again
        text = _hint(str(entry.get("sent")), new, str(entry.get("tool")))
        agent.state.append_context(agent.name, [HintBlock(hint=text, source="nb_hitl")])
        added.append(text)
    return added


class CallIdGuard(MiddlewareBase):
    """``on_model_call``: a tool call whose id is already taken gets a fresh id (:func:`fresh_call_ids`)."""

    async def on_model_call(
        self,
        agent: Any,
        input_kwargs: dict,
        next_handler: Callable[..., Awaitable[Any]],
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        res = await next_handler()
        used = context_call_ids(agent)
        renames: dict[str, str] = {}
        given: dict[str, str] = {}
        sent_ids: set[str] = set()

        def remember(response: ChatResponse) -> None:
            entries = renamed_calls(agent)
            for block in response.content:
                if isinstance(block, ToolCallBlock) and block.id in given and block.id not in entries:
                    entries[block.id] = {"sent": given[block.id], "tool": block.name, "audited": False}

        if not inspect.isasyncgen(res):
            out = fresh_call_ids(res, used, renames, given, whole=True, sent_ids=sent_ids)
            remember(out)
            return out

        chunks = cast(AsyncGenerator[ChatResponse, None], res)

        async def stream() -> AsyncGenerator[ChatResponse, None]:
            try:
                async for chunk in chunks:
                    out = fresh_call_ids(chunk, used, renames, given, whole=chunk.is_last, sent_ids=sent_ids)
                    if chunk.is_last:
                        remember(out)
                    yield out
            finally:  # an interrupted reply closes this stream: close the model's too (its cleanup runs now)
                await chunks.aclose()

        return stream()
