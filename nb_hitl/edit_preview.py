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
the same words) and diffed as pretty-printed JSON against the input the card
shows: the model's input, or the edit approved so far on a call that needs
several approvals (:func:`nb_hitl.file_change.input_diff`); for a review it is a line diff of the
raw result against the edited text (:func:`nb_hitl.file_change.text_diff`).

A Modify of a file-editing call (its card shows the file's diff,
:mod:`nb_hitl.file_change`) is also previewed on the file: the answer's
``file_change`` is what the edited call would do to its file, computed as
the card's own diff is (:func:`nb_hitl.file_change.describe_edit`), so an
edit that changes ``file_path`` shows the diff of the file it now writes.
The pause keeps the last such view, keyed by the edit's canonical JSON
(``pause.previewed_file``): a Modify of exactly that input is bound to the
file the person was shown (:func:`nb_hitl.kinds.confirm.modify_binding`).
A remote card (the service console, which has no tool here) gets no file
diff: ``file_change`` is ``None``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from .errors import DecisionError
from .file_change import FileChangeView, describe_edit, input_diff, text_diff
from .messages import MAX_TEXT, parse_edited_input

if TYPE_CHECKING:
    from .pauses import Pause

__all__ = [
    "EditPreview",
    "edit_text",
    "input_preview",
    "model_input",
    "output_preview",
    "preview",
    "preview_answer",
    "refuse_unchanged_edit",
]


class EditPreview(TypedDict):
    """The kernel's answer to a ``preview``.

    ``diff`` is unified-diff text of the edited input or result ("" when the
    edit changes nothing), invisible characters escaped, cut past
    :data:`nb_hitl.file_change.MAX_DIFF_CHARS`. ``file_change``: for Modify
    on a file-editing call, what the edited call would do to its file (a
    :class:`~nb_hitl.file_change.FileChangeView`: its ``path`` may differ
    from the card's when the edit retargets the call); ``None`` for a call
    that changes no file, a review, or a remote card.
    """

    diff: str
    file_change: FileChangeView | None


def model_input(pause: Pause) -> Any:
    """What a Modify is compared with: AgentScope's reading of the model's input, else the raw input."""
    return pause.input if pause.input is not None else pause.tool_call.input


def refuse_unchanged_edit(pause: Pause, edited: dict[str, Any]) -> dict[str, Any]:
    """Refuse a Modify that changes nothing: the model would read that a person edited its call
    and the audit log would record an edit, when the call runs exactly as Approve runs it.
    It is compared with the input the card shows now: the edit approved so far when the
    call needs several approvals and someone modified it (``pause.approved_edit``), else
    the model's input as AgentScope reads it. (An input Approve refuses, one read more than
    one way, may still be settled by a Modify.)

    Returns:
        ``edited``, when it changes the input.

    Raises:
        DecisionError: ``field="input"``, the edit is the input Approve would run
            (the message says which: the model's, or the edit approved so far).
    """
    from .kinds._reading import read_input, same_by_value  # the kinds import this module

    approved = pause.approved_input
    if approved is not None:
        if same_by_value(edited, approved):
            raise DecisionError(
                "Your edit changes nothing: press Approve to run the call with the edited input "
                "the card shows (the edit approved so far), or change the input first.",
                field="input",
            )
        return edited
    runs = pause.reading or read_input(pause.tool_call.input, pause.input_schema)
    if runs.approvable and runs.executed is not None and same_by_value(edited, runs.executed):
        raise DecisionError(
            "Your edit changes nothing: press Approve to run the call as the model asked it, "
            "or change the input first.",
            field="input",
        )
    return edited


def edit_text(message: Any, key: str) -> str:
    """The edited text at ``message[key]`` of a ``preview`` request.

    Raises:
        DecisionError: it is missing, not a string or longer than
            :data:`nb_hitl.messages.MAX_TEXT`.
    """
    value = message.get(key) if isinstance(message, dict) else None
    if not isinstance(value, str):
        raise DecisionError(f"A preview needs the edited text as {key!r} (a string).", field=key)
    if len(value) > MAX_TEXT:
        raise DecisionError(f"The edit is too long to preview ({len(value)} characters; the limit is {MAX_TEXT}).")
    return value


async def input_preview(pause: Pause, message: Any, tool: Any = None) -> EditPreview:
    """Modify on a confirmation: the edited JSON (``message["input"]``) read as
    "Approve modified input" reads it, diffed against the input the card shows:
    the edit approved so far when someone modified a call that needs several
    approvals (``pause.approved_edit``; headed "edit approved so far"), else
    :func:`model_input` (headed "model's input", the diff the decision records);
    with ``tool`` (the agent's own), the edited call's file change, kept on
    the pause as ``pause.previewed_file = (canonical JSON of the edit, view)``.

    Raises:
        DecisionError: the edit cannot be read (``field="input"``, with the
            words "Approve modified input" would refuse it with).
    """
    from .kinds._reading import canonical, refuse_misread_edit  # the kinds import this module

    edited = parse_edited_input(edit_text(message, "input"), pause.input_schema)
    refuse_misread_edit(edited, pause.input_schema)  # as "Approve modified input" refuses it
    approved = pause.approved_input
    if approved is not None:
        diff = input_diff(approved, edited, "edit approved so far")
    else:
        diff = input_diff(model_input(pause), edited)
    change = await describe_edit(tool, pause, edited)
    pause.previewed_file = (canonical(edited), change)  # the last preview: what a Modify of it was shown
    return EditPreview(diff=diff, file_change=change)


def output_preview(pause: Pause, message: Any) -> EditPreview:
    """A reviewed result: the edited text (``message["output"]``) line-diffed against the raw result.

    Raises:
        DecisionError: no edited text, or the pause has no result to edit.
    """
    edited_text = edit_text(message, "output")
    if pause.review_output is None:
        raise DecisionError("There is no result to edit, so there is nothing to compare with.", field="output")
    diff = text_diff(pause.review_output, edited_text, "tool's result", "edited result")
    return EditPreview(diff=diff, file_change=None)


async def preview(pause: Pause, message: Any, tool: Any = None) -> EditPreview:
    """The diff an edit on ``pause``'s card would make (see the module's
    header); the pause's kind says what can be edited
    (:meth:`nb_hitl.kinds.PauseKindSpec.preview`).

    Args:
        pause: an open pause.
        message: the page's message: ``input`` (the edited JSON text) for a
            confirmation, ``output`` (the edited result) for a review.
        tool: the agent's tool of the call (its file change is previewed),
            or ``None`` (a remote card: no file change).

    Returns:
        an :class:`EditPreview`.

    Raises:
        DecisionError: the edit cannot be read, the pause's kind has no edit,
            or a review has no result to edit.
    """
    from .kinds import kind_spec  # the kinds import this module's diffs

    result: EditPreview = await kind_spec(pause.kind).preview(pause, message, tool)
    return result


async def preview_answer(pause: Pause, message: Any, tool: Any = None) -> dict[str, EditPreview]:
    """The answer to the page's ``{"action": "preview", ...}``, for a local reply and a service
    console alike: ``{"preview": EditPreview}`` (:func:`preview`; its errors)."""
    return {"preview": await preview(pause, message, tool)}
