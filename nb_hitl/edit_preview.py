"""What an edit on a card would change, shown before the person sends it.

Two cards let a person edit what the agent gets: Modify on a confirmation
(the tool's input, JSON) and the result of a reviewed tool (text). While they
type, the page asks the kernel (debounced) ``{"action": "preview",
"tool_call_id", "reply_id", "input"}`` (a confirmation) or ``{..., "output"}``
(a review) and draws the answer's ``diff`` as text. It is not an answer: the
pause stays open, nothing is audited and no status changes.

The diff is the one the decision itself would record: for Modify the edit is
read by :func:`nb_hitl.messages.parse_edited_input` (the same JSON reading and
schema check as "Approve modified input"; what it refuses is refused here with
the same words) and diffed as pretty-printed JSON against the model's input
(:func:`nb_hitl.file_change.input_diff`); for a review it is a line diff of the
raw result against the edited text (:func:`nb_hitl.file_change.text_diff`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from .errors import DecisionError
from .file_change import input_diff, text_diff
from .messages import MAX_TEXT, parse_edited_input

if TYPE_CHECKING:
    from .pauses import Pause

__all__ = ["EditPreview", "model_input", "preview"]


class EditPreview(TypedDict):
    """The kernel's answer to a ``preview``: ``diff`` is unified-diff text ("" when the edit
    changes nothing), invisible characters escaped, cut past
    :data:`nb_hitl.file_change.MAX_DIFF_CHARS`."""

    diff: str


def model_input(pause: Pause) -> Any:
    """What a Modify is compared with: AgentScope's reading of the model's input, else the raw input."""
    return pause.input if pause.input is not None else pause.tool_call.input


def _text(message: Any, key: str) -> str:
    value = message.get(key) if isinstance(message, dict) else None
    if not isinstance(value, str):
        raise DecisionError(f"A preview needs the edited text as {key!r} (a string).", field=key)
    if len(value) > MAX_TEXT:
        raise DecisionError(f"The edit is too long to preview ({len(value)} characters; the limit is {MAX_TEXT}).")
    return value


def preview(pause: Pause, message: Any) -> EditPreview:
    """The diff an edit on ``pause``'s card would make (see the module's header).

    Args:
        pause: an open pause of kind ``confirm`` (Modify) or ``review``.
        message: the page's message: ``input`` (the edited JSON text) for a
            confirmation, ``output`` (the edited result) for a review.

    Returns:
        an :class:`EditPreview`.

    Raises:
        DecisionError: the edit cannot be read (``field="input"``, with the
            words "Approve modified input" would refuse it with), the pause is
            of another kind, or a review has no result to edit.
    """
    if pause.kind == "confirm":
        edited = parse_edited_input(_text(message, "input"), pause.input_schema)
        return EditPreview(diff=input_diff(model_input(pause), edited))
    if pause.kind == "review":
        edited_text = _text(message, "output")
        if pause.review_output is None:
            raise DecisionError("There is no result to edit, so there is nothing to compare with.", field="output")
        return EditPreview(diff=text_diff(pause.review_output, edited_text, "tool's result", "edited result"))
    raise DecisionError(f"A {pause.kind} card has no edit to preview.", field="action")
