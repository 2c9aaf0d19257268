"""Kind ``elicitation``: an MCP server asks the person for input while its tool runs.

An MCP server handling a ``tools/call`` may ask the user for structured input
(MCP "elicitation", form mode: a ``message`` and a flat ``requestedSchema``).
:mod:`nb_hitl.mcp` turns the request into a pause of this kind under the
running tool call; the person answers ``accept`` (with ``content`` fitting
the schema), ``decline`` or ``cancel``, as MCP's ``ElicitResult`` has it. The
answer goes back to the server, never to the agent: the tool call is still
running, and what the model reads is the tool's own result.

The schema comes from the server and is untrusted: it is checked once when
the pause is built, as a form's (:func:`elicitation_schema_problem`: through
:mod:`nb_hitl.guard`, a valid JSON Schema of an object of flat fields, not too
large to draw, no ``$ref`` outside itself, only linear-time patterns), and the
content as a form's value (nothing fetched, RE2 patterns). A schema that cannot be shown
leaves only ``decline`` and ``cancel``. The deadline default and an AG-UI
``cancelled`` entry are ``cancel`` (nobody chose). AG-UI payload:
``{"action": "accept" | "decline" | "cancel", "content"?: object}``.

URL mode (``Pause.elicitation_url``): the server sends the person to a page
(a sign-in, a payment, a secret that must not pass through the client). The
address is untrusted: :func:`url_problem` lets only an absolute ``https`` or
``http`` URL with a host and no user name or password through; another
leaves only ``decline`` and ``cancel``. The card shows it as text and opens
it only on a click; ``accept`` ("Done") takes no content, and the server
reads only which of the three it was.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import DecisionError
from ..messages import MAX_TEXT
from ._base import Decision, PauseKindSpec, action_text, base_message
from ._schema import REASON_INPUT_REQUIRED, SCHEMA_DIALECT, embed_schema, validate_payload
from .form import check_form_value, schema_problem

if TYPE_CHECKING:
    from ag_ui.core import Interrupt

    from ..pauses import Pause

__all__ = ["ElicitationKind", "ELICITATION_ACTIONS", "elicitation_schema_problem", "check_content", "url_problem"]

ELICITATION_ACTIONS = frozenset({"accept", "decline", "cancel"})
"""MCP's three answers to an elicitation (``ElicitResult.action``)."""


PRIMITIVE_TYPES = frozenset({"string", "number", "integer", "boolean", "array"})
"""The field types of an MCP elicitation form (``PrimitiveSchemaDefinition``;
``array`` for a multi-select of enum strings)."""


def elicitation_schema_problem(schema: Any) -> str | None:
    """Why an MCP server's ``requestedSchema`` cannot be drawn as a form, or ``None``.

    A form's checks (:func:`~nb_hitl.kinds.form.schema_problem`: not too
    large to draw, :func:`nb_hitl.guard.check_schema` - no reference outside
    the schema, RE2-only patterns, a valid JSON Schema - and an object with
    fields), then MCP's: each field of a primitive type (:data:`PRIMITIVE_TYPES`).
    """
    problem = schema_problem(schema)
    if problem is not None:
        return problem
    for name, prop in schema["properties"].items():
        if prop.get("type") not in PRIMITIVE_TYPES:
            return (
                f"Field {name[:80]!r} is not a string, number, integer, boolean or list of choices "
                "(MCP asks for flat forms of primitive fields)."
            )
    return None


MAX_URL = 2048
"""The longest URL a URL-mode elicitation may send the person to (characters)."""


