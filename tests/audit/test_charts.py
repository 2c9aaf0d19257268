"""The chart helpers of nb_hitl.audit.charts on hand-written audit records.

Each call's outcome is the check's decision unless a person answered; the
time to decide is the answer's time less the pause's opening; the plots
draw one mark per call and one bar per answer (matplotlib's Agg backend).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from nb_hitl.audit import audit_frame
from nb_hitl.audit.charts import call_labels, call_outcomes, decide_times, ordinal, plot_decide_times, plot_outcomes

RECORDS = [
    {"event": "checked", "ts": 100.0, "agent": "a", "tool_call_id": "c1", "tool_name": "lookup",
     "decision": "allow", "decided_how": "rule", "rule": "allow lookup(*)"},
    {"event": "checked", "ts": 101.0, "agent": "a", "tool_call_id": "c2", "tool_name": "send_mail",
     "decision": "ask", "decided_how": "mode"},
    {"event": "answered", "ts": 105.5, "opened_at": 101.5, "agent": "a", "tool_call_id": "c2",
     "tool_name": "send_mail", "decision": "deny", "decided_by": "ana"},
    {"event": "checked", "ts": 105.0, "agent": "a", "tool_call_id": "c3", "tool_name": "delete_file",
     "decision": "deny", "decided_how": "rule", "rule": "deny delete_file(*)"},
    {"event": "checked", "ts": 106.0, "agent": "a", "tool_call_id": "c4", "tool_name": "send_mail",
     "decision": "ask", "decided_how": "mode"},
    {"event": "checked", "ts": 107.0, "agent": "a", "tool_call_id": "c5", "tool_name": "send_mail",
     "decision": "ask", "decided_how": "mode"},
    {"event": "answered", "ts": 108.0, "opened_at": 107.0, "agent": "a", "tool_call_id": "c5",
     "tool_name": "send_mail", "decision": "approve", "decided_by": "ana"},
]  # fmt: skip


def test_each_call_has_one_outcome_from_its_check_or_its_answer() -> None:
    out = call_outcomes(audit_frame(RECORDS))
    assert list(out["tool_call_id"]) == ["c1", "c3", "c2", "c4", "c5"]  # by when each was settled
    assert dict(zip(out["tool_call_id"], out["outcome"], strict=True)) == {
        "c1": "allowed",
        "c2": "denied by person",
        "c3": "denied",
        "c4": "unanswered",
        "c5": "approved",
    }
    assert out.set_index("tool_call_id").loc["c1", "rule"] == "allow lookup(*)"
    assert out.set_index("tool_call_id").loc["c4", "person"] is None


def test_time_to_decide_is_the_answer_less_the_opening() -> None:
    times = decide_times(audit_frame(RECORDS))
    assert list(times["tool_call_id"]) == ["c2", "c5"]
    assert list(times["seconds"]) == [4.0, 1.0]
    assert list(times["decision"]) == ["deny", "approve"]


def test_a_held_check_and_a_pause_closed_unanswered_read_as_what_happened() -> None:
    """A call AgentScope held back in its batch is checked again once the earlier call is answered
    (here: allowed by the rule the person accepted): its outcome is the later check's. A pause
    closed by an interrupt has nb_hitl's ``expired`` line: nobody answered, so no time to decide."""
    records = [
        {"event": "checked", "ts": 10.0, "agent": "a", "tool_call_id": "d1", "tool_name": "delete_file",
         "decision": "ask", "decided_how": "mode"},
        {"event": "checked", "ts": 10.1, "agent": "a", "tool_call_id": "d2", "tool_name": "delete_file",
         "decision": "ask", "decided_how": "mode"},  # held: d1's suggested rule covers it
        {"event": "answered", "ts": 14.0, "opened_at": 10.0, "agent": "a", "tool_call_id": "d1",
         "tool_name": "delete_file", "decision": "approve", "decided_by": "ana"},
        {"event": "checked", "ts": 14.2, "agent": "a", "tool_call_id": "d2", "tool_name": "delete_file",
         "decision": "allow", "decided_how": "rule", "rule": "allow delete_file(*)"},
        {"event": "checked", "ts": 20.0, "agent": "a", "tool_call_id": "d3", "tool_name": "delete_file",
         "decision": "ask", "decided_how": "mode"},
        {"event": "answered", "ts": 23.0, "opened_at": 20.0, "agent": "a", "tool_call_id": "d3",
         "tool_name": "delete_file", "decision": "expired", "decided_by": "nb_hitl",
         "reason": "Interrupted from the widget."},
    ]  # fmt: skip
    frame = audit_frame(records)
    out = call_outcomes(frame).set_index("tool_call_id")
    assert out.loc["d2", "outcome"] == "allowed" and out.loc["d2", "rule"] == "allow delete_file(*)"
    assert str(out.loc["d2", "time"]) == "1970-01-01 00:00:14.200000+00:00"  # when the check that counted was made
    assert out.loc["d3", "outcome"] == "unanswered" and out.loc["d3", "person"] is None
    assert list(decide_times(frame)["tool_call_id"]) == ["d1"]


def test_the_plots_draw_one_mark_per_call_and_one_bar_per_answer() -> None:
    frame = audit_frame(RECORDS)
    ax = plot_outcomes(call_outcomes(frame))
    assert sum(len(c.get_offsets()) for c in ax.collections) == 5
    assert [t.get_text() for t in ax.get_yticklabels()] == ["delete_file", "lookup", "send_mail"]
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == [
        "allowed",
        "approved",
        "denied",
        "denied by person",
        "unanswered",
    ]
    bars = plot_decide_times(decide_times(frame))
    assert [round(p.get_width(), 3) for p in bars.patches] == [4.0, 1.0]
    # a person reads the tool and its position, never a call id
    assert [t.get_text() for t in bars.get_yticklabels()] == ["send_mail, 1st call", "send_mail, 2nd call"]


def test_call_labels_name_the_tool_and_its_position_never_the_id():
    assert call_labels(["lookup", "send_mail", "send_mail", "lookup", "send_mail"]) == [
        "lookup, 1st call",
        "send_mail, 1st call",
        "send_mail, 2nd call",
        "lookup, 2nd call",
        "send_mail, 3rd call",
    ]
    assert call_labels(["delete_file"]) == ["delete_file"]
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "11th",
        "12th",
        "13th",
        "21st",
        "22nd",
        "101st",
        "111th",
    ]
