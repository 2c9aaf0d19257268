"""The card of one remote interrupt: checked before anything draws or answers it.

An interrupt comes from a peer (untrusted). :func:`checked_interrupt` gives
the copy the client uses (its ``response_schema`` checked and stripped of
patterns, its ``metadata.nb_hitl`` checked: :func:`metadata_problem`), and
:func:`safe_view` the pause view the page draws
(:func:`~nb_hitl.agui.mapping.interrupt_view`), checked field by field
(:func:`view_problem`). An interrupt that cannot be answered as sent still
gets a card: a form that says what is wrong and offers only to cancel it.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import Interrupt
from agentscope.tool import AskUserParams
from pydantic import ValidationError

from ..guard import SchemaRefused, check_schema, without_patterns
from ..kinds.form import form_size_problem
from ..messages import format_validation_error
from .interrupt_views import OUR_KINDS, interrupt_view, our_kind
from .mapping import META_KEY, META_TEXT, META_VERSION

__all__ = ["TEXT_FIELDS", "checked_interrupt", "metadata_problem", "safe_view", "view_problem"]


TEXT_FIELDS = ("permission_message", "decision_reason", "policy", "ask_user_error", *META_TEXT)
"""Fields of a pause view that are text or ``None`` (the page shows them as text)."""


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _rules_problem(rules: Any) -> str | None:
    if not isinstance(rules, list):
        return f"suggested_rules is {_type_name(rules)}, not a list"
    for n, r in enumerate(rules):
        if not isinstance(r, dict):
            return f"suggested_rules.{n} is {_type_name(r)}, not an object"
        index, label = r.get("index", n), r.get("label", "")
        if not isinstance(index, int) or isinstance(index, bool) or not isinstance(label, str):
            return f"suggested_rules.{n} needs an integer index and a text label"
    return None


def _ask_user_problem(ask: Any) -> str | None:
    if ask is None:
        return None
    try:
        AskUserParams.model_validate(ask)  # AgentScope's own model of AskUser's input
    except ValidationError as exc:
        return f"ask_user is not AskUser's input ({format_validation_error(exc)[:300]})"
    return None


def view_problem(view: dict[str, Any]) -> str | None:
    """What in a pause view the page could not draw, or ``None``.

    The view's fields come from the peer's interrupt (:func:`interrupt_view`
    copies ``metadata.nb_hitl``); each must have the type the page reads:
    ``tool_name`` and ``input_text`` text, :data:`TEXT_FIELDS` text or
    ``None``, ``input_schema`` an object or ``None``, ``response_schema`` an
    object, ``suggested_rules`` a list of ``{"index": int, "label": str}``,
    ``ask_user`` ``None`` or AskUser's input (``AskUserParams``), ``deadline``
    a number or ``None``, ``approvals`` a list of ``{"by": str, "at": number}``
    and ``approvals_needed`` a positive integer.
    """
    for key in ("tool_name", "input_text"):
        if not isinstance(view.get(key), str):
            return f"{key} is {_type_name(view.get(key))}, not text"
    for key in TEXT_FIELDS:
        if view.get(key) is not None and not isinstance(view[key], str):
            return f"{key} is {_type_name(view[key])}, not text"
    if view.get("input_schema") is not None and not isinstance(view["input_schema"], dict):
        return f"input_schema is {_type_name(view['input_schema'])}, not an object"
    if not isinstance(view.get("response_schema"), dict):
        return "it carries no response schema"
    deadline = view.get("deadline")
    if deadline is not None and (not isinstance(deadline, int | float) or isinstance(deadline, bool)):
        return f"deadline is {_type_name(deadline)}, not a time"
    return (
        _rules_problem(view.get("suggested_rules", []))
        or _ask_user_problem(view.get("ask_user"))
        or _approvals_problem(view.get("approvals", []), view.get("approvals_needed", 1))
    )


def _approvals_problem(approvals: Any, needed: Any) -> str | None:
    if not isinstance(needed, int) or isinstance(needed, bool):
        return f"approvals_needed is {_type_name(needed)}, not a positive integer"
    if needed < 1:
        return f"approvals_needed is {needed}, not a positive integer"
    if not isinstance(approvals, list):
        return f"approvals is {_type_name(approvals)}, not a list"
    for n, a in enumerate(approvals):
        at = a.get("at") if isinstance(a, dict) else None
        if (
            not isinstance(a, dict)
            or not isinstance(a.get("by"), str)
            or not isinstance(at, int | float)
            or isinstance(at, bool)
        ):
            return f"approvals.{n} needs a text 'by' and a time 'at'"
    return None


def metadata_problem(interrupt: Interrupt) -> str | None:
    """What is wrong with an interrupt's ``metadata.nb_hitl`` (``None``: fine,
    or no such metadata: then the interrupt is drawn as a form): not an
    object, another version, an unknown kind, no ``response_schema`` (nb_hitl's
    interrupts always carry one), or fields of the wrong type (see
    :func:`view_problem`; AskUser's questions are checked with
    ``AskUserParams``)."""
    meta = interrupt.metadata.get(META_KEY) if isinstance(interrupt.metadata, dict) else None
    if meta is None:
        return None
    where = f"its metadata.{META_KEY}"
    if not isinstance(meta, dict):
        return f"{where} is not an object"
    if meta.get("version") != META_VERSION:
        return f"{where}.version is {str(meta.get('version'))[:40]!r}, not {META_VERSION}"
    if meta.get("kind") not in OUR_KINDS:
        return f"{where}.kind {str(meta.get('kind'))[:40]!r} is not one of {', '.join(OUR_KINDS)}"
    if interrupt.response_schema is None:
        return f"it carries no response schema (a {meta['kind']} interrupt of nb_hitl always does)"
    for key in ("tool_name", "input_text"):
        if key in meta and not isinstance(meta[key], str):
            return f"{where}.{key} is {_type_name(meta[key])}, not text"
    problem = _rules_problem(meta.get("suggested_rules", [])) or _ask_user_problem(meta.get("ask_user"))
    if problem is not None:
        return f"{where}.{problem}"
    if our_kind(interrupt) is None:
        return f"{where} does not fit kind {meta['kind']!r}"
    return None


def checked_interrupt(interrupt: Interrupt, given: int = 1) -> tuple[Interrupt, str | None]:
    """The interrupt as the rest of the client may use it, and what is wrong
    with it (``None``: nothing).

    The copy's ``response_schema`` has no patterns
    (:func:`~nb_hitl.guard.without_patterns`); an id the outcome gives
    ``given`` > 1 interrupts (no answer could say which of them it is for),
    a schema too large to draw (:func:`~nb_hitl.kinds.form.form_size_problem`)
    or refused by :func:`~nb_hitl.guard.check_schema`, or malformed metadata,
    gives a copy with neither, answerable only by cancelling.
    """
    if given > 1:
        repeated = (
            f"the server's outcome gives its id to {given} interrupts, so no answer could say which of them "
            "it is for (the server repeated an interrupt id)"
        )
        return interrupt.model_copy(update={"response_schema": None, "metadata": None}), repeated
    try:
        large = form_size_problem(interrupt.response_schema)
        if large is not None:
            raise SchemaRefused(f"it is too large to show: {large}")
        check_schema(interrupt.response_schema)
    except SchemaRefused as exc:
        return interrupt.model_copy(update={"response_schema": None, "metadata": None}), f"its response schema: {exc}"
    problem = metadata_problem(interrupt)
    if problem is not None:
        return interrupt.model_copy(update={"response_schema": None, "metadata": None}), problem
    return interrupt.model_copy(update={"response_schema": without_patterns(interrupt.response_schema)}), None


def safe_view(
    interrupt: Interrupt, problem: str | None, *, key: str, run_id: str, **call: str | None
) -> dict[str, Any]:
    """The pause view of a checked interrupt; when it cannot be answered (a
    ``problem``, or metadata that breaks the view: :func:`view_problem`), a
    form card that says why (``form_error``) and offers only to cancel
    (``return_error``, sent as a ``cancelled`` entry). Every interrupt gets
    a card: never "waiting" over none."""
    if problem is None:
        try:
            view = interrupt_view(interrupt, key=key, run_id=run_id, **call)
            problem = view_problem(view)
            if problem is None:
                return view
            problem = f"its metadata.{META_KEY}.{problem}" if not problem.startswith("it ") else problem
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            problem = f"its metadata could not be read ({type(exc).__name__}: {str(exc)[:160]})"
        interrupt = interrupt.model_copy(update={"response_schema": None, "metadata": None})
    view = interrupt_view(interrupt, key=key, run_id=run_id, **call)
    view["kind"] = "form"
    view["form_error"] = f"interrupt {interrupt.id[:80]} cannot be answered: {problem}. It can only be cancelled."
    view["unanswerable"] = True
    return view
