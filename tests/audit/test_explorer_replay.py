"""The permission explorer's replay of a 100,000-call log: paged, replayed as rules are typed, exported.

A real Agent (scripted model) with two function tools; a recorded log of
100,000 calls (``send_mail`` asked every fourth call and was approved or
denied, ``lookup`` was allowed by a rule). The explorer is driven the way
the comm drives it (:class:`tests.unit.test_permission_cases.Page`): the
page gets one page of rows at a time, a newer candidate cancels an older
replay still running, other actions are answered while a replay runs, and
the candidate comes back as a rules file that imports to the same rules.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agentscope.tool import FunctionTool

from nb_hitl.permissions import add_rule, import_rules
from nb_hitl.widgets._replay import PAGE_SIZE
from nb_hitl.widgets.permissions import PermissionExplorer
from tests.support import run_async, wait_until
from tests.support_agents import scripted_agent
from tests.unit.test_permission_cases import Page

CALLS = 100_000


def lookup(topic: str) -> str:
    """Look a topic up.

    Args:
        topic: what to look up.
    """
    return topic


def send_mail(to: str) -> str:
    """Send a mail.

    Args:
        to: the address.
    """
    return to


def _write_history(path: Path, calls: int) -> Path:
    """A recorded log of ``calls`` calls: every fourth a ``send_mail``
    that asked (every third of those denied), the rest ``lookup`` allowed by a rule."""
    lines = []
    for i in range(calls):
        call: dict[str, Any] = {"agent": "clerk", "reply_id": f"r{i // 4}", "tool_call_id": f"c{i}", "ts": float(i)}
        if i % 4:
            lines.append(
                {
                    **call,
                    "event": "checked",
                    "tool_name": "lookup",
                    "original_input": {"topic": f"t{i}"},
                    "decision": "allow",
                    "decided_how": "rule",
                    "rule": "allow lookup(*)",
                }
            )
            continue
        mail = {**call, "tool_name": "send_mail", "original_input": {"to": f"u{i}@example.org"}}
        lines.append({**mail, "event": "checked", "decision": "ask", "decided_how": "mode"})
        lines.append({**mail, "event": "answered", "decision": "deny" if i % 12 == 0 else "approve"})
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:func:`_write_history` of :data:`CALLS` calls."""
    return _write_history(tmp_path_factory.mktemp("history") / "day.jsonl", CALLS)


class SlowPage(Page):
    """:class:`Page` that waits for an answer as long as a 100,000-call replay takes (up to 120 s)."""

    async def send(self, action: str, **payload: Any) -> dict:
        self.n += 1
        request_id = f"x{self.n}"
        self.widget._on_page_message(self.widget, {"request_id": request_id, "action": action, **payload}, [])
        found = await wait_until(
            lambda: next((r for r in self.replies if r.get("request_id") == request_id), None),
            f"the answer to {action}",
            timeout=120,
        )
        return dict(found)


def _explorer(history: Path) -> tuple[PermissionExplorer, Page]:
    agent = scripted_agent([], [FunctionTool(lookup), FunctionTool(send_mail)], name="clerk")
    add_rule(agent, {"tool_name": "lookup", "rule_content": None, "behavior": "allow", "source": "test"})
    widget = PermissionExplorer(agent, watch=False, history=history)
    return widget, SlowPage(widget)


ALLOW_MAIL = json.dumps(
    [
        {"tool_name": "lookup", "rule_content": None, "behavior": "allow", "source": "candidate"},
        {"tool_name": "send_mail", "rule_content": None, "behavior": "allow", "source": "candidate"},
    ]
)


