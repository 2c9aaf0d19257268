"""The messages a page sends about a pause, validated (pure).

A widget (or the AG-UI mapping) answers a pause with ``{"action": ...,
"tool_call_id": ..., ...}``. :func:`parse_message` checks its shape with
pydantic and returns one of the ``*Message`` models; :func:`parse_json_object`
and :func:`parse_edited_input` parse a tool input a person typed. Which
action fits which pause kind, and what it turns into, is the kind's business
(:mod:`nb_hitl.kinds`). Every refusal is a
:class:`~nb_hitl.errors.DecisionError` naming the field at fault.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from .errors import DecisionError
from .guard import SchemaRefused, check_schema, field_words, validation_errors

__all__ = [
    "MAX_TEXT",
    "MAX_SHORT",
    "ApproveMessage",
    "DenyMessage",
    "ModifyMessage",
    "AnswerIn",
    "AnswerMessage",
    "ExternalResultMessage",
    "ReturnErrorMessage",
    "AcceptMessage",
    "EditMessage",
    "RejectMessage",
    "SubmitMessage",
    "DeclineMessage",
    "CancelMessage",
    "PageMessage",
    "ReplayRequest",
    "WhatIfListRequest",
    "WhatIfRequest",
    "parse_request",
    "parse_message",
    "parse_json_object",
    "parse_edited_input",
    "format_validation_error",
]

MAX_TEXT = 1_000_000
"""Largest text accepted from the page (edited input, tool output), in characters."""
MAX_SHORT = 20_000
"""Largest free-text answer ("Other") accepted, in characters."""
NOT_FINITE = "NaN and Infinity are not JSON numbers; write a number."
"""What a person reads for ``NaN`` or ``Infinity`` in an input they typed."""


# -- the messages the page may send (validated with pydantic) --------------
class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    request_id: str | int | None = None
    tool_call_id: str = Field(min_length=1, max_length=512)
    reply_id: str | None = Field(default=None, max_length=512)


class RuleEditIn(BaseModel):
    """A suggested rule narrowed or edited before "Always allow" adds it (C18)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    index: int = Field(ge=0, le=64)
    rule_content: str | None = Field(max_length=2000)


class ApproveMessage(_Msg):
    action: Literal["approve"]
    rules: list[Annotated[int, Field(ge=0, le=64)]] = Field(default_factory=list, max_length=64)
    rule_edits: list[RuleEditIn] = Field(default_factory=list, max_length=64)


class DenyMessage(_Msg):
    action: Literal["deny"]
    # the person's reason, told to the model with the denial
    reason: str | None = Field(default=None, max_length=MAX_SHORT)
    # who decided: the person, the session's deadline, or an AG-UI "cancelled" entry
    cause: Literal["person", "timeout", "cancelled"] = "person"
    # "Always deny": indices of the pause's suggested_rules to add as deny rules
    deny_rules: list[Annotated[int, Field(ge=0, le=64)]] = Field(default_factory=list, max_length=64)


class ModifyMessage(_Msg):
    action: Literal["modify"]
    input: str = Field(max_length=MAX_TEXT)
    name: str | None = Field(default=None, max_length=512)
    rules: list[Annotated[int, Field(ge=0, le=64)]] = Field(default_factory=list, max_length=64)


class AnswerIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    question: str = Field(max_length=MAX_SHORT)
    selected: list[Annotated[str, Field(max_length=MAX_SHORT)]] = Field(default_factory=list, max_length=16)
    other: str | None = Field(default=None, max_length=MAX_SHORT)


class AnswerMessage(_Msg):
    action: Literal["answer"]
    answers: list[AnswerIn] = Field(max_length=16)


class ExternalResultMessage(_Msg):
    action: Literal["external_result"]
    output: str = Field(max_length=MAX_TEXT)
    state: Literal["success", "error"] = "success"


class ReturnErrorMessage(_Msg):
    action: Literal["return_error"]
    message: str | None = Field(default=None, max_length=MAX_SHORT)


class AcceptMessage(_Msg):
    action: Literal["accept"]
    # an MCP elicitation's answer (kind ``elicitation``); a review takes no content
    content: dict[str, Any] | None = None


class EditMessage(_Msg):
    action: Literal["edit"]
    # a review's (or a sampling completion's) edited text
    output: str | None = Field(default=None, max_length=MAX_TEXT)
    # an MCP sampling request's edited messages: the text of each, in order
    messages: list[Annotated[str, Field(max_length=MAX_TEXT)]] | None = Field(default=None, max_length=1000)


class RejectMessage(_Msg):
    action: Literal["reject"]
    reason: str | None = Field(default=None, max_length=MAX_SHORT)


class SubmitMessage(_Msg):
    action: Literal["submit"]
    value: Any


class DeclineMessage(_Msg):
    """An MCP elicitation declined: the person said no to giving the input."""

    action: Literal["decline"]


class CancelMessage(_Msg):
    """An MCP elicitation dismissed without a choice (by the person, the deadline, or an AG-UI cancel)."""

    action: Literal["cancel"]
    cause: Literal["person", "timeout", "cancelled"] = "person"


