"""The client's own checks of a resume, and what a refused resume reopens (remote turns).

:class:`~nb_hitl.agui.remote.RemoteSession` never trusts the server to catch
its mistakes: before a resume is sent, :func:`check_entries` applies AG-UI's
one-resume rule (:func:`~nb_hitl.agui.resume_rules.check_resume`) and each
payload's full schema. A resume the server refuses at once reopens the
cards it names (:func:`reopen_refused`).
"""

from __future__ import annotations

from ag_ui.core import ResumeEntry

from ..kinds._schema import META_KEY
from .refusals import refusal_words
from .resume_rules import ResumeError, check_payload, check_resume
from .turn import RemoteTurn, RunRecord, move

__all__ = ["check_entries", "refusal_named", "refusal_words", "reopen_refused"]


def refusal_named(record: RunRecord) -> tuple[list[str], str | None]:
    """What a refused resume's ``RUN_ERROR.metadata.nb_hitl`` names: the
    interrupt ids at fault and the field of the first (``"input"``...), or
    ``([], None)`` when it names nothing."""
    meta = record.events[-1].metadata if record.events else None
    named = (meta or {}).get(META_KEY, {}) if isinstance(meta, dict) else {}
    if not isinstance(named, dict):
        return [], None
    ids = [i for i in (named.get("interrupt_ids") or []) if isinstance(i, str)]
    field = named.get("field")
    return ids, field if isinstance(field, str) else None


def reopen_refused(turn: RemoteTurn, record: RunRecord) -> None:
    """A resume refused at once (``RUN_STARTED``, ``RUN_ERROR``): the
    server resumed nothing. The interrupts it names reopen with the
    reason on their card (once, in plain words: the code stays in
    ``record.error_code``); the other answers are kept, so only the
    refused ones need answering again before the next resume."""
    turn.status = "paused"
    if not record.resume:  # a run of follow() carried no answer: none was refused
        turn.reason = f"The check for answers given elsewhere failed: {refusal_words(record.error, None)}"
        return
    named, _ = refusal_named(record)
    ids = [i for i in named if i in turn.answers]
    faulted = set(ids) or set(turn.answers)
    cards = [v for v in turn.pauses.values() if v["interrupt_id"] in faulted and v["status"] == "decided"]
    names = ", ".join(str(v["tool_name"]) for v in cards)
    turn.reason = (
        f"The server refused your answer to {names}: its card says why."
        if cards
        else f"The server refused the answers. {refusal_words(record.error, None)}"
    )
    for view in cards:
        move(view, "open")  # the carrier's far side refused it: the call still waits
        view["decision"] = None
        said = refusal_words(record.error, view["tool_name"])
        view["reason"] = view["refused"] = f"The server refused your answer to {view['tool_name']}. {said}"
        view["refused_answer"] = turn.sent.pop(view["interrupt_id"], None)  # what was typed is not lost
        turn.answers.pop(view["interrupt_id"], None)


def check_entries(turn: RemoteTurn, entries: list[ResumeEntry], now: float) -> None:
    """The resume contract (against the checked interrupts), then each
    resolved payload against its full schema, evaluated safely.

    Args:
        turn: the paused turn (its ``checked`` interrupts and pause views).
        entries: the resume entries about to be sent.
        now: epoch seconds, for ``expires_at``.

    Raises:
        ResumeError: a rule of :func:`~nb_hitl.agui.resume_rules.check_resume`,
            or ``invalid_payload`` (an unanswerable card answered, a payload
            that breaks its schema; ``field`` = ``"<interrupt id>:<path>"``).
    """
    check_resume(list(turn.checked.values()), entries, now=now)
    for e in entries:
        if e.status != "resolved":
            continue
        view = next((v for v in turn.pauses.values() if v["interrupt_id"] == e.interrupt_id), None)
        if view is not None and view.get("unanswerable"):
            raise ResumeError(
                f"Interrupt {e.interrupt_id} cannot be answered, only cancelled: {view['form_error']}",
                code="invalid_payload",
                interrupt_ids=[e.interrupt_id],
            )
        check_payload(e.interrupt_id, turn.interrupts[e.interrupt_id].response_schema, e.payload)
