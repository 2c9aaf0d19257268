"""notebooks/rules_from_history.ipynb runs headless, top to bottom, in a real kernel.

With ``NB_HITL_ANSWER_FROM_CODE=1`` (``run_notebook``) the notebook answers
the day's pauses itself with ``session.act`` (the handler a click reaches).
Checked: the day's calls and answers, which rule decided each call (read
from the chained audit log), both candidate replays' changes (known in
advance: ``ask -> allow`` for mail, ``allow -> deny`` for the token file,
``allow -> ask`` for lookups, ``ask -> deny`` for deletions), the call a
person denied that candidate A would allow, the rules that never fired, and
the charts (a PNG drawn by matplotlib) with their counts, the approvals given
in under a second and the rules offered (none here: each tool asked was
also refused once), the agent's rules left unchanged. Then the same day
clicked in a kernel with Always allow pressed on the first mail's card: the
rule offered for mail is said to be in place already.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.harness import REPO_ROOT, KernelHarness
from tests.support import cell_text, open_pause, reply_widget, run_notebook, widget_views

NOTEBOOK = REPO_ROOT / "notebooks" / "rules_from_history.ipynb"

pytestmark = pytest.mark.kernel


def test_rules_from_history_notebook_runs_headless() -> None:
    nb, whole = run_notebook(NOTEBOOK, timeout=180)
    code = [c for c in nb.cells if c.cell_type == "code"]
    texts = [cell_text(c) for c in code]
    assert "Traceback" not in whole and "ERROR" not in whole

    assert "answers: given by the cells (NB_HITL_ANSWER_FROM_CODE)" in texts[0]
    # the day: seven replies, each with its widget; five calls asked and answered
    assert len(widget_views(nb)) == 7
    day = texts[2]
    assert [m for m in re.findall(r"^  (\w+): (\w+)$", day, flags=re.M)] == [
        ("send_mail", "approve"),
        ("delete_file", "approve"),
        ("send_mail", "deny"),
        ("delete_file", "deny"),
        ("send_mail", "approve"),
    ]
    assert "Mail the partner list about the launch. -> send_mail: denied" in day
    assert "outbox: [('ana@example.org', 'Summary'), ('ana@example.org', 'Done for today')]" in day

    # which rule decided each call, from a verified log
    decided = texts[3]
    assert decided.startswith("intact: 14 chained line(s).")
    rows = [line.split() for line in decided.splitlines()[1:]]
    assert rows == [
        ["Read", "allow", "read_only", "-", "-"],
        ["lookup", "allow", "rule", "allow", "lookup", "-"],
        ["send_mail", "ask", "mode", "-", "approve"],
        ["delete_file", "ask", "mode", "-", "approve"],
        ["lookup", "allow", "rule", "allow", "lookup", "-"],
        ["Read", "allow", "read_only", "-", "-"],
        ["send_mail", "ask", "mode", "-", "deny"],
        ["delete_file", "ask", "mode", "-", "deny"],
        ["send_mail", "ask", "mode", "-", "approve"],
    ]

    # the replays
    replays = texts[4]
    a, b = replays.split("candidate B:")
    assert a.startswith("candidate A: 4 of 9 decisions change")
    assert len(re.findall(r"ask -> allow\s+send_mail .*\(you: (approve|deny)\)", a)) == 3
    assert re.search(r"allow -> deny\s+Read .*secrets/token\.txt", a)
    assert "you denied, it would allow: send_mail {'to': 'all@partner.example', 'subject': 'Launch'}" in a
    assert "never fired: allow lookup" not in a and "never fired" not in a
    assert b.startswith(" 4 of 9 decisions change")
    assert len(re.findall(r"allow -> ask\s+lookup .*\(you: not asked\)", b)) == 2
    assert len(re.findall(r"ask -> deny\s+delete_file ", b)) == 2
    assert "you denied, it would allow" not in b
    assert "never fired: allow delete_file (shadowed by deny delete_file)" in b
    assert "never fired: allow Read(*/archive/*) (matched no call)" in b

    # the charts: one figure, drawn; the counts it shows
    charts = code[6]
    assert any("image/png" in o.get("data", {}) for o in charts.outputs)
    counts = [line.split() for line in texts[6].splitlines() if not line.startswith("answers:")]
    assert counts == [
        ["Read", "allowed", "2"],
        ["delete_file", "approved", "1"],
        ["delete_file", "denied", "by", "person", "1"],
        ["lookup", "allowed", "2"],
        ["send_mail", "approved", "2"],
        ["send_mail", "denied", "by", "person", "1"],
    ]
    assert re.search(r"answers: 5, median time to decide \d+\.\d{3} s", texts[6])

    # approvals in under a second (the cells answer in milliseconds) and the rules offered, not applied
    views = texts[7]
    assert "approvals in under a second: 3 of 3" in views
    assert len(re.findall(r"^  (send_mail|delete_file)\s+0\.\d{3} s  \(", views, flags=re.M)) == 3
    assert "suggested:" not in views  # each tool asked was also refused once: no rule covers only approvals
    assert views.count("not covered: ") == 3
    assert "not covered: send_mail {'to': 'ana@example.org', 'subject': 'Summary'}" in views
    assert "the agent's rules are unchanged" in views


def test_always_allow_on_a_card_is_said_to_be_in_place(tmp_path: Path) -> None:
    """A person presses Always allow on the first send_mail card (the rule AgentScope suggests: the whole
    tool): the later mails are not asked, and the rule the last cell offers for send_mail is said to be in
    place already, not offered as if it were new."""
    cells = ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    with KernelHarness(cwd=tmp_path) as kernel:
        for source in cells[:2]:
            kernel.execute(source, timeout=60).raise_for_error()
        day = kernel.execute_async_start(cells[2])
        clicks = [("approve", "send_mail", [0]), ("approve", "delete_file", []), ("deny", "delete_file", [])]
        for n, (action, tool, rules) in enumerate(clicks, start=1):
            asked = kernel.wait_for(
                lambda n=n: re.findall(r"Waiting for you: press (\w+) on the (\w+) card", kernel.stream_text(day))[
                    n - 1 :
                ],
                60,
                what=f"click {n}",
            )
            assert asked[0] == (action.capitalize(), tool)
            rec = reply_widget(kernel, "assistant")
            pause = open_pause(kernel, rec.comm_id, "confirm")
            ids = {"tool_call_id": pause["tool_call_id"], "reply_id": pause["reply_id"]}
            assert kernel.request(rec.comm_id, action, **ids, **({"rules": rules} if rules else {}))["ok"] is True
        text = kernel.wait_reply(day, timeout=120).raise_for_error().stdout
        assert "send_mail {'to': 'all@partner.example', 'subject': 'Launch'}: not asked" in text

        for source in cells[3:7]:
            kernel.execute(source, timeout=120).raise_for_error()
        views = kernel.execute(cells[7], timeout=120).raise_for_error().stdout
    assert re.search(r"^suggested: allow send_mail \(.*\) - already allowed by a rule you accepted$", views, re.M)
    assert "not covered: delete_file {'path': 'old_log.txt'}" in views
