"""JSON Schema helpers shared by the pause kinds' AG-UI interrupt mappings.

AG-UI 1.0 ("Interrupts") carries the shape of an answer as
``Interrupt.response_schema`` (JSON Schema 2020-12). Each pause kind builds
its own; this module holds what they share: the dialect, embedding a tool's
schema, AG-UI's interrupt reasons and :func:`validate_payload`, the
``jsonschema`` check both the server and the client run on a payload (the
schema may be a peer's: it goes through :mod:`nb_hitl.guard` first).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import jsonschema

from ..errors import DecisionError
from ..guard import SchemaRefused, check_schema, field_words, validation_errors

__all__ = [
    "META_KEY",
    "META_VERSION",
    "SCHEMA_DIALECT",
    "REASON_TOOL_CALL",
    "REASON_INPUT_REQUIRED",
    "REASON_REVIEW",
    "embed_schema",
    "compact",
    "validate_payload",
]

META_KEY = "nb_hitl"
"""The key of nb_hitl's own data inside ``Interrupt.metadata`` (``ag-ui`` is
reserved by AG-UI itself; every other key is user space)."""

META_VERSION = 1
"""Version of the ``Interrupt.metadata["nb_hitl"]`` layout."""

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

REASON_TOOL_CALL = "tool_call"
"""AG-UI core reason: an interrupt bound to a tool call awaiting a decision."""

REASON_INPUT_REQUIRED = "input_required"
"""AG-UI core reason: the agent needs structured input to continue."""

REASON_REVIEW = "nb_hitl:review"
"""nb_hitl's reason (namespaced, as AG-UI asks of custom reasons): a tool ran
and its result waits for a person before the model reads it."""


def embed_schema(schema: Mapping[str, Any] | None, defs: dict[str, Any]) -> dict[str, Any]:
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


def compact(value: Any, limit: int = 300) -> str:
    """``value`` as one line of JSON (a string as is), cut to ``limit`` characters with ``…``."""
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _field(path: str, prefix: str = "") -> str | None:
    inner = path[2:] if path.startswith("$.") else ("" if path == "$" else path.lstrip("$"))
    inner = inner.replace("[", ".").replace("]", "")
    if prefix:
        return prefix + ("." + inner if inner else "")
    return inner or None


def validate_payload(schema: Mapping[str, Any] | None, payload: Any, *, field_prefix: str = "") -> None:
    """Check ``payload`` against an interrupt's ``response_schema`` with
    ``jsonschema`` (the dialect named by ``$schema``, else 2020-12; formats
    checked), the schema first refused or accepted by
    :func:`nb_hitl.guard.check_schema` and the payload checked by
    :func:`nb_hitl.guard.validation_errors` (nothing fetched, patterns in
    RE2).

    Args:
        schema: the ``response_schema``; ``None`` accepts any payload.
        payload: the answer.
        field_prefix: prepended to the field path reported (``"value"``...).

    Raises:
        DecisionError: the payload breaks the schema (``field`` is the path
            of the value at fault, ``"editedArgs.path"``), the payload is
            nested too deeply to check, or the schema itself cannot be used
            (``field=None``; the message says why).
    """
    if schema is None:
        return
    if not isinstance(schema, Mapping):
        raise DecisionError("The interrupt's response_schema is not a JSON object.")
    try:
        check_schema(dict(schema))
    except SchemaRefused as exc:
        raise DecisionError(f"The interrupt's response_schema cannot be used: {exc}.") from None
    error = jsonschema.exceptions.best_match(iter(validation_errors(schema, payload)))
    if error is not None:
        place = field_words(error.json_path)
        where = f" in {place}" if place else ""
        text = error.message if len(error.message) <= 300 else error.message[:299] + "…"
        raise DecisionError(
            f"The answer does not match the interrupt's response_schema{where}: {text}",
            field=_field(error.json_path, field_prefix),
        )