def url_problem(url: Any) -> str | None:
    """Why an MCP server's URL-mode address cannot be offered to the person, or ``None``.

    Offered: a string of at most :data:`MAX_URL` characters, without spaces
    or control characters, an absolute ``https`` or ``http`` URL with a host
    and no user name or password (``https://bank.example@evil.example`` reads
    as one host and opens another).
    """
    from urllib.parse import urlsplit

    if not isinstance(url, str) or not url:
        return "The server sent no URL."
    if len(url) > MAX_URL:
        return f"The server's URL is too long ({len(url)} characters; at most {MAX_URL})."
    if any(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf") for ch in url):
        return "The server's URL contains spaces or invisible characters."
    try:
        parts = urlsplit(url)
        host = parts.hostname
        has_user = parts.username is not None or parts.password is not None
        _ = parts.port  # raises ValueError for a port out of range
    except ValueError as exc:
        return f"The server's URL cannot be read ({exc})."
    if parts.scheme.lower() not in ("https", "http"):
        return f"The server's URL is not a web address (scheme {parts.scheme[:20]!r}; only https and http are opened)."
    if not host:
        return "The server's URL names no host."
    if has_user:
        return "The server's URL carries a user name or password before its host; it is not opened."
    return None


def check_content(schema: dict[str, Any], content: Any) -> None:
    """Check an accepted elicitation's ``content`` against the server's schema,
    as a form's value (:func:`~nb_hitl.kinds.form.check_form_value`: every
    field's error at once, nothing fetched, patterns in RE2, formats checked).

    Raises:
        DecisionError: not a JSON object, too long, a field the schema does
            not name (MCP's requested schema is a flat object naming every
            field, and the SDK's server drops the others: what the record
            says was answered must be what the server got), or breaks the
            schema (``field`` = ``value.<name>``, as a form's).
    """
    if not isinstance(content, dict):
        raise DecisionError("The answer must be a JSON object of the form's fields.", field="value")
    try:
        size = len(json.dumps(content, ensure_ascii=False))
    except (TypeError, ValueError):
        raise DecisionError("The answer is not JSON.", field="value") from None
    if size > MAX_TEXT:
        raise DecisionError(f"The answer is too long ({size} characters; at most {MAX_TEXT}).", field="value")
    properties = schema.get("properties")
    asked: dict[str, Any] = properties if isinstance(properties, dict) else {}
    unasked = [name for name in content if name not in asked]
    if unasked:  # MCP's requested schema is flat and names every field: the server would drop the rest
        names = ", ".join(repr(n[:80]) for n in unasked[:5])
        raise DecisionError(
            f"The answer has fields the server did not ask for ({names}); send only the form's fields.",
            field=f"value.{unasked[0][:80]}",
        )
    check_form_value(schema, content)


class ElicitationKind(PauseKindSpec):
    """accept / decline / cancel -> the server's ``ElicitResult`` (see the module docstring)."""

    name = "elicitation"
    actions = ELICITATION_ACTIONS
    waits_for = "an answer to the MCP server's question (accept, decline or cancel)"
    interrupt_reason = REASON_INPUT_REQUIRED
    timeout_applied = "cancel sent to the MCP server"
    cancelled_what = "MCP question"

    def complete(self, pause: Pause) -> None:
        """Check the server's schema (or, in URL mode, its URL) once; one that
        cannot be shown is kept out of the view (``form_error`` says why)."""
        if pause.elicitation_url is not None:
            pause.response_schema = None
            problem = url_problem(pause.elicitation_url)
            if problem is not None:
                pause.form_error = problem
                pause.elicitation_url = None
            return
        problem = elicitation_schema_problem(pause.response_schema)
        if problem is not None:
            pause.form_error = problem
            pause.response_schema = None

    def _decide(self, pause: Pause, msg: Any) -> Decision:
        if msg.action == "accept" and pause.elicitation_url is not None:
            if msg.content:
                raise DecisionError("A page the server sent you to takes no values: press Done.", field="content")
            return Decision(pause.tool_call_id, "accept")
        if msg.action == "accept":
            if pause.form_error is not None or pause.response_schema is None:
                raise DecisionError(
                    f"This question cannot be answered: {pause.form_error or 'it has no schema.'} "
                    "Decline or cancel it instead.",
                    field="action",
                )
            content = msg.content if msg.content is not None else {}
            check_content(pause.response_schema, content)
            return Decision(pause.tool_call_id, "accept", content=content)
        cause = getattr(msg, "cause", "person")
        return Decision(pause.tool_call_id, msg.action, cause=cause)

    def timeout_message(self, pause: Pause) -> dict[str, Any]:
        return {**base_message(pause), "action": "cancel", "cause": "timeout"}

    def cancel_message(self, pause: Pause) -> dict[str, Any]:
        return {**base_message(pause), "action": "cancel", "cause": "cancelled"}

    # -- AG-UI ------------------------------------------------------------
    def response_schema(self, pause: Pause) -> dict[str, Any]:
        defs: dict[str, Any] = {}
        accept: dict[str, Any] = {
            "type": "object",
            "properties": {"action": {"const": "accept"}, "content": embed_schema(pause.response_schema, defs)},
            "required": ["action", "content"],
        }
        if pause.elicitation_url is not None:  # URL mode: done, with no content
            accept = {
                "type": "object",
                "properties": {"action": {"const": "accept"}},
                "required": ["action"],
                "additionalProperties": False,
            }
        other = {"type": "object", "properties": {"action": {"enum": ["decline", "cancel"]}}, "required": ["action"]}
        answerable = pause.form_error is None and (
            pause.response_schema is not None or pause.elicitation_url is not None
        )
        out: dict[str, Any] = {
            "$schema": SCHEMA_DIALECT,
            "title": f"Answer to {pause.title or 'the MCP server'}",
            "oneOf": [accept, other] if answerable else [other],
        }
        if defs:
            out["$defs"] = defs
        return out

    def interrupt_message(self, pause: Pause) -> str:
        return pause.message or f"{pause.title or 'An MCP server'} asks for input."

    def resume_message(self, pause: Pause, payload: Any) -> dict[str, Any]:
        out = {**base_message(pause), "action": payload["action"]}
        if payload["action"] == "accept" and pause.elicitation_url is None:
            out["content"] = payload.get("content")
        return out

    def view_fields(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "message": meta.get("message"),
            "form_error": meta.get("form_error"),
            "elicitation_url": meta.get("elicitation_url"),
        }

    def answer_summary(
        self, payload: Any, message: Mapping[str, Any], view: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """As the local card's decision: the action, and an accepted form's ``content``."""
        out: dict[str, Any] = {"action": payload["action"]}
        if "content" in payload:
            out["content"] = payload["content"]
        return out

    def entry_payload(self, interrupt: Interrupt, message: Mapping[str, Any], schema: dict[str, Any]) -> Any:
        action = message.get("action")
        if action not in ELICITATION_ACTIONS:
            raise DecisionError(
                f"This question is answered with accept, decline or cancel, not {action_text(action)}.",
                field="action",
            )
        payload: dict[str, Any] = {"action": action}
        if action == "accept" and message.get("content") is not None:  # URL mode: none
            payload["content"] = message.get("content")
        validate_payload(schema, payload)
        return payload
