"""C32: a form schema the model wrote is untrusted input.

A real agent (the scripted model) calls ``AskForm`` with a hostile schema;
the Session builds the real form pause. Its answers go through the real
form kind (:func:`nb_hitl.decisions.decide`) and the AG-UI payload check
(:func:`nb_hitl.kinds._schema.validate_payload`). Checked: a ``$ref`` to a
URL is never fetched (a real HTTP server on a loopback port counts
requests), a catastrophic-backtracking ``pattern`` is evaluated by RE2 and
answers correctly, a ``$ref`` loop and a schema too large or too deep are
refused with a clear error, and nothing is resumed with invalid data.
"""

from __future__ import annotations

import ast
import asyncio
import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.tool import Toolkit

from nb_hitl import DecisionError, Session
from nb_hitl.decisions import decide
from nb_hitl.guard import (
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH,
    MAX_SCHEMA_EXPANDED,
    SchemaRefused,
    check_schema,
    expanded_size,
)
from nb_hitl.kinds import kind_spec
from nb_hitl.kinds._schema import validate_payload
from nb_hitl.kinds.form import FORM_INPUT_SCHEMA, FormTool
from nb_hitl.messages import parse_edited_input
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from nb_hitl.pauses import Pause
from tests.support import run_async, wait_until


class _Counting(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def leak_url() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on a free loopback port that records every request."""
    hits: list[str] = []
    handler = type("Handler", (_Counting,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/leak?x=1", hits
    finally:
        server.shutdown()
        server.server_close()


def form_agent(schema: Any) -> Agent:
    def answer(msgs: list[Any]) -> Turn:
        r = tool_results(msgs, "AskForm")[-1]
        return Turn(f"[{r.state}] {result_text(r)}")

    return Agent(
        name="forms",
        system_prompt="Ask with forms.",
        model=ScriptedChatModel(
            [Turn("I need details.", [tool_call("AskForm", title="Details", schema=schema)]), answer],
            on_exhausted="raise",
        ),
        toolkit=Toolkit(tools=[FormTool()]),
    )


def with_form(schema: Any, check: Any) -> str:
    """Run a real agent until its AskForm pause is open, call ``check(session,
    pause)`` (a coroutine function), then return the agent's final text."""

    async def scenario() -> str:
        session = Session(form_agent(schema), display=False)
        task = session.start("go")
        pause = await wait_until(lambda: session.pending and session.pending[0], "the form")
        assert pause.kind == "form"
        await check(session, pause)
        reply = await asyncio.wait_for(task, 10)
        return str(reply.get_text_content())

    return str(run_async(scenario()))


def submit(pause: Pause, value: Any) -> dict[str, Any]:
    return {"action": "submit", "tool_call_id": pause.tool_call_id, "value": value}


async def return_error(session: Session, pause: Pause) -> None:
    await session.act({"action": "return_error", "tool_call_id": pause.tool_call_id})


def test_c32_a_remote_ref_in_a_form_schema_is_never_fetched(leak_url: tuple[str, list[str]]) -> None:
    url, hits = leak_url
    schema = {"type": "object", "properties": {"x": {"$ref": url}}, "required": ["x"]}

    async def check(session: Session, pause: Pause) -> None:
        assert pause.form_error is not None and "not fetched" in pause.form_error and url in pause.form_error
        assert pause.response_schema is None and pause.to_view()["form_error"] == pause.form_error
        with pytest.raises(DecisionError, match="cannot be answered"):
            decide(pause, submit(pause, {"x": "y"}))
        # the AG-UI road: the interrupt's schema refuses any payload, and the
        # model's schema itself, validated as a peer's, is refused unfetched
        with pytest.raises(DecisionError):
            validate_payload(kind_spec("form").response_schema(pause), {"x": "y"})
        with pytest.raises(DecisionError, match="not fetched"):
            validate_payload(schema, {"x": "y"})
        assert pause.status == "open"
        await return_error(session, pause)

    final = with_form(schema, check)
    assert final.startswith("[error] The form could not be shown to the user: The schema cannot")
    assert hits == []  # nothing ever asked the server
    urllib.request.urlopen(url, timeout=5).read()  # the server does answer: a fetch would have been seen
    assert hits == ["/leak?x=1"]


def test_c32_a_catastrophic_pattern_is_checked_by_re2_and_answers_correctly() -> None:
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "title": "Code", "pattern": "^(a+)+$"}},
        "required": ["code"],
    }

    async def check(session: Session, pause: Pause) -> None:
        assert pause.form_error is None and pause.response_schema == schema
        with pytest.raises(DecisionError) as refused:
            decide(pause, submit(pause, {"code": "a" * 26 + "!"}))
        assert refused.value.field == "value.code" and "does not match '^(a+)+$'" in str(refused.value)
        with pytest.raises(DecisionError) as also:
            validate_payload(kind_spec("form").response_schema(pause), {"code": "a" * 26 + "!"})
        assert also.value.field == "code"
        validate_payload(kind_spec("form").response_schema(pause), {"code": "a" * 26})
        decision = decide(pause, submit(pause, {"code": "a" * 26}))
        assert decision.tool_result is not None and decision.tool_result.metadata == {"value": {"code": "a" * 26}}
        assert pause.status == "open"  # decide() alone resumes nothing
        await session.act(submit(pause, {"code": "a" * 26}))

    final = with_form(schema, check)
    assert final.startswith("[success]") and '"code": "' + "a" * 26 + '"' in final


