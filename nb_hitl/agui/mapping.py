"""Pauses <-> AG-UI interrupts, resume entries <-> page messages (pure).

AG-UI 1.0 (``ag_ui.core``; spec "Interrupts", docs/concepts/interrupts.mdx)
models a pause as ``RUN_FINISHED`` with ``outcome = {type: "interrupt",
interrupts: [Interrupt]}`` and the answer as the next run's
``RunAgentInput.resume = [ResumeEntry(interrupt_id, status, payload)]``.
This module maps nb_hitl's :class:`~nb_hitl.pauses.Pause` (one parked
AgentScope tool call) to an ``Interrupt`` and a ``ResumeEntry`` back to the
*page message* a widget would send (``{"action": "approve", ...}``), so the
AG-UI server answers through :meth:`nb_hitl.session.Session.act` and shares
every check with the widget path (:func:`nb_hitl.decisions.decide`, the
permission re-check of an edited input, the tool's external-result check).

Nothing here touches the network, a widget or an agent.

The payloads (``Interrupt.response_schema``, JSON Schema 2020-12)
=================================================================

====================  ========================================================
pause kind            payload of a ``resolved`` entry
====================  ========================================================
``confirm``           ``{"approved": bool, "editedArgs"?: object,
                      "acceptedRules"?: [int]}``: AG-UI's recommended
                      approve-with-edits shape (``approved`` / ``editedArgs``,
                      a full replacement of the tool input, never merged),
                      plus the indices of AgentScope's ``suggested_rules`` to
                      add as allow rules. ``reason = "tool_call"``.
``ask_user``          AgentScope's ``AskUserMetadata`` schema
                      (``{"answers": [{question, selected, other}]}``),
                      narrowed to this call's question texts and option
                      labels. ``reason = "input_required"``.
``external``          ``{"output": str, "state"?: "success" | "error"}``: the
                      external tool's output. ``reason = "input_required"``.
``form``              the form's own ``response_schema``
                      (:mod:`nb_hitl.forms`); the payload is the value.
                      ``reason = "input_required"``.
``review``            ``{"action": "accept" | "edit" | "reject", "output"?:
                      str (edit), "reason"?: str (reject)}`` for a reviewed
                      tool's result (:mod:`nb_hitl.review`); the result to
                      review is in ``metadata.nb_hitl.review_output``.
                      ``reason = "nb_hitl:review"``.
====================  ========================================================

``cancelled`` entries
=====================
AG-UI: "the user abandoned without providing meaningful input".

* For a confirmation, ``cancelled`` becomes a **denial**
  (``ConfirmResult(confirmed=False)``): the call must not run without a yes,
  and a denial is the one answer AgentScope gives the model a fixed reminder
  for, so the reply continues and the model learns the call did not happen.
* For AskUser, forms and other external tools, ``cancelled`` becomes an
  **ERROR tool result** (``return_error``) saying nobody answered; for a
  reviewed result, the result is withheld from the model (``return_error``,
  the review's "not reviewed" default). It is *not* an
  interrupt of the reply (``UserInterruptEvent``): an interrupt would end
  every open call of the reply at once, while a resume entry speaks for one
  interrupt only, and the other entries of the same resume must still apply.

Interrupt ids
=============
``interrupt_id(thread_id, reply_id, tool_call_id)`` is a hash of the three,
so an id is unique across threads and replies and bound to exactly one tool
call: a server can recompute it and refuse an id that names another call.
"""

from __future__ import annotations

import copy
import datetime as _dt
import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema
from ag_ui.core import Interrupt, ResumeEntry
from agentscope.tool import AskUserMetadata

from ..decisions import MAX_SHORT, MAX_TEXT, parse_json_object
from ..errors import DecisionError, NbHitlError
from ..pauses import Pause

__all__ = [
    "META_KEY",
    "META_VERSION",
    "OUR_KINDS",
    "REASON_REVIEW",
    "REASON_TOOL_CALL",
    "REASON_INPUT_REQUIRED",
    "ResumeError",
    "interrupt_id",
    "to_iso",
    "parse_expires_at",
    "response_schema",
    "pause_to_interrupt",
    "validate_payload",
    "resume_to_message",
    "cancel_message",
    "check_resume",
    "our_kind",
    "effective_schema",
    "interrupt_view",
    "message_to_entry",
]

META_KEY = "nb_hitl"
"""The key of nb_hitl's own data inside ``Interrupt.metadata`` (``ag-ui`` is
reserved by AG-UI itself; every other key is user space)."""

META_VERSION = 1
"""Version of the ``Interrupt.metadata["nb_hitl"]`` layout."""

