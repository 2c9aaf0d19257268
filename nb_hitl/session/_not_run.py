"""What a person reads of an approved call the guard did not run (:mod:`nb_hitl.session._promise`).

The guard runs an approved call only as it was approved. When it does not, the
call is either asked again under a fresh id (:func:`show_asked_again`, once the
fresh call's card is drawn) or refused and not asked again
(:func:`show_not_run`, on the call's result: a tool that reads before it writes
would refuse it on a second card too; a call handed on as another tool, with
unreadable arguments, or with an input a permission rule denies cannot be asked
on a card either). Either way the approved card expires
with the reason, the approved call's result entry in the transcript ends
``"not run"`` with that reason, and the audit log gets one line by ``nb_hitl``
(:func:`_audit_not_run`) whose ``decision`` is the cause (``input_changed``,
``file_changed``) and whose ``reason`` says what happened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..answers.lifecycle import can_transition, transition
from ..pauses import Pause
from ._core import SessionCore
from ._promise import NOT_RUN_KEY, REFUSED_KEY, asked_again
from ._run import ReplyRun

__all__ = ["show_asked_again", "show_not_run", "asked_again_message", "asked_again_reason"]


def asked_again_message(entry: dict[str, Any]) -> str:
    """What the card and the audit log say of a call asked again (a person reads it: no call ids)."""
    if entry.get("cause") == "file_changed":
        return (
            f"The file {entry.get('path')} changed after the card of this {entry.get('tool')} call was drawn, before it ran, "
            "so nothing ran. The change below is against the file as it is now. "
            "Approve to run it on the file as shown here, or deny it."
        )
    return (
        f"A middleware changed this {entry.get('tool')} call after it was approved, before it ran, so nothing ran. "
        f"Approved: {entry.get('approved')}; it would run with: {entry.get('runs')}. "
        "Approve to run it with the input shown here, or deny it."
    )


def asked_again_reason(entry: dict[str, Any]) -> str:
    """Why the approved card of a call asked again expired (it did not run); a person reads it: no call ids."""
    if entry.get("cause") == "file_changed":
        return f"Not run: the file {entry.get('path')} changed after its card was drawn; it is asked again on the next card."
    return "Not run: a middleware changed its input after the approval; it is asked again on the next card."


def _expire_approved(run: ReplyRun, was: str, reason: str) -> None:
    """The approved card of call ``was`` in this run (if any) expires with ``reason``."""
    approved = run.pauses.get(was)
    if approved is not None and can_transition(approved, "expired"):
        transition(approved, "expired", reason=reason)


def _audit_not_run(session: SessionCore, pause: Pause, cause: str, reason: str, **fields: Any) -> None:
    session._audit_pause(pause, decision=cause, decided_by="nb_hitl", reason=reason, **fields)


def show_asked_again(session: SessionCore, run: ReplyRun, agent: Any, pause: Pause) -> None:
    """If ``pause`` is a call the guard asked again (:func:`~nb_hitl.session._promise.ask_again`):
    its card says why (``pause.message``), the approved card of this run expires and its result
    entry ends ``"not run"``, the fresh call gets its transcript entry, and the audit log says it
    once (``approved_tool_call_id``, ``approved_input``, the changed file's ``path``; ``reason``: the card's
    message; a replay asks the call again from this line, :mod:`nb_hitl.session._replay_tools`). When the
    approved input was a person's Modify, ``pause.model_sent`` is the model's own input (what a Modify of
    the fresh card tells the model it asked for).

    Args:
        session: the Session (its audit log).
        run: the reply the pause belongs to.
        agent: the agent that asks (its ``middle_context`` holds the asked-again entry).
        pause: the pause being added.
    """
    again = asked_again(agent, pause.tool_call_id)
    if again is None:
        return
    said, was = asked_again_message(again), str(again.get("was"))
    edit = again.get("edit")
    if isinstance(edit, dict):  # the approved input was a person's edit: a Modify here tells the model's own call
        pause.model_sent = edit.get("sent")
    pause.message = f"{said}\n\n{pause.message}" if pause.message else said
    if was in run.pauses:  # the approved card of this run did not run; the fresh call gets its own entry
        reason = asked_again_reason(again)
        _expire_approved(run, was, reason)
        run.transcript.asked_again(was, pause.tool_call, reason)
    if not again.get("audited"):
        again["audited"] = True
        cause = str(again.get("cause") or "input_changed")
        path = {"path": again["path"]} if again.get("path") else {}  # what a replay asks again with
        _audit_not_run(
            session, pause, cause, said, approved_tool_call_id=was, approved_input=again.get("approved"), **path
        )


def show_not_run(session: SessionCore, run: ReplyRun, tool_call_id: str, metadata: Mapping[str, Any]) -> bool:
    """If the result of ``tool_call_id`` is the guard's refusal of an approved call it does not ask
    again (``metadata`` has :data:`~nb_hitl.session._promise.NOT_RUN_KEY`): the approved card
    expires and its result entry ends ``"not run"``, both with that text, and the audit log says it.

    Args:
        session: the Session (its audit log).
        run: the reply the call belongs to.
        tool_call_id: the call whose result ended.
        metadata: the ``ToolResultEndEvent``'s metadata.

    Returns:
        whether it was such a refusal (the result entry is then ended here).
    """
    reason = metadata.get(NOT_RUN_KEY)
    if not isinstance(reason, str):
        return False
    run.transcript.not_run(tool_call_id, reason)
    pause = run.pauses.get(tool_call_id)
    if pause is not None:
        _expire_approved(run, tool_call_id, reason)
        _audit_not_run(session, pause, str(metadata.get(REFUSED_KEY)), reason)  # its cause: file_changed
    return True
