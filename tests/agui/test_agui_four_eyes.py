"""M-of-N approvals over AG-UI: two principals approve one interrupt.

A real uvicorn server, a real AgentScope ``Agent`` on the scripted model
with ``Policy(approvals=2)``; the auth hook maps bearer tokens to
principals. The first principal's resume is taken and the run ends with the
same interrupt again (1 of 2 in its metadata); the same principal again is
refused; a second principal's resume runs the call once; the audit lines
name both.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ag_ui.core import ResumeEntry
from agentscope.agent import Agent
from agentscope.tool import FunctionTool, Toolkit

from nb_hitl.agui import AguiServer, serve_in_background
from nb_hitl.agui.cards import checked_interrupt, safe_view
from nb_hitl.agui.client import AguiClient
from nb_hitl.agui.mapping import META_KEY
from nb_hitl.models import ScriptedChatModel, Turn, tool_call
from nb_hitl.policy import Policy, policy_middleware
from nb_hitl.store import AuditLog
from tests.agui_support import post_run, user
from tests.session.test_policy import allow_all, report

USERS = {"alice-token": "alice", "bob-token": "bob", "eve-token": "eve"}


def bearer(request: Any) -> str | None:
    return USERS.get(request.headers.get("authorization", "").removeprefix("Bearer ").strip())


class Payments:
    """An agent factory whose ``send_payment`` counts its runs; its model's turns before the report are
    ``turns`` (default: one payment of 120.0 to ACME)."""

    def __init__(self, turns: list[Turn] | None = None) -> None:
        self.runs: list[tuple[str, float]] = []
        self.turns = turns or [Turn("Paying.", [tool_call("send_payment", to="ACME", amount=120.0)])]

    def __call__(self, thread_id: str, **kwargs: Any) -> Agent:
        def send_payment(to: str, amount: float) -> str:
            """Send money.

            Args:
                to (str): the payee.
                amount (float): how much, in euros.
            """
            self.runs.append((to, amount))
            return f"paid {amount} to {to}"

        return Agent(
            name="payer",
            system_prompt="Pay invoices.",
            model=ScriptedChatModel([*self.turns, report]),
            toolkit=Toolkit(tools=[FunctionTool(send_payment)]),
            state=allow_all(),
            middlewares=[policy_middleware(Policy("four eyes", tools=["send_payment"], approvals=2))],
        )


def approve(tid: str, interrupt_id: str) -> Any:
    return AguiClient.make_input(
        tid, [], [ResumeEntry(interrupt_id=interrupt_id, status="resolved", payload={"approved": True})]
    )


def test_two_principals_approve_from_two_clients_and_the_call_runs_once(tmp_path):
    audit = tmp_path / "audit.jsonl"
    factory = Payments()
    server = AguiServer(factory, auth=bearer, session_kwargs={"audit_log": str(audit)})
    tid = "four-eyes-thread"
    with serve_in_background(server, announce=False) as handle:

        async def scenario() -> tuple[Any, ...]:
            first = await post_run(
                handle.url, AguiClient.make_input(tid, [user("Pay ACME.", "u1")]), token="alice-token"
            )
            (interrupt,) = first.last().outcome.interrupts
            assert interrupt.metadata[META_KEY]["approvals_needed"] == 2
            assert interrupt.metadata[META_KEY]["approvals"] == []
            one = await post_run(handle.url, approve(tid, interrupt.id), token="alice-token")
            again = await post_run(handle.url, approve(tid, interrupt.id), token="alice-token")
            stranger = await post_run(
                handle.url, AguiClient.make_input(tid, [user("hello", "u9")]), token="eve-token"
            )  # not a resume: another principal's thread is not found
            assert factory.runs == []
            two = await post_run(handle.url, approve(tid, interrupt.id), token="bob-token")
            return interrupt, one, again, stranger, two

        interrupt, one, again, stranger, two = asyncio.run(scenario())
    # alice's approval is taken; the run ends with the same interrupt, 1 of 2
    assert one.last().type.value == "RUN_FINISHED" and one.last().outcome.type == "interrupt"
    (still,) = one.last().outcome.interrupts
    assert still.id == interrupt.id
    assert [a["by"] for a in still.metadata[META_KEY]["approvals"]] == ["alice"]
    assert one.last().metadata[META_KEY] == {"approvals_recorded": [{"interrupt_id": interrupt.id, "approvals": 1}]}
    # the notebook's AG-UI client draws the count on its card; malformed approvals make it unanswerable
    view = safe_view(*checked_interrupt(still), key="k", run_id="r")
    assert ([a["by"] for a in view["approvals"]], view["approvals_needed"]) == (["alice"], 2)
    bad = still.model_copy(update={"metadata": {META_KEY: {**still.metadata[META_KEY], "approvals": [None]}}})
    assert safe_view(*checked_interrupt(bad), key="k", run_id="r").get("unanswerable") is True
    # alice again: refused, with the sentence
    assert again.last().type.value == "RUN_ERROR"
    assert "alice already approved this call; it needs 2 approvals from distinct people" in again.last().message
    assert stranger.last().type.value == "RUN_ERROR" and stranger.last().code == "thread_not_found"
    # bob's approval runs the call, once
    assert two.last().type.value == "RUN_FINISHED" and two.last().outcome.type == "success"
    assert two.last().result == "send_payment success: paid 120.0 to ACME"
    assert factory.runs == [("ACME", 120.0)]
    lines = AuditLog(audit).records("answered")
    assert [(r["decision"], r["decided_by"], r["origin"]["road"], r["origin"]["principal"]) for r in lines] == [
        ("approve", "alice", "agui", "alice"),
        ("approve", "bob", "agui", "bob"),
    ]
    assert [a["by"] for a in lines[-1]["approvals"]] == ["alice", "bob"]


def test_a_resume_with_a_decided_call_and_an_approval_short_of_n_runs_the_first_and_keeps_the_second(tmp_path):
    audit = tmp_path / "audit.jsonl"
    runs: list[str] = []

    def factory(thread_id: str, **kwargs: Any) -> Agent:
        def send_payment(to: str, amount: float) -> str:
            """Send money.

            Args:
                to (str): the payee.
                amount (float): how much, in euros.
            """
            runs.append("pay")
            return f"paid {amount} to {to}"

        def read_balance() -> str:
            """Read the account balance."""
            runs.append("balance")
            return "balance: 1000"

        policies = [Policy("four eyes", tools=["send_payment"], approvals=2), Policy("reads", tools=["read_balance"])]
        calls = [tool_call("send_payment", to="ACME", amount=120.0), tool_call("read_balance")]
        return Agent(
            name="payer",
            system_prompt="Pay invoices.",
            model=ScriptedChatModel([Turn("Paying.", calls), report, report]),
            toolkit=Toolkit(tools=[FunctionTool(send_payment), FunctionTool(read_balance)]),
            state=allow_all(),
            middlewares=[policy_middleware(*policies)],
        )

    server = AguiServer(factory, auth=bearer, session_kwargs={"audit_log": str(audit)})
    tid = "mixed-thread"
    with serve_in_background(server, announce=False) as handle:

        async def scenario() -> tuple[Any, Any, Any]:
            first = await post_run(handle.url, AguiClient.make_input(tid, [user("Pay.", "u1")]), token="alice-token")
            interrupts = list(first.last().outcome.interrupts)
            assert sorted(i.metadata[META_KEY]["tool_name"] for i in interrupts) == ["read_balance", "send_payment"]
            both = [ResumeEntry(interrupt_id=i.id, status="resolved", payload={"approved": True}) for i in interrupts]
            one = await post_run(handle.url, AguiClient.make_input(tid, [], both), token="alice-token")
            (left,) = one.last().outcome.interrupts
            two = await post_run(handle.url, approve(tid, left.id), token="bob-token")
            return left, one, two

        left, one, two = asyncio.run(scenario())
    # the balance read ran after alice's resume; the payment waited for bob
    assert left.metadata[META_KEY]["tool_name"] == "send_payment"
    assert [a["by"] for a in left.metadata[META_KEY]["approvals"]] == ["alice"]
    assert one.last().outcome.type == "interrupt"
    assert two.last().outcome.type == "success"
    assert runs == ["balance", "pay"]
    lines = AuditLog(audit).records("answered")
    assert sorted((r["tool_name"], r["decided_by"]) for r in lines) == [
        ("read_balance", "alice"),
        ("send_payment", "alice"),
        ("send_payment", "bob"),
    ]


def test_a_modify_short_of_n_shows_the_next_principal_the_edit_that_will_run(tmp_path):
    """Alice modifies the amount (her approval of the edit, 1 of 2): the interrupt raised again
    carries the edit as the call's input (what the card and Bob's Modify start from), bound to
    it by its id; Bob's approval of that interrupt runs the edit, once, and he was shown it."""
    factory = Payments()
    server = AguiServer(factory, auth=bearer)
    tid = "four-eyes-modify"
    edit = {"to": "ACME", "amount": 12000.0}
    with serve_in_background(server, announce=False) as handle:

        async def scenario() -> tuple[Any, ...]:
            first = await post_run(
                handle.url, AguiClient.make_input(tid, [user("Pay ACME.", "u1")]), token="alice-token"
            )
            (interrupt,) = first.last().outcome.interrupts
            modified = AguiClient.make_input(
                tid,
                [],
                [
                    ResumeEntry(
                        interrupt_id=interrupt.id, status="resolved", payload={"approved": True, "editedArgs": edit}
                    )
                ],
            )
            one = await post_run(handle.url, modified, token="alice-token")
            (shown,) = one.last().outcome.interrupts
            assert factory.runs == []
            two = await post_run(handle.url, approve(tid, shown.id), token="bob-token")
            return interrupt, shown, two

        interrupt, shown, two = asyncio.run(scenario())
    meta = shown.metadata[META_KEY]
    assert shown.id != interrupt.id  # bound to the edited input: an approval of the old one is stale
    assert meta["input"] == edit and json.loads(meta["input_text"]) == edit
    assert [(a["by"], a["action"]) for a in meta["approvals"]] == [("alice", "modify")]
    view = safe_view(*checked_interrupt(shown), key="k", run_id="r")  # the notebook client's card
    assert json.loads(view["input_text"]) == edit
    assert two.last().outcome.type == "success"
    assert factory.runs == [("ACME", 12000.0)]
