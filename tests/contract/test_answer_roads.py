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

The service console's road (``ServiceRoad``, tests/contract/roads.py) plays the same answers
through :class:`~nb_hitl.service.SessionConsole` against AgentScope's own
service: two uvicorn workers on one Redis bus, storage in PostgreSQL
(tests/conftest.py's ``workers``, one pair for the whole test session),
the chat started through worker A and answered through worker B. The
service's agent has the same tools over its own sandbox folder
(``NB_HITL_SERVICE_SANDBOXES``); its model is the service's offline script,
so "what the model read" is read there from the tool results the service
stored and fed the model (the same :func:`report` of them). Its audit lines
are the console's ledger (one ``sending`` line before each POST, then the
verdict): an answer that reached the tool is its ``applied`` line.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from nb_hitl import NbHitlError
from nb_hitl.demo import make_sandbox
from nb_hitl.service import OutcomeError, ServiceClient
from nb_hitl.service.told import UNTOLD
from tests.contract.roads import (
    QUESTION,
    ROADS,
    ActRoad,
    AguiRoad,
    ClickRoad,
    Road,
    ServiceRoad,
    masked,
    open_road,
    statuses,
    told_on_card,
)
from tests.support import run_async
from tests.support_agents import files


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


LOCAL_DENIAL = "The user denied your call to delete_file, saying: Keep the log."


async def play(road_cls: type[Road], tmp: Path, scenario: str, request: pytest.FixtureRequest) -> dict[str, Any]:
    folder = make_sandbox(tmp / f"{road_cls.name}-{scenario}")
    road = open_road(road_cls, folder, tmp / f"{road_cls.name}-{scenario}.jsonl", request)
    try:
        await road.start("Tidy up, please.")
        ids = list(road.pauses.values())
        answers = SCENARIOS[scenario](road)
        await road.send(answers)
        final = masked(await road.final(), ids)
        return {
            "final": final,
            "files": files(road.folder),
            "decisions": sorted(road.decisions()),
            "statuses": statuses(road),
            "told_on_card": [masked(t, ids) for t in told_on_card(road)],
            "messages": {v["tool_name"]: v.get("message") for v in road.views()},
        }
    finally:
        await road.close()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_road_gives_the_same_outcome(tmp_path: Path, scenario: str, request: pytest.FixtureRequest) -> None:
    """Every scenario answers both calls at once: a mixed batch (a confirmation
    and an AskUser answer), the card's "Submit all" on the click and service roads."""
    outcomes = {cls.name: run_async(play(cls, tmp_path, scenario, request)) for cls in ROADS}
    first = outcomes["act"]
    assert set(first["statuses"].values()) == {"delivered"}, first["statuses"]
    for name, got in outcomes.items():
        assert got["final"] == first["final"], f"{name} told the model something else"
        assert got["files"] == first["files"], f"{name} ran something else"
        assert got["statuses"] == first["statuses"], f"{name} shows the pauses otherwise"
        for note in got["told_on_card"]:  # "The agent was told: ..." is true
            assert note in got["final"], f"{name}'s card says the agent was told {note!r}"
        origin = next(c.origin for c in ROADS if c.name == name)
        assert [d[:2] for d in got["decisions"]] == [d[:2] for d in first["decisions"]], name
        assert {d[2] for d in got["decisions"]} == {origin}, f"{name}'s audit lines name another road"
    final, left = first["final"], first["files"]
    if scenario == "approve_and_multi_select_with_other":
        assert "old_log.txt" not in left and "delete_file: success" in final
        assert "todo.txt" in final and "notes.txt" in final and "draft.md" in final
    elif scenario == "deny_with_a_reason":
        assert "old_log.txt" in left and "delete_file: denied" in final and "Keep the log." in final
        assert first["told_on_card"] == [LOCAL_DENIAL]
        # the service passed the reason on (the console's note in the event's metadata, the service's
        # ToldMiddleware), and its card says so as the local one does
        assert outcomes["service"]["told_on_card"] == [LOCAL_DENIAL]
        assert outcomes["service"]["messages"]["delete_file"] == first["messages"]["delete_file"] != UNTOLD
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
    tmp_path: Path, road_cls: type[Road], case: RefusalCase, request: pytest.FixtureRequest
) -> None:
    async def refused(cls: type[Road], where: str) -> str:
        """What the person is told on road ``cls``; checks nothing ran and the pauses stay open."""
        road = open_road(cls, make_sandbox(tmp_path / where), tmp_path / f"{where}.jsonl", request)
        try:
            await road.start("Tidy up, please.")
            with pytest.raises(NbHitlError) as told:
                await case(road)
            assert "old_log.txt" in files(road.folder)
            assert road.decisions() == []
            assert set(statuses(road).values()) == {"open"}, statuses(road)
            if isinstance(road, ServiceRoad):
                assert road.sent() == 0  # refused before the ledger: nothing went to the service
            # the pauses are still open: a right answer goes through after the refusal
            await road.send([ask(road, selected=["notes.txt"]), on_delete(road, "approve")])
            final = await road.final()
            assert "delete_file: success" in final and "old_log.txt" not in files(road.folder)
            return masked(str(told.value), list(road.pauses.values()))
        finally:
            await road.close()

    async def body() -> None:
        told = await refused(road_cls, "box")
        # the AG-UI client checks an answer against the interrupt's response_schema
        # (the peer's schema, through nb_hitl.guard) before it sends anything, so
        # a bad AskUser answer is worded after that schema there
        if road_cls is not ActRoad and not (road_cls is AguiRoad and case is _bad_answer):
            assert told == await refused(ActRoad, "act-box")  # the front door's sentence, as session.act's

    run_async(body())


