"""The roads of the answer-roads contract (tests/contract/test_answer_roads.py):
the agent every road answers (AskUser multi-select and ``delete_file`` at
once, then a report of what each tool result said), and one class per road
behind the :class:`Road` protocol: a click on the reply widget, ``session.act``
/ ``session.act_all``, the AG-UI client against the served agent, and the
service console against AgentScope's service (two workers, Redis bus,
PostgreSQL storage).
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pytest
from agentscope.agent import Agent
from agentscope.message import Msg
from agentscope.tool import Toolkit

from nb_hitl import NbHitlError, Session
from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
from nb_hitl.demo import make_sandbox, sandbox_tools
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from nb_hitl.service import ServiceClient, SessionConsole
from nb_hitl.service.http import user_msg_body
from nb_hitl.store import AuditLog
from tests.service.cluster import Cluster
from tests.support import parked, wait_until, widget_replies

QUESTION = "Which files should I archive?"


def report(messages: list[Any]) -> Turn:
    """The model's second turn: say exactly what each tool result told it."""
    return Turn(report_text(messages))


def report_text(messages: list[Any]) -> str:
    """What each tool result in ``messages`` (AgentScope ``Msg``\\ s) says: its state, text and AskUser answers."""
    parts = []
    for name in ("AskUser", "delete_file"):
        r = (tool_results(messages, name) or [None])[-1]
        if r is None:
            parts.append(f"{name}: no result")
            continue
        state = getattr(r.state, "value", r.state)
        answers = (r.metadata or {}).get("answers") if name == "AskUser" else None
        parts.append(f"{name}: {state}: {result_text(r)}" + (f" {json.dumps(answers)}" if answers else ""))
    return " | ".join(parts)


FIRST_CALLS: list[tuple[str, dict[str, Any]]] = [
    (
        "AskUser",
        {
            "questions": [
                {
                    "question": QUESTION,
                    "header": "Archive",
                    "multi_select": True,
                    "options": [
                        {"label": "notes.txt", "description": "meeting notes"},
                        {"label": "draft.md", "description": "an unread draft"},
                    ],
                }
            ]
        },
    ),
    ("delete_file", {"path": "old_log.txt"}),
]
"""The model's first turn on every road: AskUser (multi-select) and ``delete_file`` at once."""


def contract_agent(folder: Path) -> Agent:
    """AskUser (multi-select, with the widget's "Other") and ``delete_file`` at once, then :func:`report`."""
    first = Turn("Two things.", [tool_call(name, **args) for name, args in FIRST_CALLS])
    return Agent(
        name="tidy",
        system_prompt="You tidy up a folder.",
        model=ScriptedChatModel([first, report]),
        toolkit=Toolkit(tools=sandbox_tools(folder)),
    )


def masked(text: str, ids: list[str]) -> str:
    """``text`` with the run's own call ids replaced (they differ per run)."""
    for n, i in enumerate(ids):
        text = text.replace(i, f"<call{n}>")
    return re.sub(r"call_[0-9a-f]{6,}", "<call>", text)


# ------------------------------------------------------------------ roads
class Road(Protocol):
    """One way in (each road below has these). ``pauses`` maps a tool name to its open call's id."""

    name: str
    origin: str
    folder: Path
    audit: Path
    pauses: dict[str, str]

    def __init__(self, folder: Path, audit: Path) -> None:
        """A new road over the sandbox ``folder`` (the service road makes its own), audit log at ``audit``."""
        ...

    async def start(self, prompt: str) -> None:
        """Start the reply and wait until it parks on both calls (fills ``pauses``)."""
        ...

    async def send(self, messages: list[dict[str, Any]]) -> None:
        """Send the answers (one, or all at once); raise :class:`NbHitlError` on refusal."""
        ...

    async def final(self) -> str:
        """What the model read (see :func:`report_text`) once the reply ended."""
        ...

    def views(self) -> list[dict[str, Any]]:
        """The reply's pauses as the page gets them."""
        ...

    def decisions(self) -> list[tuple[str, str, str]]:
        """``(tool_name, decision, road)`` of every answer that reached the agent."""
        ...

    async def close(self) -> None:
        """Stop what the road started."""
        ...


