"""Exactly once, under load, in a real kernel.

A real AgentScope agent loops: every reply makes three rounds of tool calls,
each round parking on two confirmations and an AskUser at once, then the
next reply starts (a background driver task in the kernel). The test sends
well over 1,000 random page messages to the reply widgets through the
kernel's shell channel, exactly as JupyterLab does (``comm_msg`` with
``method: custom``): valid clicks, double clicks, approve-then-deny in the
same burst, edits (valid and not), answers (valid and not), interrupts,
pings and garbage, on live, decided and expired widgets (replies interrupted
or superseded by a new ``Session``), in random order and bursts, without
waiting for answers; then it collects the answers.

Checked afterwards, from independent records:

* every message got exactly one answer carrying its ``request_id``, and no
  answer is an internal error;
* every tool call got at most one decision in the audit log, every accepted
  decision click matches exactly one audit line, and no call has two;
* every tool call in the agent's history has exactly one result, whose state
  matches its decision (or ``interrupted`` when the decision never reached
  the agent), and every approved tool ran exactly once (its side effect);
* the agent was resumed once per decision batch: the resume events an
  AgentScope ``on_reply`` middleware saw, per ``reply_id``, equal the
  ``ReplyRun.resumes`` of the runs of that reply, and each delivered
  decision is in exactly one event.
"""

from __future__ import annotations

import json
import random
import textwrap
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from nb_hitl.store import AuditLog
from tests.harness import KernelHarness

pytestmark = pytest.mark.kernel

N_MESSAGES = 1200
SEED = 20260311

KERNEL_SETUP = textwrap.dedent(
    """
    import asyncio, json
    from agentscope.agent import Agent
    from agentscope.message import TextBlock, ToolResultState
    from agentscope.middleware import MiddlewareBase
    from agentscope.tool import AskUser, FunctionTool, ToolChunk, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call

    EFFECTS = []          # (tool, n) for every real execution of a tool
    RESUMES = []          # (input type, reply_id, [tool_call ids]) seen by the agent

    class Recorder(MiddlewareBase):
        async def on_reply(self, agent, input_kwargs, next_handler):
            inp = input_kwargs.get("inputs")
            ids = []
            if hasattr(inp, "confirm_results"):
                ids = [c.tool_call.id for c in inp.confirm_results]
            elif hasattr(inp, "execution_results"):
                ids = [r.id for r in inp.execution_results]
            RESUMES.append((type(inp).__name__, getattr(inp, "reply_id", None), ids))
            async for item in next_handler():
                yield item

    def touch_a(n: int) -> ToolChunk:
        \"\"\"Touch counter a.

        Args:
            n (int): which slot.
        \"\"\"
        EFFECTS.append(("touch_a", n))
        return ToolChunk(content=[TextBlock(text=f"a{n}")], state=ToolResultState.SUCCESS)

    def touch_b(n: int) -> ToolChunk:
        \"\"\"Touch counter b.

        Args:
            n (int): which slot.
        \"\"\"
        EFFECTS.append(("touch_b", n))
        return ToolChunk(content=[TextBlock(text=f"b{n}")], state=ToolResultState.SUCCESS)

    COUNTER = [0]

    def step(msgs):
        # rounds of this reply so far: tool calls after the last user message
        last_user = max(i for i, m in enumerate(msgs) if m.role == "user")
        calls = sum(1 for m in msgs[last_user + 1:] if not isinstance(m.content, str)
                    for b in m.content if getattr(b, "type", None) == "tool_call")
        if calls >= 9:
            return Turn("Round done.")
        COUNTER[0] += 1
        k = COUNTER[0]
        q = {"question": f"Pick for round {k}?", "header": "Round", "options": [
            {"label": "left", "description": "l"}, {"label": "right", "description": "r"}, {"label": "skip", "description": "s"}]}
        return Turn("", [tool_call("touch_a", n=k), tool_call("touch_b", n=k), tool_call("AskUser", questions=[q])])

    agent = Agent(
        name="looper",
        system_prompt="Loop.",
        model=ScriptedChatModel([step] * 100000),
        toolkit=Toolkit(tools=[FunctionTool(touch_a), FunctionTool(touch_b), AskUser()]),
        middlewares=[Recorder()],
    )
    SESSIONS = [Session(agent, audit_log=AUDIT)]
    STOP = [False]
    DRIVER_ERRORS = []

    async def driver():
        i = 0
        while not STOP[0]:
            s = SESSIONS[-1]
            cur = s.current
            if cur is not None and cur.task is not None and not cur.task.done():
                await asyncio.wait([cur.task])
                continue
            try:
                if s.parked_tool_calls():
                    s.start_resume()       # a new Session adopts the parked reply
                    continue
                i += 1
                s.start(f"Round {i}")
            except Exception as exc:
                DRIVER_ERRORS.append(repr(exc))
                await asyncio.sleep(0.01)

    def supersede():
        SESSIONS.append(Session(agent, audit_log=AUDIT))

    driver_task = asyncio.get_running_loop().create_task(driver())
    """
)