def test_c32_a_pattern_re2_cannot_evaluate_is_refused_when_the_form_is_built() -> None:
    schema = {"type": "object", "properties": {"w": {"type": "string", "pattern": "^(a)\\1$"}}}

    async def check(session: Session, pause: Pause) -> None:
        assert (
            pause.form_error is not None
            and "RE2" in pause.form_error
            and "uses a backreference, which RE2 does not have" in pause.form_error
        )
        with pytest.raises(DecisionError, match="cannot be answered"):
            decide(pause, submit(pause, {"w": "aa"}))
        await return_error(session, pause)

    assert "RE2" in with_form(schema, check)


@pytest.mark.parametrize(
    "schema",
    [
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "$defs": {"a": {"$ref": "#/$defs/a"}},
            "$ref": "#/$defs/a",
        },
        {
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/one"}},
            "$defs": {"one": {"allOf": [{"$ref": "#/$defs/two"}]}, "two": {"anyOf": [{"$ref": "#/$defs/one"}]}},
        },
        {"type": "object", "properties": {"a": {"type": "string"}}, "not": {"$ref": "#"}},
    ],
    ids=["self", "mutual", "root"],
)
def test_c32_a_ref_loop_is_refused_with_a_clear_error(schema: dict[str, Any]) -> None:
    async def check(session: Session, pause: Pause) -> None:
        assert pause.form_error is not None and "references form a loop" in pause.form_error, pause.form_error
        assert "would never end" in pause.form_error
        with pytest.raises(DecisionError, match="cannot be answered"):
            decide(pause, submit(pause, {"a": "x"}))
        with pytest.raises(DecisionError, match="references form a loop"):
            validate_payload(schema, {"a": "x"})  # not a RecursionError
        await return_error(session, pause)

    assert "references form a loop" in with_form(schema, check)


def test_c32_a_recursive_schema_that_reads_deeper_is_not_a_loop() -> None:
    """A tree (a reference inside ``items``) steps into the answer each time: it is fine."""
    schema = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/node"}},
        "$defs": {
            "node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}
        },
    }

    async def check(session: Session, pause: Pause) -> None:
        assert pause.form_error is None
        with pytest.raises(DecisionError) as refused:
            decide(pause, submit(pause, {"root": {"kids": [{"kids": "no"}]}}))
        assert refused.value.field == "value.root"
        nested: dict[str, Any] = {}
        for _ in range(400):  # deeper than Python's recursion allows jsonschema to follow
            nested = {"kids": [nested]}
        with pytest.raises(DecisionError, match="nested too deeply"):
            decide(pause, submit(pause, {"root": nested}))
        await session.act(submit(pause, {"root": {"kids": [{"kids": []}]}}))

    assert with_form(schema, check).startswith("[success]")


INSIDE = (MAX_SCHEMA_DEPTH - 3) // 2
"""The most nested objects :func:`_deep` can have within :data:`MAX_SCHEMA_DEPTH`."""


def _deep(levels: int) -> dict[str, Any]:
    """A form whose one field nests ``levels`` objects: ``2 * levels + 3`` JSON
    levels (the root, its ``properties``, two per object, the string field)."""
    inner: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        inner = {"type": "object", "properties": {"n": inner}}
    return {"type": "object", "properties": {"n": inner}}


