"""A JSON Schema that someone else wrote, checked before anything uses it.

A schema the model writes (an ``AskForm`` call) or a peer sends (an AG-UI
interrupt's ``response_schema``, a tool's ``input_schema``) is untrusted
input. Plain ``jsonschema`` would, on such a schema:

* fetch any URL a ``$ref`` / ``$dynamicRef`` names (its default registry
  retrieves remote references: the kernel would call any address given);
* run ``pattern`` / ``patternProperties`` through Python's ``re``, which
  backtracks (``^(a+)+$`` against 30 ``a``s and a ``!`` runs for minutes);
* recurse forever on a ``$ref`` that leads back to itself without reading
  any deeper into the answer (``RecursionError`` when the answer comes);
* walk a schema of any size or depth.

:func:`check_schema` refuses all of that up front, with a message a person
can act on (:class:`SchemaRefused`);
:func:`nb_hitl.guard.validate.validation_errors` validates an answer against
a checked schema (RE2 for patterns, :data:`NO_FETCH`, a budget of keyword
checks and seconds). :func:`without_patterns` is a copy to hand to code that evaluates patterns
itself (a page).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import re2
import referencing.jsonschema
from referencing import Registry
from referencing.exceptions import NoSuchResource, Unresolvable

_encode_string = json.encoder.encode_basestring  # C-accelerated: a string as a JSON string literal

__all__ = [
    "MAX_SCHEMA_BYTES",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_EXPANDED",
    "NO_FETCH",
    "SchemaRefused",
    "check_schema",
    "expanded_size",
    "without_patterns",
]

MAX_SCHEMA_BYTES = 1_000_000
"""The largest schema accepted, in bytes of its compact JSON (UTF-8). A form
or an answer's shape fits in a few kilobytes; a larger schema is refused
after a walk that stops at this many bytes, so its true size costs nothing."""

MAX_SCHEMA_EXPANDED = 20_000
"""The most schema objects and arrays a schema may reach when every ``$ref``
is followed, each time it is met (:func:`expanded_size`). Validation walks
this expansion: a 1.5 KB schema whose ``$defs`` chain ``anyOf`` two
references to the next link 18 times over expands to about a million parts
(seconds to minutes of ``jsonschema`` per answer); the largest schema in
nb_hitl's tests, notebooks and MCP demo servers expands to a few hundred."""

MAX_SCHEMA_DEPTH = 64
"""The deepest nesting of objects and arrays a schema may have (the root
object is level 1). ``jsonschema`` recurses once per level (and more per
keyword) while checking a schema and an answer; past this, a schema could
end in ``RecursionError`` instead of a clear answer."""

_DATA_KEYS = frozenset({"const", "enum", "default", "examples"})
# subschemas only reached through a reference (validation never walks them in place)
_DEFS_KEYS = frozenset({"$defs", "definitions"})
_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")
# keywords that apply a subschema to the same value (no step into the answer):
# a $ref loop through only these never ends
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas", "dependencies")


class SchemaRefused(ValueError):
    """The schema cannot be used safely (the message says why)."""


def _refuse_retrieval(uri: str) -> Any:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


NO_FETCH: Registry[Any] = Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]
"""A ``referencing.Registry`` that retrieves nothing: a reference outside the
schema resolves to nothing instead of being fetched."""


