"""C41, URL mode: an MCP server sends the person to a page while its tool runs.

The real MCP server of tests/mcp/db_server.py (the SDK's ``MCPServer``, a
stdio subprocess) has ``sign_in(account)``: a URL-mode elicitation, sent as
``elicitation/create`` on a legacy connection and as an input-required
result on the current protocol. The question becomes a pause of kind
``elicitation`` carrying ``elicitation_url``; the answer takes the front door
(``Session.act``, as a click). Checked: what reached the server (it writes
what it got), that the URL the server chose never reaches the model (only the tool's result
does, which names the answer), a URL that must not be offered (a script, a
user name before the host) leaving only decline and cancel, and the audit line.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from nb_hitl import DecisionError, Session
from nb_hitl.kinds.elicitation import url_problem
from nb_hitl.models import result_text, tool_call, tool_results
from nb_hitl.store import AuditLog
from tests.mcp.mcp_support import MODES, answers, db_client, http_client, http_server, mcp_agent, question
from tests.support import run_async

SIGN_IN = "mcp__db__sign_in"
URL = "https://console.db.example/sign-in?session=7f3a"  # the server's page for alice


def _model_read(agent: Any) -> str:
    """Everything the model was sent, as one text."""
    return json.dumps([[m.model_dump(mode="json") for m in call] for call in agent.model.calls], ensure_ascii=False)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("answer", "model_reads"),
    [
        ({"action": "accept"}, "Signed in."),
        ({"action": "decline"}, "Not signed in: the user chose decline."),
    ],
)
def test_c41_url_mode_the_person_is_sent_to_a_page_and_the_model_reads_only_the_answer(
    tmp_path: Path, mode: str, answer: dict[str, Any], model_reads: str
) -> None:
    log = tmp_path / "server.jsonl"
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> tuple[str, Any, Any]:
        async with db_client(log, mode) as client:
            tools = await client.list_tools()
            agent = mcp_agent(tools, [tool_call(SIGN_IN, account="alice")], allow=SIGN_IN)
            session = Session(agent, display=False, audit_log=str(audit))
            task = session.start("Sign me in.")
            pause = await question(session)
            view = pause.to_view()
            assert view["kind"] == "elicitation" and view["tool_name"] == SIGN_IN
            assert view["elicitation_url"] == URL
            assert view["response_schema"] is None and view["form_error"] is None
            assert view["message"] == "Sign in to the database console."
            assert view["title"] == "The MCP server 'db' sends you to a page"
            with pytest.raises(DecisionError) as err:  # a page takes no values
                session.act({"action": "accept", "tool_call_id": pause.tool_call_id, "content": {"token": "x"}})
            assert err.value.field == "content" and pause.status == "open"
            assert answers(log) == []  # nothing reached the server yet
            out = await session.act({**answer, "tool_call_id": pause.tool_call_id})
            assert out["status"] == "decided"
            final = await asyncio.wait_for(task, 30)
            return final.get_text_content(), pause, agent

    final, pause, agent = run_async(scenario())
    assert answers(log) == [{"tool": "sign_in", "action": answer["action"]}]  # no content: only the answer
    assert final == f"{SIGN_IN} success: {model_reads}"
    assert result_text(tool_results(agent.model.calls[-1], SIGN_IN)[-1]) == model_reads
    # the server chose the page; the model was sent the tool's result, never the address or the question
    sent = _model_read(agent)
    assert model_reads in sent  # what the model was sent holds the tool's result
    assert "console.db.example" not in sent and "Sign in to the database console." not in sent
    assert "sends you to a page" not in sent
    assert pause.status == "delivered" and pause.decision["action"] == answer["action"]
    asked = [r for r in AuditLog(audit).records("answered") if r["kind"] == "elicitation"]
    assert len(asked) == 1 and asked[0]["decision"] == answer["action"] and "content" not in asked[0]


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("javascript:alert(1)", "not a web address"),
        ("https://bank.example@evil.example/login", "user name or password"),
        ("https:///no-host", "names no host"),
        ("https://ok.example/a b", "spaces or invisible"),
        ("https://ok.example/\u202egnp.exe", "spaces or invisible"),
        ("https://ok.example:99999/", "cannot be read"),
        ("https://ok.example/" + "a" * 3000, "too long"),
        ("", "no URL"),
    ],
)
def test_url_problem_names_what_is_wrong(url: str, said: str) -> None:
    problem = url_problem(url)
    assert problem is not None and said in problem
    assert url_problem("https://accounts.example.com/o/oauth2?x=1") is None
    assert url_problem("http://127.0.0.1:8765/done") is None


@pytest.mark.parametrize("mode", MODES)
def test_c41_a_url_that_must_not_be_offered_leaves_only_decline_and_cancel(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "server.jsonl"

    async def scenario() -> str:
        async with db_client(log, mode) as client:
            tools = await client.list_tools()
            agent = mcp_agent(tools, [tool_call(SIGN_IN, account="mallory")], allow=SIGN_IN)
            session = Session(agent, display=False)
            task = session.start("Sign me in.")
            pause = await question(session)
            view = pause.to_view()
            assert view["elicitation_url"] is None  # never shown, never openable
            assert "user name or password" in (view["form_error"] or "")
            with pytest.raises(DecisionError) as err:
                session.act({"action": "accept", "tool_call_id": pause.tool_call_id})
            assert err.value.field == "action" and "Decline or cancel it instead." in str(err.value)
            assert answers(log) == []
            await session.act({"action": "decline", "tool_call_id": pause.tool_call_id})
            return (await asyncio.wait_for(task, 30)).get_text_content()

    assert run_async(scenario()) == f"{SIGN_IN} success: Not signed in: the user chose decline."
    assert answers(log) == [{"tool": "sign_in", "action": "decline"}]


@pytest.mark.parametrize("mode", MODES)
def test_c41_url_mode_over_streamable_http(tmp_path: Path, mode: str) -> None:
    """The same page from a server on 127.0.0.1 over streamable HTTP."""
    log = tmp_path / "server.jsonl"

    async def scenario(url: str) -> str:
        async with http_client(url, mode) as client:
            tools = await client.list_tools()
            agent = mcp_agent(tools, [tool_call(SIGN_IN, account="alice")], allow=SIGN_IN)
            session = Session(agent, display=False)
            task = session.start("Sign me in.")
            pause = await question(session)
            assert pause.to_view()["elicitation_url"] == URL
            await session.act({"action": "accept", "tool_call_id": pause.tool_call_id})
            return (await asyncio.wait_for(task, 30)).get_text_content()

    with http_server(log) as url:
        final = run_async(scenario(url))
    assert final == f"{SIGN_IN} success: Signed in."
    assert answers(log) == [{"tool": "sign_in", "action": "accept"}]