REASON_TOOL_CALL = "tool_call"
"""AG-UI core reason: an interrupt bound to a tool call awaiting a decision."""

REASON_INPUT_REQUIRED = "input_required"
"""AG-UI core reason: the agent needs structured input to continue."""

REASON_REVIEW = "nb_hitl:review"
"""nb_hitl's reason (namespaced, as AG-UI asks of custom reasons): a tool ran
and its result waits for a person before the model reads it."""

OUR_KINDS = ("confirm", "ask_user", "external", "form", "review")
"""The pause kinds :func:`pause_to_interrupt` maps (``Pause.kind``)."""

_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class ResumeError(NbHitlError):
    """A resume (a list of ``ResumeEntry``) cannot be applied or sent.

    Attributes:
        code: machine-readable reason, also used as AG-UI ``RUN_ERROR.code``:
            ``unknown_interrupt``, ``missing_interrupt``,
            ``duplicate_interrupt``, ``interrupt_expired``, ``interrupt_closed``,
            ``invalid_payload``, ``interrupts_pending``, ``thread_busy``,
            ``conflicting_replay``, ``input_with_resume``, ``no_input``.
        interrupt_ids: the interrupt ids at fault.
    """

    code = "resume_refused"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        field: str | None = None,
        interrupt_ids: Sequence[str] = (),
    ) -> None:
        super().__init__(message, field=field)
        if code is not None:
            self.code = code
        self.interrupt_ids = list(interrupt_ids)


# ---------------------------------------------------------------------------
# ids and times
# ---------------------------------------------------------------------------
def interrupt_id(thread_id: str, reply_id: str, tool_call_id: str) -> str:
    """The interrupt id of one parked tool call.

    Args:
        thread_id: the AG-UI ``threadId`` (one conversation, one agent).
        reply_id: AgentScope's ``reply_id`` of the parked reply.
        tool_call_id: the parked ``ToolCallBlock.id``.

    Returns:
        ``"nbh-" + 32 hex digits`` of SHA-256 over the three (unit-separated),
        the same for the same triple, different for any other.
    """
    digest = hashlib.sha256("\x1f".join((thread_id, reply_id, tool_call_id)).encode("utf-8")).hexdigest()
    return f"nbh-{digest[:32]}"