@pytest.mark.parametrize(
    "schema, needle",
    [
        (
            {"type": "object", "properties": {"a": {"type": "string", "description": "x" * MAX_SCHEMA_BYTES}}},
            f"larger than {MAX_SCHEMA_BYTES:,} bytes",
        ),
        (_deep(INSIDE + 1), f"more than {MAX_SCHEMA_DEPTH} levels deep"),
    ],
    ids=["oversized", "too-deep"],
)
def test_c32_an_oversized_or_too_deep_schema_is_refused_with_a_clear_error(schema: dict[str, Any], needle: str) -> None:
    async def check(session: Session, pause: Pause) -> None:
        assert pause.form_error is not None and needle in pause.form_error, pause.form_error
        assert pause.response_schema is None  # not sent to the page
        with pytest.raises(DecisionError, match="cannot be answered"):
            decide(pause, submit(pause, {"a": "x"}))
        await return_error(session, pause)

    assert needle in with_form(schema, check)


def test_c32_a_schema_just_inside_the_depth_cap_is_a_form() -> None:
    async def check(session: Session, pause: Pause) -> None:
        assert pause.form_error is None and pause.response_schema is not None
        await session.act({"action": "return_error", "tool_call_id": pause.tool_call_id, "message": "Not now."})

    assert with_form(_deep(INSIDE), check) == "[error] Not now."


def test_c32_a_peer_tool_schema_with_a_remote_ref_is_not_fetched_when_an_edit_is_checked(
    leak_url: tuple[str, list[str]],
) -> None:
    """The same guard checks a person's edit against a tool's input schema
    (a peer's, e.g. an MCP server's): the URL is never fetched and the edit is
    refused with why; a pattern is evaluated by RE2."""
    url, hits = leak_url
    with pytest.raises(DecisionError, match="not fetched"):
        parse_edited_input('{"path": "a"}', {"type": "object", "properties": {"path": {"$ref": url}}})
    schema = {"type": "object", "properties": {"path": {"type": "string", "pattern": "^(a+)+$"}}}
    with pytest.raises(DecisionError) as refused:
        parse_edited_input(json.dumps({"path": "a" * 26 + "!"}), schema)
    assert refused.value.field == "input.path" and "does not match" in str(refused.value)
    assert parse_edited_input(json.dumps({"path": "a" * 26}), schema) == {"path": "a" * 26}
    assert hits == []


# -- C32: a schema whose references expand exponentially ---------------------


def dag(levels: int, link: Any = None) -> dict[str, Any]:
    """A chain of ``$defs``: each link applies two references to the next
    (``anyOf`` by default, or ``link(ref)``), the last a string of 5+
    characters; every answer walks ``2 ** levels`` paths when validated."""

    def anyof(ref: str) -> dict[str, Any]:
        return {"anyOf": [{"$ref": ref}, {"$ref": ref, "title": "b"}]}

    defs = {f"a{i}": (link or anyof)(f"#/$defs/a{i + 1}") for i in range(levels)}
    defs[f"a{levels}"] = {"type": "string", "minLength": 5}
    return {
        "type": "object",
        "$defs": defs,
        "properties": {"x": {"$ref": "#/$defs/a0", "title": "X"}},
        "required": ["x"],
    }


TOO_COMPLEX = f"more than {MAX_SCHEMA_EXPANDED:,} parts, too many to check an answer against safely"


@pytest.mark.parametrize("levels", [18, 40])
def test_c32_a_dag_of_references_is_refused_on_every_road(levels: int) -> None:
    schema = dag(levels)
    with pytest.raises(SchemaRefused, match=TOO_COMPLEX):
        check_schema(schema)
    with pytest.raises(DecisionError, match=TOO_COMPLEX):  # an AG-UI interrupt's response_schema
        validate_payload(schema, {"x": "ab"})
    with pytest.raises(DecisionError, match=TOO_COMPLEX):  # Modify against a tool's input schema
        parse_edited_input('{"x": "ab"}', schema)