@pytest.mark.parametrize("road_cls", [ClickRoad, ActRoad, ServiceRoad], ids=lambda c: c.name)
def test_a_duplicate_answer_is_refused_and_runs_nothing_twice(
    tmp_path: Path, road_cls: type[Road], request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        road = open_road(road_cls, make_sandbox(tmp_path / "box"), tmp_path / "audit.jsonl", request)
        try:
            await road.start("Tidy up, please.")
            approve = on_delete(road, "approve")
            await road.send([approve])
            with pytest.raises(NbHitlError, match="Already decided"):
                await road.send([approve])
            await road.send([ask(road, selected=["notes.txt"])])
            final = await road.final()
            assert "delete_file: success" in final
            assert [d[:2] for d in road.decisions()] == [("delete_file", "approve"), ("AskUser", "answer")]
        finally:
            await road.close()

    run_async(body())


def test_a_stale_console_is_told_answered_elsewhere_and_nothing_runs_twice(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The service road only: two consoles (their own ledgers, as two notebooks)
    show the same parked call; one approves, then the stale other approves
    too. The service took the first; the second is told who answered (the
    first console) and the tool ran once.

    The local and AG-UI roads have no stale copy of a pause: one kernel (or
    the one AG-UI server's session) holds the one ``Pause`` of a call, and
    every view of it (a widget, a re-rendered widget after a reload,
    ``session.act``, a resume) answers that object, so a second answer is the
    duplicate above ("Already decided")."""

    async def body() -> None:
        road = open_road(ServiceRoad, tmp_path / "unused", tmp_path / "one.jsonl", request)
        assert isinstance(road, ServiceRoad)
        other = ServiceClient(road.cluster.a.url, road.user, audit_path=tmp_path / "two.jsonl", service_id="cluster")
        try:
            await road.start("Tidy up, please.")
            stale = await other.open(road._console.session_id, road._console.agent_id)
            assert stale.pauses[road.pauses["delete_file"]].status == "open"
            stale.close()  # the other notebook does not look again before it clicks
            approve = on_delete(road, "approve")
            await road.send([approve])
            with pytest.raises(OutcomeError) as told:
                await stale.handle(approve)
            assert told.value.code == "answered_elsewhere"
            said = str(told.value)  # who answered, or (its run already over on a loaded service) that no record says
            assert road.client.console_id in said or "the service keeps no record of which" in said, said
            assert stale.pauses[road.pauses["delete_file"]].status == "expired"
            await road.send([ask(road, selected=["notes.txt"])])
            final = await road.final()
            assert "delete_file: success" in final and "old_log.txt" not in files(road.folder)
            body = await stale.http.messages(stale.agent_id, stale.session_id, limit=50)
            ran = [
                b
                for m in body["messages"]
                for b in m.get("content") or []
                if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("name") == "delete_file"
            ]
            assert len(ran) == 1, ran
            assert [d[:2] for d in road.decisions()] == [("delete_file", "approve"), ("AskUser", "answer")]
        finally:
            await other.aclose()
            await road.close()

    run_async(body())