def audit_decisions(audit: Path) -> list[tuple[str, str, str]]:
    """``(tool_name, decision, road)`` of every answer record in the log at ``audit``."""
    return [
        (r["tool_name"], r["decision"], (r.get("origin") or {}).get("road", "?"))
        for r in AuditLog(audit).records("answered")
        if r.get("tool_call_id") and r.get("decision")
    ]


def statuses(road: Road) -> dict[str, str]:
    """``{tool_name: status}`` of the reply's pauses as ``road`` shows them."""
    return {v["tool_name"]: v["status"] for v in road.views()}


def told_on_card(road: Road) -> list[str]:
    """What ``road``'s cards say the agent was told (the decision's ``note``: "The agent was told: ...")."""
    return [
        v["decision"]["note"] for v in road.views() if isinstance(v.get("decision"), dict) and v["decision"].get("note")
    ]


class LocalRoad:
    """A :class:`Session` in this kernel; its subclasses say how the answers are sent."""

    name = ""

    def __init__(self, folder: Path, audit: Path) -> None:
        self.folder = folder
        self.audit = audit
        self.pauses: dict[str, str] = {}
        self.session = Session(contract_agent(folder), display=self.name == "click", audit_log=str(audit))
        self.task: Any = None

    async def start(self, prompt: str) -> None:
        self.task = self.session.start(prompt)
        pauses = await parked(self.session)
        self.pauses = {p.tool_name: p.tool_call_id for p in pauses}

    async def final(self) -> str:
        msg = await asyncio.wait_for(asyncio.shield(self.task), 20)
        return str(msg.get_text_content())

    def views(self) -> list[dict[str, Any]]:
        run = self.session.current
        return [dict(p.to_view()) for p in run.pauses.values()] if run is not None else []

    def decisions(self) -> list[tuple[str, str, str]]:
        return audit_decisions(self.audit)

    async def close(self) -> None:
        return None


class ClickRoad(LocalRoad):
    """The page's message through the widget's comm handler (what a click sends)."""

    name = "click"
    origin = "kernel"
    _n = 0

    async def send(self, messages: list[dict[str, Any]]) -> None:
        widget = self.session.current.widget
        sent = widget_replies(widget)
        ClickRoad._n += 1
        rid = f"r{ClickRoad._n}"
        content = (
            {"request_id": rid, **messages[0]}
            if len(messages) == 1
            else {"request_id": rid, "action": "batch", "items": messages}
        )
        widget._on_page_message(widget, content, [])
        reply = await wait_until(lambda: next((m for m in sent if m.get("request_id") == rid), None), "the answer")
        if not reply["ok"]:
            raise NbHitlError(reply["error"])
        refused = [r for r in reply.get("results") or [] if not r["ok"]]
        if refused:
            raise NbHitlError(refused[0]["error"])


class ActRoad(LocalRoad):
    """``session.act`` (one) and ``session.act_all`` (several) in the kernel."""

    name = "act"
    origin = "kernel"

    async def send(self, messages: list[dict[str, Any]]) -> None:
        if len(messages) == 1:
            await self.session.act(messages[0])
        else:
            await self.session.act_all(messages)


class AguiRoad:
    """The notebook's AG-UI client against the served agent: one resume run."""

    name = "agui"
    origin = "agui"

    def __init__(self, folder: Path, audit: Path) -> None:
        self.folder = folder
        self.audit = audit
        self.pauses: dict[str, str] = {}
        self.server = AguiServer(lambda thread_id: contract_agent(folder), session_kwargs={"audit_log": str(audit)})
        self.handle = serve_in_background(self.server)
        self.remote = RemoteSession(self.handle.url, token=self.handle.token, thread_id="contract", display=False)
        self.task: Any = None

    async def start(self, prompt: str) -> None:
        self.task = self.remote.start(prompt)
        views = await self.remote.until_paused()
        self.pauses = {v["tool_name"]: v["tool_call_id"] for v in views}

    async def send(self, messages: list[dict[str, Any]]) -> None:
        for m in messages:
            await self.remote.act(m)

    async def final(self) -> str:
        return str(await asyncio.wait_for(asyncio.shield(self.task), 20))

    def views(self) -> list[dict[str, Any]]:
        turn = self.remote.current
        return [dict(v) for v in turn.pauses.values()] if turn is not None else []

    def decisions(self) -> list[tuple[str, str, str]]:
        return audit_decisions(self.audit)

    async def close(self) -> None:
        self.handle.stop()


