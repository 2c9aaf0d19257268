"""An MCP server's sampling request, reviewed by a person before and after the notebook's model answers.

:func:`review_sampling` is what :class:`~nb_hitl.mcp.AskingMCPClient`'s
sampling callback awaits (MCP ``sampling/createMessage``, either protocol
mode). Two cards of kind ``sampling`` (:mod:`nb_hitl.kinds.sampling`), each
through :func:`nb_hitl.mcp._ask.open_card` (the front door, the status
table and the audit record of every answer):

1. the request as text (messages, system prompt, model preferences, token
   limit); approved or edited, the agent's own model (``agent.model``,
   AgentScope's ``ChatModelBase``) is called with it;
2. the completion; approved or edited, it goes back to the server as MCP's
   ``CreateMessageResult``.

A denial, a deadline, an interrupted reply or a model that fails: the
server gets an MCP error saying so (never an invented completion), and the
model reads the tool's result (an error). A model that fails also says so
on the request's card (``Pause.sampling["error"]``: what failed and, for a
rejected key or a server that does not answer, what to set:
:func:`nb_hitl.model_config.model_error_hint`).

The server's ``maxTokens`` and ``temperature`` are applied to the call
through the model's own AgentScope ``Parameters`` (every AgentScope model
class names them ``max_tokens`` / ``temperature`` and turns them into its
API's fields), its ``stopSequences`` as the call's keyword where the
AgentScope class passes it on to an API that takes it
(:data:`STOP_KEYWORDS`). What this model does not take is said on the card
(``Pause.sampling["settings_note"]``, :func:`generation_plan`).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from agentscope.message import Msg, TextBlock, ToolCallBlock

from .._agentscope import blocks_text, enum_value
from ..answers.lifecycle import transition
from ..kinds import Decision
from ..kinds.sampling import denial_text
from ..model_config import model_error_hint
from ._ask import numbered, open_card
from ._shutdown import Unanswered

__all__ = [
    "SAMPLING_SEP",
    "STOP_KEYWORDS",
    "Generation",
    "generation_plan",
    "request_view",
    "review_sampling",
    "call_model",
    "model_failure",
    "USER_REJECTED",
]

log = logging.getLogger("nb_hitl.mcp")

SAMPLING_SEP = "~sampling-"
"""A sampling request's pause key is ``<tool_call_id>~sampling-<n>``; its
completion's ``<tool_call_id>~sampling-<n>~completion``."""

USER_REJECTED = -1
"""The MCP error code of a sampling request the user refused (the MCP specification's example)."""

TOLD = "The MCP server was answered with an error (no completion)."


STOP_KEYWORDS: dict[str, str] = {
    "OpenAIChatModel": "stop",
    "DashScopeChatModel": "stop",
    "DeepSeekChatModel": "stop",
    "VolcengineChatModel": "stop",
    "AnthropicChatModel": "stop_sequences",
    "GeminiChatModel": "stop_sequences",
}
"""AgentScope model class (or a base class of the model's) -> the keyword its
``_call_api`` passes on to its API for stop sequences (chat-completions APIs
take ``stop``, Anthropic's and Gemini's ``stop_sequences``)."""

_SETTINGS = (("max_tokens", "max tokens"), ("temperature", "temperature"))


@dataclass(frozen=True)
class Generation:
    """How a sampling request's settings reach one model's call.

    Attributes:
        parameters: ``{name: value}`` set on a copy of the model's AgentScope
            ``Parameters`` for this call (``max_tokens``, ``temperature``).
        kwargs: keywords of the call (``{"stop": [...]}`` or ``{"stop_sequences": [...]}``).
        not_applied: what the server asked that this model takes no setting for (words).
        note: the sentence the card shows (:func:`generation_plan`).
    """

    parameters: dict[str, Any] = field(default_factory=dict)
    kwargs: dict[str, Any] = field(default_factory=dict)
    not_applied: tuple[str, ...] = ()
    note: str | None = None


