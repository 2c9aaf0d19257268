"""Approvals given in under a second, and the narrowest rules people already live by (offered, never applied).

Hand-written audit records of a day with AgentScope's real ``Bash`` tool and
a function tool: the suggestions come from the tools' own
``generate_suggestions`` and are checked with their own ``match_rule``.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from agentscope.tool import Bash, FunctionTool

from nb_hitl.audit import audit_frame
from nb_hitl.audit.charts import decide_times, plot_decide_times
from nb_hitl.audit.views import quick_approvals, suggest_rules
from nb_hitl.permissions import permission_context
from tests.support import run_async
from tests.support_agents import scripted_agent


def send_mail(to: str) -> str:
    """Send a mail.

    Args:
        to: the address.
    """
    return to


def _asked(i: int, tool: str, args: dict, answer: str, seconds: float) -> list[dict]:
    call = {"agent": "a", "tool_call_id": f"c{i}", "tool_name": tool, "original_input": args}
    opened = 100.0 + 10 * i
    return [
        {**call, "event": "checked", "ts": opened, "decision": "ask", "decided_how": "mode"},
        {**call, "event": "answered", "ts": opened + seconds, "opened_at": opened, "decision": answer,
         "decided_by": "ana"},
    ]  # fmt: skip


RECORDS = [
    *_asked(1, "Bash", {"command": "git status"}, "approve", 0.3),
    *_asked(2, "Bash", {"command": "git status --short"}, "approve", 0.4),
    *_asked(3, "Bash", {"command": "git push origin main"}, "approve", 6.0),
    *_asked(4, "Bash", {"command": "git push --force"}, "deny", 0.5),
    *_asked(5, "send_mail", {"to": "ana@example.org"}, "approve", 4.0),
    *_asked(6, "send_mail", {"to": "bo@example.org"}, "modify", 9.0),
    {"agent": "a", "tool_call_id": "c7", "tool_name": "Bash", "original_input": {"command": "git status -v"},
     "event": "checked", "ts": 200.0, "decision": "allow", "decided_how": "mode"},
]  # fmt: skip

TOOLS = [Bash(), FunctionTool(send_mail)]


def test_approvals_given_in_under_a_second_are_listed_quickest_first() -> None:
    quick = quick_approvals(audit_frame(RECORDS))
    assert list(quick["tool_call_id"]) == ["c1", "c2"]  # the deny in 0.5 s is not an approval
    assert list(quick["seconds"]) == [0.3, 0.4]
    assert quick.attrs["approvals"] == 4 and quick.attrs["under"] == 1.0
    assert list(quick_approvals(RECORDS, under=5.0)["tool_call_id"]) == ["c1", "c2", "c5"]  # the log itself works too


def test_the_chart_of_times_to_decide_marks_the_quick_approvals() -> None:
    ax = plot_decide_times(decide_times(audit_frame(RECORDS)))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["2 approval(s) in under 1 s"]
    assert plot_decide_times(decide_times(audit_frame(RECORDS)), quick=None).get_legend() is None


def test_the_narrowest_rules_cover_what_people_always_approved_and_nothing_they_refused() -> None:
    suggested = run_async(suggest_rules(audit_frame(RECORDS), TOOLS))
    rows = {r["rule"]: r for r in suggested.to_dict("records")}
    assert set(rows) == {"allow Bash(git status:*)", "allow send_mail"}
    status = rows["allow Bash(git status:*)"]
    assert (status["covers"], status["matches"]) == (2, 3)  # two approvals; it also matches c7, allowed then
    assert status["examples"] == ['{"command": "git status"}', '{"command": "git status --short"}']
    assert rows["allow send_mail"]["covers"] == 2  # approved, once with changes
    # `git push:*` would also allow the refused `git push --force`: not offered, the approval stays uncovered
    assert suggested.attrs["uncovered"] == [{"tool_name": "Bash", "input": {"command": "git push origin main"}}]


def test_suggestions_are_offered_never_applied() -> None:
    agent = scripted_agent([], TOOLS, name="a")
    before = permission_context(agent).model_dump()
    suggested = run_async(suggest_rules(RECORDS, agent.toolkit))
    assert len(suggested) == 2
    assert permission_context(agent).model_dump() == before
