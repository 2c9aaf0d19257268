"""A schema's patterns are read by RE2 (``nb_hitl.guard.schema``): a refused pattern is told in plain
words with what RE2 said, nothing is printed to stderr, and a pattern RE2 reads is accepted even when
Python's ``re`` would not read it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nb_hitl.guard import SchemaRefused, check_schema, validation_errors


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        ("(?=a)b", "uses a lookahead `(?=…)`, which RE2 does not have (RE2: invalid perl operator: (?="),
        ("(?<!a)b", "uses a negative lookbehind"),
        ("a\\Z", "uses `\\Z`, which RE2 does not have (write `\\z` for the end of the text)"),
        ("(a)\\1", "uses a backreference, which RE2 does not have (RE2: invalid escape sequence: \\1)"),
        ("[z-a]", "has a range in `[...]` whose ends are in the wrong order"),
        ("(ab", "has a `(` that is never closed"),
    ],
)
def test_a_pattern_re2_refuses_is_told_in_plain_words(pattern: str, said: str) -> None:
    with pytest.raises(SchemaRefused) as err:
        check_schema({"type": "string", "pattern": pattern})
    assert said in str(err.value)
    assert f"the pattern {pattern!r} at # is not one RE2 can read: it " in str(err.value)


def test_a_pattern_only_python_re_refuses_is_accepted_and_matched_by_re2() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^\\p{L}+$"}}}
    check_schema(schema)  # jsonschema's own "regex" format check (Python re) would say "is not a 'regex'"
    assert validation_errors(schema, {"name": "Zoë"}) == []
    assert validation_errors(schema, {"name": "Zoë 2"})
    with pytest.raises(SchemaRefused):  # the meta-schema still checks patternProperties' subschemas
        check_schema({"type": "object", "patternProperties": {"^\\p{L}+$": {"type": 5}}})


def test_a_refused_pattern_prints_nothing_to_stderr() -> None:
    """RE2's C++ log ("WARNING: All log messages before absl::InitializeLog() ... re2.cc ... Error parsing")
    is written to the process's stderr (fd 2), so it is checked in a process of its own."""
    code = (
        "from nb_hitl.guard import SchemaRefused, check_schema\n"
        "for p in ['(?=a)b', 'a\\\\Z', '(a)\\\\1']:\n"
        "    try:\n"
        "        check_schema({'type': 'string', 'pattern': p})\n"
        "    except SchemaRefused:\n"
        "        pass\n"
        "    else:\n"
        "        raise SystemExit('accepted ' + p)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