def _walk(node: Any, path: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object of a schema with its JSON pointer (data keywords skipped).
    Only called on a schema whose depth :func:`_measure` bounded."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            if key not in _DATA_KEYS:
                yield from _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for n, value in enumerate(node):
            yield from _walk(value, f"{path}/{n}")


def _json_bytes(value: Any) -> int:
    """The bytes of ``value`` (a string, number, boolean or null) as JSON (UTF-8)."""
    if isinstance(value, str):
        text = _encode_string(value)
        return len(text) if text.isascii() else len(text.encode())
    try:
        return len(json.dumps(value))  # numbers, true, false, null: ASCII
    except (TypeError, ValueError):
        raise SchemaRefused(f"it holds a value that is not JSON ({type(value).__name__})") from None


def _measure(schema: Any) -> None:
    """Refuse a schema deeper than :data:`MAX_SCHEMA_DEPTH` or larger than
    :data:`MAX_SCHEMA_BYTES` (the bytes of ``json.dumps(schema,
    separators=(",", ":"), ensure_ascii=False)``): an iterative walk that
    stops at the first cap passed."""
    size = 0
    too_large = SchemaRefused(
        f"its JSON is larger than {MAX_SCHEMA_BYTES:,} bytes (at most {MAX_SCHEMA_BYTES:,}); "
        "describe the answer with a smaller schema"
    )
    stack: list[tuple[Any, int]] = [(schema, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > MAX_SCHEMA_DEPTH:
                raise SchemaRefused(
                    f"it nests objects and arrays more than {MAX_SCHEMA_DEPTH} levels deep "
                    f"(at most {MAX_SCHEMA_DEPTH}); describe the answer with a flatter schema"
                )
            size += 2 + max(len(node) - 1, 0)  # brackets and commas
            if isinstance(node, dict):
                for key, value in node.items():
                    size += _json_bytes(str(key)) + 1  # the key and its colon
                    if size > MAX_SCHEMA_BYTES:
                        raise too_large
                    stack.append((value, depth + 1))
            else:
                stack.extend((value, depth + 1) for value in node)
        else:
            size += _json_bytes(node)
        if size > MAX_SCHEMA_BYTES:
            raise too_large


def _quiet_options() -> Any:
    """RE2 options that do not print a refused pattern to stderr (RE2's C++
    log, ``re2.cc ... Error parsing``): the refusal is told in words instead."""
    options = re2.Options()
    options.log_errors = False
    return options


_RE2_OPTIONS = _quiet_options()


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    return re2.compile(pattern, _RE2_OPTIONS)


_RE2_WORDS: tuple[tuple[str, str], ...] = (
    ("invalid perl operator: (?=", "uses a lookahead `(?=…)`, which RE2 does not have"),
    ("invalid perl operator: (?!", "uses a negative lookahead `(?!…)`, which RE2 does not have"),
    ("invalid perl operator: (?<=", "uses a lookbehind `(?<=…)`, which RE2 does not have"),
    ("invalid perl operator: (?<!", "uses a negative lookbehind `(?<!…)`, which RE2 does not have"),
    ("invalid perl operator: (?P=", "uses a named backreference `(?P=…)`, which RE2 does not have"),
    ("invalid escape sequence: \\Z", "uses `\\Z`, which RE2 does not have (write `\\z` for the end of the text)"),
    ("invalid repetition size", "uses a repetition count above 1000, more than RE2 allows"),
    ("missing )", "has a `(` that is never closed"),
    ("unexpected )", "has a `)` that closes nothing"),
    ("missing ]", "has a `[` that is never closed"),
    ("invalid character class range", "has a range in `[...]` whose ends are in the wrong order"),
    ("missing argument to repetition operator", "has a `*`, `+`, `?` or `{n}` with nothing before it to repeat"),
    ("bad repetition operator", "has two repetition operators in a row (such as `**` or `+*`)"),
    ("invalid named capture group", "has a named group whose name RE2 does not accept"),
)


def re2_problem(said: str) -> str:
    """RE2's reason for refusing a pattern (``re2.error``'s text), in plain words,
    with RE2's own words after it."""
    for start, words in _RE2_WORDS:
        if said.startswith(start):
            return f"it {words} (RE2: {said})"
    if said.startswith("invalid escape sequence: \\") and said[len("invalid escape sequence: \\") :][:1].isdigit():
        return f"it uses a backreference, which RE2 does not have (RE2: {said})"
    if said.startswith("invalid escape sequence"):
        return f"it uses an escape RE2 does not know (RE2: {said})"
    return f"RE2 cannot read it (RE2: {said})"


def _re2_said(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else ""
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


def _re2(pattern: str, where: str) -> Any:
    try:
        return _compiled(pattern)
    except re2.error as exc:
        raise SchemaRefused(
            f"the pattern {pattern[:80]!r} at {where} is not one RE2 can read: {re2_problem(_re2_said(exc))}; "
            "patterns are matched here by RE2, in linear time"
        ) from None


def _format_checker(cls: Any) -> Any:
    """``cls``'s format checker for its meta-schema, except that the ``regex``
    format (of ``pattern`` and ``patternProperties``) is RE2's, the engine that
    evaluates them here (``jsonschema``'s own uses Python's ``re``, which, e.g.,
    refuses ``\\p{L}``)."""
    checker = copy.copy(cls.FORMAT_CHECKER)
    checker.checkers = {
        **checker.checkers,
        "regex": (lambda v: not isinstance(v, str) or bool(_compiled(v)), re2.error),
    }
    return checker


def _dialect(schema: dict[str, Any]) -> Any:
    """The schema's ``referencing`` specification; a ``$schema`` that is not a
    dialect known offline is refused (it is never fetched)."""
    if "$schema" not in schema:
        return referencing.jsonschema.DRAFT202012
    named = schema["$schema"]
    if not isinstance(named, str):
        raise SchemaRefused("its $schema is not a string")
    try:
        return referencing.jsonschema.specification_with(named)
    except referencing.jsonschema.UnknownDialect:
        raise SchemaRefused(
            f"its $schema {named[:120]!r} is not a JSON Schema dialect known here (it is not fetched); "
            "omit $schema for draft 2020-12"
        ) from None


def _local_refs(schema: dict[str, Any]) -> None:
    """Refuse a reference that is not local, and unusable patterns."""
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
                raise SchemaRefused(f"patternProperties beside additionalProperties at {where} is not supported here")


def _in_place(node: dict[str, Any]) -> Iterator[tuple[str, Any, str | None]]:
    """``(keyword path, subschema, ref)`` for each subschema ``node`` applies
    to the same value; ``ref`` is set for a reference to resolve."""
    for key in _REF_KEYS:
        if isinstance(node.get(key), str):
            yield key, None, node[key]
    for key in _IN_PLACE_ONE:
        if isinstance(node.get(key), dict):
            yield key, node[key], None
    for key in _IN_PLACE_LIST:
        if isinstance(node.get(key), list):
            for n, sub in enumerate(node[key]):
                if isinstance(sub, dict):
                    yield f"{key}/{n}", sub, None
    for key in _IN_PLACE_MAP:
        if isinstance(node.get(key), dict):
            for name, sub in node[key].items():
                if isinstance(sub, dict):
                    yield f"{key}/{name}", sub, None


def _scoped(schema: dict[str, Any], spec: Any) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """Every object of a schema with its JSON pointer and the resolver its
    references resolve with (the nearest enclosing ``$id``)."""
    root = NO_FETCH.resolver_with_root(spec.create_resource(schema))
    stack: list[tuple[str, Any, Any]] = [("#", schema, root)]
    while stack:
        where, node, resolver = stack.pop()
        if isinstance(node, dict):
            if node is not schema and spec.id_of(node):
                resolver = resolver.in_subresource(spec.create_resource(node))
            yield where, node, resolver
            stack.extend((f"{where}/{k}", v, resolver) for k, v in node.items() if k not in _DATA_KEYS)
        elif isinstance(node, list):
            stack.extend((f"{where}/{n}", v, resolver) for n, v in enumerate(node))


def _no_ref_loop(schema: dict[str, Any], spec: Any) -> None:
    """Refuse a reference that resolves to nothing, or that leads back to a
    schema it is part of through keywords that apply to the same value
    (``$ref``, ``allOf``, ``not``...): validating would never end.

    A depth-first walk of the "applies to the same value" graph (every node
    a schema object, by identity), from every object that holds a reference,
    resolving with ``referencing`` and :data:`NO_FETCH`.
    """
    done: set[int] = set()
    for where, start, base in _scoped(schema, spec):
        if id(start) in done or not any(isinstance(start.get(k), str) for k in _REF_KEYS):
            continue
        on_path: dict[int, str] = {id(start): where}
        trail = [where]
        stack = [(start, base, _in_place(start))]
        while stack:
            node, resolver, edges = stack[-1]
            step = next(edges, None)
            if step is None:
                stack.pop()
                on_path.pop(id(node), None)
                trail.pop()
                done.add(id(node))
                continue
            key, sub, ref = step
            here = f"{trail[-1]}/{key}"
            if ref is not None:
                try:
                    resolved = resolver.lookup(ref)
                except (Unresolvable, NoSuchResource):
                    raise SchemaRefused(
                        f"{key} {ref[:120]!r} at {trail[-1]} resolves to nothing in the schema"
                    ) from None
                sub, next_resolver, here = resolved.contents, resolved.resolver, ref
            else:
                next_resolver = resolver
                if isinstance(sub, dict) and spec.id_of(sub):
                    next_resolver = resolver.in_subresource(spec.create_resource(sub))
            if not isinstance(sub, dict) or id(sub) in done:
                continue
            if id(sub) in on_path:
                loop = " -> ".join([*trail[trail.index(on_path[id(sub)]) :], here])
                raise SchemaRefused(
                    f"its references form a loop ({loop[:300]}): checking an answer would never end; "
                    "a reference must lead into a property or item, not back to itself"
                )
            on_path[id(sub)] = here
            trail.append(here)
            stack.append((sub, next_resolver, _in_place(sub)))


def _applied(node: Any, resolver: Any) -> Iterator[tuple[Any, Any]]:
    """``(subschema or array, resolver)`` for each part validation applies from
    ``node``: its values (data keywords and ``$defs`` skipped), each
    reference's target (resolved with ``referencing``)."""
    values = node
    if isinstance(node, dict):
        values = [v for k, v in node.items() if k not in _DATA_KEYS and k not in _DEFS_KEYS]
        for key in _REF_KEYS:
            if isinstance(node.get(key), str):
                try:
                    resolved = resolver.lookup(node[key])
                except (Unresolvable, NoSuchResource):
                    raise SchemaRefused(f"{key} {node[key][:120]!r} resolves to nothing in the schema") from None
                yield resolved.contents, resolved.resolver
    for value in values:
        if isinstance(value, (dict, list)):
            yield value, resolver


def expanded_size(schema: dict[str, Any], cap: int = MAX_SCHEMA_EXPANDED) -> int:
    """The schema objects and arrays validation reaches in ``schema`` (a dict
    :func:`check_schema` accepts, but for this cap) when every ``$ref`` /
    ``$dynamicRef`` / ``$recursiveRef`` is followed each time it is met:
    ``size(node) = 1 + sum(size(part))`` over its applied parts
    (:func:`_applied`: every keyword's subschemas - ``properties``,
    ``items``, ``anyOf``... - but not ``$defs``, which count only as far as
    references reach them), a reference's part being its target. Memoised per
    object, so the walk is linear in the written schema; a reference back to
    a schema it is inside (a tree: :func:`check_schema` has refused loops
    that read no deeper into the answer) counts 1 - each time validation
    follows it, it is one level deeper into the answer.

    Why it bounds validation: ``jsonschema`` applies each part of the
    expansion to the values at one place in the answer (``items`` and
    ``additionalProperties`` to each of them), so checking an answer of
    ``n`` values costs at most about ``expanded_size * n`` keyword checks,
    per level of a recursive schema. ``n`` is capped where answers come in
    (a form's answer at ``nb_hitl.messages.MAX_TEXT`` characters, an edited
    input at the same, nesting at 64 levels for tool inputs).
    A recursive reference reached by several in-place branches (``anyOf``
    of two references to the tree's node) still doubles the work per level
    of the answer's nesting; that is not counted here: the budget of
    :func:`nb_hitl.guard.validate.validation_errors` bounds it (and any
    other cost an answer brings) and refuses the answer with why.

    Raises:
        SchemaRefused: the count passes ``cap`` (it stops there), or a
            reference resolves to nothing.
    """
    spec = _dialect(schema)
    refused = SchemaRefused(
        f"following its references, it has more than {cap:,} parts, too many to check an answer against "
        "safely; describe the answer with a simpler schema (fewer references to schemas that themselves "
        "hold several references)"
    )
    sizes: dict[int, int] = {}
    root = NO_FETCH.resolver_with_root(spec.create_resource(schema))
    # a frame: [node, resolver, its parts not yet counted, its size so far]
    stack: list[list[Any]] = [[schema, root, _applied(schema, root), 1]]
    inside = {id(schema)}
    while stack:
        frame = stack[-1]
        step = next(frame[2], None)
        if step is None:
            stack.pop()
            inside.discard(id(frame[0]))
            sizes[id(frame[0])] = frame[3]
            if stack:
                stack[-1][3] += frame[3]
                if stack[-1][3] > cap:
                    raise refused
            continue
        part, resolver = step
        if not isinstance(part, (dict, list)) or id(part) in inside:
            frame[3] += 1  # a boolean schema, or a reference back into a tree
        elif id(part) in sizes:
            frame[3] += sizes[id(part)]
        else:
            if isinstance(part, dict) and part is not schema and spec.id_of(part):
                resolver = resolver.in_subresource(spec.create_resource(part))
            inside.add(id(part))
            stack.append([part, resolver, _applied(part, resolver), 1])
            continue
        if frame[3] > cap:
            raise refused
    return int(sizes[id(schema)])


def check_schema(schema: Any) -> None:
    """Raise :class:`SchemaRefused` when ``schema`` cannot be used safely.

    In order: not a JSON object; larger than :data:`MAX_SCHEMA_BYTES` or
    deeper than :data:`MAX_SCHEMA_DEPTH`; a ``$schema`` that is not a
    dialect known offline; a ``$ref`` / ``$dynamicRef`` / ``$recursiveRef``
    that is not local (``#...``); a pattern RE2 cannot compile;
    ``patternProperties`` beside ``additionalProperties`` /
    ``unevaluatedProperties`` (``jsonschema`` matches those with ``re``);
    not a valid JSON Schema of its dialect (``jsonschema``'s
    ``check_schema``); a reference that resolves nowhere or leads back into
    itself (a loop); more than :data:`MAX_SCHEMA_EXPANDED` parts when every
    reference is followed (:func:`expanded_size`: a few kilobytes of
    ``anyOf`` over references can take validation hours). ``None`` (no
    schema) passes.
    """
    if schema is None:
        return
    if not isinstance(schema, dict):
        raise SchemaRefused("the schema is not a JSON object")
    _measure(schema)
    spec = _dialect(schema)
    _local_refs(schema)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema, format_checker=_format_checker(cls))
    except jsonschema.SchemaError as exc:
        where = exc.json_path if exc.json_path != "$" else "the schema"
        raise SchemaRefused(f"it is not a valid JSON Schema at {where}: {exc.message[:200]}") from None
    except RecursionError:
        raise SchemaRefused("it is nested too deeply to be checked") from None
    _no_ref_loop(schema, spec)
    expanded_size(schema)


def without_patterns(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """A copy of a checked schema without ``pattern`` / ``patternProperties``
    (they are evaluated by :func:`validation_errors` only)."""
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
