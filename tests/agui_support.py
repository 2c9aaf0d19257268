"""Shared pieces of the AG-UI tests: real agents, a real server, the validator.

Agents are real ``agentscope.agent.Agent``s on ``ScriptedChatModel``; the
external tool below is a real ``agentscope.tool.ToolBase`` subclass (how
AgentScope defines an external tool), not a mock of anything.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from ag_ui.core import BaseEvent, Event, RunAgentInput, UserMessage
from ag_ui_validate.transport import TransportOptions, validate_body
from agentscope.agent import Agent
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import ToolBase, Toolkit
from pydantic import TypeAdapter

from nb_hitl.agui.demo import two_pause_agent
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results

_EVENT = TypeAdapter(Event)


class RunQuery(ToolBase):
    """An external tool: the person runs the query and pastes the result."""

    name = "run_query"
    description = "Run a SQL query against the warehouse (run by a person)."
    input_schema = {
        "type": "object",
        "properties": {"sql": {"type": "string", "description": "the query"}},
        "required": ["sql"],
    }
    is_concurrency_safe = True
    is_read_only = True
    is_external_tool = True

    async def check_permissions(self, tool_input: dict[str, Any], context: Any) -> PermissionDecision:
        return PermissionDecision(behavior=PermissionBehavior.ALLOW, message="Queries are run by a person.")


def plain_agent() -> Agent:
    """Answers once, calls no tool."""
    return Agent(
        name="plain",
        system_prompt="Greet.",
        model=ScriptedChatModel([Turn("Hello there, nothing to do.")]),
    )


def external_agent() -> Agent:
    """Calls the external ``run_query`` tool, then reports its output."""

    def report(messages: list[Any]) -> Turn:
        r = (tool_results(messages, "run_query") or [None])[-1]
        state = getattr(r.state, "value", r.state) if r is not None else "none"
        return Turn(f"The query came back {state}: {result_text(r)}")

    return Agent(
        name="analyst",
        system_prompt="Query.",
        model=ScriptedChatModel([Turn("Let me query.", [tool_call("run_query", sql="select 1")]), report]),
        toolkit=Toolkit(tools=[RunQuery()]),
    )


REFUND = {
    "type": "object",
    "properties": {
        "amount": {"type": "number", "title": "Amount (EUR)", "minimum": 0, "maximum": 500},
        "date": {"type": "string", "format": "date", "title": "Purchase date"},
    },
    "required": ["amount"],
}
RAW = "Ana Lima, card 4111-1111-1111-1111"
REDACTED = "Ana Lima, card [REDACTED]"


def form_agent() -> Agent:
    """Asks for a refund form (nb_hitl.kinds.form.FormTool), then repeats the value."""
    from nb_hitl.kinds.form import FormTool

    def report(messages: list[Any]) -> Turn:
        r = (tool_results(messages, "AskForm") or [None])[-1]
        state = getattr(r.state, "value", r.state)
        return Turn(f"Form {state}: {json.dumps((r.metadata or {}).get('value'))}")

    return Agent(
        name="refunds",
        system_prompt="Refunds.",
        model=ScriptedChatModel(
            [
                Turn(
                    "I need the details.",
                    [tool_call("AskForm", title="Refund details", message="For the refund.", schema=REFUND)],
                ),
                report,
            ]
        ),
        toolkit=Toolkit(tools=[FormTool()]),
    )


def review_agent(runs: list[str]) -> Agent:
    """Looks a customer up with a reviewed tool (nb_hitl.kinds.review_tool), then says what it read."""
    from nb_hitl.kinds.review_tool import reviewed

    def lookup_customer(customer: str) -> str:
        """Look up a customer record.

        Args:
            customer (str): the customer's name.
        """
        runs.append(customer)
        return RAW

    def report(messages: list[Any]) -> Turn:
        r = (tool_results(messages, "lookup_customer") or [None])[-1]
        return Turn(f"I read: {result_text(r)}")

    return Agent(
        name="crm",
        system_prompt="CRM.",
        model=ScriptedChatModel([Turn("Looking up.", [tool_call("lookup_customer", customer="Ana")]), report]),
        toolkit=Toolkit(tools=[reviewed(lookup_customer, is_read_only=True)]),
    )


class Factory:
    """One agent per thread, chosen by the thread id's prefix:
    ``plain-*`` (no tools), ``ext-*`` (an external tool), ``form-*`` (an
    AskForm form), ``review-*`` (a reviewed tool), anything else the
    two-pause demo agent (AskUser + delete_file in one turn)."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.agents: dict[str, Agent] = {}
        self.tool_runs: list[str] = []

    def __call__(self, thread_id: str) -> Agent:
        if thread_id.startswith("plain"):
            agent = plain_agent()
        elif thread_id.startswith("ext"):
            agent = external_agent()
        elif thread_id.startswith("form"):
            agent = form_agent()
        elif thread_id.startswith("review"):
            agent = review_agent(self.tool_runs)
        else:
            agent = two_pause_agent(self.root / thread_id)
        self.agents[thread_id] = agent
        return agent


def user(text: str, id: str) -> UserMessage:
    return UserMessage(id=id, content=text)


async def collect(server: Any, inp: RunAgentInput) -> list[BaseEvent]:
    """All events of one run, in process (no HTTP)."""
    return [e async for e in server.run(inp)]


@dataclass
class Captured:
    """One run over HTTP: the raw SSE body, the parsed events, and the
    conformance report of ag-ui-validate on that same live stream."""

    status: int
    content_type: str
    body: bytes
    events: list[BaseEvent]
    report: Any
    chunks: int = 0
    dicts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def types(self) -> list[str]:
        return [e.type.value for e in self.events]

    def findings(self) -> list[str]:
        return [f"{d.rule} {d.severity}: {d.message}" for d in self.report.diagnostics if d.severity != "info"]

    def last(self) -> BaseEvent:
        return self.events[-1]


def _frames(body: bytes) -> list[str]:
    out = []
    for frame in body.decode("utf-8").replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip(" ") for line in frame.split("\n") if line.startswith("data:")]
        if data:
            out.append("\n".join(data))
    return out


async def post_run(
    url: Any, inp: RunAgentInput | dict[str, Any], *, token: str | None = None, headers: dict[str, str] | None = None
) -> Captured:
    """POST a run with httpx and validate the live SSE stream with
    ag-ui-validate's transport layer (``validate_body``: SSE framing,
    Content-Type, then the core event grammar) while keeping every byte.
    ``url`` may be a ``ServerHandle`` (its url and token are used)."""
    if hasattr(url, "token"):
        token = token or url.token
        url = url.url
    body = inp if isinstance(inp, dict) else inp.model_dump(mode="json", by_alias=True)
    sent = {"Accept": "text/event-stream", **({"Authorization": f"Bearer {token}"} if token else {}), **(headers or {})}
    chunks: list[bytes] = []
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=120.0)) as http:
        async with http.stream("POST", url, json=body, headers=sent) as response:
            content_type = response.headers.get("content-type", "")
            if response.status_code != 200:
                data = await response.aread()
                return Captured(response.status_code, content_type, data, [], None)

            async def tee() -> AsyncIterator[bytes]:
                async for chunk in response.aiter_bytes():
                    chunks.append(chunk)
                    yield chunk

            result = await validate_body(tee(), content_type, TransportOptions())
    raw = b"".join(chunks)
    frames = _frames(raw)
    events = [_EVENT.validate_json(f) for f in frames]
    return Captured(200, content_type, raw, events, result.report, len(chunks), [json.loads(f) for f in frames])