KERNEL_REPORT = textwrap.dedent(
    """
    STOP[0] = True
    await SESSIONS[-1].interrupt("End of the stress test.")
    await asyncio.wait([driver_task], timeout=30)
    for s in SESSIONS:
        for r in s.runs:
            if r.task is not None and not r.task.done():
                await asyncio.wait([r.task], timeout=30)
    calls, results = [], {}
    for m in agent.state.context:
        if isinstance(m.content, str):
            continue
        for b in m.content:
            if b.type == "tool_call":
                calls.append([b.id, b.name, b.input])
            elif b.type == "tool_result":
                results.setdefault(b.id, []).append(getattr(b.state, "value", b.state))
    runs = [
        {"session": si, "reply_id": r.reply_id, "resumes": r.resumes, "status": r.status,
         "answered": r.widget.answered if r.widget is not None else 0,
         "pauses": {p.tool_call_id: p.status for p in r.pauses.values()}}
        for si, s in enumerate(SESSIONS) for r in s.runs
    ]
    print("REPORT" + json.dumps({
        "calls": calls, "results": results, "runs": runs, "resumes": RESUMES, "effects": EFFECTS,
        "driver_task_done": driver_task.done(), "driver_errors": DRIVER_ERRORS,
        "parked": [tc.id for tc in agent.state.get_awaiting_tool_calls(agent.name)],
    }))
    """
)

DECISIONS = {"approve", "deny", "modify", "answer", "external_result", "return_error"}


