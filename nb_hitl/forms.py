"""Structured questions: the agent asks for a value described by a JSON Schema.

AgentScope's ``AskUser`` offers 1-4 multiple-choice questions. :class:`FormTool`
(tool name ``AskForm``) lets the agent ask for *structured* input instead: a
number, a date, a choice from an enum, free text..., described by a JSON
Schema object. It is an AgentScope external tool (``is_external_tool=True``,
like ``AskUser``): the reply parks with ``RequireExternalExecutionEvent``
and nb_hitl's Session turns the pause into a form
(:meth:`FormTool.prepare_pause`: kind ``"form"``, ``title``, ``message``,
``response_schema``). The widget draws the form from the schema
(``js/lib/form.ts``, the renderer AG-UI interrupts carrying a
``response_schema`` use too) and sends ``{"action": "submit", "value": {...}}``;
:func:`nb_hitl.decisions.check_form_value` validates the value with
``jsonschema`` (Draft 2020-12, with ``FormatChecker`` so ``"format": "date"``
is enforced) before anything reaches the agent; an invalid value is refused
with the field's JSON path and the pause stays open.

The result the agent gets: ``ToolResultBlock(state=SUCCESS, output=<a line
naming the form + the value as JSON>, metadata={"value": value})``. The
model reads ``output``; programs read ``metadata["value"]`` (AgentScope keeps
it in the history and sends it on ``ToolResultEndEvent.metadata``), and the
tool's :attr:`FormTool.metadata_schema` makes AgentScope's
``check_external_result`` require it.

A schema that is not a valid JSON Schema (``Draft202012Validator.check_schema``)
or not an object of fields cannot be shown: the pause says why and can only
return that error to the agent (``return_error``), which can then ask again.
"""

from __future__ import annotations

from typing import Any

import jsonschema
from agentscope.permission import PermissionBehavior, PermissionContext, PermissionDecision
from agentscope.tool import ToolBase

__all__ = ["FormTool", "FORM_INPUT_SCHEMA", "FORM_METADATA_SCHEMA", "schema_problem"]

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
                '{"type": "string", "format": "date"}, {"type": "string", "enum": [...]}, '
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


def schema_problem(schema: Any) -> str | None:
    """Why a form schema cannot be shown, or ``None`` when it can.

    Checks: a JSON object; a valid JSON Schema for its declared draft
    (Draft 2020-12 by default; ``jsonschema``'s ``check_schema``);
    ``"type": "object"`` with a non-empty ``properties`` object whose values
    are objects.
    """
    if not isinstance(schema, dict):
        return "The schema is not a JSON object."
    validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        validator_cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        where = exc.json_path if getattr(exc, "json_path", "$") != "$" else "the schema"
        return f"Not a valid JSON Schema at {where}: {exc.message}"
    if schema.get("type") != "object":
        return 'A form schema must have "type": "object".'
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return 'A form schema needs "properties": one entry per field.'
    bad = [k for k, v in props.items() if not isinstance(v, dict)]
    if bad:
        return f"Field {bad[0]!r} is not described by an object."
    return None


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

    async def prepare_pause(self, pause: Any, session: Any) -> None:
        """Make the parked call's pause a form (called by the Session).

        Sets ``pause.kind = "form"``, ``title``, ``message`` and
        ``response_schema`` from the call's input; when the schema cannot be
        shown (:func:`schema_problem`), ``form_error`` says why.
        """
        pause.kind = "form"
        data = pause.input if isinstance(pause.input, dict) else {}
        title = data.get("title")
        message = data.get("message")
        pause.title = str(title) if isinstance(title, str) and title.strip() else "The agent asks for input"
        pause.message = str(message) if isinstance(message, str) and message.strip() else None
        schema = data.get("schema")
        problem = schema_problem(schema) if pause.input is not None else "The tool input is not a JSON object."
        if problem is None:
            pause.response_schema = schema
            pause.form_error = None
        else:
            pause.response_schema = schema if isinstance(schema, dict) else None
            pause.form_error = problem
