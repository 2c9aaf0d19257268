"""Kind ``form``: a structured question answered with a JSON value.

:class:`FormTool` (tool name ``AskForm``) is an AgentScope external tool
whose input carries a ``title``, a ``message`` and a JSON Schema object; its
:meth:`FormTool.prepare_pause` makes the pause a form. The widget (or an
AG-UI client) draws the form and sends ``submit`` with the value, checked by
:func:`check_form_value` (``jsonschema``, Draft 2020-12, formats enforced)
before anything reaches the agent. The schema is the model's: it goes
through :func:`nb_hitl.guard.check_schema` (nothing fetched, patterns in
RE2, no reference loops, size and depth capped) before it is drawn or used,
and a refused one gives the card its error (``form_error``). The result: ``ToolResultBlock(SUCCESS,
output=form_output(...), metadata={"value": value})``. A schema that cannot
be shown only returns its error (``return_error``). The AG-UI payload is the
value; its schema is the form's own. Design notes: ``docs/design.md``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import jsonschema
from agentscope.message import ToolResultBlock, ToolResultState
from agentscope.permission import PermissionBehavior, PermissionContext, PermissionDecision
from agentscope.tool import ToolBase

from ..errors import DecisionError
from ..guard import SchemaRefused, check_schema, validation_errors
from ..messages import MAX_TEXT
from ._base import Decision, PauseHost, PauseKindSpec, action_text, base_message, error_result
from ._schema import SCHEMA_DIALECT

if TYPE_CHECKING:
    from ag_ui.core import Interrupt

    from ..pauses import Pause

__all__ = [
    "FormKind",
    "FormTool",
    "FORM_ACTIONS",
    "FORM_INPUT_SCHEMA",
    "FORM_METADATA_SCHEMA",
    "schema_problem",
    "form_size_problem",
    "unsafe_problem",
    "MAX_FORM_FIELDS",
    "MAX_FIELD_CHOICES",
    "MAX_FORM_CHOICES",
    "MAX_SCHEMA_NODES",
    "check_form_value",
    "form_errors",
    "form_output",
]

FORM_ACTIONS = frozenset({"submit", "return_error"})
FORM_RETURN_ERROR_NEEDS = "Say what went wrong, or fill in the form."
"""Kind ``form``; ``return_error`` is also the deadline default."""


def _field_label(schema: dict[str, Any], name: str) -> str:
    prop = (schema.get("properties") or {}).get(name)
    if isinstance(prop, dict) and isinstance(prop.get("title"), str) and prop["title"]:
        return prop["title"]
    return name


def form_errors(schema: dict[str, Any], value: Any) -> list[tuple[str, str]]:
    """Every way a form's answer breaks its JSON Schema, one per field.

    Uses ``jsonschema`` through :func:`nb_hitl.guard.validation_errors`: the
    validator the schema declares (``$schema``), Draft 2020-12 by default,
    formats such as ``date`` enforced (plain JSON Schema only annotates
    them), patterns in RE2, nothing fetched; all errors, the most relevant
    one per field (``best_match``), in the schema's field order.

    Args:
        schema: the pause's ``response_schema``.
        value: the value the page sent (an object for a form).

    Returns:
        ``[(field, text), ...]``: ``field`` is the value's JSON path
        (``value.amount``; ``value.<name>`` for a missing required field;
        ``value`` for the whole value); ``text`` names the field by its title
        and says what is wrong. Empty when the value fits.

    Raises:
        DecisionError: the value is nested too deeply to be checked.
    """
    by_field: dict[str, list[jsonschema.ValidationError]] = {}
    missing: list[str] = []
    for error in validation_errors(schema, value):
        path = [str(p) for p in error.absolute_path]
        if error.validator == "required" and not path and isinstance(error.instance, dict):
            missing += [r for r in (error.validator_value or []) if r not in error.instance and r not in missing]
            continue
        by_field.setdefault(path[0] if path else "", []).append(error)
    found: dict[str, str] = {}
    for name in missing:
        found[name] = f"{_field_label(schema, name)}: this field is required."
    for name, errors in by_field.items():
        if name in found:
            continue
        best = jsonschema.exceptions.best_match(errors)
        label = _field_label(schema, name) if name else "The answer"
        found[name] = f"{label}: {best.message}" if best is not None else f"{label}: invalid"
    order = list((schema.get("properties") or {}).keys())
    names = sorted(found, key=lambda n: (order.index(n) if n in order else len(order), n))
    return [(f"value.{n}" if n else "value", found[n]) for n in names]


def check_form_value(schema: dict[str, Any], value: Any) -> None:
    """Check a form's answer against its JSON Schema (:func:`form_errors`).

    Raises:
        DecisionError: the text has one line per invalid field (each
            ``"<title>: <what is wrong>"``, in field order), so the page can
            mark every field at once; ``field`` is the first one's path.
    """
    errors = form_errors(schema, value)
    if errors:
        raise DecisionError("\n".join(text for _, text in errors), field=errors[0][0])


def form_output(title: str | None, value: Any) -> str:
    """The text the model reads for a submitted form: a line naming the form,
    then the value as indented JSON (exact, and readable)."""
    head = f'The user filled in the form "{title}":' if title else "The user filled in the form:"
    return head + "\n" + json.dumps(value, indent=2, ensure_ascii=False)


def _decide_form(pause: Pause, msg: Any) -> Decision:
    """submit / return_error for a ``form`` pause."""
    if msg.action == "submit":
        if pause.form_error is not None or pause.response_schema is None:
            raise DecisionError(
                "This form cannot be answered: "
                + (pause.form_error or "it has no schema.")
                + " Return the error to the agent instead.",
                field="action",
            )
        try:
            size = len(json.dumps(msg.value, ensure_ascii=False))
        except (TypeError, ValueError):
            raise DecisionError("The answer is not JSON.", field="value") from None
        if size > MAX_TEXT:
            raise DecisionError(f"The answer is too long ({size} characters; at most {MAX_TEXT}).", field="value")
        check_form_value(pause.response_schema, msg.value)
        return Decision(
            pause.tool_call_id,
            "submit",
            tool_result=ToolResultBlock(
                id=pause.tool_call_id,
                name=pause.tool_name,
                output=form_output(pause.title, msg.value),
                state=ToolResultState.SUCCESS,
                metadata={"value": msg.value},
            ),
        )
    if pause.form_error is None and not (msg.message or "").strip():
        raise DecisionError(FORM_RETURN_ERROR_NEEDS, field="message")
    text = msg.message or f"The form could not be shown to the user: {pause.form_error}"
    return Decision(pause.tool_call_id, "return_error", tool_result=error_result(pause, text))


FORM_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {
            "type": "string",
            "description": 'A short heading for the form, e.g. "Refund details".',
        },
        "message": {
            "type": "string",
            "description": "Optional text shown above the fields: what the answer is for.",
        },
        "schema": {
            "type": "object",
            "description": (
                "A JSON Schema (draft 2020-12) of the answer: an object whose `properties` are the fields. "
                'Supported fields: {"type": "number"|"integer"} (minimum/maximum allowed), '
                '{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"} (sent with '
                'the user\'s UTC offset), {"type": "string", "enum": [...]}, '
                '{"type": "boolean"}, {"type": "string"} (free text). Give each field a `title`, '
                "list mandatory fields in `required`."
            ),
        },
    },
    "required": ["title", "schema"],
}
"""What the model sends (``FormTool.input_schema``)."""

FORM_METADATA_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"value": {"description": "The value the person submitted; it fits the call's schema."}},
    "required": ["value"],
}
"""What a successful result carries in ``metadata`` (``FormTool.metadata_schema``)."""


MAX_FORM_FIELDS = 200
"""The most fields a form is drawn with (``properties`` entries, at any depth):
a schema with more is refused (nobody fills in such a form, and drawing it
would stall the page)."""

MAX_FIELD_CHOICES = 1000
"""The most choices (``enum`` values) one field of a form is drawn with."""

MAX_FORM_CHOICES = 5000
"""The most choices (``enum`` values) a whole form is drawn with."""

MAX_SCHEMA_NODES = 20_000
"""The most objects, arrays and values a form schema may hold: a larger one is
refused before anything else walks it (``jsonschema``'s check takes seconds
on a schema of 100,000 nested fields, and the kernel would not answer)."""


def form_size_problem(schema: Any) -> str | None:
    """Why ``schema`` is too large to draw as a form, or ``None``.

    A bounded walk (it stops at the first limit passed, so a schema of any
    size costs at most :data:`MAX_SCHEMA_NODES` steps) counts the fields
    (``properties`` entries, at any depth: :data:`MAX_FORM_FIELDS`), the
    choices of each ``enum`` (:data:`MAX_FIELD_CHOICES`) and of all of them
    (:data:`MAX_FORM_CHOICES`), and every object, array and value
    (:data:`MAX_SCHEMA_NODES`). A top-level field count is given exactly.
    Anything else wrong with the schema is :func:`schema_problem`'s to say.
    Used for nb_hitl's own ``AskForm`` and for a peer's AG-UI interrupt
    schemas alike, so no front end is asked to draw a form it cannot.
    """
    if not isinstance(schema, dict):
        return None
    top = schema.get("properties")
    if isinstance(top, dict) and len(top) > MAX_FORM_FIELDS:
        return f"it has {len(top)} fields (at most {MAX_FORM_FIELDS} are drawn)"
    fields = choices = nodes = 0
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        nodes += 1
        if nodes > MAX_SCHEMA_NODES:
            return f"its schema has more than {MAX_SCHEMA_NODES} parts"
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                fields += len(props)
                if fields > MAX_FORM_FIELDS:
                    return f"it has more than {MAX_FORM_FIELDS} fields, counting nested ones (at most {MAX_FORM_FIELDS} are drawn)"
            enum = node.get("enum")
            if isinstance(enum, list):
                if len(enum) > MAX_FIELD_CHOICES:
                    return f"a field has {len(enum)} choices (at most {MAX_FIELD_CHOICES} are drawn)"
                choices += len(enum)
                if choices > MAX_FORM_CHOICES:
                    return f"it has more than {MAX_FORM_CHOICES} choices in all (at most {MAX_FORM_CHOICES} are drawn)"
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def schema_problem(schema: Any, *, checked: bool = False) -> str | None:
    """Why a form schema cannot be shown, or ``None`` when it can.

    Checks: a JSON object; not too large to draw (:func:`form_size_problem`,
    checked first: a schema of 20,000 fields is refused before ``jsonschema``
    walks it); safe to use and a valid JSON Schema for its declared draft
    (:func:`unsafe_problem`: Draft 2020-12 by default, no reference outside
    the schema, no reference loop, RE2 patterns, size and depth capped) -
    these two skipped when ``checked``, the caller having run them; ``"type": "object"`` with a non-empty ``properties``
    object whose values are objects.
    """
    if not isinstance(schema, dict):
        return "The schema is not a JSON object."
    if not checked:
        large = form_size_problem(schema)
        refused = too_large(large) if large is not None else unsafe_problem(schema)
        if refused is not None:
            return refused
    if schema.get("type") != "object":
        return 'A form schema must have "type": "object".'
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return 'A form schema needs "properties": one entry per field.'
    bad = [k for k, v in props.items() if not isinstance(v, dict)]
    if bad:
        return f"Field {bad[0]!r} is not described by an object."
    return None


def unsafe_problem(schema: dict[str, Any]) -> str | None:
    """What the card and the model read of a schema
    :func:`nb_hitl.guard.check_schema` refuses, or ``None``."""
    try:
        check_schema(schema)
    except SchemaRefused as exc:
        return f"The schema cannot be used: {exc}."
    return None


def too_large(problem: str) -> str:
    """What the model reads of a form too large to show (:func:`form_size_problem`'s ``problem``)."""
    return f"The form is too large to show: {problem}. Ask in smaller parts."


class FormTool(ToolBase):
    """The ``AskForm`` tool: ask the user for a value fitting a JSON Schema.

    External (answered by a person through the widget, never run by the
    agent), read-only and always permitted, like AgentScope's ``AskUser``.

    Args:
        name: the tool name the model sees (default ``"AskForm"``).

    Input (``FORM_INPUT_SCHEMA``): ``{"title": str, "message"?: str,
    "schema": {JSON Schema of an object}}``. Result: see the module docstring.
    """

    description = (
        "Ask the user to fill in a small form, when you need structured values (numbers, dates, a choice "
        "from a fixed list, short text) rather than a multiple-choice answer. Describe the answer with a "
        "JSON Schema object in `schema`. The result's text gives the submitted value as JSON; the same "
        "value is in the result's metadata under `value`."
    )
    input_schema = FORM_INPUT_SCHEMA
    metadata_schema = FORM_METADATA_SCHEMA
    is_external_tool = True
    is_read_only = True
    is_concurrency_safe = True
    is_state_injected = False

    def __init__(self, name: str = "AskForm") -> None:
        super().__init__()
        self.name = name

    async def check_permissions(self, tool_input: dict[str, Any], context: PermissionContext) -> PermissionDecision:
        """Always ALLOW: the call *is* a question to the person (as ``AskUser``)."""
        return PermissionDecision(
            behavior=PermissionBehavior.ALLOW,
            message=f"The {self.name} tool only asks the user; it is always permitted.",
        )

    async def prepare_pause(self, pause: Pause, host: PauseHost) -> None:
        """Make the parked call's pause a form (called by the Session).

        Sets ``pause.kind = "form"``, ``title``, ``message`` and
        ``response_schema`` from the call's input; when the schema cannot be
        shown (:func:`schema_problem`), ``form_error`` says why, and a schema
        too large or unsafe to use (:func:`form_size_problem`,
        :func:`unsafe_problem`) is not kept as ``response_schema`` either.
        """
        pause.kind = "form"
        data = pause.input if isinstance(pause.input, dict) else {}
        title = data.get("title")
        message = data.get("message")
        pause.title = str(title) if isinstance(title, str) and title.strip() else "The agent asks for input"
        pause.message = str(message) if isinstance(message, str) and message.strip() else None
        schema = data.get("schema")
        # a form too large to draw is not offered as a form either (the call's input still holds it)
        large = form_size_problem(schema) if isinstance(schema, dict) else None
        unsafe = unsafe_problem(schema) if isinstance(schema, dict) and large is None else None
        if pause.input is None:
            problem: str | None = "The tool input is not a JSON object."
        elif large is not None:
            problem = too_large(large)
        else:
            problem = unsafe or schema_problem(schema, checked=True)
        usable = isinstance(schema, dict) and large is None and unsafe is None
        pause.response_schema = schema if usable else None
        pause.form_error = problem


class FormKind(PauseKindSpec):
    """submit / return_error -> ``ToolResultBlock`` (see the module docstring)."""

    name = "form"
    actions = FORM_ACTIONS
    waits_for = "the form's answer (submit)"
    cancelled_what = "form"
    return_error_needs_text = FORM_RETURN_ERROR_NEEDS

    def _decide(self, pause: Pause, msg: Any) -> Decision:
        return _decide_form(pause, msg)

    def cancel_message(self, pause: Pause) -> dict[str, Any]:
        if pause.form_error:
            # decide: the default text names the form's problem
            return {**base_message(pause), "action": "return_error"}
        return super().cancel_message(pause)

    def response_schema(self, pause: Pause) -> dict[str, Any]:
        schema, problem = pause.response_schema, pause.form_error
        if problem or not isinstance(schema, dict):
            return {
                "$schema": SCHEMA_DIALECT,
                "not": {},
                "description": f"This form cannot be answered ({problem or 'it has no schema'}); resume this "
                "interrupt with status 'cancelled' to return the error to the agent.",
            }
        return copy.deepcopy(schema)

    def interrupt_message(self, pause: Pause) -> str:
        if pause.form_error:
            return f"The agent's form cannot be shown: {pause.form_error}"
        return " - ".join(t for t in (pause.title, pause.message) if t) or f"{pause.tool_name} asks for input."

    def resume_message(self, pause: Pause, payload: Any) -> dict[str, Any]:
        return {**base_message(pause), "action": "submit", "value": payload}

    def view_fields(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        return {"message": meta.get("message"), "form_error": meta.get("form_error")}

    def entry_payload(self, interrupt: Interrupt, message: Mapping[str, Any], schema: dict[str, Any]) -> Any:
        raise DecisionError(
            f"A form is answered with submit, not {action_text(message.get('action'))}.", field="action"
        )