class Stress:
    def __init__(self, k: KernelHarness, rng: random.Random) -> None:
        self.k = k
        self.rng = rng
        self.sent: dict[str, tuple[str, dict[str, Any]]] = {}
        self.expired_comms: set[str] = set()
        self.targeted: set[str] = set()  # tool calls a decision was already sent for

    # -- what the page knows ------------------------------------------------
    def widgets(self) -> list[Any]:
        return [
            c for c in self.k.comms("AnyModel", include_closed=True) if "pauses" in c.state and "transcript" in c.state
        ]

    def replies(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for c in self.k.comms(include_closed=True):
            for m in c.custom:
                if isinstance(m, dict) and "request_id" in m:
                    out[str(m["request_id"])].append(m)
        return out

    def wait_all_answered(self, timeout: float = 120.0) -> dict[str, list[dict[str, Any]]]:
        end = time.monotonic() + timeout
        while True:
            got = self.replies()
            missing = [r for r in self.sent if r not in got]
            if not missing:
                return got
            if time.monotonic() > end:
                raise AssertionError(
                    f"{len(missing)} of {len(self.sent)} messages got no answer, e.g. {self.sent[missing[0]]}"
                )
            time.sleep(0.05)

    # -- messages -----------------------------------------------------------
    def send(self, comm_id: str, message: dict[str, Any]) -> None:
        rid = f"s{len(self.sent)}"
        if message.get("action") in DECISIONS and isinstance(message.get("tool_call_id"), str):
            self.targeted.add(message["tool_call_id"])
        self.sent[rid] = (comm_id, message)
        self.k.send_custom(comm_id, {"request_id": rid, **message})

    def valid_decision(self, pause: dict[str, Any]) -> dict[str, Any]:
        tcid, rng = pause["tool_call_id"], self.rng
        base = {"tool_call_id": tcid, "reply_id": pause["reply_id"]} if rng.random() < 0.7 else {"tool_call_id": tcid}
        if pause["kind"] == "confirm":
            choice = rng.choices(["approve", "deny", "modify"], [5, 3, 2])[0]
            if choice == "modify":
                return {"action": "modify", "input": json.dumps({"n": 100000 + len(self.sent)}), **base}
            return {"action": choice, **base}
        q = pause["ask_user"]["questions"][0]
        if rng.random() < 0.2:
            answer = {"question": q["question"], "selected": [], "other": f"my own {rng.randint(0, 99)}"}
        else:
            answer = {"question": q["question"], "selected": [rng.choice(q["options"])["label"]]}
        return {"action": "answer", "answers": [answer], **base}

    def invalid_decision(self, pause: dict[str, Any]) -> dict[str, Any]:
        tcid, rng = pause["tool_call_id"], self.rng
        if pause["kind"] == "confirm":
            return rng.choice(
                [
                    {"action": "modify", "tool_call_id": tcid, "input": "{not json"},
                    {"action": "modify", "tool_call_id": tcid, "input": json.dumps({"n": "seven"})},
                    {"action": "modify", "tool_call_id": tcid, "input": json.dumps({"n": 1}), "name": "touch_z"},
                    {"action": "approve", "tool_call_id": tcid, "rules": [7]},
                    {"action": "answer", "tool_call_id": tcid, "answers": []},
                    {"action": "approve", "tool_call_id": tcid, "reply_id": "not-this-reply"},
                ]
            )
        q = pause["ask_user"]["questions"][0]
        return rng.choice(
            [
                {
                    "action": "answer",
                    "tool_call_id": tcid,
                    "answers": [{"question": q["question"], "selected": ["middle"]}],
                },
                {
                    "action": "answer",
                    "tool_call_id": tcid,
                    "answers": [{"question": q["question"], "selected": ["left", "right"]}],
                },
                {"action": "answer", "tool_call_id": tcid, "answers": [{"question": "Another?", "selected": ["left"]}]},
                {"action": "approve", "tool_call_id": tcid},
                {"action": "external_result", "tool_call_id": tcid, "output": "left"},
            ]
        )

    def one_message(self, widgets: list[Any]) -> None:
        rng = self.rng
        live = [
            w for w in widgets if w.state.get("status") in ("running", "paused") and w.comm_id not in self.expired_comms
        ]
        dead = [w for w in widgets if w not in live]
        w = live[-1] if live and (rng.random() < 0.75 or not dead) else (rng.choice(dead) if dead else widgets[-1])
        pauses = w.state.get("pauses") or []
        open_ = [p for p in pauses if p.get("status") == "open"]
        kind = rng.choices(
            ["valid", "double", "conflict", "invalid", "garbage", "ping", "interrupt"], [42, 12, 10, 16, 10, 6, 1.2]
        )[0]
        if kind == "ping":
            self.send(w.comm_id, {"action": "ping"})
            return
        if kind == "interrupt":
            self.send(w.comm_id, {"action": "interrupt"})
            return
        if kind == "garbage" or not pauses:
            self.send(
                w.comm_id,
                rng.choice(
                    [
                        {"action": "approve", "tool_call_id": f"call_{rng.randint(0, 10**6)}"},
                        {"action": rng.choice(["explode", "", "APPROVE"]), "tool_call_id": "x"},
                        {"action": "approve"},
                        {"action": "deny", "tool_call_id": 42},
                        {"no_action": True},
                    ]
                ),
            )
            return
        fresh = [p for p in open_ if p["tool_call_id"] not in self.targeted]
        if kind != "invalid" and fresh and rng.random() < 0.9:
            pause = rng.choice(fresh)
        else:
            pause = rng.choice(open_) if open_ and rng.random() < 0.85 else rng.choice(pauses)
        if kind == "invalid":
            self.send(w.comm_id, self.invalid_decision(pause))
        elif kind == "valid":
            self.send(w.comm_id, self.valid_decision(pause))
        elif kind == "double":  # a double click
            msg = self.valid_decision(pause)
            self.send(w.comm_id, msg)
            self.send(w.comm_id, msg)
        else:  # two different decisions within the same burst (approve then deny...)
            self.send(w.comm_id, self.valid_decision(pause))
            self.send(w.comm_id, self.valid_decision(pause))

    def run(self, n_messages: int, supersede_at: list[int]) -> None:
        rng = self.rng
        marks = list(supersede_at)
        while len(self.sent) < n_messages:
            if marks and len(self.sent) >= marks[0]:
                marks.pop(0)
                before = {w.comm_id for w in self.widgets() if w.state.get("status") in ("running", "paused")}
                self.k.execute("supersede()").raise_for_error()
                self.expired_comms |= before
            widgets = self.widgets()
            if not widgets:
                time.sleep(0.02)
                continue
            for _ in range(rng.choice([1, 1, 2, 3, 5, 8, 13, 20])):
                self.one_message(widgets)
            if rng.random() < 0.15:
                self.wait_all_answered()
            elif rng.random() < 0.7:
                # let the kernel move on: wait (briefly) until the newest widget shows a pause not decided yet
                self.wait_fresh_pause(timeout=rng.choice([0.05, 0.2, 1.0]))

    def wait_fresh_pause(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            ws = self.widgets()
            if ws and any(
                p.get("status") == "open" and p["tool_call_id"] not in self.targeted
                for p in ws[-1].state.get("pauses") or []
            ):
                return
            time.sleep(0.005)


def test_stress_1000_random_comm_messages_exactly_once(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    rng = random.Random(SEED)
    with KernelHarness() as k:
        k.execute(f"AUDIT = {str(audit)!r}\n" + KERNEL_SETUP).raise_for_error()
        k.wait_for(
            lambda: any(p.get("status") == "open" for c in k.comms("AnyModel") for p in c.state.get("pauses", [])),
            60,
            what="the first pause",
        )
        stress = Stress(k, rng)
        stress.run(N_MESSAGES, supersede_at=[300, 650, 950])
        answers = stress.wait_all_answered()
        res = k.execute(KERNEL_REPORT, timeout=120).raise_for_error()
        report = json.loads(res.stdout.split("REPORT", 1)[1])
        # no answer arrives late, after collection
        time.sleep(0.3)
        answers = stress.replies()

    sent = stress.sent
    assert len(sent) >= 1000
    # -- every message answered exactly once, with its request_id -------------
    assert set(answers) == set(sent), "answers to messages never sent"
    twice = {rid: a for rid, a in answers.items() if len(a) != 1}
    assert not twice, f"messages answered more than once: {list(twice.items())[:3]}"
    flat = {rid: a[0] for rid, a in answers.items()}
    assert not [a for a in flat.values() if a.get("code") == "internal"], "internal errors"
    assert sum(r["answered"] for r in report["runs"]) == len(sent)
    codes = Counter(a.get("code") if not a["ok"] else "ok" for a in flat.values())
    # the scenario really covered each path
    assert codes["ok"] > 100 and codes["already_decided"] > 50 and codes["expired"] > 20 and codes["invalid"] > 100, (
        codes
    )
    assert report["driver_task_done"] and not report["driver_errors"], report["driver_errors"]
    assert report["parked"] == []

    # -- every call got at most one decision; each accepted click is one audit line
    records = AuditLog(audit).records("answered")
    decisions = [r for r in records if r["decision"] in DECISIONS]
    per_call = Counter(r["tool_call_id"] for r in decisions)
    # At most one live decision per call: a second one is only accepted after
    # the first was "discarded" (handed over, but its reply stopped before
    # AgentScope applied it, so a Session adopting the reply asks again).
    effective: dict[str, dict] = {}
    for r in records:
        if r["decision"] in DECISIONS:
            assert r["tool_call_id"] not in effective, ("two live decisions", r["tool_call_id"])
            effective[r["tool_call_id"]] = r
        elif r["decision"] == "discarded":
            effective.pop(r["tool_call_id"], None)
    assert per_call and effective
    accepted = Counter(
        sent[rid][1]["tool_call_id"] for rid, a in flat.items() if a["ok"] and sent[rid][1].get("action") in DECISIONS
    )
    assert accepted == per_call
    discarded = {r["tool_call_id"] for r in records if r["decision"] == "discarded"}
    assert discarded <= set(per_call)
    discarded -= set(effective)  # decided again after the discard: judged by that decision

    # -- every tool call in history has exactly one result, matching its decision
    calls = {c[0]: c for c in report["calls"]}
    results = report["results"]
    assert set(results) == set(calls)
    assert all(len(v) == 1 for v in results.values()), {k: v for k, v in results.items() if len(v) != 1}
    decided = effective
    expected_state = {"approve": "success", "modify": "success", "deny": "denied", "answer": "success"}
    ended_early = {r["reply_id"] for r in report["runs"] if r["status"] in ("interrupted", "expired")}
    decided_but_interrupted = []
    for tcid, (state,) in results.items():
        if tcid in discarded or tcid not in decided:
            assert state == "interrupted", (tcid, state, decided.get(tcid))
        elif state == "interrupted":
            # handed to the agent, then its reply was cancelled (Interrupt on a
            # running reply, or a new Session) before AgentScope applied it
            assert decided[tcid]["reply_id"] in ended_early, (tcid, decided[tcid])
            decided_but_interrupted.append(tcid)
        else:
            assert state == expected_state[decided[tcid]["decision"]], (tcid, state, decided[tcid])

    # -- a tool ran exactly once iff it was approved and its result is success,
    #    with the (edited) input the person approved ---------------------------
    ran = Counter((tool, n) for tool, n in report["effects"])
    assert max(ran.values()) == 1
    expected_runs = set()
    for tcid, r in decided.items():
        if tcid in discarded or r["decision"] not in ("approve", "modify") or results[tcid] != ["success"]:
            continue
        n = (r["edited_input"] or r["original_input"])["n"]
        expected_runs.add((r["tool_name"], n))
    assert set(ran) == expected_runs
    assert len(decided_but_interrupted) <= 20, decided_but_interrupted

    # -- resumed once per decision batch --------------------------------------
    resume_events = [e for e in report["resumes"] if e[0] in ("UserConfirmResultEvent", "ExternalExecutionResultEvent")]
    per_reply_events = Counter(e[1] for e in resume_events)
    per_reply_resumes: Counter[str] = Counter()
    for run in report["runs"]:
        per_reply_resumes[run["reply_id"]] += run["resumes"]
    assert +per_reply_resumes == per_reply_events
    delivered = [i for e in resume_events for i in e[2]]
    assert len(delivered) == len(set(delivered)), "a decision reached the agent twice"
    assert set(delivered) == set(decided) - discarded
    # many widgets, several replies adopted by a new Session, some interrupted
    assert len(report["runs"]) >= 10
    assert max(r["session"] for r in report["runs"]) == 3  # three new Sessions superseded the old ones
    assert sum(r["status"] in ("expired", "interrupted") for r in report["runs"]) >= 3
    assert any(e[0] == "UserInterruptEvent" for e in report["resumes"])
