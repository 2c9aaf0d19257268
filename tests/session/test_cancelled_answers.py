"""An answer whose checks are cancelled half-way (the AG-UI client that sent the resume
disconnected, the task awaiting ``session.act_all`` was cancelled) leaves its pause open.

A real AgentScope ``Agent`` on the scripted model with a real ``ToolBase`` whose own permission
check takes a while (it asks a limits service: ``await asyncio.sleep``), so the re-check of a
Modify's edited input (:func:`nb_hitl.decisions.recheck_permission`) is a real suspension
where the cancellation lands. The pause must not stay ``deciding`` for ever (every later
answer refused "Already decided" although nothing was decided): it is open again, nothing ran,
nothing was audited, and the next answer is taken.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import TextBlock
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import ToolBase, ToolChunk, Toolkit

from nb_hitl import Session
from nb_hitl.models import ScriptedChatModel, Turn, tool_call
from nb_hitl.store import AuditLog
from tests.session.test_policy import report, settle
from tests.support import run_async


class Transfer(ToolBase):
    """Moves money; its permission check asks a (slow) limits service, then asks a person."""

    name = "transfer"
    description = "Transfer money."
    input_schema = {
        "type": "object",
        "properties": {"to": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["to", "amount"],
    }
    is_concurrency_safe = False
    is_read_only = False

    def __init__(self) -> None:
        super().__init__()
        self.ran: list[tuple[str, float]] = []

    async def check_permissions(self, tool_input: dict[str, Any], context: Any) -> PermissionDecision:
        await asyncio.sleep(0.3)  # the limits service answers
        return PermissionDecision(behavior=PermissionBehavior.ASK, message="Within limits; a person confirms.")

    async def __call__(self, to: str, amount: float) -> ToolChunk:  # type: ignore[override]
        self.ran.append((to, amount))
        return ToolChunk(content=[TextBlock(text=f"sent {amount} to {to}")])


@pytest.mark.parametrize("road", ["act", "act_all"])
def test_an_answer_cancelled_while_it_is_checked_leaves_its_pause_open(tmp_path: Path, road: str) -> None:
    tool = Transfer()
    audit = tmp_path / "audit.jsonl"
    agent = Agent(
        name="payer",
        system_prompt="Pay.",
        model=ScriptedChatModel([Turn("Paying.", [tool_call("transfer", to="ACME", amount=500.0)]), report]),
        toolkit=Toolkit(tools=[tool]),
    )

    async def scenario() -> Any:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("pay ACME")
        pause = await settle(session, task)
        edit = {
            "action": "modify",
            "tool_call_id": pause.tool_call_id,
            "input": json.dumps({"to": "ACME", "amount": 50}),
        }

        async def answer() -> Any:
            return await (session.act(edit) if road == "act" else session.act_all([edit]))

        sending = asyncio.ensure_future(answer())
        await asyncio.sleep(0.1)  # its checks are under way: the limits service is asked about the edit
        assert pause.status == "deciding"
        sending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await sending
        assert pause.status == "open"  # not "deciding" for ever
        assert await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario()).get_text_content()
    assert tool.ran == [("ACME", 500.0)] and "sent 500.0 to ACME" in final
    assert [r["decision"] for r in AuditLog(audit).records("answered")] == ["approve"]
