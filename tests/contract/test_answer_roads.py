"""One contract, every road: the same answers give the same outcome however they travel.

An answer reaches an agent by one of several roads: a click on the reply
widget (the comm handler a page message reaches), ``session.act`` /
``session.act_all`` in the kernel, an AG-UI resume at the served agent sent
by the notebook's AG-UI client (:class:`~nb_hitl.agui.RemoteSession`). Each
road goes through :mod:`nb_hitl.answers` (front door, status table, audit
record). This test drives the same answers down each road, against the same
real agent (a real ``agentscope.agent.Agent`` on the scripted model, with the
demo's real sandbox tools), and asserts the same outcome on each:

* what ran (the sandbox folder) and what the model read (its final text,
  which reports each tool result it got, call ids masked);
* the audit record (the decisions, and the ``origin`` naming the road);
* what the person was told for a refused answer (a bad shape, a duplicate):
  refused on every road, and nothing ran.

The service console's road needs AgentScope's service on Redis and
PostgreSQL; its share of the contract is in ``tests/service/``.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.tool import Toolkit

from nb_hitl import NbHitlError, Session
from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
from nb_hitl.demo import make_sandbox, sandbox_tools
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from nb_hitl.store import AuditLog
from tests.support import parked, run_async, wait_until, widget_replies
from tests.support_agents import files

QUESTION = "Which files should I archive?"


def report(messages: list[Any]) -> Turn:
    """The model's second turn: say exactly what each tool result told it."""
    parts = []
    for name in ("AskUser", "delete_file"):
        r = (tool_results(messages, name) or [None])[-1]
        if r is None:
            parts.append(f"{name}: no result")
            continue
        state = getattr(r.state, "value", r.state)
        answers = (r.metadata or {}).get("answers") if name == "AskUser" else None
        parts.append(f"{name}: {state}: {result_text(r)}" + (f" {json.dumps(answers)}" if answers else ""))
    return Turn(" | ".join(parts))


def contract_agent(folder: Path) -> Agent:
    """AskUser (multi-select, with the widget's "Other") and ``delete_file`` at once, then :func:`report`."""
    first = Turn(
        "Two things.",
        [
            tool_call(
                "AskUser",
                questions=[
                    {
                        "question": QUESTION,
                        "header": "Archive",
                        "multi_select": True,
                        "options": [
                            {"label": "notes.txt", "description": "meeting notes"},
                            {"label": "draft.md", "description": "an unread draft"},
                        ],
                    }
                ],
            ),
            tool_call("delete_file", path="old_log.txt"),
        ],
    )
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
class Road:
    """One way in. ``pauses`` maps a tool name to its open call's id."""

    name = ""
    origin = ""

    def __init__(self, folder: Path, audit: Path) -> None:
        self.folder = folder
        self.audit = audit
        self.pauses: dict[str, str] = {}

    async def start(self, prompt: str) -> None:
        raise NotImplementedError

    async def send(self, messages: list[dict[str, Any]]) -> None:
        """Send the answers (one, or all at once); raise :class:`NbHitlError` on refusal."""
        raise NotImplementedError

    async def final(self) -> str:
        raise NotImplementedError

    async def close(self) -> None:
        return None

    def decisions(self) -> list[tuple[str, str, str]]:
        """``(tool_name, decision, road)`` of every answer record in the log."""
        return [
            (r["tool_name"], r["decision"], (r.get("origin") or {}).get("road", "?"))
            for r in AuditLog(self.audit).records("answered")
            if r.get("tool_call_id") and r.get("decision")
        ]


class LocalRoad(Road):
    def __init__(self, folder: Path, audit: Path) -> None:
        super().__init__(folder, audit)
        self.session = Session(contract_agent(folder), display=self.name == "click", audit_log=str(audit))
        self.task: Any = None

    async def start(self, prompt: str) -> None:
        self.task = self.session.start(prompt)
        pauses = await parked(self.session)
        self.pauses = {p.tool_name: p.tool_call_id for p in pauses}

    async def final(self) -> str:
        msg = await asyncio.wait_for(asyncio.shield(self.task), 20)
        return str(msg.get_text_content())


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


class AguiRoad(Road):
    """The notebook's AG-UI client against the served agent: one resume run."""

    name = "agui"
    origin = "agui"

    def __init__(self, folder: Path, audit: Path) -> None:
        super().__init__(folder, audit)
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

    async def close(self) -> None:
        self.handle.stop()


ROADS = [ClickRoad, ActRoad, AguiRoad]


# --------------------------------------------------------------- scenarios
def ask(road: Road, **answer: Any) -> dict[str, Any]:
    return {"action": "answer", "tool_call_id": road.pauses["AskUser"], "answers": [{"question": QUESTION, **answer}]}


def on_delete(road: Road, action: str, **fields: Any) -> dict[str, Any]:
    return {"action": action, "tool_call_id": road.pauses["delete_file"], **fields}