class ServiceRoad:
    """The service console's card (:meth:`SessionConsole.handle`, what a click
    on its card sends) against AgentScope's service: two workers, Redis bus,
    PostgreSQL storage. The chat starts through worker A; the console talks to
    worker B. Several answers go as the card's "Submit all" (one batch)."""

    name = "service"
    origin = "service"
    cluster: Cluster  # set by :func:`open_road`

    def __init__(self, folder: Path, audit: Path) -> None:
        # the service's tools work in the user's folder under the cluster's sandboxes
        self.user = f"contract-{uuid.uuid4().hex[:10]}"
        self.folder = make_sandbox(self.cluster.sandboxes / self.user)
        self.audit = audit
        self.pauses: dict[str, str] = {}
        self.starter = ServiceClient(self.cluster.a.url, self.user, audit_path=audit.with_suffix(".a.jsonl"))
        self.client = ServiceClient(self.cluster.b.url, self.user, audit_path=audit, service_id="cluster")
        self.console: SessionConsole | None = None
        self._n = 0

    async def start(self, prompt: str) -> None:
        http = self.starter.http
        agent_id = await http.create_agent("tidy")
        sid = await http.create_session(
            agent_id, await http.create_credential(self.cluster.model.base_url), name="tidy"
        )
        calls = "\n".join(f"call: {name} {json.dumps(args)}" for name, args in FIRST_CALLS)
        await http.chat(agent_id, sid, user_msg_body(f"{prompt}\n{calls}"))
        self.console = await self.client.open(sid, agent_id)
        await self._until(lambda: len(self._console.pauses) == len(FIRST_CALLS), "the chat to park on both calls")
        self.pauses = {p.tool_name: p.tool_call_id for p in self._console.pauses.values()}

    @property
    def _console(self) -> SessionConsole:
        assert self.console is not None, "start() first"
        return self.console

    async def _until(self, check: Callable[[], Any], what: str) -> None:
        for _ in range(120):
            await self._console.refresh()
            if check():
                return
            await asyncio.sleep(0.25)
        raise AssertionError(f"timed out waiting for {what}")

    async def send(self, messages: list[dict[str, Any]]) -> None:
        self._n += 1
        if len(messages) == 1:
            await self._console.handle({"request_id": f"r{self._n}", **messages[0]})
            return
        reply = await self._console.handle({"request_id": f"r{self._n}", "action": "batch", "items": messages})
        refused = [r for r in reply.get("results") or [] if not r["ok"]]
        if refused:
            raise NbHitlError(refused[0]["error"])

    async def final(self) -> str:
        console = self._console
        await self._until(lambda: console.status == "idle", "the reply to end")
        body = await console.http.messages(console.agent_id, console.session_id, limit=50)
        return report_text([Msg.model_validate(m) for m in body.get("messages") or []])

    def views(self) -> list[dict[str, Any]]:
        return [dict(p.to_view()) for p in self._console.pauses.values()]

    def decisions(self) -> list[tuple[str, str, str]]:
        """The ledger's ``applied`` lines: the answers that reached the tool."""
        return [
            d for d, r in zip(audit_decisions(self.audit), self._answered(), strict=True) if r.get("phase") == "applied"
        ]

    def _answered(self) -> list[dict[str, Any]]:
        return [r for r in AuditLog(self.audit).records("answered") if r.get("tool_call_id") and r.get("decision")]

    def sent(self) -> int:
        """Ledger lines of answers sent (``sending``): none for a refused answer."""
        return sum(r.get("phase") == "sending" for r in self._answered())

    async def close(self) -> None:
        await self.client.aclose()
        await self.starter.aclose()


ROADS: list[type[Road]] = [ClickRoad, ActRoad, AguiRoad, ServiceRoad]


def open_road(road_cls: type[Road], folder: Path, audit: Path, request: pytest.FixtureRequest) -> Road:
    """A road; the service road gets the running workers (started once for the test session)."""
    if road_cls is ServiceRoad:
        ServiceRoad.cluster = request.getfixturevalue("workers")
    return road_cls(folder, audit)