def generation_plan(model: Any, max_tokens: Any, temperature: Any, stop_sequences: list[str]) -> Generation:
    """Which of a request's settings ``model`` (AgentScope's ``ChatModelBase``) takes, and how.

    ``max_tokens`` / ``temperature`` go through the fields of the same name of
    the model's ``parameters`` (AgentScope's ``Parameters``: each model class
    turns them into its API's fields; a model without such a field, like the
    scripted one, takes none); ``stop_sequences`` through the keyword of
    :data:`STOP_KEYWORDS`. ``None`` / empty settings are left to the model.

    Returns:
        the :class:`Generation`; its ``note`` says what is applied and what is
        not (``None`` when the server set nothing).
    """
    fields = getattr(type(getattr(model, "parameters", None)), "model_fields", {})
    asked = {
        name: value for name, value in (("max_tokens", max_tokens), ("temperature", temperature)) if value is not None
    }
    parameters = {name: value for name, value in asked.items() if name in fields}
    missing = [words for name, words in _SETTINGS if name in asked and name not in parameters]
    kwargs: dict[str, Any] = {}
    if stop_sequences:
        keyword = next((STOP_KEYWORDS[c.__name__] for c in type(model).__mro__ if c.__name__ in STOP_KEYWORDS), None)
        if keyword is None:
            missing.append("stop sequences")
        else:
            kwargs[keyword] = list(stop_sequences)
    applied = [words for name, words in _SETTINGS if name in parameters] + (["stop sequences"] if kwargs else [])
    if not applied and not missing:
        return Generation()
    who = type(model).__name__
    note = f"Applied to the notebook's model ({who}): {', '.join(applied)}." if applied else ""
    if missing:
        note += f" Not applied: {', '.join(missing)} ({who} takes no such setting)."
    return Generation(parameters, kwargs, tuple(missing), note.strip())


def model_failure(name: str, error: BaseException) -> str:
    """What the card and the MCP server are told when the notebook's model ``name`` failed:
    the error, then what to set (:func:`~nb_hitl.model_config.model_error_hint`) or where to look."""
    hint = model_error_hint(error) or (
        "Check the model's configuration (its key variable and base URL: nb_hitl.model_config) and the kernel's log."
    )
    return f"The notebook's model ({name}) failed: {type(error).__name__}: {str(error)[:500]} {hint}"


def _content_text(content: Any, n: int) -> tuple[str, str | None]:
    """The text of one message's content, or why it is not text."""
    blocks = content if isinstance(content, list) else [content]
    texts: list[str] = []
    for block in blocks:
        if isinstance(block, types.TextContent):
            texts.append(block.text)
        else:
            what = getattr(block, "type", type(block).__name__)
            return "", f"Message {n} holds {what} content; only text is shown and sent to the model."
    return "\n".join(texts), None


def request_view(params: types.CreateMessageRequestParams) -> tuple[dict[str, Any], str | None]:
    """The request as the card shows it (``Pause.sampling``), and why it cannot be sent, if so."""
    messages: list[dict[str, str]] = []
    problem: str | None = None
    for n, message in enumerate(params.messages, 1):
        text, why = _content_text(message.content, n)
        messages.append({"role": message.role, "text": text})
        problem = problem or why
    prefs = params.model_preferences
    priorities = {
        name: value
        for name, value in (
            ("cost", prefs.cost_priority if prefs else None),
            ("speed", prefs.speed_priority if prefs else None),
            ("intelligence", prefs.intelligence_priority if prefs else None),
        )
        if value is not None
    }
    if params.tools or params.tool_choice:
        problem = problem or "The request offers the model tools; this client does not sample with tools."
    if not messages:
        problem = problem or "The request holds no messages."
    view = {
        "stage": "request",
        "messages": messages,
        "system_prompt": params.system_prompt,
        "model_hints": [h.name for h in (prefs.hints or [])] if prefs else [],
        "priorities": priorities,
        "max_tokens": params.max_tokens,
        "temperature": params.temperature,
        "stop_sequences": list(params.stop_sequences or []),
        "include_context": params.include_context,
        "completion": None,
        "model": None,
        "settings_note": None,
        "error": None,
    }
    return view, problem


async def call_model(
    model: Any, system_prompt: str | None, messages: list[dict[str, str]], generation: Generation | None = None
) -> str:
    """The text ``model`` (AgentScope's ``ChatModelBase``) answers to ``messages``.

    Args:
        model: the agent's model.
        system_prompt: the server's system prompt, or ``None``.
        messages: ``[{"role": "user" | "assistant", "text"}]``.
        generation: the request's settings this model takes (:func:`generation_plan`):
            its ``parameters`` are set on a shallow copy of the model (the
            agent's own model keeps its settings), its ``kwargs`` passed to the call.

    Returns:
        the text blocks of its answer (streamed or not), joined.

    Raises:
        asyncio.CancelledError: the call was cancelled (AgentScope's model
            answers a cancellation with an ``interrupted`` response).
        Exception: whatever the model raises.
    """
    msgs = [Msg(name="system", role="system", content=[TextBlock(text=system_prompt)])] if system_prompt else []
    msgs += [Msg(name=m["role"], role=m["role"], content=[TextBlock(text=m["text"])]) for m in messages]  # type: ignore[arg-type]
    generation = generation or Generation()
    if generation.parameters:
        model = copy.copy(model)
        model.parameters = model.parameters.model_copy(update=generation.parameters)
    res = await model(msgs, **generation.kwargs)
    if hasattr(res, "__aiter__"):
        last = None
        async for chunk in res:
            last = chunk
        res = last
    if enum_value(getattr(res, "finished_reason", None)) == "interrupted":
        raise asyncio.CancelledError  # AgentScope's model turned a cancellation into a response: end as cancelled
    return blocks_text(getattr(res, "content", None) or [], data_label=False)