@pytest.mark.parametrize(
    "link",
    [
        lambda ref: {"allOf": [{"$ref": ref}, {"$ref": ref}]},
        lambda ref: {"oneOf": [{"$ref": ref}, {"not": {"$ref": ref}}]},
        lambda ref: {"if": {"$ref": ref}, "then": {"$ref": ref}, "else": {"$ref": ref}},
        lambda ref: {"items": {"$ref": ref}, "prefixItems": [{"$ref": ref}]},
        lambda ref: {"properties": {"p": {"$ref": ref}}, "additionalProperties": {"$ref": ref}},
        lambda ref: {"patternProperties": {"^p": {"$ref": ref}, "^q": {"$ref": ref}}},
        lambda ref: {"$ref": ref, "dependentSchemas": {"d": {"$ref": ref}}},
    ],
    ids=["allOf", "oneOf-not", "if-then-else", "items", "properties", "patternProperties", "dependentSchemas"],
)
def test_c32_every_keyword_that_applies_a_subschema_counts(link: Any) -> None:
    assert expanded_size(dag(4, link)) < expanded_size(dag(5, link))
    with pytest.raises(SchemaRefused, match=TOO_COMPLEX):
        check_schema(dag(40, link))


def test_c32_a_wide_schema_within_the_expansion_cap_is_checked_as_usual() -> None:
    """150 fields sharing one ``$defs`` entry (itself an ``anyOf`` of references)
    is large but linear; and a dag of 10 levels stays under the cap."""
    one = {"anyOf": [{"$ref": "#/$defs/text"}, {"$ref": "#/$defs/count"}]}
    wide = {
        "type": "object",
        "$defs": {"text": {"type": "string", "minLength": 2}, "count": {"type": "integer", "minimum": 0}},
        "properties": {f"f{n}": one for n in range(150)},
    }
    check_schema(wide)
    assert 150 * 6 < expanded_size(wide) < MAX_SCHEMA_EXPANDED  # each field: itself, anyOf, 2 refs, 2 targets
    with pytest.raises(DecisionError, match=r'in field "f3"'):
        validate_payload(wide, {"f1": "ok", "f2": 3, "f3": "x"})
    validate_payload(wide, {"f1": "ok", "f2": 3, "f3": 0})
    check_schema(dag(10))
    with pytest.raises(DecisionError, match="not valid under any"):
        validate_payload(dag(10), {"x": "ab"})


def _notebook_schemas() -> Iterator[tuple[str, Any]]:
    """Every dict literal with ``"properties"`` assigned in a notebook code cell."""
    for path in sorted(Path(__file__).parents[2].joinpath("notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            try:
                tree = ast.parse("".join(cell["source"]))
            except SyntaxError:  # %magics
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                    try:
                        value = ast.literal_eval(node.value)
                    except ValueError:
                        continue
                    if "properties" in value:
                        yield f"{path.name}:{ast.unparse(node.targets[0])}", value


def test_c32_the_real_schemas_of_the_repo_are_within_the_expansion_cap() -> None:
    """The MCP demo servers' tool input and elicitation schemas, AskForm's
    own input schema and the notebooks' forms all pass the guard."""
    from nb_hitl.mcp.demo_server import Slot
    from nb_hitl.mcp.demo_server import server as calendar
    from tests.mcp.db_server import Confirm, NewName
    from tests.mcp.db_server import server as customers

    schemas: list[tuple[str, Any]] = [("AskForm", FORM_INPUT_SCHEMA), *_notebook_schemas()]
    for server in (calendar, customers):
        schemas += [(tool.name, tool.input_schema) for tool in run_async(server.list_tools())]
    schemas += [(model.__name__, model.model_json_schema()) for model in (Slot, Confirm, NewName)]
    assert any(name.startswith("review_and_policy.ipynb") for name, _ in schemas)
    for name, schema in schemas:
        check_schema(schema)
        assert expanded_size(schema) < MAX_SCHEMA_EXPANDED // 10, name


def test_c32_a_model_form_whose_references_expand_too_far_is_refused_in_the_card() -> None:
    """A real Session: the scripted model's AskForm sends the 18-level dag.
    The card shows why, a submit is refused without validating (the schema is
    dropped, so nothing can spend tens of seconds on it), and the agent reads
    the error."""

    async def check(session: Session, pause: Pause) -> None:
        assert pause.form_error is not None and TOO_COMPLEX in pause.form_error, pause.form_error
        assert pause.response_schema is None and pause.to_view()["form_error"] == pause.form_error
        with pytest.raises(DecisionError, match="cannot be answered"):
            await session.act(submit(pause, {"x": "ab"}))
        assert pause.status == "open"  # nothing resumed with the refused answer
        await return_error(session, pause)

    final = with_form(dag(18), check)
    assert (
        final.startswith("[error] The form could not be shown to the user: The schema cannot") and TOO_COMPLEX in final
    )