def to_iso(epoch_seconds: float) -> str:
    """``time.time()`` seconds -> ISO 8601 UTC with milliseconds and ``Z``
    (AG-UI's documented convention for ``Interrupt.expires_at``)."""
    moment = _dt.datetime.fromtimestamp(epoch_seconds, tz=_dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_expires_at(value: str | None) -> float | None:
    """ISO 8601 ``expires_at`` -> epoch seconds, or ``None`` when absent or
    not a date (AG-UI: such a value "leaves the interrupt looking permanently
    unexpired"). A value without a zone is read as UTC."""
    if not value or not isinstance(value, str):
        return None
    try:
        moment = _dt.datetime.fromisoformat(value.strip().replace("z", "Z"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    return moment.timestamp()


# ---------------------------------------------------------------------------
# Pause -> Interrupt
# ---------------------------------------------------------------------------
def _embed_schema(schema: Mapping[str, Any] | None, defs: dict[str, Any]) -> dict[str, Any]:
    """A copy of a sub-schema to nest under ``properties``; its ``$defs`` are
    hoisted into ``defs`` (the root's) so ``#/$defs/...`` refs still resolve."""
    if not schema:
        return {"type": "object"}
    out = copy.deepcopy(dict(schema))
    out.pop("$schema", None)
    out.pop("$id", None)
    inner = out.pop("$defs", None)
    if isinstance(inner, dict):
        defs.update(inner)
    return out


def _confirm_schema(pause: Pause) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    edited = _embed_schema(pause.input_schema, defs)
    edited = {
        **edited,
        "title": "Edited input",
        "description": (
            f"A full replacement of {pause.tool_name}'s input (not merged). It is checked against "
            "the tool's input schema and the agent's permission rules again before it runs."
        ),
    }
    props: dict[str, Any] = {
        "approved": {
            "type": "boolean",
            "title": "Approve",
            "description": f"true runs {pause.tool_name} (with editedArgs when given); false denies it.",
        },
        "editedArgs": edited,
    }
    if pause.suggested_rules:
        from ..pauses import rule_label

        labels = "; ".join(f"{i}: {rule_label(r)}" for i, r in enumerate(pause.suggested_rules))
        props["acceptedRules"] = {
            "type": "array",
            "title": "Always allow",
            "description": f"Indices of AgentScope's suggested rules to add as allow rules ({labels}). Only with approved = true.",
            "items": {"type": "integer", "minimum": 0, "maximum": len(pause.suggested_rules) - 1},
            "uniqueItems": True,
        }
    schema: dict[str, Any] = {
        "$schema": _SCHEMA_DIALECT,
        "type": "object",
        "title": f"Run {pause.tool_name}?",
        "properties": props,
        "required": ["approved"],
        "additionalProperties": False,
    }
    if defs:
        schema["$defs"] = defs
    return schema


def _ask_user_schema(pause: Pause) -> dict[str, Any]:
    base = AskUserMetadata.model_json_schema()
    schema: dict[str, Any] = {"$schema": _SCHEMA_DIALECT, **base}
    schema["additionalProperties"] = False
    answer = schema.get("$defs", {}).get("AskUserAnswer")
    if pause.ask_user is not None and isinstance(answer, dict):
        questions = [q.question for q in pause.ask_user.questions]
        labels = sorted({o.label for q in pause.ask_user.questions for o in q.options})
        answer = copy.deepcopy(answer)
        answer["properties"]["question"]["enum"] = questions
        answer["properties"]["selected"]["items"] = {"type": "string", "enum": labels}
        answer["properties"]["other"] = {
            **answer["properties"]["other"],
            "anyOf": [{"type": "string", "maxLength": MAX_SHORT}, {"type": "null"}],
        }
        answer["additionalProperties"] = False
        schema["$defs"] = {**schema["$defs"], "AskUserAnswer": answer}
        answers = schema["properties"]["answers"]
        schema["properties"]["answers"] = {**answers, "minItems": len(questions), "maxItems": len(questions)}
    elif pause.ask_user_error:
        schema["description"] = (
            "The agent's AskUser questions are invalid and cannot be answered as asked "
            f"({pause.ask_user_error}); resume this interrupt with status 'cancelled' to return the error."
        )
    return schema


def _external_schema(pause: Pause) -> dict[str, Any]:
    return {
        "$schema": _SCHEMA_DIALECT,
        "type": "object",
        "title": f"Output of {pause.tool_name}",
        "properties": {
            "output": {
                "type": "string",
                "title": "Output",
                "description": f"What {pause.tool_name} returned; the model reads this text.",
                "maxLength": MAX_TEXT,
            },
            "state": {
                "type": "string",
                "enum": ["success", "error"],
                "default": "success",
                "title": "State",
                "description": "success, or error when the tool failed.",
            },
        },
        "required": ["output"],
        "additionalProperties": False,
    }


def _form_schema(pause: Pause) -> dict[str, Any]:
    schema = getattr(pause, "response_schema", None)
    problem = getattr(pause, "form_error", None)
    if problem or not isinstance(schema, dict):
        return {
            "$schema": _SCHEMA_DIALECT,
            "not": {},
            "description": f"This form cannot be answered ({problem or 'it has no schema'}); resume this "
            "interrupt with status 'cancelled' to return the error to the agent.",
        }
    return copy.deepcopy(schema)


def _review_schema(pause: Pause) -> dict[str, Any]:
    if getattr(pause, "review_error", None) or getattr(pause, "review_output", None) is None:
        actions = ["reject"]
    else:
        actions = ["accept", "edit", "reject"]
    return {
        "$schema": _SCHEMA_DIALECT,
        "type": "object",
        "title": f"Review the result of {pause.tool_name}",
        "properties": {
            "action": {
                "type": "string",
                "enum": actions,
                "title": "Decision",
                "description": "accept: the model reads the result as it is; edit: it reads `output` "
                "instead; reject: it is told the result was withheld.",
            },
            "output": {"type": "string", "maxLength": MAX_TEXT, "title": "Edited result"},
            "reason": {"type": "string", "maxLength": MAX_SHORT, "title": "Reason (reject)"},
        },
        "required": ["action"],
        "additionalProperties": False,
        "if": {"properties": {"action": {"const": "edit"}}},
        "then": {"required": ["output"]},
    }


def response_schema(pause: Pause) -> dict[str, Any]:
    """The JSON Schema of a ``resolved`` payload for ``pause`` (see the
    module docstring's table)."""
    if pause.kind == "confirm":
        return _confirm_schema(pause)
    if pause.kind == "ask_user":
        return _ask_user_schema(pause)
    if pause.kind == "form":
        return _form_schema(pause)
    if pause.kind == "review":
        return _review_schema(pause)
    return _external_schema(pause)


def _compact(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _message(pause: Pause) -> str:
    if pause.kind == "confirm":
        args = _compact(pause.input if pause.input is not None else pause.tool_call.input)
        head = pause.permission_message or f"Permission required for {pause.tool_name}"
        why = f" ({pause.decision_reason})" if pause.decision_reason else ""
        return f"{head}{why}: run {pause.tool_name}({args})?"
    if pause.kind == "ask_user":
        if pause.ask_user is None:
            return f"The agent's AskUser questions are invalid: {pause.ask_user_error}"
        return " / ".join(q.question for q in pause.ask_user.questions)
    if pause.kind == "form":
        title, text = getattr(pause, "title", None), getattr(pause, "message", None)
        problem = getattr(pause, "form_error", None)
        if problem:
            return f"The agent's form cannot be shown: {problem}"
        return " - ".join(t for t in (title, text) if t) or f"{pause.tool_name} asks for input."
    if pause.kind == "review":
        return f"{pause.tool_name} ran; its result waits for your review before the model reads it."
    args = _compact(pause.input if pause.input is not None else pause.tool_call.input)
    return f"{pause.tool_name} runs outside the agent: run {pause.tool_name}({args}) and give its output."


def pause_to_interrupt(
    pause: Pause,
    thread_id: str,
    *,
    expires_at: float | None = None,
) -> Interrupt:
    """The AG-UI ``Interrupt`` for one open pause.

    Args:
        pause: the open pause (from ``Session.current.pauses``).
        thread_id: the AG-UI thread the agent serves.
        expires_at: epoch seconds after which the interrupt cannot be
            answered; defaults to ``pause.deadline``. The earlier of the two
            is used when both are given.

    Returns:
        ``Interrupt(id, reason, message, tool_call_id, response_schema,
        expires_at, metadata={"nb_hitl": {...}})``. The metadata carries what
        a client needs to draw nb_hitl's own widgets: ``version``, ``kind``,
        ``thread_id``, ``reply_id``, ``tool_call_id``, ``tool_name``,
        ``input`` (parsed, or ``None``), ``input_text`` (as the model sent
        it), ``input_schema``, ``permission_message``, ``decision_reason``,
        ``bypass_immune``, ``suggested_rules`` (``[{index, label, tool_name,
        rule_content, behavior}]``), ``ask_user`` (``AskUserParams`` as
        JSON, or ``None``), ``ask_user_error``, ``policy``, and for forms
        and reviews ``title``, ``message``, ``form_error``,
        ``review_output`` (the result to review, only while the pause is
        open), ``review_state``, ``review_error``.
    """
    view = pause.to_view()
    deadline = pause.deadline
    if expires_at is not None:
        deadline = expires_at if deadline is None else min(deadline, expires_at)
    meta = {
        "version": META_VERSION,
        "kind": pause.kind,
        "thread_id": thread_id,
        "reply_id": pause.reply_id,
        "tool_call_id": pause.tool_call_id,
        "tool_name": pause.tool_name,
        "input": pause.input,
        "input_text": pause.tool_call.input,
        "input_schema": pause.input_schema,
        "permission_message": pause.permission_message,
        "decision_reason": pause.decision_reason,
        "bypass_immune": pause.bypass_immune,
        "suggested_rules": view["suggested_rules"],
        "ask_user": view["ask_user"],
        "ask_user_error": pause.ask_user_error,
        "policy": pause.policy,
    }
    for key in ("title", "message", "form_error", "review_output", "review_state", "review_error"):
        meta[key] = view.get(key)
    reason = {"confirm": REASON_TOOL_CALL, "review": REASON_REVIEW}.get(pause.kind, REASON_INPUT_REQUIRED)
    return Interrupt(
        id=interrupt_id(thread_id, pause.reply_id, pause.tool_call_id),
        reason=reason,
        message=_message(pause),
        tool_call_id=pause.tool_call_id,
        response_schema=response_schema(pause),
        expires_at=to_iso(deadline) if deadline is not None else None,
        metadata={META_KEY: meta},
    )


# ---------------------------------------------------------------------------
# payload validation (both sides)
# ---------------------------------------------------------------------------
def _field(path: str, prefix: str = "") -> str | None:
    inner = path[2:] if path.startswith("$.") else ("" if path == "$" else path.lstrip("$"))
    inner = inner.replace("[", ".").replace("]", "")
    if prefix:
        return prefix + ("." + inner if inner else "")
    return inner or None


def validate_payload(schema: Mapping[str, Any] | None, payload: Any, *, field_prefix: str = "") -> None:
    """Check ``payload`` against an interrupt's ``response_schema`` with
    ``jsonschema`` (the dialect named by ``$schema``, else 2020-12; formats
    checked).

    Args:
        schema: the ``response_schema``; ``None`` accepts any payload.
        payload: the answer.
        field_prefix: prepended to the field path reported (``"value"``...).

    Raises:
        DecisionError: the payload breaks the schema (``field`` is the path
            of the value at fault, ``"editedArgs.path"``), or the schema
            itself is not a valid JSON Schema (``field=None``).
    """
    if schema is None:
        return
    if not isinstance(schema, Mapping):
        raise DecisionError("The interrupt's response_schema is not a JSON object.")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise DecisionError(f"The interrupt's response_schema is not a valid JSON Schema: {exc.message}") from None
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    error = jsonschema.exceptions.best_match(validator.iter_errors(payload))
    if error is not None:
        where = error.json_path if error.json_path != "$" else "the answer"
        text = error.message if len(error.message) <= 300 else error.message[:299] + "…"
        raise DecisionError(
            f"The answer does not match the interrupt's response_schema at {where}: {text}",
            field=_field(error.json_path, field_prefix),
        )


# ---------------------------------------------------------------------------
# ResumeEntry -> page message (server side)
# ---------------------------------------------------------------------------
def cancel_message(pause: Pause) -> dict[str, Any]:
    """The page message a ``cancelled`` entry stands for (see the module
    docstring: a denial for a confirmation, an ERROR result otherwise)."""
    base = {"tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id}
    if pause.kind == "confirm":
        return {**base, "action": "deny"}
    if pause.kind == "ask_user" and pause.ask_user_error is not None:
        # decisions.decide: the default text names the invalid input
        return {**base, "action": "return_error"}
    if pause.kind == "review" or (pause.kind == "form" and getattr(pause, "form_error", None)):
        # decisions.decide: "not reviewed, so it is withheld" / the form's problem
        return {**base, "action": "return_error"}
    what = {"ask_user": "question", "form": "form"}.get(pause.kind, "external tool call")
    return {
        **base,
        "action": "return_error",
        "message": f"The user cancelled this {what} without an answer (AG-UI resume status 'cancelled'); "
        f"{pause.tool_name} produced no result.",
    }


def resume_to_message(pause: Pause, entry: ResumeEntry, *, thread_id: str) -> dict[str, Any]:
    """The page message (see :mod:`nb_hitl.decisions`) a resume entry stands
    for, to pass to :meth:`Session.act <nb_hitl.session.Session.act>`.

    Args:
        pause: the open pause the entry answers.
        entry: the AG-UI ``ResumeEntry``.
        thread_id: the thread, to check the entry's id is this pause's.

    Returns:
        ``{"action": "approve" | "deny" | "modify" | "answer" |
        "external_result" | "return_error", "tool_call_id", "reply_id", ...}``.

    Raises:
        ResumeError: ``code="unknown_interrupt"`` when the id is not this
            pause's (:func:`interrupt_id`).
        DecisionError: a ``resolved`` payload that breaks
            :func:`response_schema` (``field`` = JSON path), or
            ``editedArgs`` / ``acceptedRules`` sent with ``approved: false``.
    """
    expected = interrupt_id(thread_id, pause.reply_id, pause.tool_call_id)
    if entry.interrupt_id != expected:
        raise ResumeError(
            f"Resume entry {entry.interrupt_id[:80]!r} does not answer the interrupt of tool call "
            f"{pause.tool_call_id!r} ({expected}).",
            code="unknown_interrupt",
            interrupt_ids=[entry.interrupt_id],
        )
    if entry.status == "cancelled":
        return cancel_message(pause)
    payload = entry.payload
    validate_payload(response_schema(pause), payload)
    base = {"tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id}
    if pause.kind == "confirm":
        rules = list(payload.get("acceptedRules") or [])
        if not payload["approved"]:
            if "editedArgs" in payload or rules:
                raise DecisionError(
                    "editedArgs and acceptedRules only go with approved: true; a denial runs nothing "
                    "and AgentScope ignores rules sent with a denial.",
                    field="approved",
                )
            return {**base, "action": "deny"}
        if "editedArgs" in payload:
            return {
                **base,
                "action": "modify",
                "input": json.dumps(payload["editedArgs"], ensure_ascii=False),
                "rules": rules,
            }
        return {**base, "action": "approve", "rules": rules}
    if pause.kind == "ask_user":
        answers = [
            {"question": a.get("question"), "selected": list(a.get("selected") or []), "other": a.get("other")}
            for a in payload["answers"]
        ]
        return {**base, "action": "answer", "answers": answers}
    if pause.kind == "form":
        return {**base, "action": "submit", "value": payload}
    if pause.kind == "review":
        if payload["action"] == "edit":
            return {**base, "action": "edit", "output": payload["output"]}
        if payload["action"] == "reject":
            return {**base, "action": "reject", "reason": payload.get("reason")}
        return {**base, "action": "accept"}
    return {
        **base,
        "action": "external_result",
        "output": payload["output"],
        "state": payload.get("state", "success"),
    }


# ---------------------------------------------------------------------------
# the one-resume rule (both sides)
# ---------------------------------------------------------------------------
def check_resume(
    interrupts: Sequence[Interrupt],
    entries: Sequence[ResumeEntry],
    *,
    now: float | None = None,
    validate: bool = True,
) -> None:
    """AG-UI's resume contract for one paused run, checked before anything
    is sent or applied.

    Rules (AG-UI "Interrupts", contract rules 2, 3, 6, 7): every entry names
    an interrupt of the run; every interrupt is answered exactly once; a
    ``resolved`` entry is not past its interrupt's ``expires_at`` and its
    payload fits ``response_schema``. A ``cancelled`` entry is accepted past
    ``expires_at``: it decides nothing and is the only way out of a thread
    whose interrupt expired.

    Args:
        interrupts: the interrupts of the paused run (its outcome).
        entries: the resume entries.
        now: epoch seconds (``time.time()`` when omitted).
        validate: check ``resolved`` payloads against ``response_schema``.

    Raises:
        ResumeError: ``duplicate_interrupt``, ``unknown_interrupt``,
            ``missing_interrupt``, ``interrupt_expired`` or
            ``invalid_payload`` (``field`` = ``"<interrupt id>:<path>"``).
    """
    now = time.time() if now is None else now
    by_id = {i.id: i for i in interrupts}
    seen: set[str] = set()
    dupes = []
    for e in entries:
        if e.interrupt_id in seen:
            dupes.append(e.interrupt_id)
        seen.add(e.interrupt_id)
    if dupes:
        raise ResumeError(
            f"Interrupt {dupes[0][:80]!r} is answered more than once in this resume.",
            code="duplicate_interrupt",
            interrupt_ids=dupes,
        )
    unknown = [e.interrupt_id for e in entries if e.interrupt_id not in by_id]
    if unknown:
        raise ResumeError(
            f"The resume names interrupt(s) the paused run did not raise: {', '.join(u[:80] for u in unknown)}.",
            code="unknown_interrupt",
            interrupt_ids=unknown,
        )
    missing = [i for i in by_id if i not in seen]
    if missing:
        raise ResumeError(
            "Every open interrupt must be answered in one resume; still open: " + ", ".join(missing) + ".",
            code="missing_interrupt",
            interrupt_ids=missing,
        )
    for e in entries:
        interrupt = by_id[e.interrupt_id]
        if e.status != "resolved":
            continue
        deadline = parse_expires_at(interrupt.expires_at)
        if deadline is not None and now > deadline:
            raise ResumeError(
                f"Interrupt {e.interrupt_id} expired at {interrupt.expires_at}; it can only be cancelled now.",
                code="interrupt_expired",
                interrupt_ids=[e.interrupt_id],
            )
        if validate:
            try:
                validate_payload(interrupt.response_schema, e.payload)
            except DecisionError as exc:
                raise ResumeError(
                    f"Interrupt {e.interrupt_id}: {exc}",
                    code="invalid_payload",
                    field=f"{e.interrupt_id}:{exc.field or ''}",
                    interrupt_ids=[e.interrupt_id],
                ) from None


# ---------------------------------------------------------------------------
# Interrupt -> widget view, page message -> ResumeEntry (client side)
# ---------------------------------------------------------------------------
def our_kind(interrupt: Interrupt) -> str | None:
    """``"confirm"`` | ``"ask_user"`` | ``"external"`` | ``"form"`` |
    ``"review"`` when the interrupt's
    metadata says it was made by :func:`pause_to_interrupt` (and is well
    formed enough to draw), else ``None`` (draw it as a form). The metadata
    only chooses the view: answers are still checked against
    ``response_schema`` before they are sent."""
    meta = (interrupt.metadata or {}).get(META_KEY) if isinstance(interrupt.metadata, dict) else None
    if not isinstance(meta, dict) or meta.get("version") != META_VERSION:
        return None
    kind = meta.get("kind")
    if kind not in OUR_KINDS:
        return None
    if not isinstance(meta.get("tool_name"), str) or not isinstance(meta.get("input_text", ""), str):
        return None
    if kind == "confirm" and not isinstance(meta.get("suggested_rules", []), list):
        return None
    if kind == "ask_user" and meta.get("ask_user") is not None:
        ask = meta["ask_user"]
        if not isinstance(ask, dict) or not isinstance(ask.get("questions"), list):
            return None
    return kind


def _fallback_schema(interrupt: Interrupt) -> dict[str, Any]:
    if interrupt.reason in (REASON_TOOL_CALL, "confirmation"):
        return {
            "type": "object",
            "properties": {"approved": {"type": "boolean", "title": "Approve"}},
            "required": ["approved"],
        }
    return {
        "type": "object",
        "properties": {"answer": {"type": "string", "title": "Answer"}},
        "required": ["answer"],
    }


def effective_schema(interrupt: Interrupt) -> dict[str, Any]:
    """The schema answers to ``interrupt`` are checked against: its
    ``response_schema``, or, when it has none, AG-UI's defaults: a boolean
    ``approved`` for ``tool_call`` / ``confirmation`` interrupts, a free-text
    ``answer`` otherwise."""
    return dict(interrupt.response_schema) if interrupt.response_schema else _fallback_schema(interrupt)


def interrupt_view(
    interrupt: Interrupt,
    *,
    key: str,
    run_id: str,
    tool_call_text: str | None = None,
    tool_call_name: str | None = None,
) -> dict[str, Any]:
    """The pause dict a :class:`~nb_hitl.widgets.ReplyWidget` draws for one
    interrupt (the shape of :meth:`Pause.to_view <nb_hitl.pauses.Pause.to_view>`).

    Args:
        interrupt: an interrupt received in a ``RUN_FINISHED`` outcome.
        key: the widget's handle for it (sent back as ``tool_call_id``): the
            interrupt's ``tool_call_id`` when that is unique in the outcome,
            else the interrupt id.
        run_id: the run that raised it (shown as ``reply_id``).
        tool_call_text: the tool call's arguments as streamed, if seen.
        tool_call_name: the tool's name as streamed, if seen.

    Returns:
        ``{"tool_call_id": key, "interrupt_id", "reply_id", "kind":
        "confirm" | "ask_user" | "external" | "form" | "review",
        "tool_name", "input_text", "input_schema", "permission_message",
        "decision_reason", "bypass_immune", "suggested_rules", "ask_user",
        "ask_user_error", "response_schema", "deadline", "policy", "status":
        "open", "decision": None, "reason": None, "title", "message",
        "review_output", "review_state", "review_error", "form_error"}``.
        Strings from the peer are only ever shown as text by the page.
    """
    kind = our_kind(interrupt)
    meta = (interrupt.metadata or {}).get(META_KEY, {}) if kind else {}
    deadline = parse_expires_at(interrupt.expires_at)
    view: dict[str, Any] = {
        "tool_call_id": key,
        "interrupt_id": interrupt.id,
        "reply_id": run_id,
        "kind": kind or "form",
        "tool_name": (meta.get("tool_name") if kind else None) or tool_call_name or interrupt.reason,
        "input_text": (meta.get("input_text") if kind else None) or tool_call_text or "",
        "input_schema": meta.get("input_schema") if kind else None,
        "permission_message": meta.get("permission_message") if kind else None,
        "decision_reason": meta.get("decision_reason") if kind else None,
        "bypass_immune": bool(meta.get("bypass_immune")) if kind else False,
        "suggested_rules": [
            {"index": int(r.get("index", i)), "label": str(r.get("label", ""))}
            for i, r in enumerate(meta.get("suggested_rules") or [])
            if isinstance(r, dict)
        ]
        if kind == "confirm"
        else [],
        "ask_user": meta.get("ask_user") if kind == "ask_user" else None,
        "ask_user_error": meta.get("ask_user_error") if kind == "ask_user" else None,
        "response_schema": effective_schema(interrupt),
        "deadline": deadline,
        "policy": meta.get("policy") if kind else None,
        "status": "open",
        "decision": None,
        "reason": None,
        "title": (meta.get("title") if kind else None) or (None if kind else (tool_call_name or interrupt.reason)),
        "message": (meta.get("message") if kind in ("form", "review") else None) if kind else interrupt.message,
        "review_output": meta.get("review_output") if kind == "review" else None,
        "review_state": meta.get("review_state") if kind == "review" else None,
        "review_error": meta.get("review_error") if kind == "review" else None,
        "form_error": meta.get("form_error") if kind == "form" else None,
    }
    if kind == "review" and view["review_output"] is None and not view["review_error"]:
        view["review_error"] = "The interrupt carries no result to review."
    if kind == "ask_user" and view["ask_user"] is None and not view["ask_user_error"]:
        view["ask_user_error"] = "The interrupt carries no questions."
    return view


def _parse_json_object(text: Any, field: str) -> dict[str, Any]:
    if not isinstance(text, str):
        raise DecisionError("The edited input must be JSON text.", field=field)
    if len(text) > MAX_TEXT:
        raise DecisionError("The edited input is too long.", field=field)
    return parse_json_object(text, field=field)


def _rules_of(message: Mapping[str, Any]) -> list[int]:
    rules = message.get("rules") or []
    if not isinstance(rules, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in rules):
        raise DecisionError("rules must be a list of rule indices.", field="rules")
    return sorted(set(rules))


def message_to_entry(interrupt: Interrupt, message: Mapping[str, Any]) -> ResumeEntry:
    """The ``ResumeEntry`` a page message answers ``interrupt`` with (the
    inverse of :func:`resume_to_message`, for the client), checked against
    the interrupt's schema (:func:`effective_schema`) with ``jsonschema``.

    Actions: for nb_hitl's own interrupts the widget's ``approve`` /
    ``deny`` / ``modify`` / ``answer`` / ``external_result`` /
    ``return_error``; for any interrupt ``submit`` (``{"value": payload}``,
    the generated form) and ``cancel`` (status ``cancelled``, no payload).
    ``return_error`` is sent as ``cancelled``: the server turns it into an
    ERROR result (see the module docstring).

    Raises:
        DecisionError: unknown action, or a payload that breaks the schema
            (``field`` is where: ``input`` for an edited input, ``answers.0``,
            or the form field's path).
    """
    action = message.get("action")
    if action == "cancel" or action == "return_error":
        return ResumeEntry(interrupt_id=interrupt.id, status="cancelled")
    kind = our_kind(interrupt)
    schema = effective_schema(interrupt)
    if action == "submit":
        value = message.get("value")
        validate_payload(schema, value)
        return ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=value)
    if kind is None:
        raise DecisionError(
            f"This interrupt is answered with its form (submit) or cancelled, not {str(action)[:40]!r}.",
            field="action",
        )
    if kind == "confirm":
        if action == "approve":
            payload: dict[str, Any] = {"approved": True}
            rules = _rules_of(message)
            if rules:
                payload["acceptedRules"] = rules
        elif action == "deny":
            payload = {"approved": False}
        elif action == "modify":
            edited = _parse_json_object(message.get("input"), "input")
            name = message.get("name")
            meta_name = (interrupt.metadata or {}).get(META_KEY, {}).get("tool_name")
            if name is not None and name != meta_name:
                raise DecisionError(
                    "The tool name cannot be changed: an edited name would run another tool "
                    "without a permission check.",
                    field="name",
                )
            payload = {"approved": True, "editedArgs": edited}
            rules = _rules_of(message)
            if rules:
                payload["acceptedRules"] = rules
        else:
            raise DecisionError(
                f"This interrupt waits for a confirmation (approve, deny or modify), not {str(action)[:40]!r}.",
                field="action",
            )
        try:
            validate_payload(schema, payload)
        except DecisionError as exc:
            if exc.field and exc.field.startswith("editedArgs"):
                raise DecisionError(
                    str(exc).replace("at $.editedArgs", "at the input"), field="input" + exc.field[len("editedArgs") :]
                ) from None
            raise
        return ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=payload)
    if kind == "form":
        raise DecisionError(f"A form is answered with submit, not {str(action)[:40]!r}.", field="action")
    if kind == "review":
        if action == "accept":
            payload = {"action": "accept"}
        elif action == "edit":
            payload = {"action": "edit", "output": message.get("output")}
        elif action == "reject":
            payload = {"action": "reject"}
            if isinstance(message.get("reason"), str) and message["reason"].strip():
                payload["reason"] = message["reason"]
        else:
            raise DecisionError(
                f"A review is answered with accept, edit or reject, not {str(action)[:40]!r}.", field="action"
            )
        validate_payload(schema, payload)
        return ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=payload)
    if kind == "ask_user":
        if action != "answer":
            raise DecisionError(f"AskUser interrupts take answers, not {str(action)[:40]!r}.", field="action")
        answers = message.get("answers")
        if not isinstance(answers, list):
            raise DecisionError("answers must be a list.", field="answers")
        cleaned = []
        for a in answers:
            if not isinstance(a, dict):
                raise DecisionError("Each answer must be an object.", field="answers")
            other = a.get("other")
            other = other.strip() or None if isinstance(other, str) else other
            cleaned.append({"question": a.get("question"), "selected": a.get("selected") or [], "other": other})
        payload = {"answers": cleaned}
        validate_payload(schema, payload)
        return ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=payload)
    if action != "external_result":
        raise DecisionError(f"This interrupt waits for the tool's output, not {str(action)[:40]!r}.", field="action")
    payload = {"output": message.get("output"), "state": message.get("state", "success")}
    validate_payload(schema, payload)
    return ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=payload)
