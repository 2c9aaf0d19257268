"""An answer validated against a checked schema, in bounded time.

:func:`validation_errors` runs ``jsonschema`` (the schema's dialect) on an
answer with RE2 for patterns, :data:`~nb_hitl.guard.schema.NO_FETCH` for
references, and a budget: every keyword ``jsonschema`` applies counts
against :data:`MAX_VALIDATION_STEPS` and :data:`MAX_VALIDATION_SECONDS`.
:func:`~nb_hitl.guard.schema.check_schema` bounds what a schema expands to,
not what an answer makes of it: a recursive schema that reaches its own
reference through two branches at one place doubles the work at each level
of the answer's nesting. The budget bounds that, and anything else, whatever
the schema and the answer.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

import jsonschema

from ..errors import DecisionError
from .schema import NO_FETCH, _re2

__all__ = ["MAX_VALIDATION_SECONDS", "MAX_VALIDATION_STEPS", "field_words", "validation_errors"]

MAX_VALIDATION_STEPS = 50_000
"""The most keyword checks one validation of an answer may make
(:func:`validation_errors`): each time ``jsonschema`` applies one keyword of
one subschema to one value counts one (5 to 40 microseconds each, so at most
0.25 to 2 seconds of the kernel's loop). The cap is the bound that decides:
it counts work, so the same answer is accepted or refused on a busy machine
as on an idle one. :data:`MAX_SCHEMA_EXPANDED` bounds a schema's expansion,
not the answer: a recursive schema that reaches its own reference through
two branches at one place in the answer (``anyOf`` of two references to the
tree's node) doubles the work per level of the answer's nesting, so a
16-level answer takes seconds and a 30-level one hours. Past this many checks
validation stops and the answer is refused with why. A form of 150 fields
checks in about 600; a tree answer of 10,000 nodes in about 50,000."""

MAX_VALIDATION_SECONDS = 3.0
"""A backstop in seconds of wall time (checked at each keyword, beside
:data:`MAX_VALIDATION_STEPS`), for keywords slower than the steps assume
(formats, long strings): validation runs on the kernel's event loop. Wall
time also counts the time the process waits for a CPU, so it is set well
above what the step cap allows on a loaded machine: a valid answer is never
refused because the machine was busy."""


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


class _Budget:
    """What one validation may still spend: keyword checks and a deadline
    (``time.monotonic()`` seconds)."""

    __slots__ = ("deadline", "steps", "steps_cap", "seconds_cap")

    def __init__(self, steps: int, seconds: float) -> None:
        self.steps, self.steps_cap, self.seconds_cap = steps, steps, seconds
        self.deadline = time.monotonic() + seconds


_budget: ContextVar[_Budget | None] = ContextVar("nb_hitl_validation_budget", default=None)


class _OverBudget(Exception):
    """Validation passed a cap of its :class:`_Budget` (the message says which)."""


def _counted(check: Callable[..., Any]) -> Callable[..., Any]:
    """``check`` (a ``jsonschema`` keyword function) counting against the
    budget of the validation running in this context."""

    @functools.wraps(check)
    def counted(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        budget = _budget.get()
        if budget is not None:
            budget.steps -= 1
            if budget.steps < 0:
                raise _OverBudget(f"{budget.steps_cap:,} keyword checks (at most {budget.steps_cap:,})")
            if time.monotonic() > budget.deadline:
                raise _OverBudget(f"{budget.seconds_cap:g} seconds (at most {budget.seconds_cap:g})")
        return check(validator, value, instance, schema)

    return counted


@functools.cache
def _budgeted(base: Any) -> Any:
    """``base`` (a ``jsonschema`` validator class) with RE2 patterns and every
    keyword counted (:func:`_counted`); one class per dialect."""
    checks = {**base.VALIDATORS, "pattern": _pattern, "patternProperties": _pattern_properties}
    return jsonschema.validators.extend(base, {k: _counted(v) for k, v in checks.items()})


def _over_budget_text(spent: str) -> str:
    return (
        f"The value was not accepted: checking it against its schema was stopped after {spent}. "
        "The schema applies its parts to this value too many times (a recursive reference reached "
        "through two branches at one place doubles the work at each level of nesting); a less nested "
        "value, or a simpler schema, can be checked."
    )


def validation_errors(
    schema: Mapping[str, Any],
    payload: Any,
    *,
    field: str = "value",
    formats: bool = True,
    max_steps: int = MAX_VALIDATION_STEPS,
    max_seconds: float = MAX_VALIDATION_SECONDS,
) -> list[jsonschema.ValidationError]:
    """Every way ``payload`` breaks ``schema`` (checked by :func:`check_schema`
    first), as ``jsonschema`` reports them: the validator of the schema's
    dialect (Draft 2020-12 by default), RE2 for ``pattern`` and
    ``patternProperties``, :data:`NO_FETCH` for references, formats
    enforced unless ``formats=False`` (as AgentScope's own check of a tool
    input, ``jsonschema.validate``, does not), and at most ``max_steps``
    keyword checks (:data:`MAX_VALIDATION_STEPS`: each keyword ``jsonschema``
    applies to a value counts one) and ``max_seconds`` of wall time
    (:data:`MAX_VALIDATION_SECONDS`), so validation time is bounded whatever
    the schema and the payload.

    Raises:
        DecisionError: the payload is nested too deeply to be checked, or
            checking it passed ``max_steps`` or ``max_seconds`` (both with ``field``: the value
            is refused, never accepted unchecked), or a reference resolves
            nowhere.
    """
    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator = _budgeted(base)(schema, registry=NO_FETCH, format_checker=base.FORMAT_CHECKER if formats else None)
    token = _budget.set(_Budget(max_steps, max_seconds))
    try:
        return list(validator.iter_errors(payload))
    except RecursionError:
        raise DecisionError("The value is nested too deeply to be checked against its schema.", field=field) from None
    except _OverBudget as exc:
        raise DecisionError(_over_budget_text(str(exc)), field=field) from None
    except jsonschema.exceptions._WrappedReferencingError as exc:
        raise DecisionError(f"The schema has a reference that cannot be resolved: {exc}") from None
    finally:
        _budget.reset(token)


def field_words(json_path: str) -> str:
    """Where a ``jsonschema`` error is, in words a person reads unambiguously:
    ``field "path"`` for ``$.path``, ``field "items[0].name"`` for
    ``$.items[0].name``, and ``""`` for the whole value (``$``).

    Args:
        json_path: ``jsonschema.ValidationError.json_path`` (``"$"`` or
            ``"$..."``).

    The field is quoted so that a field named like a word ("path", "at")
    never reads as part of the sentence around it.
    """
    if json_path == "$":
        return ""
    inner = json_path[2:] if json_path.startswith("$.") else json_path[1:]
    return f'field "{inner}"'