def _tell_card(session: Any, key: str, failed: str) -> None:
    """Say on the request's card (answered and delivered) that the model failed,
    and what the server was told: the outcome of a delivered answer (the
    ``deliver`` edge of the status table, which marks the card changed)."""
    run = session.current
    pause = run.pauses.get(key) if run is not None else None
    if pause is None or pause.sampling is None or pause.status != "delivered":
        return
    pause.sampling = {**pause.sampling, "error": failed}
    transition(pause, "delivered", reason=f"{failed} {TOLD}")
    session._push(run)


def unanswered_code(why: str) -> int:
    """The MCP error code of a request nobody answered: ``INTERNAL_ERROR`` when nobody ever will
    (the kernel shuts down, :class:`~nb_hitl.mcp._shutdown.Unanswered`), else ``USER_REJECTED``."""
    return types.INTERNAL_ERROR if isinstance(why, Unanswered) else USER_REJECTED


async def review_sampling(
    session: Any,
    agent: Any,
    tool_call: ToolCallBlock,
    *,
    server: str,
    params: types.CreateMessageRequestParams,
    gone: Callable[[], Awaitable[str]] | None = None,
) -> types.CreateMessageResult | types.ErrorData:
    """Review an MCP server's sampling request, call the agent's model, review its answer.

    Args:
        session: the :class:`~nb_hitl.session.Session` driving ``agent``.
        agent: the agent whose tool call is running (its ``model`` is called).
        tool_call: the running call.
        server: the MCP client's name.
        params: the server's request (untrusted; shown as text).
        gone: as for :func:`~nb_hitl.mcp._ask.open_card`.

    Returns:
        the approved (or edited) completion as ``CreateMessageResult``, or
        ``ErrorData`` saying why there is none (denied, unanswered, the model failed).

    Raises:
        asyncio.CancelledError: the MCP request was cancelled.
    """
    view, problem = request_view(params)
    model = agent.model
    name = str(getattr(model, "model", None) or type(model).__name__)
    generation = generation_plan(model, view["max_tokens"], view["temperature"], view["stop_sequences"])
    view["settings_note"] = generation.note
    title = f"The MCP server {server!r} asks the notebook's model"
    got = await open_card(
        session,
        agent,
        tool_call,
        key=lambda run: numbered(run, tool_call.id + SAMPLING_SEP),
        server=server,
        told=TOLD,
        gone=gone,
        kind="sampling",
        title=title,
        message="Review the request before the notebook's model is called.",
        sampling=view,
        form_error=problem,
    )
    if not isinstance(got, Decision):
        return types.ErrorData(code=unanswered_code(got), message=f"Sampling request not answered: {got}")
    if got.action == "deny":
        return types.ErrorData(code=USER_REJECTED, message=denial_text("request", got.cause, got.reason))
    messages = got.content["messages"] if got.action == "edit" and got.content else view["messages"]
    try:
        text = await call_model(model, view["system_prompt"], messages, generation)
    except Exception as exc:
        log.warning("the model failed on MCP server %r's sampling request", server, exc_info=True)
        failed = model_failure(name, exc)
        _tell_card(session, got.tool_call_id, failed)
        return types.ErrorData(code=types.INTERNAL_ERROR, message=f"{failed} {TOLD}")
    completion_key = f"{got.tool_call_id}~completion"
    got = await open_card(
        session,
        agent,
        tool_call,
        key=lambda _run: completion_key,
        server=server,
        told=TOLD,
        gone=gone,
        kind="sampling",
        title=title,
        message="Review the model's answer before it goes back to the MCP server.",
        sampling={**view, "stage": "completion", "messages": messages, "completion": text, "model": name},
    )
    if not isinstance(got, Decision):
        return types.ErrorData(code=unanswered_code(got), message=f"Completion not answered: {got}")
    if got.action == "deny":
        return types.ErrorData(code=USER_REJECTED, message=denial_text("completion", got.cause, got.reason))
    final = got.content["text"] if got.action == "edit" and got.content else text
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=final), model=name, stop_reason="endTurn"
    )
