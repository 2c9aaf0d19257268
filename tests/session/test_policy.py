"""Policies that make sensitive calls always ask (nb_hitl.policy), in-process.

Real AgentScope ``Agent`` s, their real ``PermissionEngine`` and the real
``on_check_permission`` middleware chain; decisions through ``Session.act``.
Checked: which calls park, what the confirmation says (policy name, message,
bypass-immunity, no "always allow"), what ran, what the model was told, and
the behaviour in each of AgentScope's five permission modes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.permission import PermissionBehavior, PermissionContext, PermissionMode, PermissionRule
from agentscope.state import AgentState
from agentscope.tool import Bash, FunctionTool, Toolkit

from nb_hitl import Session
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from nb_hitl.policy import (
    POLICY_DETAIL_KEY,
    Policy,
    PolicyMiddleware,
    apply_policy,
    policy_middleware,
    remove_policy,
    rule_source,
)
from nb_hitl.session import POLICY_CONTEXT_KEY
from nb_hitl.store import AuditLog, CheckpointStore
from tests.support import run_async, wait_until


class Mail:
    def __init__(self) -> None:
        self.sent: list[tuple[str, float]] = []

    def tools(self) -> list[Any]:
        def send_payment(to: str, amount: float) -> str:
            """Send money.

            Args:
                to (str): the payee.
                amount (float): how much, in euros.
            """
            self.sent.append((to, amount))
            return f"paid {amount} to {to}"

        def read_balance() -> str:
            """Read the account balance."""
            return "balance: 1000"

        return [FunctionTool(send_payment), FunctionTool(read_balance, is_read_only=True)]


def allow_all(mode: PermissionMode = PermissionMode.DEFAULT) -> AgentState:
    state = AgentState(permission_context=PermissionContext(mode=mode))
    state.permission_context.allow_rules["send_payment"] = [
        PermissionRule(
            tool_name="send_payment", rule_content=None, behavior=PermissionBehavior.ALLOW, source="userSettings"
        )
    ]
    return state


def report(msgs: list[Any]) -> Turn:
    return Turn(" | ".join(f"{r.name} {r.state}: {result_text(r)}" for r in tool_results(msgs)))


def agent_for(
    mail: Mail, script: list[Any], *, state: AgentState | None = None, middlewares: list[Any] | None = None
) -> Agent:
    return Agent(
        name="payer",
        system_prompt="Pay invoices.",
        model=ScriptedChatModel(script, on_exhausted="raise"),
        toolkit=Toolkit(tools=mail.tools()),
        state=state if state is not None else allow_all(),
        middlewares=middlewares,
    )


PAYMENTS = Policy("payments", tools=["send_payment"], message="Money leaves the company.")


async def settle(session: Session, task: asyncio.Task) -> Any:
    await wait_until(lambda: task.done() or (session.current and session.current.status == "paused"), "park or end")
    return session.pending[0] if session.pending else None


def test_a_policy_asks_even_when_an_allow_rule_would_allow(tmp_path: Path) -> None:
    mail = Mail()
    audit = tmp_path / "audit.jsonl"
    script = [Turn("Paying.", [tool_call("send_payment", to="ACME", amount=120.0)]), report]
    agent = agent_for(mail, script, middlewares=[policy_middleware(PAYMENTS)])

    async def scenario() -> None:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("pay ACME")
        pause = await settle(session, task)
        assert pause is not None and pause.kind == "confirm"
        assert mail.sent == []
        view = pause.to_view()
        assert view["policy"] == "payments"
        assert view["permission_message"] == (
            "The policy 'payments' requires a person to confirm this call (tool send_payment). Money leaves the company."
        )
        assert view["decision_reason"] == "nb_hitl policy: payments"
        assert view["bypass_immune"] is True
        assert view["suggested_rules"] == []  # an allow rule could not silence the policy: none offered
        assert agent.state.middle_context[POLICY_CONTEXT_KEY] == {pause.tool_call_id: "payments"}
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        final = await asyncio.wait_for(task, 10)
        assert final.get_text_content() == "send_payment success: paid 120.0 to ACME"
        assert session.current.resumes == 1  # approved once, not asked again (no loop)

    run_async(scenario())
    assert mail.sent == [("ACME", 120.0)]
    records = AuditLog(audit).records("answered")
    assert [(r["tool_name"], r["decision"], r["policy"]) for r in records] == [("send_payment", "approve", "payments")]


def test_deny_stays_deny_and_the_model_is_told() -> None:
    mail = Mail()
    agent = agent_for(
        mail,
        [Turn("", [tool_call("send_payment", to="ACME", amount=1.0)]), report],
        middlewares=[policy_middleware(PAYMENTS)],
    )

    async def scenario() -> Any:
        session = Session(agent, display=False)
        task = session.start("pay")
        pause = await settle(session, task)
        await session.act({"action": "deny", "tool_call_id": pause.tool_call_id})
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario())
    assert mail.sent == []
    assert final.get_text_content().startswith("send_payment denied: <system-reminder>")


@pytest.mark.parametrize(
    "mode, tool, expect",
    [
        # mode,        call,            what happens (AgentScope 2.0.11 permission/_engine.py + the middleware)
        ("default", "send_payment", "ask"),
        ("accept_edits", "send_payment", "ask"),
        ("bypass", "send_payment", "ask"),  # bypass honours explicit asks, like ask rules
        ("dont_ask", "send_payment", "deny"),  # nobody to ask: denied, naming the policy
        ("explore", "send_payment", "deny"),  # explore denies writes; the policy never weakens a deny
        ("explore", "read_balance", "ask"),  # read-only is allowed by explore: the policy still asks
        ("default", "read_balance", "ask"),  # read-only fast path would allow
    ],
)
def test_each_permission_mode(mode: str, tool: str, expect: str) -> None:
    mail = Mail()
    policy = Policy("finance", tools=["send_payment", "read_balance"])
    args = {"to": "ACME", "amount": 5.0} if tool == "send_payment" else {}
    agent = agent_for(
        mail,
        [Turn("", [tool_call(tool, **args)]), report],
        state=allow_all(PermissionMode(mode)),
        middlewares=[policy_middleware(policy)],
    )

    async def scenario() -> Any:
        session = Session(agent, display=False)
        task = session.start("go")
        pause = await settle(session, task)
        if expect == "ask":
            assert pause is not None and pause.policy == "finance" and pause.bypass_immune
            await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        else:
            assert pause is None
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario()).get_text_content()
    if expect == "ask":
        assert " success: " in final
    else:
        assert f"{tool} denied" in final
        if mode == "dont_ask":
            assert (
                "the policy 'finance' requires a person to confirm it, and dont_ask mode has no person to ask" in final
            )
        assert mail.sent == []


def test_predicates_on_the_input_and_rule_patterns() -> None:
    mail = Mail()
    big = Policy("large payments", when={"send_payment": lambda inp: inp["amount"] > 100})
    script = [
        Turn("small", [tool_call("send_payment", to="A", amount=20.0)]),
        Turn("big", [tool_call("send_payment", to="B", amount=2000.0)]),
        report,
    ]
    agent = agent_for(mail, script, middlewares=[policy_middleware(big)])

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("pay")
        pause = await settle(session, task)
        # the small one ran without asking (allow rule); the big one asks
        assert mail.sent == [("A", 20.0)]
        assert pause.input == {"to": "B", "amount": 2000.0} and pause.policy == "large payments"
        assert "its check on the input" in pause.permission_message
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert mail.sent == [("A", 20.0), ("B", 2000.0)]

    async def bash_checks() -> list[Any]:
        # Bash rule patterns are matched by Bash.match_rule, as the engine matches rules
        p = Policy("pushes", patterns={"Bash": ["git push:*"]})
        bash = Bash()
        return [await p.match(bash, {"command": c}) for c in ("git push origin main", "git status", "gitk")]

    assert run_async(bash_checks()) == ["Bash(git push:*)", None, None]

    async def shell_checks() -> list[Any]:
        # for a shell tool, each simple command of the line too (the shell rules' forms)
        p = Policy("pushes", patterns={"Bash": ["git push:*"]})
        bash = Bash()
        lines = ("cd repo && git push", "sudo git push -f", "echo $(/usr/bin/git push)", "echo git push")
        return [await p.match(bash, {"command": c}) for c in lines]

    assert run_async(shell_checks()) == ["Bash(git push:*)"] * 3 + [None]


def test_a_predicate_that_raises_fails_closed() -> None:
    policy = Policy("broken", predicate=lambda name, inp: inp["missing"] > 1)

    class T:
        name = "send_payment"

    assert run_async(policy.match(T(), {})) == "its check on the input raised KeyError: 'missing'"


def test_policy_declaration_is_checked() -> None:
    with pytest.raises(ValueError, match="needs a name"):
        Policy("", tools=["x"])
    with pytest.raises(ValueError, match="matches nothing"):
        Policy("empty")
    with pytest.raises(ValueError, match="patterns"):
        Policy("bad", patterns={"Bash": "git:*"})
    with pytest.raises(TypeError):
        PolicyMiddleware([object()])  # type: ignore[list-item]
    rules = Policy("p", tools=["send_payment"], patterns={"Bash": ["git push:*"]}).ask_rules()
    assert [(r.tool_name, r.rule_content, r.behavior, r.source) for r in rules] == [
        ("send_payment", None, PermissionBehavior.ASK, "nb_hitl policy: p"),
        ("Bash", "git push:*", PermissionBehavior.ASK, "nb_hitl policy: p"),
    ]


def test_apply_policy_to_a_live_agent_and_remove_it(tmp_path: Path) -> None:
    mail = Mail()
    applied: list[Any] = []

    def apply_mid_reply(msgs: list[Any]) -> Turn:
        # the live agent gets the policy between two tool calls of one reply
        applied.append(apply_policy(agent, PAYMENTS, add_rules=True))
        return Turn("", [tool_call("send_payment", to="B", amount=2.0)])

    script = [
        Turn("", [tool_call("send_payment", to="A", amount=1.0)]),
        apply_mid_reply,
        report,
        Turn("", [tool_call("send_payment", to="C", amount=3.0)]),
        report,
    ]
    agent = agent_for(mail, script)  # built without any middleware
    store = tmp_path / "ckpt"

    async def scenario() -> None:
        session = Session(agent, display=False, checkpoints=str(store), session_id="pay")
        task = session.start("pay A")
        pause = await settle(session, task)
        # before the policy the allow rule let the first payment run
        assert mail.sent == [("A", 1.0)]
        mw = applied[0]
        assert agent._check_permission_middlewares[0] is mw
        assert apply_policy(agent, PAYMENTS) is mw  # one middleware per agent, same-name policy replaced
        assert len(mw.policies) == 1
        asks = agent.state.permission_context.ask_rules["send_payment"]
        assert [(r.rule_content, r.source) for r in asks] == [(None, rule_source("payments"))]
        assert pause.input == {"to": "B", "amount": 2.0} and pause.policy == "payments"
        # the policy name is saved with the checkpoint
        saved = CheckpointStore(store).load("pay")["state"]["middle_context"]
        assert saved[POLICY_CONTEXT_KEY] == {pause.tool_call_id: "payments"}
        assert "Money leaves the company." in saved[POLICY_DETAIL_KEY][pause.tool_call_id]["message"]
        await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        await asyncio.wait_for(task, 10)

        assert remove_policy(agent, "payments") is True
        assert agent.state.permission_context.ask_rules["send_payment"] == []
        assert mw.policies == []
        task = session.start("pay C")
        assert await settle(session, task) is None  # runs without asking again
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert mail.sent == [("A", 1.0), ("B", 2.0), ("C", 3.0)]


def test_ask_rules_alone_keep_asking_after_a_restore_without_the_middleware(tmp_path: Path) -> None:
    """The documented fallback: rules are saved with the state."""
    mail = Mail()
    agent = agent_for(mail, [Turn("ok")])
    apply_policy(agent, PAYMENTS, add_rules=True)
    blob = agent.state.model_dump_json()
    restored = agent_for(
        mail,
        [Turn("", [tool_call("send_payment", to="Z", amount=9.0)]), report],
        state=AgentState.model_validate_json(blob),
    )
    assert not any(isinstance(m, PolicyMiddleware) for m in restored._check_permission_middlewares)

    async def scenario() -> Any:
        session = Session(restored, display=False)
        task = session.start("pay")
        pause = await settle(session, task)
        assert pause is not None and pause.kind == "confirm"
        assert pause.decision_reason == "Rule: None"  # the engine's own ask rule; no policy chip without the middleware
        await session.act({"action": "deny", "tool_call_id": pause.tool_call_id})
        return await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert mail.sent == []
