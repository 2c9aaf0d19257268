"""What a reply's card says when the reply failed (:meth:`SessionCore._drive`'s error path).

AgentScope runs a round's tool calls in a task group, so a tool call that
raises ends the reply with an ``ExceptionGroup`` ("One or more tool calls
raised an exception"), a sentence that names nothing. The card names each
error the group holds instead, and says when nothing ran: an error raised in
AgentScope's permission check (``Agent._check_permission``, which copies the
model's input first: an input nested deeper than Python's recursion limit
fails there) comes before the tool runs.
"""

from __future__ import annotations

import traceback

from ..model_config import model_error_hint

__all__ = ["run_error_text"]

MAX_NAMED = 3
"""How many of a group's errors the text names (the rest are counted)."""


def _leaves(exc: BaseException) -> list[BaseException]:
    """The errors an (possibly nested) exception group holds, in order; ``[exc]`` for any other error."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _in_permission_check(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside AgentScope's permission check (the tool did not run)."""
    return any(
        frame.name == "_check_permission" and "agentscope" in frame.filename
        for frame in traceback.extract_tb(exc.__traceback__)
    )


def _one(exc: BaseException) -> str:
    said = f"{type(exc).__name__}: {exc}"
    if _in_permission_check(exc):
        why = " (the input is nested too deeply to copy)" if isinstance(exc, RecursionError) else ""
        said += (
            f". AgentScope's permission check could not read the model's tool call input{why}, so the call "
            "did not run. Send the agent a new message to go on."
        )
    return said


def run_error_text(exc: BaseException) -> str:
    """The sentence a failed reply's card shows: each error ``exc`` holds (an exception group is
    opened; at most :data:`MAX_NAMED` named, the rest counted), what was not run, and what to set
    when a setting fixes it (:func:`~nb_hitl.model_config.model_error_hint`).

    Args:
        exc: what the reply raised.

    Returns:
        the text (a person reads it: error class names and messages, no traceback).
    """
    leaves = _leaves(exc)
    said = "; ".join(_one(e) for e in leaves[:MAX_NAMED])
    if len(leaves) > MAX_NAMED:
        said += f"; and {len(leaves) - MAX_NAMED} more errors"
    if isinstance(exc, BaseExceptionGroup):
        said = f"A tool call failed inside the agent: {said}"
    hints = [h for h in (model_error_hint(e) for e in leaves) if h]
    return said + (f" {hints[0]}" if hints else "")