def test_the_page_gets_one_page_of_a_100000_call_replay_at_a_time(history: Path) -> None:
    async def run() -> None:
        widget, page = _explorer(history)
        reply = await page.send("replay", rules=ALLOW_MAIL)
        assert reply["ok"], reply
        summary = widget.replay
        assert (summary["calls"], summary["changed"], summary["source"]) == (CALLS, CALLS // 4, "candidate")
        assert summary["denied_now_allowed"] == len(range(0, CALLS, 12))
        first = summary["page"]
        assert (first["offset"], first["total"], len(first["rows"])) == (0, CALLS // 4, PAGE_SIZE)
        assert [r["index"] for r in first["rows"][:3]] == [0, 4, 8]  # each mail call: its place among the calls
        assert first["rows"][0]["change"] == "ask -> allow" and first["rows"][0]["denied_now_allowed"]
        assert len(json.dumps(summary)) < 30_000  # a page, never the whole log

        later = await page.send("replay_page", offset=20_000, only_changed=True)
        rows = later["page"]["rows"]
        assert later["page"]["offset"] == 20_000 and len(rows) == PAGE_SIZE
        assert json.loads(rows[0]["input_text"]) == {"to": f"u{20_000 * 4}@example.org"}
        everything = await page.send("replay_page", offset=CALLS - 10, only_changed=False)
        assert everything["page"]["total"] == CALLS and len(everything["page"]["rows"]) == 10
        assert everything["page"]["rows"][-1]["tool_name"] == "lookup"
        assert everything["page"]["rows"][-1]["change"] == ""
        assert len(widget.replays.frame) == CALLS  # the whole result stays in the kernel
        widget.close()

    run_async(run())


def test_a_newer_candidate_cancels_the_replay_still_running_and_the_kernel_answers_meanwhile(history: Path) -> None:
    async def run() -> None:
        widget, page = _explorer(history)
        widget.send = lambda content, buffers=None: page.replies.append(content)  # type: ignore[method-assign]
        widget._on_page_message(widget, {"request_id": "old", "action": "replay", "rules": ALLOW_MAIL}, [])
        for _ in range(20):  # the replay has started and given the loop its turns
            await asyncio.sleep(0)
        refresh = await page.send("refresh")  # answered while the 100,000-call replay runs
        assert refresh["ok"] and not any(r.get("request_id") == "old" for r in page.replies)
        deny_mail = json.dumps([{"tool_name": "send_mail", "rule_content": None, "behavior": "deny", "source": "me"}])
        newer = asyncio.ensure_future(page.send("replay", rules=deny_mail, mode="default"))
        while not newer.done():
            await asyncio.sleep(0.05)
        old = next(r for r in page.replies if r.get("request_id") == "old")
        assert old == {"request_id": "old", "ok": True, "superseded": True}
        assert newer.result()["ok"]
        summary = widget.replay
        assert summary["run"] == 1 and summary["rule_count"] == 1  # only the newer replay finished
        assert summary["page"]["rows"][0]["change"] == "ask -> deny"
        # lookup: its rule is not in this candidate, so the default mode asks
        assert summary["changed"] == CALLS
        widget.close()

    run_async(run())


def test_the_candidate_is_exported_as_a_rules_file_and_a_bad_one_is_refused_with_its_line(tmp_path: Path) -> None:
    async def run() -> None:
        log = _write_history(tmp_path / "short.jsonl", 400)
        widget, page = _explorer(log)
        assert (await page.send("replay_export"))["field"] == "replay"  # nothing replayed yet
        await page.send("replay", rules=ALLOW_MAIL)
        text = (await page.send("replay_export"))["text"]
        rules = import_rules(text)
        assert [(r.tool_name, r.rule_content, r.behavior.value) for r in rules] == [
            ("lookup", None, "allow"),
            ("send_mail", None, "allow"),
        ]
        bad = await page.send(
            "replay",
            rules='[\n  {"tool_name": "lookup", "rule_content": null,\n   "behavior": "maybe", "source": "me"}\n]',
        )
        assert bad["ok"] is False and bad["error"].startswith("line 3") and bad["field"] == "rules[0].behavior"
        unknown = await page.send(
            "replay", rules='[{"tool_name": "rm_rf", "rule_content": null, "behavior": "allow", "source": "me"}]'
        )
        assert unknown["ok"] is False and "rm_rf" in unknown["error"]
        assert widget.replay["rule_count"] == 2  # the last good replay stays shown
        assert (await page.send("replay"))["replay"]["source"] == "agent"  # the rules shown
        # a log that grew (a live session's) is read again for the next replay
        with log.open("a") as out:
            out.write(json.dumps({"agent": "clerk", "tool_call_id": "late", "event": "checked", "tool_name": "lookup",
                                  "original_input": {"topic": "late"}, "decision": "allow"}) + "\n")  # fmt: skip
        assert (await page.send("replay"))["replay"]["calls"] == 401
        widget.close()

    run_async(run())
