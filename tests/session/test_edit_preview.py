"""What an edit would change, asked while it is typed (nb_hitl.edit_preview): Modify and a review's edit.

Real ``agentscope.agent.Agent``s on :class:`~nb_hitl.models.ScriptedChatModel`; the
previews and the answers go through ``Session.act`` (the path of the page's
messages). Checked: the preview's diff is the one the decision then records,
a bad edit is refused with the words "Approve modified input" would use, and
a preview is not an answer (the pause stays open, no audit line, no resume).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agentscope.tool import Bash

from nb_hitl import Session
from nb_hitl.errors import DecisionError
from nb_hitl.models import Turn, tool_call
from nb_hitl.store import AuditLog
from tests.session.test_review import RAW, REDACTED, Counter, make_agent
from tests.support import parked_on, run_async
from tests.support_agents import scripted_agent


def msg(pause: Any, action: str, **extra: Any) -> dict[str, Any]:
    return {"action": action, "tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id, **extra}


def test_modify_preview_is_the_diff_the_decision_records(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    agent = scripted_agent(
        [
            Turn("Cleaning.", tool_calls=[tool_call("Bash", id="call_1", command=f"rm -rf {tmp_path}/build")]),
            Turn("done"),
        ],
        [Bash()],
        name="shell",
    )
    edited = '{"command": "echo hi", "description": "says hi"}'
    invisible = '{"command": "echo hi\\u200b"}'

    async def scenario() -> tuple[list[Any], dict[str, Any]]:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("list")
        pause = await parked_on(session, "confirm")
        lines_before = AuditLog(audit).records()
        # a preview is answered on the loop (the file change reads through the tool): it runs no tool
        previews = [await session.act(msg(pause, "preview", input=edited)) for _ in range(3)]
        shown = (await session.act(msg(pause, "preview", input=invisible)))["preview"]["diff"]
        assert '+  "command": "echo hi\\u200b"' in shown.splitlines()  # the invisible character is shown
        refusals = []
        for bad in ("{", "[]", '{"command": 1}', '{"command": NaN}', '{"command": "ls", "timeout": 1e400}'):
            for action, field in (("preview", "input"), ("modify", "input")):
                with pytest.raises(DecisionError) as err:
                    await session.act(msg(pause, action, **{field: bad}))
                refusals.append((action, str(err.value)))
        with pytest.raises(DecisionError, match="'input'"):
            await session.act(msg(pause, "preview", output="x"))
        assert pause.status == "open" and pause.decision is None
        assert session.current is not None and session.current.resumes == 0
        assert AuditLog(audit).records() == lines_before  # a preview is not audited
        await session.act(msg(pause, "modify", input=edited))
        await asyncio.wait_for(task, 10)
        return previews + refusals, dict(pause.decision or {})

    got, decision = run_async(scenario())
    previews, refusals = got[:3], got[3:]
    assert all(p == previews[0] for p in previews)
    diff = previews[0]["preview"]["diff"]
    assert diff == decision["input_diff"]  # what the person saw is what the record says
    lines = diff.splitlines()
    assert lines[:2] == ["--- model's input", "+++ edited input"]
    assert f'-  "command": "rm -rf {tmp_path}/build"' in lines
    assert '+  "command": "echo hi",' in lines and '+  "description": "says hi"' in lines
    # the preview refuses a bad edit with exactly the words Approve modified input uses
    for n in range(0, len(refusals), 2):
        assert refusals[n][1] == refusals[n + 1][1], refusals
    # non-finite numbers: refused in a person's words, not AgentScope's advice to the model (F04)
    assert refusals[6][1] == "NaN and Infinity are not JSON numbers; write a number."
    assert refusals[8][1] == "1e400 is too large to be a number the tool can take; write a smaller one."
    assert not any("recorrect" in said or "json.loads" in said for _, said in refusals)


def test_review_preview_diffs_the_raw_result(tmp_path: Path) -> None:
    counter = Counter()
    agent = make_agent(
        counter, [Turn("Looking.", tool_calls=[tool_call("lookup_customer", id="call_1", customer="Ana")]), Turn("ok")]
    )

    async def scenario() -> dict[str, Any]:
        session = Session(agent, display=False)
        task = session.start("who is Ana?")
        pause = await parked_on(session, "review")
        same = await session.act(msg(pause, "preview", output=RAW))
        assert same == {"preview": {"diff": "", "file_change": None}}
        answer = await session.act(msg(pause, "preview", output=REDACTED + "\nchecked\n"))
        assert pause.status == "open" and session.current is not None and session.current.resumes == 0
        await session.act(msg(pause, "reject"))
        await asyncio.wait_for(task, 10)
        with pytest.raises(Exception, match="Already decided"):
            session.act(msg(pause, "preview", output="late"))
        return answer

    diff = run_async(scenario())["preview"]["diff"]
    lines = diff.splitlines()
    assert lines[:2] == ["--- tool's result", "+++ edited result"]
    assert f"-{RAW}" in lines and f"+{REDACTED}" in lines and "+checked" in lines
    assert "\\ No newline at end of file" in lines  # the raw result has no final newline
    assert counter.runs == ["Ana"]
