"""A call's place on the audit record when AgentScope checks it twice: a batch's held call.

AgentScope asks the first of two calls of one tool in a concurrent batch and
holds the second back (the first's ``suggested_rules`` would cover it), then
checks it again once the first is answered. The log keeps both checks; the
table and the recorded calls say which one counted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from nb_hitl import Session
from nb_hitl.audit.calls import recorded_calls
from nb_hitl.models import Turn, tool_call
from nb_hitl.store import AuditLog
from nb_hitl.widgets.audit import HELD, AuditLogTable
from tests.session.test_records import touch_agent
from tests.support import parked, run_async


def test_a_call_held_back_in_its_batch_is_on_the_record_once_as_what_decided_it(tmp_path: Path) -> None:
    """Two calls of one tool in one batch: AgentScope asks the first and holds the second (the first's
    suggested rule would cover it), then checks it again once the first is answered. The log keeps
    both checks; the table says the first of them asked nobody, and the call's record is the check
    that counted (here the rule the person accepted with the first answer allows it)."""
    runs, audit = tmp_path / "runs.txt", tmp_path / "audit.jsonl"
    script = [
        Turn("Two.", [tool_call("touch", id="t1", label="a"), tool_call("touch", id="t2", label="b")]),
        Turn("Ok."),
    ]

    async def scenario() -> None:
        session = Session(touch_agent(runs, script), display=False, audit_log=str(audit))
        task = session.start("touch")
        await parked(session)
        assert [p.tool_call_id for p in session.pending] == ["t1"]  # t2 is held, not asked
        rules = list(range(len(session.pending[0].suggested_rules)))  # "Always allow": every rule offered
        await session.act({"action": "approve", "tool_call_id": "t1", "rules": rules})
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert runs.read_text().split() == ["a", "b"]
    checks = [(r["tool_call_id"], r["decision"], r["decided_how"]) for r in AuditLog(audit).records("checked")]
    assert checks == [("t1", "ask", "mode"), ("t2", "ask", "mode"), ("t2", "allow", "rule")]
    rows = [(row["input"], row["decision"], row["detail"]) for row in AuditLogTable(audit).rows]
    assert rows[1] == ('label="b"', "ask", f"{HELD}; reason: Mode: default")
    assert HELD not in rows[0][2] and HELD not in rows[3][2]
    t2 = next(c for c in recorded_calls(AuditLog(audit).records()) if c["tool_call_id"] == "t2")
    assert (t2["recorded"], t2["recorded_how"], t2["person"]) == ("allow", "rule", None)
