"""C29 in a team: a checkpoint of a ``TeamPipeline`` whose members were parked
when the process stopped, restored by ``Session.restore``.

The team is real AgentScope: leader ``boss`` assigns, in one turn, a batch of
two transfers to ``payer`` (``p5`` asks first, ``p7`` stays ``pending``) and a
question to ``asker``. The checkpoint is the state a crash leaves once both
decisions had been handed over: ``payer`` as nb_hitl wrote it right after the
approval of ``p5`` was delivered, ``asker`` as written right after its answer
was delivered (both from one run, so every ``reply_id`` agrees). Restored, the
members' calls take the Session's one road (``nb_hitl.session._closing``):
``p5`` is closed as may have run and never runs again, ``p7`` (never asked)
comes back as a card because the member's reply is continued and AgentScope
checks it, and the lost answer is asked again with a card that says so.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from agentscope.permission import PermissionBehavior, PermissionRule
from agentscope.pipeline import TeamMember, TeamPipeline

from nb_hitl._agentscope import permission_engine
from nb_hitl.models import Turn, result_text, tool_call, tool_results
from nb_hitl.session._run import DELIVERED_CONTEXT_KEY
from tests.restore_support import (
    answer,
    ask_agent,
    batch_agent,
    check_asked_again,
    delivery_checkpoints,
    restored,
    resumed,
    until,
)
from tests.support_agents import scripted_agent


def c29_team(runs: list[int], states: dict[str, Any] | None = None, *, again: bool = False) -> TeamPipeline:
    """Leader ``boss`` assigns ``pay`` to ``payer`` and ``ask`` to ``asker`` in
    one turn (ids ``as-pay``, ``as-ask``; with ``again`` a second job for
    ``payer`` in between, ``as-again``), then reports every result."""
    states = states or {}
    jobs = [
        ("as-pay", "payer", "pay"),
        *([("as-again", "payer", "report again")] if again else []),
        ("as-ask", "asker", "ask"),
    ]

    def lead(messages: list[Any]) -> Turn:
        done = tool_results(messages, "TeamAssign")
        if not done:
            return Turn("Jobs.", [tool_call("TeamAssign", id=i, member=m, prompt=p) for i, m, p in jobs])
        return Turn("Reports: " + " / ".join(f"{r.id}: {result_text(r)}" for r in done))

    leader = scripted_agent([lead] * 6, [], name="boss", state=states.get("boss"))
    members = [
        TeamMember(agent=batch_agent(runs, states.get("payer")), description="pays"),
        TeamMember(agent=ask_agent(states.get("asker")), description="asks"),
    ]
    return TeamPipeline(leader, members)


def _calls(agent_state: dict[str, Any]) -> dict[str, str]:
    last = agent_state["context"][-1]
    return {b["id"]: b["state"] for b in last["content"] if b.get("type") == "tool_call"}


def crash(tmp_path: Any, again: bool = False) -> tuple[list[int], dict[str, Any]]:
    """The team checkpoint of C29 (see the module docstring) and the runs of ``transfer``."""
    runs: list[int] = []

    def pick(kind: str, message: Any) -> Any:
        return lambda pending: message(next(p for p in pending if p.kind == kind))

    kept = delivery_checkpoints(
        tmp_path,
        c29_team(runs, again=again),
        [
            pick("ask_user", lambda p: answer(p, "blue")),
            pick("confirm", lambda p: {"action": "approve", "tool_call_id": p.tool_call_id}),
        ],
    )
    assert runs == [5]  # approved once, ran once
    record = copy.deepcopy(kept["call-ask"])  # boss still waits on every assignment; asker's answer delivered
    agents = record["state"]["agents"]
    agents["payer"] = kept["p5"]["state"]["agents"]["payer"]  # payer's approval delivered, p7 never asked
    assert set(_calls(agents["boss"]).values()) == {"submitted"}
    assert _calls(agents["payer"]) == {"p5": "asking", "p7": "pending"}
    assert _calls(agents["asker"]) == {"call-ask": "submitted"}
    assert agents["payer"]["middle_context"][DELIVERED_CONTEXT_KEY]["p5"]["runs"] is True
    assert agents["asker"]["middle_context"][DELIVERED_CONTEXT_KEY]["call-ask"]["runs"] is False
    return runs, record


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    return crash(tmp_path_factory.mktemp("c29team"))


def test_c29_team_restore_closes_the_approved_call_checks_the_unasked_one_and_asks_again(tmp_path, crashed):
    runs, record = crashed
    before = list(runs)
    session = restored(tmp_path, record, lambda states: c29_team(runs, states))

    async def go() -> Any:
        assert [tc.id for tc in session.unchecked_tool_calls()] == ["p7"]  # left for AgentScope to check
        assert [tc.id for tc in session.parked_tool_calls()] == ["call-ask"]  # p5 is not offered again
        task = session.start_resume()
        await until(lambda: len(session.pending) == 2)
        cards = {p.tool_call_id: p for p in session.pending}
        assert (cards["p7"].kind, cards["p7"].agent) == ("confirm", "payer")  # checked, asked: its card comes back
        lost = cards["call-ask"]
        assert lost.agent == "asker"
        check_asked_again(lost)
        await session.act({"action": "approve", "tool_call_id": "p7"})
        await session.act(answer(lost, "red"))
        return await task

    final = resumed(session, go)
    assert runs == [*before, 7]  # p5 not run again; p7 ran once, after its approval
    text = final.get_text_content()
    assert "p5=interrupted: " in text and "An approval (approve)" in text and "may or may not" in text
    assert "p7=success: Sent 7 EUR." in text
    assert 'as-ask: AskUser ended success: The user answered:\n- "Which colour?" -> red' in text
    assert session.current.status == "finished" and not session.team.is_parked()


@pytest.mark.parametrize("again", [False, True])
def test_c29_team_restore_a_rule_added_since_lets_the_unasked_call_run_and_the_member_reports(tmp_path, again):
    """The payer's reply is continued outside the pipeline: with an allow rule
    added after the crash, AgentScope's check runs ``p7`` without a card, and
    the member's final message reaches the leader as its ``TeamAssign`` result
    (a second job queued for the payer is then run by the pipeline)."""
    runs, record = crash(tmp_path / "made", again)
    before = list(runs)

    def rebuilt(states: dict[str, Any]) -> TeamPipeline:
        team = c29_team(runs, states, again=again)
        allow = PermissionRule(tool_name="transfer", rule_content=None, behavior=PermissionBehavior.ALLOW, source="t")
        permission_engine(team.members["payer"].agent).add_rule(allow)
        return team

    session = restored(tmp_path, record, rebuilt)

    async def go() -> Any:
        task = session.start_resume()
        await until(lambda: bool(session.pending) and session.current.status == "paused")
        assert [p.tool_call_id for p in session.pending] == ["call-ask"]  # p7 was allowed by the rule: no card
        assert runs == [*before, 7]
        await session.act(answer(session.pending[0], "red"))
        return await task

    final = resumed(session, go)
    assert runs == [*before, 7]
    text = final.get_text_content()
    assert "as-pay: p5=interrupted: " in text and "p7=success: Sent 7 EUR." in text and "-> red" in text
    assert ("as-again: p5=interrupted" in text) is again  # the queued job ran once the payer finished