PageMessage = Annotated[
    ApproveMessage
    | DenyMessage
    | ModifyMessage
    | AnswerMessage
    | ExternalResultMessage
    | ReturnErrorMessage
    | AcceptMessage
    | EditMessage
    | RejectMessage
    | SubmitMessage
    | DeclineMessage
    | CancelMessage,
    Field(discriminator="action"),
]
_adapter: TypeAdapter[Any] = TypeAdapter(PageMessage)


_BY_ACTION: dict[str, type[_Msg]] = {
    model.model_fields["action"].annotation.__args__[0]: model  # type: ignore[union-attr]
    for model in (
        ApproveMessage,
        DenyMessage,
        ModifyMessage,
        AnswerMessage,
        ExternalResultMessage,
        ReturnErrorMessage,
        AcceptMessage,
        EditMessage,
        RejectMessage,
        SubmitMessage,
        DeclineMessage,
        CancelMessage,
    )
}


def _unknown_field_text(action: str, name: str) -> str:
    """A message with a field its action does not take (a typo such as ``reson``, or ``input`` on an
    approve): refused, never answered as if the field were not there."""
    model = _BY_ACTION.get(action)
    takes = sorted(set(model.model_fields) - {"action", "request_id", "tool_call_id", "reply_id"}) if model else []
    fields = ", ".join(takes) if takes else "no other field"
    return (
        f"This {action[:40]} message has no field {name[:80]!r}, so nothing was done "
        f"(it takes: {fields}; besides tool_call_id and reply_id)."
    )


_FIELD_WORDS = {
    "input": "The edited input",
    "reason": "The reason",
    "output": "The edited result",
    "other": "The Other answer",
    "selected": "A picked option's label",
}


def _too_long_text(name: str, error: Mapping[str, Any]) -> str:
    """A text field past its limit, in a person's words (pydantic says "String should have at
    most 1000000 characters"): how long it is, the limit, and that the card keeps it."""
    given = error.get("input")
    limit = (error.get("ctx") or {}).get("max_length")
    size = f"{len(given):,} characters" if isinstance(given, str) else "too many characters"
    most = f", and an answer takes at most {limit:,}" if isinstance(limit, int) else ""
    what = _FIELD_WORDS.get(name, f"The field {name[:40]!r}")
    return f"{what} is too long: {size}{most}. Nothing reached the agent; shorten it in the card."


def parse_message(message: Any) -> Any:
    """Validate a raw page message's shape.

    Args:
        message: whatever arrived over the comm.

    Returns:
        one of the ``*Message`` pydantic models.

    Raises:
        DecisionError: unknown action, wrong types, missing or oversized
            fields, a field the action does not take (a typo is refused, never
            ignored: ``{"action": "deny", "reson": ...}`` would deny without the
            reason); ``field`` names the first one at fault.
    """
    if not isinstance(message, dict):
        raise DecisionError("A page message must be a JSON object.")
    try:
        return _adapter.validate_python(message)
    except ValidationError as exc:
        errors = exc.errors()
        loc = [str(p) for p in errors[0].get("loc", ())] if errors else []
        # drop the discriminator tag pydantic puts first
        if loc and loc[0] == message.get("action"):
            loc = loc[1:]
        if errors and errors[0].get("type") == "extra_forbidden" and len(loc) == 1:
            raise DecisionError(_unknown_field_text(str(message.get("action")), loc[0]), field=loc[0]) from None
        if errors and errors[0].get("type") == "string_too_long" and loc:
            name = next((part for part in reversed(loc) if not part.isdigit()), loc[-1])
            raise DecisionError(_too_long_text(name, errors[0]), field=".".join(loc)) from None
        raise DecisionError(
            f"This {message.get('action', 'message')!s:.40} message is not valid: {format_validation_error(exc)}",
            field=".".join(loc) or None,
        ) from None


