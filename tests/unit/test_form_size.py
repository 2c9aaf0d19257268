"""Forms too large to draw are refused in the kernel, for every front end.

nb_hitl's own ``AskForm`` (:func:`nb_hitl.kinds.form.schema_problem`) and a
peer's AG-UI interrupt (:func:`nb_hitl.agui.turn.checked_interrupt`) go
through one size check, so no page (or other client) is asked to draw a
20,000-field form: the pause says why and can only return the error. The
check is a bounded walk, so a schema of any size or depth is refused before
``jsonschema`` (seconds on 100,000 nested fields) ever walks it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ag_ui.core import Interrupt

from nb_hitl.agui.turn import checked_interrupt, safe_view
from nb_hitl.kinds.form import (
    MAX_FIELD_CHOICES,
    MAX_FORM_CHOICES,
    MAX_FORM_FIELDS,
    MAX_SCHEMA_NODES,
    form_size_problem,
    schema_problem,
)


class Counted(dict[str, Any]):
    """A schema object that counts how often a walk looks into it."""

    looked = 0

    def values(self) -> Any:
        Counted.looked += 1
        return super().values()


def fields(n: int, cls: type[dict[str, Any]] = dict) -> dict[str, Any]:
    return {"type": "object", "properties": {f"f{i}": cls(type="string") for i in range(n)}}


def nested(n: int, cls: type[dict[str, Any]] = dict) -> dict[str, Any]:
    """``n`` fields one level down (the top level has one field, ``a``)."""
    return {"type": "object", "properties": {"a": fields(n, cls)}}


def choices(n: int) -> dict[str, Any]:
    return {"type": "string", "enum": [f"c{i}" for i in range(n)]}


@pytest.mark.parametrize(
    "schema, problem",
    [
        (fields(MAX_FORM_FIELDS), None),
        (fields(MAX_FORM_FIELDS + 1), f"it has {MAX_FORM_FIELDS + 1} fields (at most {MAX_FORM_FIELDS} are drawn)"),
        (nested(MAX_FORM_FIELDS - 1), None),  # with "a" itself: 200 fields
        (nested(MAX_FORM_FIELDS), f"it has more than {MAX_FORM_FIELDS} fields, counting nested ones"),
        ({"type": "object", "properties": {"pick": choices(MAX_FIELD_CHOICES)}}, None),
        (
            {"type": "object", "properties": {"pick": choices(MAX_FIELD_CHOICES + 1)}},
            f"a field has {MAX_FIELD_CHOICES + 1} choices (at most {MAX_FIELD_CHOICES} are drawn)",
        ),
        ({"type": "object", "properties": {f"f{i}": choices(1000) for i in range(5)}}, None),
        (
            {"type": "object", "properties": {f"f{i}": choices(1000) for i in range(6)}},
            f"it has more than {MAX_FORM_CHOICES} choices in all",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "allOf": [{}] * (MAX_SCHEMA_NODES + 1)},
            f"its schema has more than {MAX_SCHEMA_NODES} parts",
        ),
        ({"type": "object", "properties": "nonsense"}, None),  # not a size problem: schema_problem says what is
        ("not a dict", None),
    ],
)
def test_the_size_limits_and_their_boundaries(schema: Any, problem: str | None) -> None:
    got = form_size_problem(schema)
    if problem is None:
        assert got is None
    else:
        assert got is not None and got.startswith(problem), got


def test_an_askform_schema_too_large_is_a_schema_problem() -> None:
    assert schema_problem(fields(MAX_FORM_FIELDS)) is None
    got = schema_problem(fields(20_000))
    assert got == "The form is too large to show: it has 20000 fields (at most 200 are drawn). Ask in smaller parts."


def test_a_huge_nested_schema_is_refused_after_a_bounded_walk() -> None:
    """100,000 fields one level down: refused having looked into at most a few
    hundred of them, never all (nor handed to ``jsonschema``)."""
    Counted.looked = 0
    got = schema_problem(nested(100_000, Counted))
    assert got is not None and "more than 200 fields" in got
    assert Counted.looked <= MAX_FORM_FIELDS + 1


def test_a_peer_interrupt_with_a_form_too_large_can_only_be_cancelled() -> None:
    interrupt = Interrupt(id="int-1", reason="input_required", message="Fill in", response_schema=fields(5_000))
    checked, problem = checked_interrupt(interrupt)
    assert problem is not None and "it has 5000 fields" in problem
    assert checked.response_schema is None  # not offered to the page as a form
    view = safe_view(checked, problem, key="k", run_id="r")
    assert view["unanswerable"] is True and view["kind"] == "form"
    assert "too large to show" in view["form_error"]
    assert len(json.dumps(view)) < 2_000  # the 5,000 fields are not in what the page gets
    # nested ones too
    assert checked_interrupt(Interrupt(id="int-3", reason="input_required", response_schema=nested(300)))[1]
    # a form that fits is left as it was
    small = Interrupt(id="int-2", reason="input_required", response_schema=fields(3))
    assert checked_interrupt(small)[1] is None
