"""Forms too large to draw are refused in the kernel, for every front end.

nb_hitl's own ``AskForm`` (:func:`nb_hitl.kinds.form.schema_problem`) and a
peer's AG-UI interrupt (:func:`nb_hitl.agui.turn.checked_interrupt`) go
through one size check, so a page (or any other client) is never sent a
20,000-field form to draw: the pause says why and can only return the error.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ag_ui.core import Interrupt

from nb_hitl.agui.turn import checked_interrupt, safe_view
from nb_hitl.kinds.form import MAX_FIELD_CHOICES, MAX_FORM_FIELDS, form_size_problem, schema_problem


def fields(n: int) -> dict[str, Any]:
    return {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(n)}}


def choices(n: int) -> dict[str, Any]:
    return {"type": "object", "properties": {"pick": {"type": "string", "enum": [f"c{i}" for i in range(n)]}}}


@pytest.mark.parametrize(
    "schema, problem",
    [
        (fields(MAX_FORM_FIELDS), None),
        (fields(MAX_FORM_FIELDS + 1), f"it has {MAX_FORM_FIELDS + 1} fields (at most {MAX_FORM_FIELDS} are drawn)"),
        (choices(MAX_FIELD_CHOICES), None),
        (
            choices(MAX_FIELD_CHOICES + 1),
            f"its field 'pick' has {MAX_FIELD_CHOICES + 1} choices (at most {MAX_FIELD_CHOICES} are drawn)",
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
    assert got == ("The form is too large to show: it has 20000 fields (at most 200 are drawn); ask in smaller parts.")


def test_a_peer_interrupt_with_a_form_too_large_can_only_be_cancelled() -> None:
    interrupt = Interrupt(id="int-1", reason="input_required", message="Fill in", response_schema=fields(5_000))
    checked, problem = checked_interrupt(interrupt)
    assert problem is not None and "it has 5000 fields" in problem
    assert checked.response_schema is None  # not sent to the page
    view = safe_view(checked, problem, key="k", run_id="r")
    assert view["unanswerable"] is True and view["kind"] == "form"
    assert "too large to show" in view["form_error"]
    assert len(json.dumps(view)) < 2_000  # the 5,000 fields are not in what the page gets
    # a form that fits is left as it was
    small = Interrupt(id="int-2", reason="input_required", response_schema=fields(3))
    assert checked_interrupt(small)[1] is None