# -- requests on a finished reply: "Replay" and "What if…" (not answers) ----
class _Request(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    request_id: str | int | None = None


class ReplayRequest(_Request):
    """ "Replay" on a finished reply: play it again from the record, below it."""

    action: Literal["replay"]


class WhatIfListRequest(_Request):
    """ "What if…" opened: which of the reply's past pauses can be answered differently."""

    action: Literal["what_if_list"]


class WhatIfRequest(_Request):
    """A past pause chosen to answer differently (``live``: the real tools run after it)."""

    action: Literal["what_if"]
    tool_call_id: str = Field(min_length=1, max_length=512)
    live: bool = False


ReplyRequest = Annotated[ReplayRequest | WhatIfListRequest | WhatIfRequest, Field(discriminator="action")]
_requests: TypeAdapter[Any] = TypeAdapter(ReplyRequest)


def parse_request(message: Any) -> Any:
    """Validate a "Replay" / "What if…" request from a finished reply's page.

    Returns:
        a :class:`ReplayRequest`, :class:`WhatIfListRequest` or :class:`WhatIfRequest`.

    Raises:
        DecisionError: wrong shape; ``field`` names the field at fault.
    """
    try:
        return _requests.validate_python(message)
    except ValidationError as exc:
        errors = exc.errors()
        loc = [str(p) for p in errors[0].get("loc", ())][1:] if errors else []
        raise DecisionError(
            f"This {message.get('action', 'request')!s:.40} request is not valid: {format_validation_error(exc)}",
            field=".".join(loc) or None,
        ) from None


def format_validation_error(exc: ValidationError) -> str:
    """One line per pydantic error: ``questions.0.options: labels must be unique``."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(input)"
        msg = err.get("msg", "invalid")
        lines.append(f"{loc}: {msg}")
    return "\n".join(lines)


def parse_json_object(text: str, field: str = "input") -> dict[str, Any]:
    """Parse JSON text a person typed into a tool input object.

    Shared by every place a person types a tool input (Modify here, the
    AG-UI client's edited args, the permission explorer's "try a call").
    Stricter than ``json.loads``: a key given twice is refused instead of
    silently keeping the last one, because the input runs as typed; and
    ``NaN``, ``Infinity`` or a number too large for a float (``1e400``) is
    refused, as AgentScope refuses them (they are not JSON numbers).

    Raises:
        DecisionError: with ``field`` for text that is not JSON (line and
            column given), not an object, has a duplicate key or a
            non-finite number.
    """

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, val in pairs:
            if key in seen:
                raise DecisionError(f"The key {key[:80]!r} is given twice in the input.", field=field)
            seen[key] = val
        return seen

    def no_constant(name: str) -> Any:
        raise DecisionError(NOT_FINITE, field=field)

    def finite(digits: str) -> float:
        number = float(digits)
        if not math.isfinite(number):  # 1e400: json reads it as infinity
            raise DecisionError(
                f"{digits[:40]} is too large to be a number the tool can take; write a smaller one.", field=field
            )
        return number

    try:
        value = json.loads(text, object_pairs_hook=no_duplicates, parse_constant=no_constant, parse_float=finite)
    except json.JSONDecodeError as exc:
        raise DecisionError(
            f"The input is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).",
            field=field,
        ) from None
    if not isinstance(value, dict):
        raise DecisionError("The input must be a JSON object ({...}).", field=field)
    return value


def parse_edited_input(text: str, input_schema: dict[str, Any] | None) -> dict[str, Any]:
    """Parse the edited tool input and check it against the tool's schema.

    Args:
        text: the JSON text the person typed.
        input_schema: the tool's ``input_schema`` (JSON Schema), or None.

    Returns:
        the input as a dict.

    Two checks are stricter than plain JSON / JSON Schema, because the edit
    is run as typed: a key given twice is refused (``json`` would keep the
    last one silently), and when the schema lists ``properties`` without
    saying anything about ``additionalProperties``, keys it does not list are
    refused (AgentScope passes the input as keyword arguments to a function
    tool, which would fail on an unknown one).

    Raises:
        DecisionError: with ``field="input"`` for text that is not JSON
            (line and column given), not an object, or has a duplicate key;
            or with the JSON path of the value that breaks the schema
            (``jsonschema``'s message, through :mod:`nb_hitl.guard`: the
            tool's schema may be a peer's, e.g. an MCP server's); with
            ``field=None`` when that schema cannot be used safely.
    """
    value = parse_json_object(text, field="input")
    if input_schema:
        if (
            isinstance(input_schema.get("properties"), dict)
            and "additionalProperties" not in input_schema
            and "patternProperties" not in input_schema
        ):
            input_schema = {**input_schema, "additionalProperties": False}
        try:
            check_schema(input_schema)
        except SchemaRefused as exc:
            raise DecisionError(f"The tool's input schema cannot be used to check the input: {exc}.") from None
        error = jsonschema.exceptions.best_match(
            iter(validation_errors(input_schema, value, field="input", formats=False))
        )
        if error is not None:
            raise DecisionError(
                input_error_text(error), field="input" + (error.json_path[1:] if error.json_path != "$" else "")
            )
    return value


def input_error_text(error: jsonschema.ValidationError) -> str:
    """What a person reads when an edited tool input breaks the tool's schema:
    one sentence, in plain words, ending in one full stop. A key the tool does
    not take is named as such ("The input has a field the tool does not take:
    extra."); any other fault names where it is and ``jsonschema``'s message.

    Args:
        error: the first fault ``jsonschema`` found (``best_match``) in the input.
    """
    place = field_words(error.json_path)
    inside = f" in {place}" if place else ""
    listed = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
    if (
        error.validator == "additionalProperties"
        and isinstance(error.instance, Mapping)
        and isinstance(listed, Mapping)
        and "patternProperties" not in error.schema
    ):
        extra = [str(k) for k in error.instance if k not in listed]
        if extra:
            fields = "a field" if len(extra) == 1 else "fields"
            return f"The input{inside} has {fields} the tool does not take: {', '.join(extra)}."
    return f"The input does not match the tool's schema{inside}: {error.message.rstrip('.')}."
