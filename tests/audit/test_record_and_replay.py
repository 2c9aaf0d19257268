"""Every tool call on the record, and candidate rules replayed against it.

A real Agent on ScriptedChatModel with real tools: an allow rule lets
``lookup`` run without asking, a person approves ``send_mail`` and denies
``delete_file`` (``session.act``). The log holds every check (``event:
"checked"``) and every answer; ``replay`` asks AgentScope's own engine what
a candidate rule set would have decided, and the changes are known in
advance.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agentscope.message import TextBlock, ToolResultState
from agentscope.tool import Bash, FunctionTool, ToolChunk

from nb_hitl import Session
from nb_hitl.audit import audit_frame, replay, verify
from nb_hitl.models import Turn, tool_call
from nb_hitl.permissions import add_rule
from nb_hitl.store import AuditLog
from tests.support import parked, run_async
from tests.support_agents import scripted_agent


def _tools(ran: list[str]) -> list[Any]:
    def lookup(topic: str) -> ToolChunk:
        """Look a topic up.

        Args:
            topic (str): what to look up.
        """
        ran.append(f"lookup {topic}")
        return ToolChunk(content=[TextBlock(text=f"{topic}: found")], state=ToolResultState.SUCCESS)

    def send_mail(to: str) -> ToolChunk:
        """Send a mail.

        Args:
            to (str): the address.
        """
        ran.append(f"send_mail {to}")
        return ToolChunk(content=[TextBlock(text=f"sent to {to}")], state=ToolResultState.SUCCESS)

    def delete_file(path: str) -> ToolChunk:
        """Delete a file.

        Args:
            path (str): the file.
        """
        ran.append(f"delete_file {path}")
        return ToolChunk(content=[TextBlock(text=f"deleted {path}")], state=ToolResultState.SUCCESS)

    return [FunctionTool(lookup), FunctionTool(send_mail), FunctionTool(delete_file)]


def _recorded_session(audit: Path) -> tuple[Any, list[str]]:
    """Run the scripted session; return the agent and what ran."""
    ran: list[str] = []
    script = [
        Turn("Looking up.", [tool_call("lookup", id="l1", topic="tides")]),
        Turn("Mailing.", [tool_call("send_mail", id="m1", to="ana@example.org")]),
        Turn("Deleting.", [tool_call("delete_file", id="d1", path="notes.txt")]),
        Turn("Done."),
    ]
    agent = scripted_agent(script, _tools(ran), name="clerk")
    add_rule(agent, {"tool_name": "lookup", "rule_content": None, "behavior": "allow", "source": "test"})

    async def scenario() -> None:
        session = Session(agent, display=False, audit_log=str(audit), decided_by="ana")
        task = session.start("do the errands")
        await parked(session)
        await session.act({"action": "approve", "tool_call_id": "m1"})
        await parked(session, resumes=1)
        await session.act({"action": "deny", "tool_call_id": "d1"})
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    return agent, ran


def test_calls_allowed_without_asking_are_on_the_record_with_their_rule(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    _, ran = _recorded_session(audit)
    assert ran == ["lookup tides", "send_mail ana@example.org"]
    records = AuditLog(audit).records()
    assert [(r.get("event"), r["tool_call_id"], r["decision"], r.get("decided_how")) for r in records] == [
        ("checked", "l1", "allow", "rule"),
        ("checked", "m1", "ask", "mode"),
        ("answered", "m1", "approve", "person"),
        ("checked", "d1", "ask", "mode"),
        ("answered", "d1", "deny", "person"),
    ]
    allowed = records[0]
    assert allowed["rule"] == "allow lookup"
    assert allowed["original_input"] == {"topic": "tides"}
    assert allowed["decided_by"] is None  # nobody answered it
    answered = records[2]
    assert answered["decided_by"] == "ana"
    assert answered["opened_at"] <= answered["ts"]  # when the pause opened, when it was answered
    assert verify(audit).intact

    frame = audit_frame(audit)
    assert list(frame["event"]) == ["checked", "checked", "answered", "checked", "answered"]
    assert frame.loc[0, "rule"] == "allow lookup"
    assert frame["answered_at"].notna().tolist() == [False, False, True, False, True]


def test_replay_names_the_decisions_a_candidate_rule_set_changes(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    agent, _ = _recorded_session(audit)
    candidate = [
        {"tool_name": "lookup", "rule_content": None, "behavior": "ask", "source": "candidate"},
        {"tool_name": "lookup", "rule_content": None, "behavior": "allow", "source": "candidate"},
        {"tool_name": "send_mail", "rule_content": None, "behavior": "allow", "source": "candidate"},
        {"tool_name": "delete_file", "rule_content": None, "behavior": "allow", "source": "candidate"},
        {"tool_name": "Bash", "rule_content": "rm:*", "behavior": "deny", "source": "candidate"},
    ]
    frame = run_async(replay(audit, candidate, agent.toolkit))
    got = frame.set_index("tool_call_id")
    assert got["recorded"].to_dict() == {"l1": "allow", "m1": "ask", "d1": "ask"}
    assert got["person"].fillna("").to_dict() == {"l1": "", "m1": "approve", "d1": "deny"}  # nobody answered l1
    assert got["candidate"].to_dict() == {"l1": "ask", "m1": "allow", "d1": "allow"}
    assert got["change"].to_dict() == {"l1": "allow -> ask", "m1": "ask -> allow", "d1": "ask -> allow"}
    assert got["denied_now_allowed"].to_dict() == {"l1": False, "m1": False, "d1": True}
    assert got.loc["l1", "candidate_rule"] == "ask lookup"

    rules = frame.attrs["rules"].set_index("rule")
    assert rules.loc["allow lookup", "shadowed_by"] == "ask lookup"  # ask rules come first
    assert rules.loc["allow lookup", "matched"] == 1 and rules.loc["allow lookup", "fired"] == 0
    assert rules.loc["deny Bash(rm:*)", "never_fired"]  # no shell call in this history
    assert rules["never_fired"].to_dict() == {
        "ask lookup": False,
        "allow lookup": True,
        "allow send_mail": False,
        "allow delete_file": False,
        "deny Bash(rm:*)": True,
    }

    # the same rules in dont_ask mode: what used to ask is denied
    strict = run_async(replay(audit, candidate[:2], agent.toolkit, mode="dont_ask")).set_index("tool_call_id")
    assert strict["candidate"].to_dict() == {"l1": "deny", "m1": "deny", "d1": "deny"}


def test_a_pathological_rule_is_reported_in_replay_not_hung_on(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    long_command = "mkdir " + "a" * 4000  # not read-only: it asks
    script = [Turn("Echoing.", [tool_call("Bash", id="b1", command=long_command)]), Turn("Done.")]
    agent = scripted_agent(script, [Bash()], name="sheller")

    async def scenario() -> None:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("echo")
        await parked(session)
        await session.act({"action": "deny", "tool_call_id": "b1"})  # nothing runs
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    wild = {"tool_name": "Bash", "rule_content": "*a*a*a*a*a*b", "behavior": "deny", "source": "candidate"}
    plain = {"tool_name": "Bash", "rule_content": "mkdir:*", "behavior": "allow", "source": "candidate"}
    frame = run_async(replay(audit, [wild, plain], agent.toolkit))
    row = frame.set_index("tool_call_id").loc["b1"]
    assert row["candidate"] == "unknown" and not row["changed"]
    assert "deny Bash(*a*a*a*a*a*b)" in row["problem"] and "too many wildcards" in row["problem"]
    rules = frame.attrs["rules"].set_index("rule")
    assert rules.loc["deny Bash(*a*a*a*a*a*b)", "pathological"] == 1

    # without it the call is decided: mkdir is allowed, which a person denied
    fine = run_async(replay(audit, [plain], agent.toolkit)).set_index("tool_call_id").loc["b1"]
    assert (fine["recorded"], fine["candidate"], fine["denied_now_allowed"]) == ("ask", "allow", True)
