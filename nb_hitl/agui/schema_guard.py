"""An interrupt's ``response_schema`` from a peer, checked before it is used.

A schema from a server is untrusted input. Two things in JSON Schema reach
outside a plain check: a ``$ref`` to a URL (``jsonschema`` would fetch it:
the client would call any address the server names) and ``pattern`` /
``patternProperties`` (Python's ``re`` backtracks: ``^(a+)+$`` against 30
``a``s and a ``!`` runs for minutes). So the client:

* refuses a schema with a ``$ref`` that is not local (``#...``), and
  validates with a ``referencing.Registry`` that retrieves nothing;
* evaluates ``pattern`` and ``patternProperties`` with RE2 (``google-re2``,
  linear time), and refuses a pattern RE2 cannot compile (backreferences,
  lookaround) or ``patternProperties`` beside ``additionalProperties``;
* hands the rest of the code (and the page) a copy without patterns.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import jsonschema
import re2
from referencing import Registry
from referencing.exceptions import NoSuchResource

from ..errors import DecisionError
from ..kinds.form import form_size_problem

__all__ = ["SchemaRefused", "check_schema", "safe_validate", "without_patterns"]

_DATA_KEYS = frozenset({"const", "enum", "default", "examples"})
_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")


class SchemaRefused(ValueError):
    """The schema cannot be used safely (the message says why)."""


def _refuse_retrieval(uri: str) -> Any:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


_NO_FETCH: Registry[Any] = Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


def _walk(node: Any, path: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            if key not in _DATA_KEYS:
                yield from _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for n, value in enumerate(node):
            yield from _walk(value, f"{path}/{n}")


def _re2(pattern: str, where: str) -> Any:
    try:
        return re2.compile(pattern)
    except re2.error:
        raise SchemaRefused(
            f"the pattern {pattern[:80]!r} at {where} uses a feature this client does not evaluate "
            "(only linear-time RE2 patterns are: no backreferences or lookaround)"
        ) from None


def check_schema(schema: Any) -> None:
    """Raise :class:`SchemaRefused` when ``schema`` cannot be used safely:
    too large to draw as a form
    (:func:`~nb_hitl.kinds.form.form_size_problem`), a non-local ``$ref``, a
    pattern RE2 cannot compile, ``patternProperties`` beside
    ``additionalProperties`` / ``unevaluatedProperties``, or not a valid JSON
    Schema of its dialect."""
    if schema is None:
        return
    if not isinstance(schema, dict):
        raise SchemaRefused("the response schema is not a JSON object")
    large = form_size_problem(schema)
    if large is not None:
        raise SchemaRefused(f"it is too large to show: {large}")
    for where, node in _walk(schema):
        for key in _REF_KEYS:
            ref = node.get(key)
            if isinstance(ref, str) and not ref.startswith("#"):
                raise SchemaRefused(f"{key} {ref[:120]!r} at {where} points outside the schema; it is not fetched")
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            _re2(pattern, where)
        props = node.get("patternProperties")
        if isinstance(props, dict):
            for key in props:
                _re2(key, f"{where}/patternProperties")
            if "additionalProperties" in node or "unevaluatedProperties" in node:
                raise SchemaRefused(
                    f"patternProperties beside additionalProperties at {where} is not supported by this client"
                )
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SchemaRefused(f"it is not a valid JSON Schema: {exc.message[:200]}") from None


def without_patterns(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """A copy of a checked schema without ``pattern`` / ``patternProperties``
    (they are evaluated by :func:`safe_validate` only)."""
    if schema is None:
        return None
    out = copy.deepcopy(schema)
    for _where, node in _walk(out):
        if isinstance(node.get("pattern"), str):
            del node["pattern"]
        if isinstance(node.get("patternProperties"), dict):
            del node["patternProperties"]
    # an empty schema would read as "no schema" (and get AG-UI's default)
    return out or {"$comment": "patterns are checked separately"}


def _pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[jsonschema.ValidationError]:
    if validator.is_type(instance, "string") and not _re2(patrn, "pattern").search(instance):
        yield jsonschema.ValidationError(f"{instance[:80]!r} does not match {patrn[:80]!r}")


def _pattern_properties(validator: Any, props: dict[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for patrn, subschema in props.items():
        compiled = _re2(patrn, "patternProperties")
        for key, value in instance.items():
            if compiled.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=patrn)


def safe_validate(schema: dict[str, Any] | None, payload: Any, *, field_prefix: str = "") -> None:
    """Validate ``payload`` against a checked schema: RE2 for patterns, no
    retrieval for references, formats checked.

    Raises:
        DecisionError: the payload does not match (``field`` = its path).
    """
    if schema is None:
        return
    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls = jsonschema.validators.extend(base, {"pattern": _pattern, "patternProperties": _pattern_properties})
    validator = cls(schema, registry=_NO_FETCH, format_checker=base.FORMAT_CHECKER)
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(payload))
    except jsonschema.exceptions._WrappedReferencingError as exc:  # a local $ref that resolves nowhere
        raise DecisionError(f"The response schema has a reference that cannot be resolved: {exc}") from None
    if error is None:
        return
    path = ".".join(str(p) for p in error.absolute_path)
    field = ".".join(p for p in (field_prefix, path) if p) or None
    where = path or "the answer"
    raise DecisionError(f"The answer does not match the response schema at {where}: {error.message[:300]}", field=field)
