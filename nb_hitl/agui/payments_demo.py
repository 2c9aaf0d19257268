"""A scripted payment agent whose payments need two approvals, for the
four-eyes notebook and tests.

:class:`PaymentFactory` is an AG-UI server's agent factory, ``(thread_id) ->
Agent``: each thread gets a real ``agentscope.agent.Agent`` on the offline
:class:`~nb_hitl.models.ScriptedChatModel` that calls ``send_payment(to,
amount)`` once, under ``Policy("four eyes", tools=["send_payment"],
approvals=N)``, then reports the tool's result. The factory keeps every
payment that really ran (:attr:`PaymentFactory.runs`).
"""

from __future__ import annotations

from typing import Any

from agentscope.agent import Agent
from agentscope.message import TextBlock, ToolResultState
from agentscope.tool import FunctionTool, ToolChunk, Toolkit

from ..models import ScriptedChatModel, Turn, result_shown, tool_call, tool_results
from ..policy import Policy, policy_middleware

__all__ = ["PaymentFactory"]


class PaymentFactory:
    """``(thread_id) -> Agent`` for a payment that needs ``approvals`` people.

    Args:
        to: the payee the model asks to pay.
        amount: the amount (euros).
        approvals: approvals the payment needs.
        distinct: whether they must come from distinct people.

    Attributes:
        runs: ``[(thread_id, to, amount)]``, one per payment that ran.
        agents: the agents made, by thread id.
    """

    def __init__(
        self, to: str = "ACME GmbH", amount: float = 120.0, approvals: int = 2, *, distinct: bool = True
    ) -> None:
        self.to, self.amount, self.approvals, self.distinct = to, amount, approvals, distinct
        self.runs: list[tuple[str, str, float]] = []
        self.agents: dict[str, Agent] = {}

    def __call__(self, thread_id: str, **kwargs: Any) -> Agent:
        """A new payment agent for ``thread_id`` (``state=`` restores one)."""

        def send_payment(to: str, amount: float) -> ToolChunk:
            """Send money.

            Args:
                to (str): the payee.
                amount (float): how much, in euros.
            """
            self.runs.append((thread_id, to, amount))
            text = f"paid {amount} EUR to {to}"
            return ToolChunk(content=[TextBlock(text=text)], state=ToolResultState.SUCCESS)

        def report(messages: list[Any]) -> Turn:
            r = (tool_results(messages, "send_payment") or [None])[-1]
            state = getattr(getattr(r, "state", None), "value", getattr(r, "state", "none"))
            return Turn(f"The payment: {state}. {result_shown(r) if r is not None else ''}".strip())

        agent = Agent(
            name="payer",
            system_prompt="Pay the invoices you are asked to pay.",
            model=ScriptedChatModel(
                [Turn("Paying the invoice.", [tool_call("send_payment", to=self.to, amount=self.amount)]), report]
            ),
            toolkit=Toolkit(tools=[FunctionTool(send_payment)]),
            middlewares=[
                policy_middleware(
                    Policy("four eyes", tools=["send_payment"], approvals=self.approvals, distinct=self.distinct)
                )
            ],
            **kwargs,
        )
        self.agents[thread_id] = agent
        return agent
