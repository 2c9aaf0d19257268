"""Where a JSON Schema fault is, in words that cannot be misread.

A field named like a word ("path") once read as "at path: 5 is not of type
'string'"; every place that words a ``jsonschema`` error now names the field
the same way, quoted, through :func:`nb_hitl.guard.field_words`.
"""

from __future__ import annotations

import pytest
from agentscope.tool import FunctionTool

from nb_hitl import DecisionError
from nb_hitl.guard import field_words
from nb_hitl.kinds._schema import validate_payload
from nb_hitl.permissions.tools import parse_input


@pytest.mark.parametrize(
    ("json_path", "words"),
    [("$", ""), ("$.path", 'field "path"'), ("$.items[0].name", 'field "items[0].name"'), ("$[2]", 'field "[2]"')],
)
def test_field_words(json_path: str, words: str) -> None:
    assert field_words(json_path) == words


def test_response_schema_fault_names_the_field() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    with pytest.raises(DecisionError) as refused:
        validate_payload(schema, {"path": 5}, field_prefix="value")
    assert (
        str(refused.value)
        == "The answer does not match the interrupt's response_schema in field \"path\": 5 is not of type 'string'"
    )
    assert refused.value.field == "value.path"
    with pytest.raises(DecisionError) as whole:
        validate_payload(schema, 5)
    assert str(whole.value) == "The answer does not match the interrupt's response_schema: 5 is not of type 'object'"


def test_tool_input_fault_names_the_field() -> None:
    def delete_file(path: str) -> None:
        """Delete a file.

        Args:
            path: the file.
        """

    tool = FunctionTool(delete_file)
    with pytest.raises(DecisionError) as refused:
        parse_input(tool, '{"path": 5}')
    assert (
        str(refused.value)
        == "The input does not match delete_file's input schema in field \"path\": 5 is not of type 'string'."
    )
