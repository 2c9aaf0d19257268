"""Kernel-side form validation: every invalid field at once, each named by its title."""

from __future__ import annotations

import pytest

from nb_hitl.errors import DecisionError
from nb_hitl.kinds.form import check_form_value, form_errors

SCHEMA = {
    "type": "object",
    "properties": {
        "amount": {"type": "number", "title": "Amount (EUR)", "maximum": 500},
        "date": {"type": "string", "format": "date", "title": "Purchase date"},
        "reason": {"type": "string", "enum": ["damaged", "late"], "title": "Reason"},
        "count": {"type": "integer", "title": "Count"},
    },
    "required": ["amount", "date", "reason"],
}


def test_all_invalid_fields_are_reported_in_field_order() -> None:
    errors = form_errors(SCHEMA, {"amount": 900, "date": "yesterday", "count": 1.5})
    assert errors == [
        ("value.amount", "Amount (EUR): 900 is greater than the maximum of 500"),
        ("value.date", "Purchase date: 'yesterday' is not a 'date'"),
        ("value.reason", "Reason: this field is required."),
        ("value.count", "Count: 1.5 is not of type 'integer'"),
    ]


def test_a_number_field_given_text_says_not_a_number_type() -> None:
    assert form_errors(SCHEMA, {"amount": "abc", "date": "2025-01-01", "reason": "late"}) == [
        ("value.amount", "Amount (EUR): 'abc' is not of type 'number'")
    ]


def test_check_form_value_raises_one_line_per_field() -> None:
    with pytest.raises(DecisionError) as info:
        check_form_value(SCHEMA, {"amount": 900})
    assert str(info.value).splitlines() == [
        "Amount (EUR): 900 is greater than the maximum of 500",
        "Purchase date: this field is required.",
        "Reason: this field is required.",
    ]
    assert info.value.field == "value.amount"


def test_a_valid_value_passes() -> None:
    assert form_errors(SCHEMA, {"amount": 5, "date": "2025-01-01", "reason": "late"}) == []
    check_form_value(SCHEMA, {"amount": 5, "date": "2025-01-01", "reason": "late"})