SCENARIOS: dict[str, Callable[[Road], list[dict[str, Any]]]] = {
    "approve_and_multi_select_with_other": lambda r: [
        ask(r, selected=["notes.txt", "draft.md"], other="todo.txt"),
        on_delete(r, "approve"),
    ],
    "deny_with_a_reason": lambda r: [ask(r, selected=["notes.txt"]), on_delete(r, "deny", reason="Keep the log.")],
    "modify": lambda r: [
        ask(r, selected=["draft.md"]),
        on_delete(r, "modify", input=json.dumps({"path": "draft.md"})),
    ],
    "return_the_error_with_a_message": lambda r: [
        {"action": "return_error", "tool_call_id": r.pauses["AskUser"], "message": "I will choose later."},
        on_delete(r, "approve"),
    ],
}


async def play(road_cls: type[Road], tmp: Path, scenario: str) -> dict[str, Any]:
    folder = make_sandbox(tmp / f"{road_cls.name}-{scenario}")
    road = road_cls(folder, tmp / f"{road_cls.name}-{scenario}.jsonl")
    try:
        await road.start("Tidy up, please.")
        ids = list(road.pauses.values())
        answers = SCENARIOS[scenario](road)
        await road.send(answers)
        final = masked(await road.final(), ids)
        return {"final": final, "files": files(folder), "decisions": sorted(road.decisions())}
    finally:
        await road.close()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_road_gives_the_same_outcome(tmp_path: Path, scenario: str) -> None:
    outcomes = {cls.name: run_async(play(cls, tmp_path, scenario)) for cls in ROADS}
    first = outcomes["act"]
    for name, got in outcomes.items():
        assert got["final"] == first["final"], f"{name} told the model something else"
        assert got["files"] == first["files"], f"{name} ran something else"
        origin = next(c.origin for c in ROADS if c.name == name)
        assert [d[:2] for d in got["decisions"]] == [d[:2] for d in first["decisions"]], name
        assert {d[2] for d in got["decisions"]} == {origin}, f"{name}'s audit lines name another road"
    final, left = first["final"], first["files"]
    if scenario == "approve_and_multi_select_with_other":
        assert "old_log.txt" not in left and "delete_file: success" in final
        assert "todo.txt" in final and "notes.txt" in final and "draft.md" in final
    elif scenario == "deny_with_a_reason":
        assert "old_log.txt" in left and "delete_file: denied" in final and "Keep the log." in final
    elif scenario == "modify":
        assert "old_log.txt" in left and "draft.md" not in left and "delete_file: success" in final
    elif scenario == "return_the_error_with_a_message":
        assert "AskUser: error" in final and "I will choose later." in final


RefusalCase = Callable[[Road], Awaitable[None]]


async def _bad_shape(road: Road) -> None:
    await road.send([{"action": "approve"}])  # no tool_call_id


async def _unknown_call(road: Road) -> None:
    await road.send([{"action": "approve", "tool_call_id": "call_does_not_exist"}])


async def _bad_answer(road: Road) -> None:
    await road.send([ask(road, selected=["not an option"])])


@pytest.mark.parametrize("case", [_bad_shape, _unknown_call, _bad_answer], ids=lambda c: c.__name__.strip("_"))
@pytest.mark.parametrize("road_cls", ROADS, ids=lambda c: c.name)
def test_a_refused_answer_is_refused_on_every_road_and_nothing_runs(
    tmp_path: Path, road_cls: type[Road], case: RefusalCase
) -> None:
    async def body() -> None:
        folder = make_sandbox(tmp_path / "box")
        road = road_cls(folder, tmp_path / "audit.jsonl")
        try:
            await road.start("Tidy up, please.")
            with pytest.raises(NbHitlError):
                await case(road)
            assert "old_log.txt" in files(folder)
            assert road.decisions() == []
            # the pauses are still open: a right answer goes through after the refusal
            await road.send([ask(road, selected=["notes.txt"]), on_delete(road, "approve")])
            final = await road.final()
            assert "delete_file: success" in final and "old_log.txt" not in files(folder)
        finally:
            await road.close()

    run_async(body())


@pytest.mark.parametrize("road_cls", [ClickRoad, ActRoad], ids=lambda c: c.name)
def test_a_duplicate_answer_is_refused_and_runs_nothing_twice(tmp_path: Path, road_cls: type[Road]) -> None:
    async def body() -> None:
        folder = make_sandbox(tmp_path / "box")
        road = road_cls(folder, tmp_path / "audit.jsonl")
        await road.start("Tidy up, please.")
        approve = on_delete(road, "approve")
        await road.send([approve])
        with pytest.raises(NbHitlError, match="Already decided"):
            await road.send([approve])
        await road.send([ask(road, selected=["notes.txt"])])
        await road.final()
        assert [d[:2] for d in road.decisions()] == [("delete_file", "approve"), ("AskUser", "answer")]

    run_async(body())
